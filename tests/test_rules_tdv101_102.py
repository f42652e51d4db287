"""TDV101 (`.cuda()` mixed with `.to(device)`) and TDV102 (discarded move):
behaviour the fixtures do not pin down on their own."""

from __future__ import annotations

import textwrap

import pytest

from fixture_cases import FIXTURES
from flake8_torchdevice.engine import check_source
from flake8_torchdevice.fixes import fix_source
from flake8_torchdevice.rules.tdv101 import CudaMixedWithToDevice
from flake8_torchdevice.rules.tdv102 import DiscardedTensorMove

RULES = (CudaMixedWithToDevice, DiscardedTensorMove)


def found(source: str, rules=RULES, full: bool = False) -> list[tuple[int, str]]:
    result = check_source(textwrap.dedent(source), rules=rules, full=full, strict=True)
    assert result.error is None, result.error
    return [(v.line, v.code) for v in result.violations]


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("TDV*/*.py")), ids=lambda p: f"{p.parent.name}/{p.name}")
@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.CODE)
def test_selection_never_hides_a_finding(rule, path):
    source = path.read_text(encoding="utf-8")
    assert found(source, [rule]) == found(source, [rule], full=True)


# -- TDV101 ------------------------------------------------------------------------


@pytest.mark.parametrize("needs", [
    "torch.cuda.current_device()", "torch.cuda.get_device_name(0)", "print(torch.cuda.get_device_properties(0))",
    "x = torch.ones(3).cuda(0)",  # a literal ordinal: x.to("cuda:0") spelt as .cuda
])
def test_code_that_needs_cuda_anyway_breaks_no_choice_with_its_cuda_calls(needs):
    # A notebook's GPU chapter asks CUDA questions first (they raise without CUDA), then shows both
    # .cuda() and the fallback choice: its .cuda() breaks nothing the code could run without.
    source = f"import torch\n{needs}\ny = torch.ones(3).cuda()\ndevice = 'cuda' if torch.cuda.is_available() " \
             "else 'cpu'\nz = torch.ones(3).to(device)\n"
    assert found(source) == []
    guarded = source.replace(needs, f"if torch.cuda.is_available():\n    {needs}")
    assert found(guarded) == [(4, "TDV101")]


def test_rule_runs_only_where_cuda_meets_a_device_choice_or_a_cuda_check():
    # ``*cuda``: the code's own GPU switch (``if self.cuda:``, ``use_cuda``) is a CUDA check's stand-in.
    assert CudaMixedWithToDevice.GROUPS == (
        frozenset({".cuda", "set_default_tensor_type", "set_default_device", 'cuda"'}),
        frozenset({".to", "is_available", "device_count", "is_cuda", "*gpu", "*cuda"}))
    assert found("import torch\nx = torch.ones(1).cuda()\n") == []


CHOOSES = (
    'import torch\ndev = torch.device("cuda" if torch.cuda.is_available() else "cpu")\nx = torch.ones(1).to(dev)\n'
)


@pytest.mark.parametrize("call, reported", [
    ('torch.set_default_device("cuda")', True),
    ("torch.set_default_device(torch.device('cuda'))", True),
    ('torch.set_default_tensor_type("torch.cuda.FloatTensor")', True),
    ("torch.set_default_tensor_type(torch.cuda.HalfTensor)", True),
    ("torch.set_default_device(dev)", False),  # the chosen device
    ('torch.set_default_device("cpu")', False),
    ("torch.set_default_tensor_type(torch.FloatTensor)", False),
    ('torch.set_default_device("cuda:1")', False),  # names its GPU, as .cuda(1): TDV401's
    ("torch.set_default_device(torch.device('cuda', 0))", False),
    ("torch.set_default_device(None)", False),
])
def test_a_cuda_default_beside_a_device_choice(call, reported):
    """A CUDA default forces every new tensor onto the current GPU, as ``.cuda()`` does."""
    assert found(CHOOSES + call + "\n") == ([(4, "TDV101")] if reported else [])


@pytest.mark.parametrize("placement, reported", [
    ('model = get_model(device="cuda")', True),  # a foreign helper given the plain CUDA device
    ('x = torch.ones(3).to("cuda")', True),
    ("x = torch.ones(3).to(torch.device('cuda'))", True),
    ('x = torch.zeros(3, device="cuda")', True),
    ('x = torch.ones(3).to(device="cuda")', True),
    ('x = torch.ones(3).to("cuda:0")', False),  # names its GPU, as .cuda(0) does
    ("x = torch.ones(3).to(torch.device('cuda', 0))", False),
    ('x = torch.ones(3).to("cpu")', False),
    ('if torch.cuda.is_available():\n    x = torch.ones(3).to("cuda")', False),
    ('assert torch.cuda.is_available()\nx = torch.ones(3).to("cuda")', False),
])
def test_the_plain_cuda_device_beside_a_device_choice(placement, reported):
    """``x.to("cuda")`` or ``device="cuda"`` is a ``.cuda()`` spelt out: beside a device choice that
    may be the CPU it breaks that choice (FunASR's ONNX export, a CLI's ``mace_mp(device="cuda")``)."""
    source = CHOOSES + "from model import get_model\n" + placement + "\n"
    assert found(source) == ([(5, "TDV101")] if reported else [])
    assert found(source.replace(CHOOSES, "import torch\n")) == []  # no choice to break


@pytest.mark.parametrize("name", ["DEVICE", "dev_name", "target"])
def test_a_fallback_bound_to_any_name_is_a_device_choice(name):
    """``DEVICE = "cuda" if torch.cuda.is_available() else "cpu"``: the fallback itself says the code may run on
    the CPU, whatever the name holding it (mace-mp-umap's CLI, then ``mace_mp(device="cuda")``)."""
    source = f'import torch\n{name} = "cuda" if torch.cuda.is_available() else "cpu"\n' \
        'def f():\n    return mace_mp(model="m", device="cuda"), torch.ones(1).cuda()\n'
    assert found(source) == [(4, "TDV101"), (4, "TDV101")]
    assert found(source.replace('"cuda" if torch.cuda.is_available() else "cpu"', "torch.cuda.is_available()")) == []


def test_the_selection_keeps_a_fallback_bound_to_any_name():
    """The selection may skip only what a rule's words rule out: a fallback bound to a name no device word names,
    in a function of its own, is still read (TDV105, which shares the device choice, reports beside it)."""
    from flake8_torchdevice.rules.tdv105 import CudaOnlyCallWithChosenDevice

    source = textwrap.dedent("""\
        import torch
        def pick(x):
            target = "cuda" if torch.cuda.is_available() else "cpu"
            return target
        def bench(x, y):
            z = x.to(y)
            torch.cuda.synchronize()
            return z
        """)
    rule = [CudaOnlyCallWithChosenDevice]
    assert found(source, rule) == found(source, rule, full=True) == [(7, "TDV105")]


def test_the_plain_cuda_device_beside_a_collective_or_a_cuda_only_question():
    """A plain "cuda" in a function that calls a ``torch.distributed`` collective serves NCCL, which
    wants the current GPU; one beside a question only CUDA answers needs CUDA anyway. Elsewhere in the
    same module it is still reported."""
    source = CHOOSES + """\
import torch.distributed as dist
def synchronize(count, total):
    t = torch.tensor([count, total], device="cuda")
    dist.all_reduce(t)
    return t
def gather(data, world_size):
    sizes = [torch.tensor([0], device="cuda") for _ in range(world_size)]
    dist.all_gather(sizes, torch.tensor([len(data)], device="cuda"))
    return sizes
def name():
    print(torch.cuda.get_device_name(0))
    return torch.ones(1).to("cuda")
def plain(x):
    return x.to("cuda")
"""
    assert found(source) == [(17, "TDV101")]


def test_a_cuda_assert_ends_the_cpu_path_for_every_cuda_call():
    """``assert torch.cuda.is_available()`` fails without CUDA, as ``if not ...: raise`` does: the
    rest of its block runs only where CUDA is."""
    source = CHOOSES + "def f(m):\n    assert torch.cuda.is_available(), 'GPU only'\n    return m.cuda()\n"
    assert found(source) == []
    assert found(source.replace("    assert torch.cuda.is_available(), 'GPU only'\n", "")) == [(5, "TDV101")]
    negated = source.replace("assert torch.cuda", "assert not torch.cuda")
    assert found(negated) == [(6, "TDV101")]


def test_a_cuda_default_under_main_guarded_or_without_a_choice():
    main = CHOOSES + 'if __name__ == "__main__":\n    torch.set_default_tensor_type("torch.cuda.FloatTensor")\n'
    assert found(main) == [(5, "TDV101")]  # the module's own functions then make CUDA tensors
    guarded = main.replace("    torch.set", "    if torch.cuda.is_available():\n        torch.set")
    assert found(guarded) == []
    assert found('import torch\ntorch.set_default_device("cuda")\nx = torch.ones(1).cuda()\n') == []  # no choice
    aliased = CHOOSES + 'from torch import set_default_device as default\ndefault("cuda")\n'
    assert found(aliased) == [(5, "TDV101")]


def test_a_choice_that_follows_a_value_is_no_choice():
    """``.to(x.device)`` goes wherever its input is: no device choice that a ``.cuda()`` breaks, for
    tensors or modules (a CUDA-only project's memory bank is written so); a configured choice
    (``args.device``) is one for both."""
    follows = """
        import torch
        def extract(model, feats, bank):
            model.cuda()
            extra = torch.ones(1).cuda()
            return model(feats).to(bank.device) + extra
        """
    assert found(follows) == []
    configured = follows.replace("bank.device", "args.device")
    assert found(configured) == [(4, "TDV101"), (5, "TDV101")]


@pytest.mark.parametrize("binding, reported", [
    ('device = "cuda" if torch.cuda.is_available() else "cpu"', True),  # the code's own fallback
    ('device = torch.device("cuda" if torch.cuda.is_available() else "cpu")', True),
    ('device = "cuda:0"', False),  # a literal CUDA device goes where .cuda() goes
    ('device = "cpu" if gather_on_cpu else "cuda"', False),  # a storage flag: CUDA code either way
])
def test_a_bound_device_fallback_is_a_choice_without_a_move_to_it(binding, reported):
    """``device = "cuda" if torch.cuda.is_available() else "cpu"`` chooses a device that may be the CPU
    even where no ``.to(device)`` uses it: the state moved with ``.cuda()`` breaks it (Adam-mini's
    optimizer, recall batch 42), while the rest follows the parameters (``.to(p.device)``)."""
    source = f"""
        import torch
        {binding}
        def step(p, grad):
            vmean = torch.zeros(3).cuda()
            return (vmean + grad).to(p.device)
        """
    assert found(source) == ([(5, "TDV101")] if reported else [])


@pytest.mark.parametrize("bound", [
    "imgs = imgs.cuda(non_blocking=True)",  # it follows a value this code put on CUDA
    "imgs = load(imgs)",  # it follows a value of unknown device: still no choice of its own
])
def test_a_followed_value_is_no_choice_wherever_it_came_from(bound):
    source = f"""
        import torch
        def validate(model, imgs, ious):
            texts = texts.cuda()
            {bound}
            return model(imgs, texts), torch.from_numpy(ious).to(imgs.device)
        """
    assert found(source) == []
    assert (4, "TDV101") in found(source.replace("imgs.device", "device"))  # a chosen device is broken


@pytest.mark.parametrize("default, expected", [('"cuda"', []), ('"cuda:0"', []), ("None", [(4, "TDV101")]),
                                               ('"cpu"', [(4, "TDV101")])])
def test_a_device_parameter_defaulting_to_cuda_is_no_choice(default, expected):
    source = f"""
        import torch
        def sample(x, device={default}):
            noise = torch.ones(1).cuda()
            return x.to(device) + noise
        """
    assert found(source) == expected


def test_an_unguarded_cuda_beside_a_checked_one():
    checked = """
        import torch
        def step(images, target, gpu):
            if torch.cuda.is_available():
                images = images.cuda(gpu)
            target = target.cuda(gpu)
            return images, target
        """
    assert found(checked) == [(6, "TDV101")]
    # A storage option is no availability check: ``use_cuda`` keeps features on the GPU.
    assert found(checked.replace("torch.cuda.is_available()", "use_cuda")) == []
    # Both under the check: nothing breaks the CPU path.
    assert found(checked.replace("\n            target =", "\n                target =")) == []


def test_cuda_is_reported_only_when_the_module_places_with_to_device():
    consistent = "import torch\nx = torch.ones(1).cuda()\ny = x.to(torch.float16)\n"
    assert found(consistent) == []
    assert found(consistent + "z = y.to('cuda:1')\n") == [(2, "TDV101")]
    # The first GPU by a literal is where .cuda() goes in a one-GPU process: no choice.
    assert found(consistent + "z = y.to('cuda:0')\n") == []
    assert found(consistent + "z = y.to(torch.device('cuda', 0))\n") == []


@pytest.mark.parametrize(
    "move",
    ["x.to(device)", "x.to(args.device)", "x.to(self.target_device)", "x.to(dev)", "x.to(device_)",
     "x.to('mps')", "x.to(f'cuda:{rank}')", "x.to(device=dev)",
     "x.to(dtype=torch.half, device=args.device)"],
)
def test_device_moves(move):
    assert found(f"import torch\nm.cuda()\ny = {move}\n") == [(2, "TDV101")]


@pytest.mark.parametrize("move", ["x.to(torch.device('cpu'))", "x.to('cpu')", "x.to(device='cpu:0')"])
def test_a_literal_cpu_target_brings_a_value_back_and_chooses_nothing(move):
    # A CUDA-only script that reads its results back (``out.to(torch.device("cpu"))``).
    assert found(f"import torch\nm.cuda()\ny = {move}\n") == []


@pytest.mark.parametrize(
    "not_a_move",
    ["x.to(torch.float16)", "x.to(dtype=torch.half)", "x.to(memory_format=torch.channels_last)",
     "x.to(other)", "x.to(other.dtype)", "x.to(device=None)", "x.to('m')", "x.to(*args)",
     "x.to(device=placement)"],
)
def test_to_calls_that_choose_no_device(not_a_move):
    assert found(f"import torch\nm.cuda()\ny = {not_a_move}\n") == []


def test_cuda_with_an_explicit_device_is_a_choice():
    assert found("m.cuda(rank)\nn.cuda(device=d)\nk.cuda()\nx.to(device)\n") == [(3, "TDV101")]


def test_a_module_level_early_exit_guards_functions_below_it():
    source = """
        import sys
        import torch

        device = torch.device(sys.argv[1])
        if not torch.cuda.is_available():
            sys.exit("needs a GPU")


        def run(model):
            return model.cuda()


        x = torch.ones(1).to(device)
    """
    assert found(source) == []
    assert found(source.replace("sys.exit(", "print(")) == [(11, "TDV101")]


def test_early_exit_guards_only_what_follows_it_in_the_same_block():
    source = """
        def run(x, device):
            x.cuda()
            if not torch.cuda.is_available():
                return x.to(device)
            return x.cuda()
    """
    assert found(source) == [(3, "TDV101")]


@pytest.mark.parametrize(
    "test, guarded",
    [
        ("torch.cuda.device_count() == 0", True),
        ("torch.cuda.device_count() < 2", True),
        ("torch.cuda.device_count() == 1", False),
        ("x.device.type != 'cuda'", True),
        ("not use_gpu", True),
        ("device != 'cpu'", False),
        ("x.device.type == 'cpu'", False),
    ],
)
def test_which_early_exits_guard(test, guarded):
    source = f"import torch\ndef run(x, device):\n    if {test}:\n        return x.to(device)\n    return x.cuda()\n"
    assert found(source) == ([] if guarded else [(5, "TDV101")])


def test_a_string_test_is_not_a_guard_but_a_type_check_is():
    source = """
        def run(x, device):
            if device != "cpu":
                x = x.cuda()
            if device.type == "cuda":
                x = x.cuda()
            return x.to(device)
    """
    assert found(source) == [(4, "TDV101")]


def test_guards_are_what_silences_the_guarded_fixture():
    class Unguarded(CudaMixedWithToDevice):
        def cuda_guarded(self):
            return False

    source = (FIXTURES / "TDV101" / "guarded_calls.py").read_text(encoding="utf-8")
    assert found(source, [CudaMixedWithToDevice]) == []
    # One finding per guarded .cuda(): 17 calls, less super().cuda(device), which names its device.
    assert len(found(source, [Unguarded])) == 16


@pytest.mark.parametrize(
    "decorator, guarded",
    [
        ("@unittest.skipIf(not torch.cuda.is_available(), 'no GPU')", True),
        ("@unittest.skipUnless(TEST_CUDA, 'no GPU')", True),
        ("@pytest.mark.skipif('not torch.cuda.is_available()')", True),
        ("@pytest.mark.cuda", True),
        ("@onlyCUDA", True),
        ("@requires_gpu()", True),
        ("@pytest.mark.parametrize('device', ['cpu', 'cuda'])", False),
        ("@torch.cuda.amp.custom_fwd", False),
        ("@unittest.skipIf(sys.platform == 'win32', 'posix only')", False),
    ],
)
def test_skip_decorators(decorator, guarded):
    source = f"import torch\n{decorator}\ndef test_it(device):\n    x = torch.ones(1).to(device)\n    return x.cuda()\n"
    assert found(source) == ([] if guarded else [(5, "TDV101")])


def test_tdv101_message_names_the_fix():
    assert ".to(device)" in CudaMixedWithToDevice.MESSAGE


# -- TDV102 ------------------------------------------------------------------------


def test_the_last_binding_in_source_order_decides():
    template = "import torch\ndef f(device):\n    x = {}\n    x = {}\n    x.to(device)\n"
    assert found(template.format("torch.zeros(1)", "Net()")) == []
    assert found(template.format("Net()", "torch.zeros(1)")) == [(5, "TDV102")]


def test_scopes_do_not_leak():
    source = """
        import torch
        x = torch.zeros(1)
        x.cpu()

        def f(x):
            x.cpu()

        def g():
            x.cpu()
            y = torch.ones(1)

            def inner(y):
                y.cpu()

            y.cpu()
    """
    assert found(source) == [(4, "TDV102"), (16, "TDV102")]


def test_rebinding_forgets_the_tensor():
    rebinds = ["x = Net()", "(x := Net())", "with open(p) as x: pass", "try:\n    pass\nexcept E as x:\n    pass",
               "def x(): pass", "class x: pass", "del x", "first, *x = torch.zeros(1), torch.ones(1)"]
    for rebind in rebinds:
        body = textwrap.indent(f"x = torch.zeros(1)\n{rebind}\nx.to('meta')\n", "    ")
        assert found(f"import torch\ndef f():\n{body}") == [], rebind
    assert found("import torch\ndef f():\n    x = torch.zeros(1)\n    x.to('meta')\n") == [(4, "TDV102")]


def test_names_not_from_torch_are_unknown():
    source = """
        import numpy as np
        from mylib import zeros

        a = np.zeros(3)
        a.cpu()
        b = zeros(3)
        b.cpu()
        c = torch_like.zeros(3)
        c.cpu()
    """
    assert found(source) == []


def test_aliases_of_torch_resolve():
    source = """
        import torch as th
        import torch.nn.functional as F
        a = th.rand(2)
        a.cuda()
        b = F.softmax(a, dim=0)
        b.cpu()
    """
    assert found(source) == [(5, "TDV102"), (7, "TDV102")]


@pytest.mark.parametrize(
    "loop, reported",
    [
        ("for x, y in loader:", True),
        ("for i, (x, y) in enumerate(loader):", True),
        ("for x in model.parameters():", True),
        ("for name, x in model.named_parameters():", True),
        ("for x in loader:", False),
        ("for i, x in enumerate(loader):", False),
        ("for x in [a, b]:", False),
        ("for x in model.modules():", False),
        ("for x in range(3):", False),
        ("for x, y in zip(a, b):", False),
        ("for model, y in loader:", False),
    ],
)
def test_loop_targets(loop, reported):
    source = f"def f(loader, model, a, b, device):\n    {loop}\n        x.to(device)\n        model.to(device)\n"
    assert found(source) == ([(3, "TDV102")] if reported else [])


def test_a_move_that_is_used_is_not_reported():
    source = """
        import torch
        x = torch.zeros(1)
        y = x.to("meta")
        print(x.cpu())
        x.to("meta").add_(1)
        (x).cpu()
    """
    assert found(source) == []


@pytest.mark.parametrize("binding, reported", [
    ("reader.parse(path).view(1, -1)", True),  # only a tensor has view()
    ("reader.parse(path).unsqueeze(0)", True),
    ("Variable(to_tensor(image))", True),  # Variable(...) is a tensor, whatever it wraps
    ("reader.parse(path).contiguous()", False),  # PyG's Data has contiguous() and an in-place .to()
    ("reader.parse(path)", False),
    ("model.float()", False),  # a module's float() returns the module
])
def test_tdv102_a_value_only_a_tensor_can_be(binding, reported):
    source = (
        "import torch\nfrom torch.autograd import Variable\n\n\n"
        f"def run(reader, path, model, image, device):\n    x = {binding}\n    x.to(device)\n    return x\n"
    )
    assert found(source, rules=(DiscardedTensorMove,)) == ([(7, "TDV102")] if reported else [])


@pytest.mark.parametrize("read, reported", [
    ('g.gdata["std"] = g.gdata["std"].cuda()', False),  # gdata: no tensor attribute, a graph container
    ("n = g.ndata", False),
    ("n = g.shape", True),  # a tensor's own attributes say nothing
    ("n = g.grad", True),
])
def test_tdv102_a_name_read_with_an_attribute_no_tensor_has_is_no_tensor(read, reported):
    source = (
        "import torch\n\n\n"
        "def train(loader, model):\n"
        "    for i, (g, target) in enumerate(loader):\n"
        '        g.to(torch.device("cuda"))\n'
        f"        {read}\n"
        '        target.to("cuda")\n'
    )
    expected = [(6, "TDV102")] if reported else []
    assert found(source, rules=(DiscardedTensorMove,)) == expected + [(8, "TDV102")]


@pytest.mark.parametrize("imports, loop, reported", [
    # A file that imports a graph library: a loader's elements may be graphs moved in place by .to().
    ("import dgl", "for g1, g2 in loader:", []),
    ("from torch_geometric.data import Data", "for step, (g1, g2) in enumerate(loader):", []),
    ("try:\n    import dgl\nexcept ImportError:\n    dgl = None", "for g1, g2 in loader:", []),
    # Parameters and buffers are tensors whatever the file imports; without a graph library, so is the loader's data.
    ("import dgl", "for g1, g2 in zip(model.parameters(), model.buffers()):", []),
    ("import dgl", "for g1 in model.parameters():", ["g1"]),
    ("import dgl", "for i, g1 in enumerate(model.buffers()):", ["g1"]),
    ("import numpy", "for g1, g2 in loader:", ["g1", "g2"]),
])
def test_tdv102_a_graph_librarys_loader_may_yield_graphs_moved_in_place(imports, loop, reported):
    source = (
        "import torch\n" + imports + "\n\n\n"
        "def run(loader, model, device):\n"
        f"    {loop}\n"
        "        g1.to(device)\n"
        "        g2.to(device)\n"
        "    x = torch.ones(3)\n"
        "    x.to(device)\n"
    )
    lines = source.splitlines()
    expected = [lines.index(f"        {name}.to(device)") + 1 for name in reported] + [len(lines)]
    assert found(source, rules=(DiscardedTensorMove,)) == [(line, "TDV102") for line in expected]


def test_tdv102_an_attribute_of_an_earlier_binding_says_nothing_of_the_tensor():
    """``image.astype`` reads the array ``image`` held before ``torch.as_tensor`` rebinds it: the tensor's
    discarded move is still reported (detectron2's ``DefaultPredictor``)."""
    source = (
        "import torch\n\n\n"
        "def predict(aug, original, device):\n"
        "    image = aug.apply_image(original)\n"
        '    image = torch.as_tensor(image.astype("float32").transpose(2, 0, 1))\n'
        "    image.to(device)\n"
        "    return image\n"
    )
    assert found(source, rules=(DiscardedTensorMove,)) == [(7, "TDV102")]


def test_tdv102_message_names_the_fix():
    assert "x = x.to(device)" in DiscardedTensorMove.MESSAGE


@pytest.mark.parametrize("flag, reported", [
    ("gather_on_cpu", False),  # where results are kept: the code runs on CUDA either way
    ("self.cudaEfficient", False),
    ("offload", False),
    ("args.cpu", True),  # the user's choice to run on the CPU
    ("use_cpu", True),
    ("not torch.cuda.is_available()", True),
])
def test_a_choice_on_a_storage_flag_is_not_a_cpu_path(flag, reported):
    source = f"""\
        import torch
        def run(model, batch, args, gather_on_cpu=False, offload=False, use_cpu=False):
            device = "cpu" if {flag} else "cuda"
            out = model(batch.to(device))
            return out.to(batch.device), torch.ones(1).cuda()
        """
    assert (found(source) == [(5, "TDV101")]) is reported


SWITCHED = """
import torch
from torch import nn


class Trainer:
    def __init__(self, use_cuda):
        self.G = nn.Linear(2, 2)
        self.cuda = use_cuda
        PLACE

    def step(self, x):
        if self.cuda:
            x = x.cuda()
        z = torch.randn(2, 2).cuda()
        return self.G(x) + z
"""


@pytest.mark.parametrize("place, reported", [
    ("if use_cuda:\n            self.G.cuda()", [(15, "TDV101")]),  # the switch places a module: the run may be CPU
    ("if use_cuda:\n            self.buffer = torch.zeros(2).cuda()", []),  # it only keeps tensors: a storage flag
    ("self.G.cuda()", []),  # the module goes to CUDA unguarded: the program needs a GPU anyway
    # the switch asked as a number or as True is the same switch
    ("if use_cuda > 0:\n            self.G.cuda()", [(15, "TDV101")]),
    ("if use_cuda == 1:\n            self.G.cuda()", [(15, "TDV101")]),
    ("if use_cuda is True:\n            self.G.cuda()", [(15, "TDV101")]),
])
def test_an_unguarded_cuda_beside_the_codes_own_gpu_switch(place, reported):
    source = SWITCHED.replace("PLACE", place)
    extra = place.count("\n")
    assert found(source) == [(line + extra, code) for line, code in reported]
    assert found(source, full=True) == found(source)


def test_variable_of_a_tensor_is_no_module_construction():
    source = (
        "import torch\nfrom torch.autograd import Variable\n\n\ndef f(x, use_cuda):\n"
        "    if torch.cuda.is_available():\n        x = x.cuda()\n"
        "    return Variable(torch.randn(2)).cuda()\n"
    )
    assert found(source) == [(8, "TDV101")]  # beside a checked .cuda(): no program-wide CUDA need


LAUNCHED = """
    import torch
    from lightning.fabric import Fabric

    def main(fabric, args):
        device = torch.device(args.device)
        teacher = build().cuda().eval()
        return teacher(torch.zeros(2).to(device))

    if __name__ == "__main__":
        Fabric(accelerator={accelerator}, devices="auto").launch(main)
"""


@pytest.mark.parametrize("accelerator, reported", [
    ('"gpu"', []),  # the launcher refuses to start without a GPU: a CUDA program, like an NCCL one
    ('"cuda"', []),
    ('"gpu" if torch.cuda.is_available() else "cpu"', [(7, "TDV101")]),  # a choice, not a demand
    ('"auto"', [(7, "TDV101")]),
    ('args.accelerator', [(7, "TDV101")]),
])
def test_a_launcher_that_demands_a_gpu_makes_a_cuda_program(accelerator, reported):
    source = LAUNCHED.format(accelerator=accelerator)
    assert found(source) == reported
    assert found(source, full=True) == reported


def test_a_gpu_launcher_under_a_cuda_check_demands_nothing():
    source = LAUNCHED.format(accelerator='"gpu"').replace(
        '    Fabric(accelerator="gpu"', '    if torch.cuda.is_available():\n            Fabric(accelerator="gpu"')
    assert found(source) == [(7, "TDV101")]


def test_a_cuda_legacy_constructor_is_a_new_tensors_cuda_call():
    """``torch.cuda.FloatTensor(n)`` makes a tensor on the current GPU, as ``.cuda()`` would: reported
    where a ``.cuda()`` would be, under any alias, with no fix (its arguments are sizes or data)."""
    source = """
    import torch
    import torch as th
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = torch.nn.Linear(3, 2).to(device)
    def masks(ids, n):
        a = torch.cuda.LongTensor(ids)
        b = th.cuda.FloatTensor(n, 3).zero_()
        return a, b
    def guarded(n):
        if torch.cuda.is_available():
            return torch.cuda.ByteTensor(n)
    """
    assert found(source, [CudaMixedWithToDevice]) == [(7, "TDV101"), (8, "TDV101")]
    result = check_source(textwrap.dedent(source), rules=(CudaMixedWithToDevice,), strict=True)
    assert result.violations[0].message.startswith("torch.cuda.*Tensor(...) ignores the device")
    # A `.cuda()` there would be rewritten to `.to(device)` (one module-level device); a constructor is not.
    assert fix_source(textwrap.dedent(source), result.violations, unsafe=True) == textwrap.dedent(source)
    moved = textwrap.dedent(source).replace("a = torch.cuda.LongTensor(ids)", "a = torch.tensor(ids).cuda()")
    assert "a = torch.tensor(ids).to(device)" in fix_source(moved, unsafe=True)
    # Without a device choice or a CUDA check beside it, a CUDA program's constructors are its own.
    assert found("import torch\ndef f(n):\n    return torch.cuda.FloatTensor(n)\n", [CudaMixedWithToDevice]) == []


def test_a_cuda_type_test_guards_its_branch_and_makes_the_other_branch_unguarded():
    source = """
    import torch
    def noise(spect):
        if spect.type() == "torch.cuda.HalfTensor":
            return torch.cuda.HalfTensor(spect.size(0)).normal_()
        return torch.cuda.FloatTensor(spect.size(0)).normal_()
    """
    assert found(source, [CudaMixedWithToDevice]) == [(6, "TDV101")]
    guarded = source.replace("return torch.cuda.FloatTensor(spect.size(0)).normal_()", "return spect.new_empty(1)")
    assert found(guarded, [CudaMixedWithToDevice]) == []


def test_a_value_test_is_a_check_only_for_the_branch_it_sends_a_cpu_value_to():
    # `if p.is_cuda:` keeps module state next to the input (a tracker head's grids); it asks where
    # a value is, not whether the machine has CUDA. The `.cuda()` calls after it run for CUDA
    # inputs too: they are no break of a CPU path the function wrote (silent, as in a CUDA-only
    # project). Where the test sends a CPU value -- its `else`, the rest of the block after
    # its body returns, the body of `if not p.is_cuda:` -- a `.cuda()` is reported.
    source = """
    import torch
    class Head(torch.nn.Module):
        def forward(self, p, targets):
            if p.is_cuda:
                self.grid = self.grid.cuda()
            tconf = targets.cuda()
            return p + tconf
    """
    assert found(source, [CudaMixedWithToDevice]) == []
    in_else = source.replace("            tconf = targets.cuda()",
                             "            else:\n                tconf = targets.cuda()")
    assert found(in_else, [CudaMixedWithToDevice]) == [(8, "TDV101")]
    returned = source.replace("self.grid = self.grid.cuda()", "return self.grid.cuda() + p")
    assert found(returned, [CudaMixedWithToDevice]) == [(7, "TDV101")]
    negated = source.replace("if p.is_cuda:\n                self.grid = self.grid.cuda()",
                             "if not p.is_cuda:\n                p = p.cuda()\n            else:\n"
                             "                self.grid = self.grid.cuda()")
    assert found(negated, [CudaMixedWithToDevice]) == [(6, "TDV101")]
    # A question of the machine beside it (`p.is_cuda and torch.cuda.is_available()`) checks the whole function.
    machine = source.replace("if p.is_cuda:", "if p.is_cuda and torch.cuda.is_available():")
    assert found(machine, [CudaMixedWithToDevice]) == [(7, "TDV101")]


@pytest.mark.parametrize(
    "device, reported",
    [
        ("torch.device('cuda:' + str(args.gpu_ind))", False),  # a GPU whatever the option says
        ("f'cuda:{args.gpu}'", False),
        ("'cuda:%d' % args.gpu", False),
        ("torch.device('cuda:{}'.format(rank))", False),
        ("torch.device('cuda', args.gpu)", False),
        ("'cuda:1'", False),
        # A device that may be the CPU: the .cuda() before the .to() raises where CUDA is missing.
        ("torch.device('cuda' if torch.cuda.is_available() else 'cpu')", True),
        ("args.device", True),
    ],
)
def test_tdv101_cuda_chained_into_a_move_to_an_always_cuda_device(device, reported):
    """``x.cuda().to(dev)``: the ``.to()`` puts the value on the chosen GPU; the ``.cuda()`` breaks only a device
    that may be the CPU. A bare ``.cuda()`` beside a chosen ordinal still goes to the current GPU instead."""
    source = f"""
    import torch
    local_device = {device}
    model = Net().to(local_device)

    def step(batch, actions):
        batch = batch.cuda(non_blocking=True).to(local_device)
        return model(batch)
    """
    assert found(source, [CudaMixedWithToDevice]) == ([(7, "TDV101")] if reported else [])
    bare = source.replace("batch.cuda(non_blocking=True).to(local_device)", "batch.cuda()")
    assert found(bare, [CudaMixedWithToDevice]) == [(7, "TDV101")]


@pytest.mark.parametrize("loss, reported", [
    ("nn.CrossEntropyLoss()", False),
    ("nn.CrossEntropyLoss(ignore_index=-1, reduction='sum')", False),
    ("torch.nn.MSELoss()", False),
    ("nn.CrossEntropyLoss(weight=class_weights)", True),  # holds the tensor it is given
    ("nn.NLLLoss(class_weights)", True),
    ("nn.BCEWithLogitsLoss(**options)", True),  # may pass pos_weight
    ("nn.LinearCrossEntropyLoss(8, 3)", True),  # holds a Linear layer
    ("nn.Linear(8, 3)", True),
])
def test_a_loss_built_from_literals_moves_nothing(loss, reported):
    source = f"""
        import torch
        from torch import nn
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        class_weights, options = torch.ones(3), {{}}
        model = nn.Linear(8, 3).to(device)
        criterion = {loss}.cuda()
    """
    assert found(source, [CudaMixedWithToDevice]) == ([(7, "TDV101")] if reported else [])


def test_every_torch_loss_the_vocabulary_calls_free_holds_no_tensor():
    """`holds_no_tensor` trusts STATEFUL_LAYERS: a torch.nn loss it leaves out must hold nothing once built."""
    torch = pytest.importorskip("torch")
    from flake8_torchdevice.analysis.layers import holds_no_tensor

    for name in dir(torch.nn):
        kind = getattr(torch.nn, name)
        if not (isinstance(kind, type) and issubclass(kind, torch.nn.Module) and name.endswith("Loss")):
            continue
        if not holds_no_tensor(f"torch.nn.{name}", []):
            continue
        module = kind()
        assert not list(module.parameters()) and not list(module.buffers()), name


SCRIPT_RUN = """
import torch
from torch import nn


def run_exp(use_cuda):
    cuda = True
    model = nn.Linear(2, 2)
    if cuda:
        model.cuda()
    return model


if __name__ == "__main__":
    model = run_exp(True)
    PREDICT
"""


@pytest.mark.parametrize("predict, reported", [
    ("out = model(torch.ones(1, 2).cuda())", [(16, "TDV101")]),  # the run with the switch off breaks here
    ("out = model(torch.cuda.FloatTensor(1, 2))", [(16, "TDV101")]),  # a CUDA constructor is the same placement
    ("if torch.cuda.is_available():\n        out = model(torch.ones(1, 2).cuda())", []),  # guarded
    ("model.cuda()", []),  # a module placed unguarded: the program needs a GPU anyway
])
def test_the_scripts_own_run_outside_the_switch_that_places_its_model(predict, reported):
    source = SCRIPT_RUN.replace("PREDICT", predict)
    assert found(source) == reported
    assert found(source, full=True) == reported


def test_a_switch_that_only_keeps_tensors_asks_nothing_of_the_scripts_run():
    source = SCRIPT_RUN.replace("model.cuda()", "buffer = torch.zeros(2).cuda()").replace(
        "PREDICT", "out = model(torch.ones(1, 2).cuda())")
    assert found(source) == []


@pytest.mark.parametrize("flag, reported", [
    ('args["cuda"]', False),  # a GPU switch kept in a mapping is a CUDA test
    ('cfg["use_gpu"]', False),
    ('args["verbose"]', True),  # any other key is not
])
def test_a_cuda_flag_kept_in_a_mapping_guards_its_cuda_call(flag, reported):
    source = f"""
    import torch
    args = {{"cuda": torch.cuda.is_available(), "verbose": False}}
    cfg = {{"use_gpu": args["cuda"]}}
    device = torch.device("cuda" if args["cuda"] else "cpu")
    model = torch.nn.Linear(2, 2).to(device)

    def batch(x):
        if {flag}:
            x = x.cuda()
        return x
    """
    assert found(source, [CudaMixedWithToDevice]) == ([(10, "TDV101")] if reported else [])


def test_the_value_a_notebook_cell_ends_with_is_displayed_not_discarded():
    from flake8_torchdevice.notebooks import join

    cells = [
        (1, "import torch\ndevice = torch.device('cpu')\na = torch.randn(3)\na.to(device)"),  # shown: the cell's value
        (2, "b = torch.ones(2)\nb.to(device)\nprint(b)"),  # not the cell's last statement
        (3, "c = torch.ones(2)\nif c.sum() > 0:\n    c.to(device)"),  # nested: Jupyter shows nothing
        (4, "d = torch.ones(2)\nd.to(device); d.cuda()"),  # only the last of a line's statements is shown
    ]
    module = join(cells)

    def lines(**kwargs):
        result = check_source(module.source, rules=[DiscardedTensorMove], strict=True, **kwargs)
        return [(v.line, v.col) for v in result.violations]

    assert lines() == [(4, 0), (6, 0), (10, 4), (12, 0), (12, 14)]  # without its cells, the joined code is a script
    assert lines(cells=module.cells()) == [(6, 0), (10, 4), (12, 0)]
    assert lines(cells=module.cells(), filename="nb.ipynb") == [(6, 0), (10, 4), (12, 0)]


@pytest.mark.parametrize("marker", ["# %%", "#%%", "# %% [markdown]", "# In[3]:", "# In[ ]:"])
def test_a_script_of_percent_cells_shows_each_cells_last_value(marker):
    source = f"""
    import torch
    device = torch.device("cpu")
    {marker}
    a = torch.randn(3)
    a.to(device)

    {marker}
    b = torch.ones(2)
    b.to(device)
    print(b)
    c = torch.zeros(1)
    c.to(device)
    """
    assert found(source, rules=[DiscardedTensorMove]) == [(10, "TDV102")]  # a.to and the file's last, c.to, shown
    plain = source.replace(marker, "# a comment")
    assert found(plain, rules=[DiscardedTensorMove]) == [(6, "TDV102"), (10, "TDV102"), (13, "TDV102")]
