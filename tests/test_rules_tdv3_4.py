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

from flake8_torchdevice.engine import check_source
from flake8_torchdevice.rules import RULES_BY_CODE
from flake8_torchdevice import words
from flake8_torchdevice.rules.tdv301 import WRAPPERS
from flake8_torchdevice.rules.tdv304 import DiscardedParallelWrapper

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
    # Each wrapper is run at once: a DataParallel is reported at its first forward
    # before any move, a DistributedDataParallel given device_ids at its construction.
    spellings = [
        f"import {module} as m\n\ndef f(x):\n    return m.{name}(Net(), device_ids=[0])(x)\n",
        f"from {module} import {name} as W\n\ndef f(x):\n    return W(Net(), device_ids=[0])(x)\n",
        f"import torch\nWrap = {qualified}\n\ndef f(x):\n    model = Net()\n"
        "    return Wrap(model, device_ids=[0])(x)\n",
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


def test_a_wrapper_bound_in_one_branch_is_moved_after_the_if_whatever_the_other_branch_binds():
    # ``if use_cuda: net = DDP(net)`` / ``else: net = DDPCPU(net)``, then ``net.to(device)``: after
    # the ``if`` the name may be the GPU branch's wrapper, built over the CPU module and moved too late.
    head = NET + "from torch.nn.parallel import DistributedDataParallel as DDP\n\ndef main(use_cuda, device):\n"
    branches = "    net = Net()\n    if use_cuda:\n        net = DDP(net)\n    else:\n        net = Other(net)\n"
    assert found(head + branches + "    net.to(device)\n") == [(11, "TDV301")]
    # A move inside the other branch moves that branch's value, not the wrapper.
    assert found(head + branches + "        net.to(device)\n") == []
    # A rebinding after the wrap on its own path replaces it.
    assert found(head + branches.replace("        net = Other(net)\n", "        pass\n")
                 + "    net = Other(net)\n    net.to(device)\n") == []


def test_a_construction_in_another_function_is_unknown():
    source = NET + "import torch\n\nmodel = Net()\n\ndef wrap(x):\n    return torch.nn.DataParallel(model)(x)\n"
    assert found(source) == []
    # ... while module-level code is one scope.
    assert found(source + "wrapped = torch.nn.DataParallel(model)\nwrapped(batch)\n") == [(12, "TDV301")]


@pytest.mark.parametrize(
    "between, reported",
    [
        ("", True),
        ("    dp.to(device)\n", False),  # the wrapper moved before its first forward goes to device_ids[0]
        ("    dp = dp.to(device)\n", False),  # the tutorial form
        ("    dp.cuda()\n", False),
        ("    model.to(device)\n", False),  # the module it holds moved in place
        ("    dp.eval()\n", True),  # neutral methods move nothing
        ("    setup(dp)\n", False),  # handed on: not followed
    ],
)
def test_dataparallel_is_reported_at_a_forward_before_any_move(between, reported):
    source = NET + (
        "import torch.nn as nn\n\n"
        "def main(device, batch, setup):\n"
        "    model = Net()\n"
        "    dp = nn.DataParallel(model)\n"
        f"{between}"
        "    return dp(batch)\n"
    )
    assert found(source) == ([(10, "TDV301")] if reported else [])


# -- TDV401 / TDV402 ------------------------------------------------------


@pytest.mark.parametrize(
    "expr, code",
    [
        ('x.to("cuda:0")', "TDV402"),
        ('x.to("cuda:1")', "TDV401"),
        ('x.to(device="cuda:12")', "TDV401"),
        ("x.to(torch.device('cuda', 0))", "TDV402"),
        ("torch.ones(1, device=torch.device('cuda', 3))", "TDV401"),
        ("x.cuda(0)", "TDV402"),
        ("x.cuda(1)", "TDV401"),
        ("torch.cuda.set_device(0)", "TDV402"),
        ("torch.cuda.set_device(1)", "TDV401"),
        ("torch.ones(1, device=0)", "TDV402"),
        ("torch.ones(1, device=1)", "TDV401"),
        ("torch.load(x, map_location='cuda:1')", "TDV401"),
        ("torch.load(x, 'cuda:0')", "TDV402"),
        ("torch.load(x, map_location={'cuda:1': 'cuda:0'})", "TDV402"),  # the value, not the key
        ('x.to(f"{x.device.type}:1")', "TDV401"),
        ('x.new_empty(2, device="cuda:1")', "TDV401"),
        ('torch.set_default_device("cuda:0")', "TDV402"),
    ],
)
def test_ordinal_zero_is_tdv402_only_and_higher_is_tdv401_only(expr, code):
    assert found(f"import torch\n\ndef f(x):\n    return {expr}\n") == [(4, code)]


@pytest.mark.parametrize(
    "expr",
    [
        'x.to(f"cuda:{rank}")',
        "x.to(torch.device('cuda', rank))",
        "x.cuda(rank)",
        "x.to(rank)",
        "torch.cuda.set_device(rank)",
        "x.cuda(-1)",
        "other.call(device=1)",  # not a torch call
        "x.to('cuda:1 and more')",
        "x.to(b'cuda:1')",
        "x.to(f'cuda:1{rank}')",
        "x.device == 'cuda:1'",
        "torch.load(x, map_location={'cuda:1': 'cpu'})",
        "self.assertEqual(x.to('cuda:1').device, torch.device(1))",
        "torch.load(x, map_location=1)",  # an int is no map_location
        "torch.device('cuda', 'cuda:1')",
    ],
)
def test_run_time_ordinals_and_checks_are_not_reported(expr):
    assert found(f"import torch\n\ndef f(self, x, other, rank):\n    return {expr}\n") == []


@pytest.mark.parametrize(
    "expr",
    [
        '"cuda:1"',
        "pytest.param(x, id='cuda:1')",
        "{'device': 'cuda:1'}",
        "identity('cuda:1')",
        "[x.to(d) for d in ('cuda:1',)]",
    ],
)
def test_a_device_that_only_travels_as_data_selects_nothing(expr):
    assert found(f"import torch\n\ndef f(x, mock, pytest, identity):\n    return {expr}\n") == []


@pytest.mark.parametrize(
    "expr",
    ["torch.device('cuda', 1)", "torch.device(1)", "mock.Mock(device=torch.device('cuda', 1))",
     "str(torch.device('cuda:1'))", "torch.device(type='cuda', index=2)"],
)
def test_a_torch_device_with_a_literal_ordinal_is_the_choice_itself(expr):
    """Issue 29: the device object is the hard-coded choice, whatever is done with it;
    in a test module (ids, params, mocks) it is test data, and a comparison checks one."""
    assert found(f"import torch\n\ndef f(x, mock):\n    return {expr}\n") == [(4, "TDV401")]
    assert found(f"import pytest\nimport torch\n\ndef f(x, mock):\n    return {expr}\n") == []
    assert found(f"import torch\n\ndef f(x, mock):\n    return x.device == {expr}\n") == []


@pytest.mark.parametrize(
    "expr, reported",
    [
        ("nn.DataParallel(x, device_ids=[0, 1])", [(4, "TDV401")]),  # asks for a second GPU
        ("torch.nn.DataParallel(x, [0, 3])", [(4, "TDV401")]),
        ("nn.parallel.DistributedDataParallel(x, device_ids=(2,))", [(4, "TDV401")]),
        ("nn.DataParallel(x, device_ids=[0], output_device=1)", [(4, "TDV401")]),
        ("nn.parallel.data_parallel(x, x, [0, 1])", [(4, "TDV401")]),
        ("nn.DataParallel(x, device_ids=[0])", []),  # GPU 0 is every machine's (TDV402 does not read it either)
        ("nn.DataParallel(x, device_ids=list(range(n)))", []),  # the machine's GPUs, counted
        ("nn.DataParallel(x, device_ids=ids)", []),
        ("nn.DataParallel(x, device_ids=[rank])", []),
        ("nn.DataParallel(x)", []),
        ("other.DataParallel(x, device_ids=[0, 1])", []),  # not torch's wrapper
    ],
)
def test_a_parallel_wrappers_literal_device_ids_select_gpus(expr, reported):
    source = f"import torch\nfrom torch import nn\ndef f(x, n, ids, rank, other):\n    return {expr}\n"
    assert found(source) == reported


def test_a_literal_device_ids_list_behind_a_multi_gpu_guard_is_not_reported():
    source = (
        "import torch\nfrom torch import nn\ndef f(x):\n"
        "    if torch.cuda.device_count() > 1:\n        x = nn.DataParallel(x, device_ids=[0, 1])\n    return x\n"
    )
    assert found(source) == []


def test_a_module_device_constant_is_the_choice_unless_every_use_is_guarded():
    assert found("import torch\nSECOND_GPU = 'cuda:1'\n") == [(2, "TDV401")]
    assert found("import torch\nEVAL = torch.device('cuda', 1)\n") == [(2, "TDV401")]
    assert found("import torch\nGPUS = ['cuda:1', 'cuda:2']\n") == []  # data, not a binding of one device
    guarded = (
        "import torch\nDEV = 'cuda:1'\n\ndef f(x):\n    if torch.cuda.device_count() > 1:\n        return x.to(DEV)\n"
    )
    assert found(guarded) == []
    mixed = guarded + "\ndef g(x):\n    return x.to(DEV)\n"
    assert found(mixed) == [(2, "TDV401")]
    assert found("import torch\n\ndef f():\n    local = 'cuda:1'\n    return local\n") == []  # not module code


HEAD = "import torch\n\ndef f(x, flag, other):\n"


@pytest.mark.parametrize(
    "body, expected",
    [
        ("    d = 'cuda:1'\n    return x.to(d)\n", [(4, "TDV401")]),
        ("    d = 0\n    return x.cuda(d)\n", [(4, "TDV402")]),
        ("    d = 1\n    return torch.device('cuda', d)\n", []),  # a device made, not used
        ("    d = 1\n    e = torch.device('cuda', d)\n    return torch.ones(1, device=e)\n", [(4, "TDV401")]),
        ("    d = 1\n    return torch.ones(1, device=torch.device(d))\n", [(4, "TDV401")]),
        ("    d = 'cuda:1'\n    return torch.device('cuda', d)\n", []),  # a string is no index
        ("    d = 1\n    return torch.load(x, map_location=d)\n", []),
        ("    d = {'cpu': 'cuda:1'}\n    return torch.load(x, map_location=d)\n", [(4, "TDV401")]),
        ("    d = {'cpu': 'cuda:1'}\n    return x.to(d)\n", []),
        ("    k = 'cuda'\n    d = f'{k}:1'\n    return x.to(d)\n", [(5, "TDV401")]),
        ("    d = 'cuda:1' if flag else 'cpu'\n    return x.to(d)\n", [(4, "TDV401")]),
        ("    d = other or 0\n    return x.to(d)\n", [(4, "TDV402")]),
        ("    a = 'cuda:1'\n    b = a\n    c = b\n    return x.to(c)\n", [(4, "TDV401")]),
        ("    a = b = 1\n    return x.to(b)\n", [(4, "TDV401")]),
        ("    d: str = 'cuda:1'\n    return x.to(d)\n", [(4, "TDV401")]),
        # Conservative: a name bound more than once, or not by a plain assignment, is unknown.
        ("    d = 'cuda:1'\n    if flag:\n        d = 'cpu'\n    return x.to(d)\n", []),
        ("    if flag:\n        d = 'cuda:1'\n    else:\n        d = 'cpu'\n    return x.to(d)\n", []),
        ("    d = 1\n    d += 1\n    return x.to(d)\n", []),
        ("    d, e = 1, 2\n    return x.to(d)\n", []),
        ("    d = 1\n    for d in other:\n        pass\n    return x.to(d)\n", []),
        ("    d = 1\n    with other as d:\n        pass\n    return x.to(d)\n", []),
        ("    d = 1\n    del d\n    return x.to(d)\n", []),
        ("    flag = 1\n    return x.to(flag)\n", []),  # a parameter
        ("    d = 1\n    return [x.to(d) for d in other]\n", []),  # the comprehension's d
        ("    d = 1\n    return (lambda d: x.to(d))(other)\n", []),
        ("    a = 'cuda:1'\n    a, b = other\n    return x.to(a)\n", []),
        ("    a = b = 'cuda:1'\n    b = other\n    return x.to(b)\n", []),
        ("    d = d\n    return x.to(d)\n", []),  # a cycle
    ],
)
def test_a_name_carries_a_literal_to_a_device_position(body, expected):
    assert found(HEAD + body) == expected


@pytest.mark.parametrize("hops, expected", [(5, [(3, "TDV401")]), (40, []), (3000, [])])
def test_a_long_chain_of_names_is_unknown_not_an_error(hops, expected):
    chain = "".join(f"    v{i + 1} = v{i}\n" for i in range(hops))
    source = f"import torch\ndef f(x):\n    v0 = 'cuda:1'\n{chain}    return x.to(v{hops})\n"
    assert found(source) == expected == [(line, code) for line, _, code in _positions(source, RULES, full=True)]


def test_the_message_says_which_name_carries_the_literal():
    result = check_source("import torch\ndef f(x):\n    gpu = 1\n    return x.cuda(gpu)\n", rules=RULES, strict=True)
    [violation] = result.violations
    assert (violation.line, violation.col) == (3, 10)
    assert violation.message.endswith("(`gpu` holds it and reaches .cuda())")


def test_names_across_scopes():
    # A test module: its constants are test data, so only where they reach counts here
    # (in other modules a device constant is reported by itself, see below).
    module = "import pytest\nimport torch\nDEV = 'cuda:1'\nGPU = 2\nDEVICE = torch.device('cuda', GPU)\n\n"
    # A module-level constant counts in a function, through other module-level names too.
    assert found(module + "def f(x):\n    return x.to(DEV), x.to(DEVICE)\n") == [(3, "TDV401"), (4, "TDV401")]
    # ... and in a method, but not in a class body (its names are the class's).
    assert found(module + "class A:\n    def f(self, x):\n        return x.to(DEV)\n") == [(3, "TDV401")]
    shadowed_in_class = "class A:\n    DEV = 'cpu'\n    def f(self, x):\n        return x.to(DEV)\n"
    assert found(module + shadowed_in_class) == [(3, "TDV401")]
    assert found(module + "class A:\n    w = torch.ones(1).to(DEV)\n") == []
    # A local binding, a parameter or a global declaration hides it.
    assert found(module + "def f(x):\n    DEV = 'cpu'\n    return x.to(DEV)\n") == []
    assert found(module + "def f(x, DEV):\n    return x.to(DEV)\n") == []
    assert found(module + "def f(x):\n    global DEV\n    DEV = 'cpu'\n    return x.to(DEV)\n") == []
    # A name of the enclosing function counts in a nested one.
    assert found("def f(x):\n    d = 'cuda:1'\n    def g():\n        return x.to(d)\n    return g\n") == [(2, "TDV401")]
    # A literal in another function is not followed: only its own scope and module code.
    assert found("def f():\n    d = 'cuda:1'\n    return d\n\ndef g(x, d):\n    return x.to(d)\n") == []


def test_a_bare_module_level_int_is_followed_in_module_code_only():
    """From a function, a module-level binding is followed only when its own
    statement holds a word the selection keeps module code for (a "cuda:N"
    string, torch.device(...)): ``GPU = 1`` may be the only module code of a
    file without one, and then the selective run would never see it."""
    source = "import torch\nGPU = 1\n\ndef f(x):\n    return x.to(GPU)\n"
    assert found(source) == [] == _positions(source, RULES, full=True)
    module_use = "import torch\nGPU = 1\nweights = torch.ones(1).cuda(GPU)\n"
    assert found(module_use) == [(2, "TDV401")]


def test_exempt_where_the_literal_or_its_use_is():
    guarded_use = (
        "import torch\nDEV = 'cuda:1'\n\n"
        "def f(x):\n    if torch.cuda.device_count() > 1:\n        return x.to(DEV)\n    return x\n"
    )
    assert found(guarded_use) == []
    guarded_literal = (
        "import torch\n\ndef f(x):\n    return x.to(DEV)\n\n"
        "if torch.cuda.device_count() > 1:\n    DEV = 'cuda:1'\n"
    )
    assert found(guarded_literal) == []
    in_a_test = "import pytest\nimport torch\nDEV = 'cuda:1'\n\ndef test_move(x):\n    assert x.to(DEV).is_cuda\n"
    assert found(in_a_test) == []
    checked = "import torch\n\ndef f(self, x):\n    d = 1\n    self.assertTrue(x.cuda(d).is_cuda)\n"
    assert found(checked) == []
    ternary_guard = (
        "import torch\n\ndef f(x):\n    d = 'cuda:1' if torch.cuda.device_count() > 1 else 'cpu'\n    return x.to(d)\n"
    )
    assert found(ternary_guard) == []


def test_multi_gpu_guards_cover_their_code():
    source = (
        "import torch\n\n"
        "def branch(x):\n    if torch.cuda.device_count() > 1:\n        x = x.cuda(1)\n    return x\n\n"
        "def early_exit(x):\n    if torch.cuda.device_count() < 2:\n        return x\n    return x.to('cuda:1')\n\n"
        "def unguarded(x):\n    return x.to('cuda:1')\n"
    )
    assert found(source) == [(14, "TDV401")]


@pytest.mark.parametrize("text, says", [
    ("if torch.cuda.device_count() > 1:", True),
    ("if args.n_gpu > 1:", True),
    ("if NGPUS >= 2:", True),
    ("if gpus\n> 1:", True),
    ("@skip_if_lt_x_gpu(2)", True),
    ('@mark("multi" "_gpu")', True),
    ("@mark('multi'\n      '_device')", True),
    ('x = "gpus" " > 1"', True),
    ("if use_gpu:  # one GPU", False),
    ("ngpux = gpuy(multinomial)", False),
])
def test_the_files_multi_gpu_precheck_agrees_with_the_guard_pattern(text, says):
    """The cheap file check (``_may_speak_of_multi_gpu``) must say yes wherever an expression or a
    joined literal of the file can match the guard pattern: otherwise a guard is missed."""
    from flake8_torchdevice.rules.tdv401 import JUNCTION, _MULTI_GPU_GUARD, _may_speak_of_multi_gpu

    full = bool(_MULTI_GPU_GUARD.search(text) or _MULTI_GPU_GUARD.search(JUNCTION.sub("", text)))
    assert full is says
    assert _may_speak_of_multi_gpu(text) is says


def test_a_joined_multi_gpu_marker_still_guards():
    source = 'import torch\n\n@mark("multi" "_gpu")\ndef test_two(x):\n    return x.to("cuda:1")\n'
    assert found(source) == []
    assert found(source.replace('"multi" "_gpu"', '"single"')) == [(5, "TDV401")]


# -- selection: never hides a finding, stays linear ----------------------

TRICKY = [
    'import torch\n# a comment line with "cuda:1" first\nx = torch.zeros(1).to(\n    # why\n    1)\n',
    "import torch\ny = torch.ones(1, device=torch.device('cuda',  # the second card\n                 1))\n",
    'import torch\ns = torch.ones(len("""a\n# not a comment """), device="cuda:1")\n',
    'import torch\ns = torch.ones(1).to("#" and "cuda:1")\nt = torch.ones(1).to(\'#\' \\\n    and "cuda:2")\n',
    "from torch.cuda import set_device as pick\n\ndef f():\n    pick(\n        2)\n",
    "import torch\ndef f(x):\n    return x.cuda(\\\n        (1))\n",
    "import torch\nd = torch.device(index=1,\n                 type='cuda')\nw = torch.ones(1, device=d)\n",
    "import torch\nGPU = (\n    1)\nw = torch.ones(1).cuda(GPU)\n",
    "from torch.cuda import set_device as pick\nDEV = 'cu' \\\n    'da:1'\n\ndef f():\n    pick(DEV)\n",
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

BOTH = (
    "import torch\n\nfirst = torch.ones(1, device='cuda:0')\nsecond = torch.device('cuda:1')\n"
    "third = torch.ones(1, device=second)\n"
)


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


@pytest.mark.parametrize("call, reported", [
    ("x.cuda(True)", [(3, "TDV401")]),
    ("x.cuda(False)", [(3, "TDV401")]),
    ("x.cuda(non_blocking=True)", []),
    ("x.cuda(device=True)", []),  # a keyword device is checked as any other device
    ("x.to(True)", []),
])
def test_a_bool_as_the_device_of_cuda_is_reported_by_tdv401(call, reported):
    source = f"import torch\nx = torch.zeros(2)\ny = {call}\n"
    assert found(source) == reported


def test_a_bool_device_is_reported_in_tests_and_multi_gpu_code_too():
    source = "import torch\n\n\ndef test_move(x):\n    if torch.cuda.device_count() > 1:\n        x.cuda(True)\n"
    result = check_source(source, rules=RULES, filename="tests/test_move.py", strict=True)
    assert [(v.line, v.code) for v in result.violations] == [(6, "TDV401")]


@pytest.mark.parametrize(
    ("test", "reported"),
    [
        # A count compared with none or one asks for a GPU, not for several: no guard of "cuda:1".
        ("torch.cuda.is_available() and args.ngpu > 0", True),
        ("args.n_gpu >= 1", True),
        ("torch.cuda.device_count() != 0", True),
        # Several GPUs asked for guard it, alone or beside a one-GPU test.
        ("torch.cuda.device_count() > 1", False),
        ("args.ngpu > 0 and torch.cuda.device_count() > 1", False),
        ("args.num_gpus >= 2", False),
    ],
)
def test_a_one_gpu_count_test_is_no_multi_gpu_guard(test, reported):
    source = (
        f"import torch\n\ndef main(args):\n    device = torch.device('cuda:1' if {test} else 'cpu')\n"
        "    return device\n"
    )
    assert found(source) == ([(4, "TDV401")] if reported else [])
    branch = f"import torch\n\ndef main(args, x):\n    if {test}:\n        x = x.to('cuda:1')\n    return x\n"
    assert found(branch) == ([(5, "TDV401")] if reported else [])


@pytest.mark.parametrize("line, reported", [
    ('criterion = nn.CrossEntropyLoss(size_average=False).cuda(3)', False),  # holds no tensor: moves nothing
    ('criterion = nn.MSELoss().to("cuda:2")', False),
    ('criterion = nn.CrossEntropyLoss(weight=torch.ones(3)).cuda(3)', True),  # holds its weight
    ('head = nn.Linear(3, 3).cuda(1)', True),
    ('x = torch.ones(3).cuda(2)', True),
])
def test_the_ordinal_of_a_loss_that_holds_no_tensor_selects_nothing(line, reported):
    source = f"import torch\nfrom torch import nn\n{line}\n"
    assert [code for _, code in found(source)] == (["TDV401"] if reported else [])


# -- TDV304 ----------------------------------------------------------------
@pytest.mark.parametrize(("statement", "reported"), [
    ("DDP(model.cuda(0))", True),
    ("nn.DataParallel(model)", True),
    ("torch.nn.parallel.DistributedDataParallel(model, device_ids=[0])", True),
    ("model = DDP(model)", False),
    ("print(nn.DataParallel(model))", False),
    ("wrappers.append(DDP(model))", False),
    ("apex.parallel.DistributedDataParallel(model)", True),  # Apex's wraps and returns too
    ("FullyShardedDataParallel(model)", False),  # another name: shards the module in place
])
@pytest.mark.parametrize("full", [False, True])
def test_tdv304_a_wrapper_thrown_away(statement, reported, full):
    source = (
        "import apex\nimport torch\nfrom torch import nn\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        f"def main(model, wrappers):\n    {statement}\n    return model\n"
    )
    result = check_source(source, rules=[DiscardedParallelWrapper], strict=True, full=full)
    assert [v.line for v in result.violations] == ([6] if reported else [])


def test_tdv304_a_notebook_cells_last_value_is_shown():
    source = (
        "import torch\nfrom torch import nn\nmodel = nn.Linear(2, 2)\n# %%\nnn.DataParallel(model)\n# %%\nprint(1)\n"
    )
    result = check_source(source, rules=[DiscardedParallelWrapper], strict=True)
    assert result.violations == []
    plain = check_source(source.replace("# %%\n", ""), rules=[DiscardedParallelWrapper], strict=True)
    assert [v.line for v in plain.violations] == [4]


def test_tdv304_a_test_builds_a_wrapper_for_its_constructors_sake():
    source = (
        "import unittest\nimport warnings\nfrom torch import nn\n"
        "class T(unittest.TestCase):\n    def test_warns(self):\n"
        "        with warnings.catch_warnings(record=True):\n            nn.DataParallel(nn.Linear(2, 2))\n"
    )
    assert check_source(source, rules=[DiscardedParallelWrapper], strict=True).violations == []
    script = source.replace("import unittest\n", "").replace("(unittest.TestCase)", "")
    assert [v.line for v in check_source(script, rules=[DiscardedParallelWrapper], strict=True).violations] == [6]
