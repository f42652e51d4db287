"""TDV702: the CUDA caching allocator's renamed memory queries."""

from __future__ import annotations

import pytest

from flake8_torchdevice.engine import check_source
from flake8_torchdevice.fixes import fix_source
from flake8_torchdevice.rules.tdv702 import RenamedCudaMemoryQuery

HEAD = (
    "import torch\nimport torch as th\nfrom torch import cuda\nfrom torch.cuda import memory_cached\n"
    "stats = object()\n"
)


def lines(source: str) -> list[int]:
    result = check_source(HEAD + source, rules=[RenamedCudaMemoryQuery], strict=True)
    assert result.error is None, result.error
    return [v.line for v in result.violations]


@pytest.mark.parametrize("statement", [
    "x = torch.cuda.memory_cached()",
    "x = th.cuda.max_memory_cached() / 1e9",
    "x = cuda.memory_cached()",
    "x = memory_cached()",  # the imported name, reported at its call
    "probe = torch.cuda.memory_cached",  # named, to be called later
])
def test_an_old_name_is_reported(statement):
    assert lines(statement + "\n") == [6]


@pytest.mark.parametrize("statement", [
    "x = torch.cuda.memory_reserved()",
    "x = torch.cuda.max_memory_reserved()",
    "x = stats.memory_cached",  # another object's attribute
    "memory_cached = 0\nx = memory_cached",  # a name of this file, rebound
])
def test_the_new_names_and_other_objects_are_not_reported(statement):
    assert lines(statement + "\n") == []


def test_the_fix_renames_in_the_same_spelling():
    source = "import torch as th\nfrom torch import cuda\na = th.cuda.memory_cached()\nb = cuda.max_memory_cached()\n"
    assert fix_source(source) == (
        "import torch as th\nfrom torch import cuda\na = th.cuda.memory_reserved()\nb = cuda.max_memory_reserved()\n"
    )


def test_an_imported_name_gets_no_fix():
    source = "from torch.cuda import memory_cached\nx = memory_cached()\n"
    assert fix_source(source) == source


def test_a_patch_binding_the_old_name_is_not_reported():
    # an IPEX compatibility layer points the old names at another device's functions
    patches = "torch.cuda.memory_cached = torch.xpu.memory_reserved\nth.cuda.max_memory_cached: object = None\n"
    assert lines(patches) == []
