"""The selection steps added for speed (issue 8) lose no finding.

Each tricky source below has a finding; the selective run must equal the run
that parses and walks everything (``parse_everything``). The narrowed
triggers and ``wants_statement`` filters are also checked on every fixture,
on real torch files that exercise them, and for what they drop.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

from fixture_cases import FIXTURES
from flake8_torchdevice.engine import check_source
from flake8_torchdevice.rules import ALL_RULES
from flake8_torchdevice.rules.cuda_mix import CudaMixedWithToDevice
from flake8_torchdevice.rules.discarded_move import DiscardedTensorMove
from flake8_torchdevice.rules.factory_device import FactoryWithoutDevice
from flake8_torchdevice.rules.load import TorchLoadWithoutMapLocation
from flake8_torchdevice.rules.ordinals import HardCodedCudaOrdinal
from flake8_torchdevice.rules.triggers import aliases, in_doctest
from flake8_torchdevice.rules.wrap_order import WrapBeforePlacement
from flake8_torchdevice.selection import StatementIndex
from rule_support import parse_everything

FULL = [parse_everything(rule) for rule in ALL_RULES]


def findings(source: str, rules=ALL_RULES) -> list[tuple[int, int, str]]:
    result = check_source(source, rules=rules, strict=True)
    assert result.error is None, result.error
    return [(v.line, v.col, v.code) for v in result.violations]


def lines_hit(rule, source: str) -> list[int]:
    return sorted({source.count("\n", 0, offset) + 1 for offset in rule.trigger_offsets(source)})


def wants(rule, source: str, line: int = 0) -> bool:
    """Does ``rule`` want a hit on ``line`` (default: its last trigger line)?
    And, either way, does selecting lose none of its findings?"""
    line = line or lines_hit(rule, source)[-1]
    assert findings(source, [rule]) == findings(source, [parse_everything(rule)])
    index = StatementIndex(ast.parse(source))
    return any(rule.wants_statement(chain, source) for chain in index.chains_at(line))


# -- TDV201: only calls that can resolve to torch.load ------------------------------
LOADS = [
    "import torch\nx = torch.load('a.pt')\n",
    "import torch as th\nx = th.load('a.pt')\n",
    "import torch as th\nt = th\nx = t.load('a.pt')\n",  # an alias of an alias
    "import torch.serialization as S\nx = S.load('a.pt')\n",
    "from torch import serialization\nx = serialization.load('a.pt')\n",
    "import torch\nx = torch.serialization.load('a.pt')\n",
    "from torch import load\nx = load('a.pt')\n",
    "from torch.serialization import load as L\nx = L('a.pt')\n",
    "from torch import (  # see save() (below)\n    save,\n    load,\n)\nx = load('a.pt')\n",
    "from torch import save, \\\n    load\nx = load('a.pt')\n",
    "import torch\nload = torch.load\nx = load('a.pt')\n",
    "import torch\nx = (torch\n     .load('a.pt'))\n",
    "import torch\ndef f(p):\n    import torch as T\n    return T.load(p)\n",
]


@pytest.mark.parametrize("source", LOADS)
def test_every_torch_load_spelling_is_still_found(source):
    expected = findings(source, FULL)
    assert [code for _, _, code in expected] == ["TDV201"]
    assert findings(source) == expected


NOT_TORCH_LOADS = {
    "json": "import json, torch\nx = json.load(f)\n",
    "method": "import torch\nclass C:\n    def f(self):\n        return self.load(1)\n",
    "longer name": "import torch\nx = create_load(1)\n",
    "definition": "import torch\ndef load(p):\n    return p\n",
    "bare, not imported": "import torch\nfrom mylib import load\nx = load(f)\n",
    "call result": "import torch\nx = get().load(f)\n",
    "doctest": 'import torch\ndef f():\n    """\n    >>> torch.load("a.pt")\n    """\n',
}


@pytest.mark.parametrize("source", NOT_TORCH_LOADS.values(), ids=NOT_TORCH_LOADS.keys())
def test_other_loads_are_not_triggers(source):
    assert lines_hit(TorchLoadWithoutMapLocation, source) == []


# -- TDV401: string hits only where the string is the ordinal ----------------------
def test_ordinal_text_inside_longer_strings_is_not_a_trigger():
    text = 'import torch\nname = f"{worker}/cuda:0"\nmsg = "worker1/cuda:1"\n'
    assert lines_hit(HardCodedCudaOrdinal, text) == []
    code = 'import torch\nd = "cuda:1"\ne = torch.device("cuda", 1)\nf = f"cuda:1"\n'
    assert lines_hit(HardCodedCudaOrdinal, code) == [2, 3, 4]


def test_doctest_lines_are_recognised():
    source = 'def f():\n    """\n    >>> x.to(1)\n    """\n    x.to(1)\n'
    assert in_doctest(source, source.index("x.to(1)"))
    assert not in_doctest(source, source.rindex("x.to(1)"))
    assert lines_hit(HardCodedCudaOrdinal, source) == [5]


def test_aliases_read_assignments_backwards():
    source = "a = torch.load\nb =  load  # note\nc = x.y.load\nd = xload\ne = .load\n  f = load\ng == load\n"
    assert aliases(source, ("load",)) == {"a", "b", "c", "f"}


# -- TDV101: a .cuda() that names its device is never collected ---------------------
CUDA_CALLS = {
    "x.cuda()": True,
    "x.cuda(non_blocking=True)": True,
    "x.cuda(*args)": True,
    "x.cuda(  # why\n)": True,
    "x.cuda(rank)": False,
    "x.cuda(\n    0)": False,
    "x.cuda(device=1)": False,
    "x.cuda(a == b)": False,
}


@pytest.mark.parametrize("call, kept", CUDA_CALLS.items(), ids=CUDA_CALLS.keys())
def test_tdv101_trigger_skips_cuda_calls_that_name_a_device(call, kept):
    source = f"import torch\ndef f(x, device):\n    y = x.to(device)\n    return {call}\n"
    assert bool(lines_hit(CudaMixedWithToDevice, source)) is kept
    assert findings(source, [CudaMixedWithToDevice]) == findings(source, [parse_everything(CudaMixedWithToDevice)])


# -- wants_statement ---------------------------------------------------------------
def chains(source: str, line: int) -> list[list[str]]:
    index = StatementIndex(ast.parse(source))
    return [[type(stmt).__name__ for stmt in chain] for chain in index.chains_at(line)]


def test_chains_follow_every_kind_of_body():
    source = (
        "@deco\n"  # 1
        "class A:\n"
        "    def m(self, x):\n"
        "        try:\n"
        "            pass\n"  # 5
        "        except E:\n"
        "            a = 1; x.to(d)\n"  # 7: two statements on one line
        "        match x:\n"
        "            case 1:\n"
        "                y = 2\n"  # 10
    )
    assert chains(source, 1) == [["ClassDef"]]
    in_handler = ["ClassDef", "FunctionDef", "Try"]
    assert chains(source, 7) == [in_handler + ["Assign"], in_handler + ["Expr"]]
    assert chains(source, 10) == [["ClassDef", "FunctionDef", "Match", "Assign"]]
    assert chains(source, 11) == []


DISCARDS = {
    "statement": ("import torch\nx = torch.ones(1)\nx.to('cuda')\n", True),
    "after a semicolon": ("import torch\nx = torch.ones(1); x.to('cuda')\n", True),
    "argument": ("import torch\nx = torch.ones(1)\nf(1,\n  x.to('cuda'))\n", False),
    "condition": ("import torch\nx = torch.ones(1)\nif (\n    x.to('cuda')):\n    pass\n", False),
}


@pytest.mark.parametrize("source, kept", DISCARDS.values(), ids=DISCARDS.keys())
def test_tdv102_wants_expression_statements_only(source, kept):
    assert wants(DiscardedTensorMove, source) is kept


FACTORY_CONTEXTS = {
    "test method": ("class T:\n    def test_a(self):\n        z = torch.zeros(2)\n", False),
    "module code": ("z = torch.zeros(2)\n", False),
    "class body": ("class T:\n    z = torch.zeros(2)\n", False),
    "int parameter": ("def f(n: int, k=3):\n    z = torch.zeros(2)\n", False),
    "dataset": ("class D(Dataset):\n    def load(self, x):\n        z = torch.zeros(2)\n", False),
    "getitem": ("class D:\n    def __getitem__(self, i):\n        z = torch.zeros(2)\n", False),
    "collate inner": ("def collate(batch):\n    def inner(x):\n        z = torch.zeros(2)\n", False),
    "parameter": ("def f(x):\n    z = torch.zeros(2)\n", True),
    "outer parameter": ("def f(x):\n    def g():\n        z = torch.zeros(2)\n", True),
    "staticmethod": ("class T:\n    @staticmethod\n    def f(x):\n        z = torch.zeros(2)\n", True),
    "star args": ("class T:\n    def f(self, *a):\n        z = torch.zeros(2)\n", True),
    "tensor annotation": ("def f(x: 'torch.Tensor' = 1):\n    z = torch.zeros(2)\n", True),
    "keyword-only": ("def f(*, x=None):\n    z = torch.zeros(2)\n", True),
}


@pytest.mark.parametrize("source, kept", FACTORY_CONTEXTS.values(), ids=FACTORY_CONTEXTS.keys())
def test_tdv502_wants_functions_with_possible_tensor_inputs(source, kept):
    source = "import torch\n" + source
    assert wants(FactoryWithoutDevice, source, line=source.count("\n")) is kept


ORDINAL_CONTEXTS = {
    "docstring": ('def f():\n    """Pass a device such as "cuda:1"."""\n', False),
    "bare string": ('"cuda:1"\n', False),
    "f-string statement": ("f\"{torch.device('cuda:1')}\"\n", True),
    "assignment": ('d = "cuda:1"\n', True),
    "guard decorator": ('@skip_if_lt_x_gpu(2)\ndef test_a():\n    d = "cuda:1"\n', False),
    "guarded class": ('@unittest.skipIf(torch.cuda.device_count() < 2, "")\nclass T:\n    d = "cuda:1"\n', False),
    "guard name": ('def test_multigpu():\n    d = "cuda:1"\n', False),
    "private helper, plain file": ('def _helper():\n    d = "cuda:1"\n', True),
    "other decorator": ('@skip_if_no_cuda\ndef test_a():\n    d = "cuda:1"\n', True),
}


@pytest.mark.parametrize("source, kept", ORDINAL_CONTEXTS.values(), ids=ORDINAL_CONTEXTS.keys())
def test_tdv401_drops_bare_strings_and_multi_gpu_code(source, kept):
    assert wants(HardCodedCudaOrdinal, "import torch\n" + source) is kept


def test_private_helpers_of_a_multi_gpu_test_file_are_dropped():
    source = 'import torch\n@skip_if_lt_x_gpu(2)\ndef test_a():\n    _helper()\ndef _helper():\n    d = "cuda:1"\n'
    assert not wants(HardCodedCudaOrdinal, source, line=6)


def test_tdv301_trigger_skips_definitions_and_longer_names():
    source = "class DataParallel(Base):\n    pass\ndef _test_DataParallel(x):\n    return nn.DataParallel(x)\n"
    assert lines_hit(WrapBeforePlacement, source) == [4]


WRAPS = {
    "inline construction": ("def f():\n    w = DDP(Net().eval(), device_ids=[0])\n", True),
    "local construction": ("def f():\n    m = Net()\n    w = DDP(m, device_ids=[0])\n", True),
    "alias of a local": ("def f(n):\n    m = n\n    w = DDP(module=m, device_ids=[0])\n", True),
    "deepcopy": ("def f(n):\n    w = DDP(copy.deepcopy(n), device_ids=[0])\n", True),
    "module level": ("m = Net()\nw = DDP(m, device_ids=[0])\n", True),
    "parameter": ("def f(m):\n    w = DDP(m, device_ids=[0])\n", False),
    "attribute": ("class T:\n    def f(self):\n        w = DDP(self.model, device_ids=[0])\n", False),
    "factory helper": ("def f():\n    m = build(cfg)\n    w = DDP(m, device_ids=[0])\n", False),
    "moved at once": ("def f():\n    w = DDP(Net().cuda(), device_ids=[0])\n", False),
}


@pytest.mark.parametrize("source, kept", WRAPS.values(), ids=WRAPS.keys())
def test_tdv301_wants_statements_that_may_wrap_an_unplaced_module(source, kept):
    source = "import copy\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n" + source
    assert wants(WrapBeforePlacement, source) is kept


# -- all rules at once: fixtures and real torch files --------------------------------
def _torch_files() -> list:
    spec = importlib.util.find_spec("torch")  # located, not imported
    if spec is None or spec.origin is None:  # the Pythons without a torch wheel here
        return [pytest.param(None, marks=pytest.mark.skip(reason="torch is not installed"), id="torch-files")]
    root = Path(spec.origin).parent
    names = [
        "serialization.py",  # torch.load in docstrings and code
        "_inductor/codecache.py",  # many other .load( calls
        "distributed/_symmetric_memory/_nvshmem_triton.py",  # .to( in call arguments
        "testing/_internal/distributed/nn/api/remote_module_test.py",  # factories in test methods
        "distributed/tensor/parallel/style.py",  # ordinals in doctests
        "distributed/device_mesh.py",  # "cuda:0" in docstrings
        "testing/_internal/distributed/distributed_test.py",  # .cuda(rank), DDP of parameters
    ]
    return [root / name for name in names if (root / name).exists()]


@pytest.mark.parametrize(
    "path", sorted(FIXTURES.glob("TDV*/*.py")) + _torch_files(), ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_selection_loses_no_finding(path):
    source = path.read_text(encoding="utf-8")
    expected = findings(source, FULL)
    if "set_default_device" in source:  # TDV301's trigger skips such files on purpose
        expected = [finding for finding in expected if finding[2] != "TDV301"]
    assert findings(source) == expected
