"""TDV115: a misspelled device API (``torch.cuda.isavalable()``)."""

from __future__ import annotations

import textwrap

import pytest

from flake8_torchdevice.analysis.device_api import device_slip, misspelled
from flake8_torchdevice.engine import check_source
from flake8_torchdevice.fixes import fix_source
from flake8_torchdevice.rules.tdv115 import MisspelledDeviceApi


def lines(source: str, full: bool = False) -> list[int]:
    result = check_source(textwrap.dedent(source), rules=[MisspelledDeviceApi], strict=True, full=full)
    assert result.error is None, result.error
    return [v.line for v in result.violations]


@pytest.mark.parametrize(("attr", "meant"), [
    ("isavalable", "is_available"),  # two letters left out
    ("is_avaliable", "is_available"),  # neighbours swapped
    ("synchronise", "synchronize"),  # one letter mistyped
    ("device_cout", "device_count"),
    ("Is_Available", "is_available"),  # case
    ("get_device_nam", "get_device_name"),
])
def test_a_slip_names_the_real_api(attr, meant):
    assert misspelled("torch.cuda", attr) == (meant,)


@pytest.mark.parametrize("attr", [
    "is_available", "comm", "nvtx", "_lazy_init",  # real names, submodules, private ones
    "is_fp16_supported",  # two mistyped letters of a word as long as is_bf16_supported: another API
    "is_fp8_supported", "set_limit_lms", "benchmark",  # too far from any real name
    "dev",  # too short to tell
])
def test_what_is_no_slip(attr):
    assert misspelled("torch.cuda", attr) is None


@pytest.mark.parametrize("statement", [
    'device = torch.device("cuda" if torch.cuda.isavalable() else "cpu")',
    "th.cuda.synchronise()",
    "cuda.device_cout()",
    "n = tc.device_cout()",
    "torch.backends.mps.is_avaliable()",
    "torch.mps.empty_cahce()",
    "from torch.cuda import empty_cahce",
])
@pytest.mark.parametrize("full", [False, True])
def test_every_spelling_of_the_module_is_read(statement, full):
    head = "import torch\nimport torch as th\nimport torch.cuda as tc\nfrom torch import cuda\n"
    assert lines(head + statement + "\n", full) == [5]


@pytest.mark.parametrize("source", [
    "import torch\nprint(torch.cuda.is_available())\n",
    "import torch\nif hasattr(torch.cuda, 'is_fp16_supporte'):\n    torch.cuda.is_fp16_supporte()\n",
    "import torch\ntorch.cuda.is_avalable = lambda: False\nprint(torch.cuda.is_avalable())\n",
    "import torch\nwith patch('torch.cuda.synchronise'):\n    torch.cuda.synchronise()\n",
    "import torch\nprint(self.cuda.isavalable(), torch.distributed.is_avaliable())\n",  # not a device module
    "import torch\nprint(torch.cuda.amp.autocst)\n",  # a submodule's names are not read
])
def test_what_is_not_reported(source):
    assert lines(source) == []


def test_a_comment_that_quotes_the_name_does_not_hide_it():
    source = "import torch\n# raises: no attribute 'isavalable'\nok = torch.cuda.isavalable()\n"
    assert lines(source) == [3]


def test_the_unsafe_fix_writes_the_real_name_and_leaves_imports_alone():
    source = "import torch\nfrom torch.cuda import empty_cahce\nok = torch.cuda.isavalable()\n"
    assert fix_source(source, unsafe=True) == (
        "import torch\nfrom torch.cuda import empty_cahce\nok = torch.cuda.is_available()\n")
    assert fix_source(source) == source  # unsafe: not applied without --unsafe-fixes


@pytest.mark.parametrize(("word", "slip"), [
    ("dev", True), ("devic", True), ("Device", True), ("devcie", True), ("devices", True),
    ("dvice", False), ("deivce", False),  # a slip in the first three letters: not read (TDV115's NEEDS)
    ("device", False), ("divide", False),  # torch's own names
    ("divde", False),  # nearer divide: not a device
    ("de", False), ("dev_id", False), ("devnull", False), ("device_ids", False), ("develop", False),
])
def test_what_is_a_slip_of_device(word, slip):
    assert device_slip(word) is slip


@pytest.mark.parametrize(("source", "expected"), [
    ("import torch\nd = torch.dev('cpu')\n", [2]),
    ("import torch as th\nx = th.zeros(3, dev='cpu')\n", [2]),
    ("from torch import ones_like\nimport torch\nx = ones_like(torch.ones(2), devcie='cpu')\n", [3]),
    ("import torch\nd = torch.Device('cpu')\nx = torch.hann_window(8, devices=d)\n", [2, 3]),
    # Not torch's: another object's attribute, another call's keyword, a name the file installs.
    ("import torch\nclass G:\n    def to(self, dev=None): return self\nG().to(dev='cpu')\nx = G().dev\n", []),
    ("import torch\ntorch.dev = torch.device\nd = torch.dev('cpu')\n", []),
])
def test_device_itself_misspelled(source, expected):
    assert lines(source) == expected


def test_the_unsafe_fix_spells_device():
    source = "import torch\nd = torch.dev('cpu')\nx = torch.zeros(3, dev=d)\n"
    assert fix_source(source, unsafe=True) == "import torch\nd = torch.device('cpu')\nx = torch.zeros(3, device=d)\n"


@pytest.mark.parametrize(("source", "expected"), [
    # Evaluated when the def runs: a parameter's annotation without postponed annotations.
    ("import torch\ndef f(device: torch.Device = None):\n    return device\n", [2]),
    # Never evaluated: postponed annotations, and a local variable's annotation.
    ("from __future__ import annotations\nimport torch\ndef f(device: torch.Device = None) -> torch.Device:\n"
     "    return device\n", []),
    ("import torch\ndef f():\n    d: torch.Device = torch.device('cpu')\n    return d\n", []),
])
def test_annotations_python_never_evaluates_are_not_reported(source, expected):
    assert lines(source) == expected
