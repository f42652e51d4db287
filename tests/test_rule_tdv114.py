"""TDV114: a device-availability check tested without being called."""

from __future__ import annotations

import textwrap

import pytest

from flake8_torchdevice.engine import check_source
from flake8_torchdevice.fixes import fix_source
from flake8_torchdevice.rules.tdv114 import UncalledAvailabilityCheck


def lines(source: str, full: bool = False) -> list[int]:
    result = check_source(textwrap.dedent(source), rules=[UncalledAvailabilityCheck], strict=True, full=full)
    assert result.error is None, result.error
    return [v.line for v in result.violations]


@pytest.mark.parametrize("test", [
    '"cuda" if torch.cuda.is_available else "cpu"',
    '"cuda" if (torch.cuda.is_available) else "cpu"',
    '"cuda" if args.cuda and torch.cuda.is_available else "cpu"',
    '"cpu" if not torch.cuda.is_available else "cuda"',
    '"mps" if torch.backends.mps.is_available else "cpu"',
    '"cuda" if th.cuda.is_available else "cpu"',
    '"cuda" if is_available else "cpu"',
])
@pytest.mark.parametrize("full", [False, True])
def test_an_uncalled_check_is_reported(test, full):
    source = f"import torch\nimport torch as th\nfrom torch.cuda import is_available\ndevice = {test}\n"
    assert lines(source, full) == [4]


@pytest.mark.parametrize("statement", [
    "if torch.cuda.is_available:\n    pass",
    "while torch.cuda.is_available:\n    break",
    "assert torch.cuda.is_available",
    "use_gpu = torch.cuda.is_available and args.gpu",
    "cpu = not torch.cuda.is_available",
])
def test_every_truth_value_position(statement):
    assert lines("import torch\n" + statement + "\n") == [2]


@pytest.mark.parametrize("statement", [
    'device = "cuda" if torch.cuda.is_available() else "cpu"',
    "probes = [torch.cuda.is_available, torch.backends.mps.is_available]",
    'patch("torch.cuda.is_available", return_value=False)',
    "monkeypatch.setattr(torch.cuda, 'is_available', lambda: False)",
    "check = torch.cuda.is_available",  # bound, not tested: its use decides
    "if reporter.is_available:\n    pass",  # another object's own attribute
    "if is_available:\n    pass",  # not torch's: nothing imported under that name
])
def test_what_is_not_reported(statement):
    assert lines("import torch\n" + statement + "\n") == []


def test_each_operand_is_reported_once():
    source = "import torch\nif torch.cuda.is_available and torch.backends.mps.is_available or flag:\n    pass\n"
    result = check_source(source, rules=[UncalledAvailabilityCheck], strict=True)
    assert [(v.line, v.col) for v in result.violations] == [(2, 3), (2, 31)]


def test_the_fix_calls_the_check():
    source = (
        'import torch\ndevice = "cuda" if torch.cuda.is_available else "cpu"\n'
        "if not (torch.cuda.is_available):\n    pass\n"
    )
    assert fix_source(source, unsafe=True) == (
        'import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n'
        "if not (torch.cuda.is_available)():\n    pass\n"
    )
    assert fix_source(source) == source  # unsafe: not applied without --unsafe-fixes


@pytest.mark.parametrize("statement", [
    "batch_size = batch_size * torch.cuda.device_count",
    "if torch.cuda.device_count > 1:\n    pass",
    "gpus = list(range(torch.cuda.device_count))",
    "same = torch.cuda.current_device == rank",
    "n = 2 + th.cuda.device_count",
    "n = device_count - 1",
])
@pytest.mark.parametrize("full", [False, True])
def test_an_uncalled_device_count_used_as_a_number_is_reported(statement, full):
    source = f"import torch\nimport torch as th\nfrom torch.cuda import device_count\nrank = 0\n{statement}\n"
    assert lines(source, full) == [5]


@pytest.mark.parametrize("statement", [
    "n = torch.cuda.device_count()",
    "if torch.cuda.device_count() > 1:\n    pass",
    "probe = torch.cuda.device_count",  # handed on as a function
    'print(f"{torch.cuda.device_count} GPUs")',  # shown, never computed with
    "n = counter.device_count * 2",  # another object's attribute
])
def test_a_called_or_handed_on_device_count_is_not_reported(statement):
    assert lines(f"import torch\ncounter = object()\n{statement}\n") == []


def test_the_fix_calls_the_device_count():
    source = "import torch\nn = 4 * torch.cuda.device_count\n"
    assert fix_source(source, unsafe=True) == "import torch\nn = 4 * torch.cuda.device_count()\n"
