"""TDV301 (wrap before placement), TDV401/TDV402 (literal CUDA ordinals).

The fixtures pin what is reported; these tests pin what the fixtures cannot:
every wrapper spelling, that the cheap triggers never hide a finding from the
rule (triggered run == full parse), that the trigger scans stay linear, and
the opt-in behaviour of TDV402 through the real flake8 command.
"""

from __future__ import annotations

import re
import signal
import time

import pytest

from fixture_cases import FIXTURES
from flake8_torchdevice.engine import check_source
from flake8_torchdevice.rules import RULES_BY_CODE
from flake8_torchdevice import words
from flake8_torchdevice.rules.tdv301 import WRAPPERS

CODES = ("TDV301", "TDV401", "TDV402")
RULES = [RULES_BY_CODE[code] for code in CODES]


def found(source: str, rules=RULES) -> list[tuple[int, str]]:
    result = check_source(source, rules=rules, strict=True)
    assert result.error is None, result.error
    return [(v.line, v.code) for v in result.violations]


def _positions(source: str, rules, full: bool = False) -> list[tuple[int, int, str]]:
    result = check_source(source, rules=rules, full=full, strict=True)
    assert result.error is None, result.error
    return [(v.line, v.col, v.code) for v in result.violations]


# -- TDV301 ---------------------------------------------------------------

NET = "import torch.nn as nn\n\nclass Net(nn.Module):\n    pass\n\n"


@pytest.mark.parametrize("qualified", sorted(WRAPPERS))
def test_every_wrapper_spelling_is_resolved(qualified):
    module, _, name = qualified.rpartition(".")
    spellings = [
        f"import {module} as m\n\ndef f():\n    return m.{name}(Net(), device_ids=[0])\n",
        f"from {module} import {name} as W\n\ndef f():\n    return W(Net(), device_ids=[0])\n",
        f"import torch\nWrap = {qualified}\n\ndef f():\n    model = Net()\n    return Wrap(model, device_ids=[0])\n",
    ]
    for source in spellings:
        assert [code for _, code in found(NET + source)] == ["TDV301"], source


@pytest.mark.parametrize(
    "name", ["DistributedDataParallelKwargs", "FullyShardedDataParallel", "MyDataParallel", "DataParallelPlugin"]
)
def test_names_that_contain_the_word_are_not_wrappers(name):
    source = NET + f"from torch.nn.parallel import {name}\n\ndef f():\n    return {name}(Net(), device_ids=[0])\n"
    assert found(source) == []


@pytest.mark.parametrize(
    "between, reported",
    [
        ("", True),
        ("    model.train()\n    model.apply(init)\n", True),  # neutral methods keep it unplaced
        ("    print(model)\n    assert isinstance(model, nn.Module)\n", True),  # so do readers
        ("    model.to(device)\n", False),
        ("    model.cuda()\n", False),
        ("    model = model.to(device)\n", False),
        ("    setup(model, device)\n", False),  # a call that receives it may place it
        ("    model = build()\n", False),  # rebound to something unknown
        ("    if fast:\n        model = model.half()\n", False),  # rebound in a branch: unknown
    ],
)
def test_ddp_flow_between_construction_and_wrap(between, reported):
    source = NET + (
        "from torch.nn.parallel import DistributedDataParallel as DDP\n\n"
        "def main(device, rank, fast, init):\n"
        "    model = Net()\n"
        f"{between}"
        "    return DDP(model, device_ids=[rank])\n"
    )
    assert bool(found(source)) is reported


def test_ddp_without_a_gpu_sign_is_cpu_training_until_the_wrapper_moves():
    head = NET + "from torch.nn.parallel import DistributedDataParallel as DDP\n\ndef main(device):\n"
    assert found(head + "    ddp = DDP(Net())\n    return ddp\n") == []
    assert found(head + "    ddp = DDP(Net())\n    ddp.to(device)\n") == [(9, "TDV301")]
    assert found(head + "    other = DDP(Net())\n    ddp = DDP(Net())\n    other.cuda()\n") == [(9, "TDV301")]


def test_a_construction_in_another_function_is_unknown():
    source = NET + "import torch\n\nmodel = Net()\n\ndef wrap():\n    return torch.nn.DataParallel(model)\n"
    assert found(source) == []
    # ... while module-level code is one scope.
    assert found(source + "wrapped = torch.nn.DataParallel(model)\n") == [(12, "TDV301")]


# -- TDV401 / TDV402 ------------------------------------------------------


@pytest.mark.parametrize(
    "expr, code",
    [
        ('"cuda:0"', "TDV402"),
        ('"cuda:1"', "TDV401"),
        ('"cuda:12"', "TDV401"),
        ("torch.device('cuda', 0)", "TDV402"),
        ("torch.device('cuda', 3)", "TDV401"),
        ("x.cuda(0)", "TDV402"),
        ("x.cuda(1)", "TDV401"),
        ("torch.cuda.set_device(0)", "TDV402"),
        ("torch.cuda.set_device(1)", "TDV401"),
        ("torch.ones(1, device=0)", "TDV402"),
        ("torch.ones(1, device=1)", "TDV401"),
    ],
)
def test_ordinal_zero_is_tdv402_only_and_higher_is_tdv401_only(expr, code):
    assert found(f"import torch\n\ndef f(x):\n    return {expr}\n") == [(4, code)]


@pytest.mark.parametrize(
    "expr",
    [
        'f"cuda:{rank}"',
        "torch.device('cuda', rank)",
        "x.cuda(rank)",
        "x.to(rank)",
        "torch.cuda.set_device(rank)",
        "x.cuda(-1)",
        "other.call(device=1)",  # not a torch call
        "'cuda:1 and more'",
        "b'cuda:1'",
        "x.device == 'cuda:1'",
        "{'cuda:1': 'cpu'}",
        "self.assertEqual(x.device, torch.device(1))",
    ],
)
def test_run_time_ordinals_and_checks_are_not_reported(expr):
    assert found(f"import torch\n\ndef f(self, x, other, rank):\n    return {expr}\n") == []


def test_multi_gpu_guards_cover_their_code():
    source = (
        "import torch\n\n"
        "def branch(x):\n    if torch.cuda.device_count() > 1:\n        x = x.cuda(1)\n    return x\n\n"
        "def early_exit(x):\n    if torch.cuda.device_count() < 2:\n        return x\n    return x.to('cuda:1')\n\n"
        "def unguarded(x):\n    return x.to('cuda:1')\n"
    )
    assert found(source) == [(14, "TDV401")]


# -- selection: never hides a finding, stays linear ----------------------

TRICKY = [
    'import torch\n# a comment line with "cuda:1" first\nx = torch.zeros(1).to(\n    # why\n    1)\n',
    "import torch\ny = torch.device('cuda',  # the second card\n                 1)\n",
    'import torch\ns = f("""a\n# not a comment """, "cuda:1")\n',
    'import torch\ns = "#" + "cuda:1"\nt = \'#\' \\\n    + "cuda:2"\n',
    "from torch.cuda import set_device as pick\n\ndef f():\n    pick(\n        2)\n",
    "import torch\ndef f(x):\n    return x.cuda(\\\n        (1))\n",
    "import torch\nd = torch.device(index=1,\n                 type='cuda')\n",
    "import torch.nn as nn\nfrom torch.nn.parallel import DistributedDataParallel as D\nm = nn.Linear(1, 1)\n"
    "w = D(\n    m, device_ids=[0])\n",
]


@pytest.mark.parametrize("source", TRICKY)
def test_selective_run_equals_full_parse_on_tricky_sources(source):
    expected = _positions(source, RULES, full=True)
    assert expected, "each tricky source has a finding"
    assert _positions(source, RULES) == expected


@pytest.mark.parametrize("head", ["x.to(  #", "device  #", "torch.device('cuda'  #", "pick(  #"])
def test_word_scan_is_linear_on_long_comment_runs(head):
    source = "from torch.cuda import set_device as pick\n" + head + "# #" * 3000 + "\n"

    def too_slow(signum, frame):
        raise TimeoutError("word scan backtracks")

    previous = signal.signal(signal.SIGALRM, too_slow)  # an exponential scan would never return
    signal.setitimer(signal.ITIMER_REAL, 5.0)
    try:
        started = time.perf_counter()
        for word in (".to", "device", "cuda", "pick"):
            list(words.offsets(source, word))
        words.identifiers(source)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert time.perf_counter() - started < 1.0


# -- TDV402 is opt-in, through the real flake8 ----------------------------

BOTH = "import torch\n\nfirst = torch.device('cuda:0')\nsecond = torch.device('cuda:1')\n"


def _codes(result) -> list[str]:
    return re.findall(r":\d+:\d+: (TDV\d{3}) ", result.stdout)


@pytest.mark.parametrize(
    "args, codes",
    [
        ((), ["TDV401"]),  # off by default
        (("--extend-select=TDV402",), ["TDV402", "TDV401"]),
        (("--select=TDV401",), ["TDV401"]),
        # The plugin prefix alone (what the README's select-trap advice adds)
        # keeps opt-in codes off; naming the code (or "TDV40") turns it on.
        (("--select=TDV",), ["TDV401"]),
        (("--select=E,F", "--extend-select=TDV"), ["TDV401"]),
        (("--select=TDV4",), ["TDV401"]),
        (("--select=TDV,TDV402",), ["TDV402", "TDV401"]),
        (("--select=E", "--extend-select=TDV,TDV40"), ["TDV402", "TDV401"]),
        (("--select=TDV,TDV402", "--extend-ignore=TDV402"), ["TDV401"]),
    ],
)
def test_tdv402_is_opt_in(tmp_path, flake8, args, codes):
    path = tmp_path / "train.py"
    path.write_text(BOTH, encoding="utf-8")
    result = flake8("--isolated", *args, str(path))
    assert "Traceback" not in result.stderr, result.stderr
    assert _codes(result) == codes
