"""TDV503 (layers in plain containers) and TDV701 (deprecated amp API):
the fixes' decisions that the fixtures do not pin down line by line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from flake8_torchdevice.engine import check_source
from flake8_torchdevice.fixes import fix_source
from flake8_torchdevice.rules.tdv503 import ModulesInPlainContainer
from flake8_torchdevice.rules.tdv701 import DeprecatedAmp

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def lines(rule, source: str) -> list[int]:
    result = check_source(textwrap.dedent(source), rules=[rule], strict=True)
    assert result.error is None, result.error
    return [v.line for v in result.violations]


def fixed(source: str, unsafe: bool = False) -> str:
    return fix_source(textwrap.dedent(source), unsafe=unsafe)


def body(text: str) -> str:
    """The code after the header comments and the docstring, without expectations."""
    text = text.replace("  # expect: TDV701", "")
    return text[text.index('"""', text.index('"""') + 3) + 3:]


# -- TDV701 ---------------------------------------------------------------
@pytest.mark.parametrize("name", ["cpu_autocast_disabled", "training_step", "forms"])
def test_fixing_the_bad_program_gives_its_twin(name):
    bad = (FIXTURES / "TDV701" / f"{name}.py").read_text(encoding="utf-8")
    twin = (FIXTURES / "TDV701" / f"{name}_fixed.py").read_text(encoding="utf-8")
    assert body(fix_source(bad)) == body(twin)


def test_positional_enabled_becomes_a_keyword_after_the_device():
    source = "import torch\nwith torch.cpu.amp.autocast(False):\n    pass\n"
    assert fixed(source) == 'import torch\nwith torch.amp.autocast("cpu", enabled=False):\n    pass\n'


def test_missing_dtype_is_the_old_default():
    source = "import torch as th\nctx = th.cuda.amp.autocast()\n"
    assert fixed(source) == 'import torch as th\nctx = th.amp.autocast("cuda", dtype=th.float16)\n'


def test_star_args_are_reported_not_fixed():
    source = "import torch\ndef f(*a):\n    return torch.cuda.amp.GradScaler(*a)\n"
    assert lines(DeprecatedAmp, source) == [3]
    assert fixed(source) == textwrap.dedent(source)


def test_imported_name_used_as_a_value_blocks_the_import_and_every_use():
    source = """
    import torch
    from torch.cuda.amp import autocast
    ctx = autocast(enabled=False)
    factory = autocast
    """
    assert lines(DeprecatedAmp, source) == [3, 4]
    assert fixed(source) == textwrap.dedent(source)


def test_second_fix_changes_nothing():
    source = (FIXTURES / "TDV701" / "training_step.py").read_text(encoding="utf-8")
    once = fix_source(source)
    assert once != source and fix_source(once) == once


def test_device_dispatch_is_reported_version_gate_is_not():
    source = """
    import torch
    def by_device(device_type):
        if device_type == "cuda":
            return torch.cuda.amp.GradScaler()
        return torch.amp.GradScaler(device_type)
    def by_version():
        if torch.__version__ >= "2.4":
            return torch.amp.GradScaler("cuda")
        else:
            return torch.cuda.amp.GradScaler()
    """
    assert lines(DeprecatedAmp, source) == [5]


# -- TDV503 ---------------------------------------------------------------
MODULE = """
import torch
from torch import nn

class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = {value}
"""


@pytest.mark.parametrize(
    "value, expected",
    [
        ('{"a": nn.Linear(2, 2)}', 'nn.ModuleDict({"a": nn.Linear(2, 2)})'),
        ("{0: nn.Linear(2, 2)}", None),  # ModuleDict takes string keys only
        ("[nn.Parameter(torch.ones(2)), nn.Linear(2, 2)]", None),  # mixed
        ("(nn.Linear(2, 2), nn.ReLU())", "nn.ModuleList((nn.Linear(2, 2), nn.ReLU()))"),
    ],
)
def test_tdv503_fix_is_unsafe_and_only_where_the_container_accepts_the_value(value, expected):
    source = MODULE.format(value=value)
    assert lines(ModulesInPlainContainer, source) == [8]
    assert fixed(source) == textwrap.dedent(source)  # unsafe: not applied by default
    after = fixed(source, unsafe=True)
    assert after == textwrap.dedent(MODULE.format(value=expected or value))


def test_tdv503_reads_other_methods():
    source = MODULE.format(value="[nn.Linear(2, 2)]") + (
        "\n    def setup(self):\n        self.net = nn.Sequential(*self.layers)\n"
    )
    assert lines(ModulesInPlainContainer, source) == []
    reading = MODULE.format(value="[nn.Linear(2, 2)]") + (
        "\n    def forward(self, x):\n        return len(self.layers)\n"
    )
    assert lines(ModulesInPlainContainer, reading) == [8]


def test_a_version_gated_use_keeps_its_import_unfixed():
    source = """
    import torch
    from torch.cuda.amp import autocast
    with autocast():
        pass
    if torch.__version__ >= "2.4":
        ctx = torch.amp.autocast("cuda")
    else:
        ctx = autocast()
    """
    assert lines(DeprecatedAmp, source) == [3, 4]
    assert fixed(source) == textwrap.dedent(source)


def test_an_import_is_reported_only_where_its_names_are_called():
    source = """
    import torch
    from torch.cuda.amp import GradScaler
    def check(scaler: GradScaler) -> bool:
        return isinstance(scaler, GradScaler)
    """
    assert lines(DeprecatedAmp, source) == []


@pytest.mark.parametrize(
    "init, expected",
    [
        ("blocks = []\n        for _ in range(2):\n            blocks.append(nn.Linear(2, 2))\n"
         "        self.blocks = blocks", [8]),
        ("blocks = []\n        block = nn.Linear(2, 2)\n        blocks.append(block)\n"
         "        self.blocks = blocks", [8]),
        ("blocks = [nn.Linear(2, 2)]\n        self.blocks = blocks", [8]),
        # registered elsewhere: through a container given the list, by a direct attribute, by hand
        ("blocks = [nn.Linear(2, 2)]\n        self.net = nn.Sequential(*blocks)\n        self.blocks = blocks", []),
        ("blocks = []\n        block = nn.Linear(2, 2)\n        self.fc = block\n        blocks.append(block)\n"
         "        self.blocks = blocks", []),
        ("blocks = [nn.Linear(2, 2)]\n        self.add_module('b0', blocks[0])\n        self.blocks = blocks", []),
        # rebound to a ModuleList before it reaches the attribute, or holding no layer
        ("blocks = [nn.Linear(2, 2)]\n        blocks = nn.ModuleList(blocks)\n        self.blocks = blocks", []),
        ("sizes = [2, 3]\n        self.sizes = sizes", []),
    ],
)
def test_tdv503_a_local_list_given_to_an_attribute(init, expected):
    source = MODULE.format(value="None").replace("self.layers = None", init)
    assert lines(ModulesInPlainContainer, source) == expected


def test_tdv503_a_dict_registered_through_its_values_is_no_finding():
    # ``nn.ModuleList(list(self.convs.values()))`` registers what the dict holds.
    registered = MODULE.format(value='{"a": nn.Linear(2, 2)}') + (
        "        self.decoder = nn.ModuleList(list(self.layers.values()))\n"
    )
    assert lines(ModulesInPlainContainer, registered) == []
    keys_only = MODULE.format(value='{"a": nn.Linear(2, 2)}') + "        self.names = sorted(self.layers.keys())\n"
    assert lines(ModulesInPlainContainer, keys_only) == [8]


def test_a_partial_of_the_deprecated_api_is_reported_not_fixed():
    source = """
    import functools
    from functools import partial
    import torch
    from torch.cuda.amp import autocast

    a = functools.partial(torch.cuda.amp.autocast, dtype=torch.bfloat16)
    b = partial(autocast, enabled=False)
    c = partial(torch.amp.autocast, "cuda")
    d = partial(print, torch.cuda.amp.autocast)
    """
    # the import is reported too (its name reaches the deprecated API), and nothing is rewritten
    assert lines(DeprecatedAmp, source) == [5, 7, 8]
    assert fixed(source) == textwrap.dedent(source)


def test_a_version_gated_partial_is_a_fallback():
    source = """
    import functools
    import torch
    if hasattr(torch, "amp"):
        autocast = functools.partial(torch.amp.autocast, "cuda")
    else:
        autocast = functools.partial(torch.cuda.amp.autocast)
    """
    assert lines(DeprecatedAmp, source) == []


@pytest.mark.parametrize("empty, container", [("dict()", "nn.ModuleDict()"), ("list()", "nn.ModuleList()")])
def test_tdv503_an_empty_builtin_container_filled_in_init_is_fixed_to_an_empty_module_one(empty, container):
    filled = 'self.layers["a"] = nn.Linear(2, 2)' if empty == "dict()" else "self.layers.append(nn.Linear(2, 2))"
    source = MODULE.format(value=empty) + f"        {filled}\n"
    assert lines(ModulesInPlainContainer, source) == [8]
    assert fixed(source, unsafe=True) == textwrap.dedent(MODULE.format(value=container) + f"        {filled}\n")


FOREIGN = """
import torch
from torch import nn
from {package} import BaseLayer

class Embedding(BaseLayer):
    def __init__(self):
        super().__init__()
        self.tables = dict()
        self.tables["word"] = nn.Embedding(10, 4)
{forward}"""


@pytest.mark.parametrize("package, forward, reported", [
    ("block_zoo.base", "\n    def forward(self, ids):\n        return self.tables['word'](ids)\n", [9]),
    ("block_zoo.base", "", []),  # no forward: nothing says the class is a torch module
    ("keras.layers", "\n    def forward(self, ids):\n        return self.tables['word'](ids)\n", []),
])
def test_tdv503_a_class_of_a_base_the_file_cannot_see_is_a_module_when_it_has_a_forward(package, forward, reported):
    source = FOREIGN.format(package=package, forward=forward)
    assert lines(ModulesInPlainContainer, source) == reported
