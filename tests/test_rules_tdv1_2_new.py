"""TDV103, TDV104, TDV105, TDV202: behaviour the fixtures do not pin down."""

from __future__ import annotations

import textwrap

import pytest

from flake8_torchdevice.engine import check_source
from flake8_torchdevice.fixes import fix_source
from flake8_torchdevice.rules.tdv101 import CudaMixedWithToDevice
from flake8_torchdevice.rules.tdv103 import ToArgumentsSwapped
from flake8_torchdevice.rules.tdv104 import CudaGivenNonCudaDevice
from flake8_torchdevice.rules.tdv105 import CudaOnlyCallWithChosenDevice
from flake8_torchdevice.rules.tdv106 import InvalidDeviceType
from flake8_torchdevice.rules.tdv110 import InputMovedToGuessedDevice
from flake8_torchdevice.rules.tdv111 import MoveNotCalled
from flake8_torchdevice.rules.tdv201 import TorchLoadWithoutMapLocation
from flake8_torchdevice.rules.tdv202 import OtherLoaderWithoutMapLocation


def found(source: str, rule) -> list[int]:
    result = check_source(textwrap.dedent(source), rules=(rule,), strict=True)
    assert result.error is None, result.error
    return [v.line for v in result.violations]


def _load_line(source: str) -> int:
    """The line of the first ``torch.load(`` in ``source``: what a TDV201 case reports when it reports."""
    return next(number for number, line in enumerate(source.splitlines(), 1) if "torch.load(" in line)


def test_swap_keeps_layout_and_a_third_argument():
    source = "import torch\ny = x.to(torch.half,  'cuda', True)\n"
    assert fix_source(source) == "import torch\ny = x.to('cuda',  torch.half, True)\n"


def test_dtype_spelled_by_a_common_builtin_name_is_not_needed_or_reported():
    # torch.float / torch.int are left out of NEEDS on purpose (speed); see the rule.
    assert found("import torch\ny = x.to(torch.float, 'cuda')\n", ToArgumentsSwapped) == []
    assert "float" not in ToArgumentsSwapped.GROUPS[0]


def test_cuda_name_rebound_to_something_else_is_not_reported():
    source = """
    def f(t, ok):
        d = "cpu"
        d = "cuda" if ok else d
        return t.cuda(d)
    """
    assert found(source, CudaGivenNonCudaDevice) == []


def test_cuda_fix_renames_to_to():
    assert fix_source("y = x.cuda('cpu', non_blocking=True)\n") == "y = x.to('cpu', non_blocking=True)\n"


def test_tdv105_and_tdv101_share_one_premise():
    source = """
    import torch
    model.to(torch.float16)
    torch.cuda.synchronize()
    x.cuda()
    """
    assert found(source, CudaOnlyCallWithChosenDevice) == found(source, CudaMixedWithToDevice) == []
    chosen = source + "model.to(device)\n"
    assert found(chosen, CudaOnlyCallWithChosenDevice) == [4]
    assert found(chosen, CudaMixedWithToDevice) == [5]


def test_harmless_cuda_calls_are_not_reported():
    source = """
    import torch
    model.to(device)
    torch.cuda.empty_cache()
    torch.cuda.max_memory_allocated()
    torch.backends.cudnn.benchmark = True
    """
    assert found(source, CudaOnlyCallWithChosenDevice) == []


def test_map_location_position_differs_per_loader():
    source = """
    import torch
    a = torch.jit.load(p, None)
    b = torch.hub.load_state_dict_from_url(u, d, "cpu")
    c = torch.hub.load_state_dict_from_url(u, "cpu")
    """
    assert found(source, OtherLoaderWithoutMapLocation) == [3, 5]
    fixed = fix_source(textwrap.dedent(source))
    assert 'torch.jit.load(p, "cpu")' in fixed
    assert 'load_state_dict_from_url(u, "cpu", map_location="cpu")' in fixed


def test_tdv201_and_tdv202_stay_apart():
    source = "import torch; device = 'cpu'\na = torch.load(p)\nb = torch.jit.load(p)\n"
    assert found(source, TorchLoadWithoutMapLocation) == [2]
    assert found(source, OtherLoaderWithoutMapLocation) == [3]


def test_tdv201_fix_makes_no_new_evidence():
    """The fix writes map_location="cpu": a fixed load is no CPU path for the others,
    so a second --fix finds nothing new (the fix is idempotent)."""
    scheduler = (
        "import torch\n\n\nclass Scheduler:\n    def save(self, path):\n        torch.save({}, path)\n\n"
        "    def load(self, path):\n        return torch.load(path)\n\n\n"
    )

    def resume(location: str) -> str:
        return scheduler + f"def resume(path):\n    return torch.load(path{location})\n"

    assert found(resume(""), TorchLoadWithoutMapLocation) == [13]
    assert found(resume(', map_location="cpu"'), TorchLoadWithoutMapLocation) == []
    assert found(resume(', "cpu"'), TorchLoadWithoutMapLocation) == []
    # A real CPU path is evidence (a fallback: a program naming only the CPU that saves its own files reads them)
    fallback = "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
    assert found(resume(', map_location="cpu"') + fallback, TorchLoadWithoutMapLocation) == [9]


def test_tdv201_is_silent_in_a_function_that_needs_a_gpu_anyway():
    """A function that puts what it loads on the GPU unguarded is GPU code: the CPU
    path elsewhere in the module and a caller-given path do not reach it; one process
    per GPU still does (rank k would load onto the GPU that saved the file)."""
    source = """
    import torch
    device = "cuda" if torch.cuda.is_available() else "cpu"

    def load_model(config, ckpt):
        state = torch.load(ckpt)
        model = build(config, state)
        model.cuda()
        return model
    """
    assert found(source, TorchLoadWithoutMapLocation) == []
    guarded = source.replace("        model.cuda()", "        if torch.cuda.is_available():\n            model.cuda()")
    assert found(guarded, TorchLoadWithoutMapLocation) == [6]
    per_process = source.replace('device = "cuda"', 'device = os.environ["LOCAL_RANK"] and "cuda"')
    assert found(per_process, TorchLoadWithoutMapLocation) == [6]
    # A script's own stray .cuda() at module level may be the mistake: it does not silence.
    script = "import torch\ndevice = 'cpu'\nstate = torch.load('a.pt')\nx = torch.zeros(1).cuda()\n"
    assert found(script, TorchLoadWithoutMapLocation) == [3]


@pytest.mark.parametrize("placement, reported", [
    ("model.cuda()", False),  # the model the load fills, on CUDA unguarded: no CPU path for it
    ("model = model.cuda()", False),
    ("model = model.to('cuda')", False),
    ("if args.cuda:\n    model.cuda()", True),  # placed only where CUDA is: the CPU path loads too
    ("if vars(args)['cuda']:\n    model.cuda()", True),  # the same flag read from a mapping
    ("model = model.to(device)", True),  # the script's device choice, which may be the CPU
    ("batch = torch.ones(2).cuda()", True),  # another value's .cuda(): not this model's
    ("def main():\n    model.cuda()", True),  # a function's placement, not the script's
    # The script chooses a device that may be the CPU: its model.cuda() breaks that choice (TDV101's finding),
    # and the load breaks it too.
    ("device = 'cuda' if args.cuda else 'cpu'\nmodel.cuda()", True),
    ("model.cuda()\nx = torch.ones(2).to(args.device)", True),
    ("model.cuda()\nx = torch.ones(2).to(DEVICE)", False),  # a CUDA constant is no choice (bound after or before)
    ("DEVICE = torch.device('cuda:0')\nmodel.cuda()\nx = torch.ones(2).to(DEVICE)", False),
    ("model.cuda()\nx = torch.ones(2).to(model.weight.device)", False),  # nor is another value's device
])
@pytest.mark.parametrize("load", ["model.load_state_dict(torch.load(args.ckpt))",
                                  "ckpt = torch.load(args.ckpt)\nmodel.load_state_dict(ckpt['model'])",
                                  "model = torch.load(args.ckpt)"])
def test_tdv201_a_script_whose_loaded_model_is_put_on_cuda_unguarded(placement, reported, load):
    """A script with a GPU switch (``--cuda``, here only for ``pin_memory``) that chooses no device and puts the
    model it loads into on CUDA unguarded runs only where a GPU is: a ``map_location`` would change nothing."""
    source = ("import torch\nimport argparse\nargs = argparse.ArgumentParser().parse_args()\n"
              "kwargs = {'pin_memory': True} if args.cuda else {}\nmodel = torch.nn.Linear(2, 2)\n"
              f"{load}\n{placement}\nDEVICE = torch.device('cuda')\n")
    assert found(source, TorchLoadWithoutMapLocation) == ([6] if reported else [])


def test_tdv201_package_data_and_numpy_reads_hold_cpu_tensors():
    """A path built from ``__file__`` is package data; ``torch.load(f).numpy()`` reads CPU
    tensors. The module's CPU path would report any other load."""
    head = "import os\nimport torch\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
    packaged = head + "HERE = os.path.dirname(__file__)\n\ndef f(name):\n"
    packaged += "    return torch.load(os.path.join(HERE, name))\n"
    assert found(packaged, TorchLoadWithoutMapLocation) == []
    inline = head + "def f():\n    return torch.load(os.path.join(os.path.dirname(__file__), 'w.pt'))\n"
    assert found(inline, TorchLoadWithoutMapLocation) == []
    assert found(head + "def f(p):\n    return torch.load(p).numpy()\n", TorchLoadWithoutMapLocation) == []
    assert found(head + "def f(p):\n    return torch.load(p)\n", TorchLoadWithoutMapLocation) == [5]


@pytest.mark.parametrize("body, reported", [
    ("traj = torch.load(p)\n    return traj['vis'].numpy(), traj['xy']", []),  # its contents are CPU tensors
    ("traj = torch.load(p)\n    return traj.numpy()", []),
    ("traj = torch.load(p)\n    return traj['vis'].cpu().numpy()", [5]),  # a .cpu() says nothing of the file
    ("traj = torch.load(p)\n    traj = {}\n    return traj['vis'].numpy()", [5]),  # another value by then
    ("traj = torch.load(p)\n    other = {}\n    return other['vis'].numpy(), traj", [5]),
])
def test_tdv201_contents_read_with_numpy_hold_cpu_tensors(body, reported):
    source = "import torch\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n\ndef f(p):\n    " + body + "\n"
    assert found(source, TorchLoadWithoutMapLocation) == reported
    full = check_source(source, rules=(TorchLoadWithoutMapLocation,), full=True, strict=True)
    assert [v.line for v in full.violations] == reported


@pytest.mark.parametrize("body, reported", [
    ("f = Variable(torch.load(p))\n    return torch.cat([f, f], 1).data.numpy()", []),  # torch's functions keep it
    ("f = Variable(torch.load(p))\n    pool = torch.nn.AvgPool2d(2)\n    return pool(f).numpy()", []),  # a module
    ("img = torch.load(p)\n    out = F.conv2d(img, w)\n    y = out.squeeze() * 2\n    return y.numpy()", []),
    ("x = torch.load(p).to(device)\n    return x.numpy()", [5]),  # moved: .numpy() says nothing of the file
    ("x = torch.load(p)\n    z = x.cpu() + 1\n    return z.numpy()", [5]),
    ("y = model(torch.load(p))\n    return y.numpy()", [5]),  # a caller's model may move it anywhere
    ("y = helper(torch.load(p))\n    return y.numpy()", [5]),  # so may another function
    ("x = torch.load(p)\n    y = x + 1\n    return y.tolist(), np.zeros(3).numpy()", [5]),
    # Layer by layer, one name rebound (a tuple target between): each reads the value bound before it.
    ("x = torch.load(p)\n    x = F.conv2d(x, w)\n    x, i = F.max_pool2d(x, 2, return_indices=True)\n"
     "    x = F.relu(x)\n    return x.numpy()", []),
    ("x = torch.load(p)\n    x = x.cpu()\n    x = x * 2\n    return x.numpy()", [5]),  # moved on the way
    ("x = torch.load(p)\n    x = torch.zeros(2)\n    return x.numpy()", [5]),  # another value by then
])
def test_tdv201_a_value_computed_from_the_load_read_with_numpy(body, reported):
    """What ``.numpy()`` reads keeps the loaded tensor's device through torch's own operations: a GPU-saved
    file would fail there on every machine, so the code proves the file holds CPU tensors."""
    source = ("import torch\nimport torch.nn.functional as F\nfrom torch.autograd import Variable\n\n"
              "def f(p, model, w, device):\n    " + body + "\n")
    reported = [line + 1 for line in reported]
    assert found(source, TorchLoadWithoutMapLocation) == reported


@pytest.mark.parametrize("cpu_sign, reported", [
    ("feats = model(x).to('cpu')", False),  # a result taken off the device
    ("out = lpips.LPIPS(use_gpu=False)", False),  # a callee's keyword
    ("model = model.to('cpu')", True),  # the model itself on the CPU: a CPU path
    ("out = lpips.LPIPS(use_gpu=args.use_gpu)", True),  # this script's own flag
])
def test_tdv201_cpu_path_is_a_choice_not_a_result_moved_off_the_device(cpu_sign, reported):
    # The sign comes before the unguarded placement: one only after it is never reached without a GPU.
    source = f"import lpips\nimport torch\nstate = torch.load(args.ckpt)\n{cpu_sign}\nmodel = build(state).to('cuda')\n"
    assert found(source, TorchLoadWithoutMapLocation) == ([3] if reported else [])


@pytest.mark.parametrize("load, reported", [
    ("lr_scheduler.load_state_dict(torch.load(p))", False),  # numbers only
    ("self.scaler.load_state_dict(torch.load(p))", False),
    ("state = torch.load(rng_file)", False),  # generator states are CPU tensors
    ("optimizer.load_state_dict(torch.load(p))", True),  # moments on the parameters' device
    ("model.load_state_dict(torch.load(p))", True),
    ("state = torch.load(strong_file)", True),  # 'rng' only as a word
])
def test_tdv201_state_without_device_tensors(load, reported):
    source = "import torch\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n\n"
    source += f"def resume(p, rng_file, strong_file):\n    {load}\n"
    assert found(source, TorchLoadWithoutMapLocation) == ([5] if reported else [])


_PER_RANK_FUNCTION = """\
import os
import torch
from torch.nn.parallel import DistributedDataParallel

def main(args, model):
    model = DistributedDataParallel(model.cuda(), device_ids=[args.gpu])
    queue_path = os.path.join(args.dump_path, PATH)
    queue = torch.load(queue_path) if os.path.isfile(queue_path) else None
    for epoch in range(args.epochs):
        torch.save({"queue": queue}, queue_path)
"""

_PER_RANK_CLASS = """\
import os
import torch

class PartialFC:
    def __init__(self, rank, prefix):
        self.rank = rank
        torch.cuda.set_device(rank)  # one process per GPU
        self.weight_name = os.path.join(prefix, PATH)
        self.weight = torch.load(self.weight_name)

    def save_params(self):
        torch.save(self.weight.data, self.weight_name)
"""


@pytest.mark.parametrize("source, path, reported", [
    (_PER_RANK_FUNCTION, '"queue" + str(args.rank) + ".pth"', []),  # each rank reads back what it wrote
    (_PER_RANK_FUNCTION, 'f"queue{dist.get_rank()}.pth"', []),
    (_PER_RANK_FUNCTION, '"queue.pth"', [8]),  # one file for all ranks: each loads onto the saving GPU
    (_PER_RANK_CLASS, '"rank_{}_softmax_weight.pt".format(self.rank)', []),
    (_PER_RANK_CLASS, '"rank_{}_softmax_weight.pt".format(rank)', []),
    (_PER_RANK_CLASS, '"softmax_weight.pt"', [9]),
])
def test_tdv201_a_process_reading_back_its_own_file(source, path, reported):
    """A file named per process (its rank in the path) that this module saves to the same path:
    each process reads back what it wrote from the GPU it loads onto. A file shared by all ranks
    is still reported (every rank would load it onto the GPU that saved it), and so is a per-rank
    file that nothing here writes."""
    source = source.replace("PATH", path)
    assert found(source, TorchLoadWithoutMapLocation) == reported
    full = check_source(source, rules=(TorchLoadWithoutMapLocation,), full=True, strict=True)
    assert [v.line for v in full.violations] == reported
    if not reported:
        unsaved = source.replace("torch.save(", "print(")
        assert found(unsaved, TorchLoadWithoutMapLocation) != []


def test_tdv201_a_branch_on_a_cuda_flag_is_a_cpu_path():
    """``if opt.cuda:`` runs the script on the CPU when the flag is off: a load of a GPU
    checkpoint there fails. An ``assert`` of CUDA requires it instead."""
    script = "import torch\nmodel = torch.load(opt.model)\nif opt.cuda:\n    model = model.cuda()\n"
    assert found(script, TorchLoadWithoutMapLocation) == [2]
    assert found(script.replace("if opt.cuda:\n    model = model.cuda()\n", "x = 1\n"),
                 TorchLoadWithoutMapLocation) == []
    assert found("import torch\nassert torch.cuda.is_available() or opt.cuda\nmodel = torch.load(opt.model)\n",
                 TorchLoadWithoutMapLocation) == []


def test_tdv201_a_load_in_the_body_of_a_cuda_flag_runs_where_cuda_is():
    source = (
        "import torch\n"
        "if args.cuda:\n"
        "    checkpoint = torch.load(name)\n"
        "else:\n"
        "    checkpoint = torch.load(name, map_location=lambda storage, loc: storage)\n"
    )
    assert found(source, TorchLoadWithoutMapLocation) == []
    for switched_on in ("args.cuda > 0", "args.cuda >= 1", "args.cuda == 1", "args.cuda is True"):
        assert found(source.replace("if args.cuda:", f"if {switched_on}:"), TorchLoadWithoutMapLocation) == []
    # A count above one, or the switch asked as off, is not the CUDA run.
    assert found(source.replace("if args.cuda:", "if args.cuda > 1:"), TorchLoadWithoutMapLocation) == [3]
    assert found(source.replace("if args.cuda:", "if args.cuda == 0:"), TorchLoadWithoutMapLocation) == [3]
    # A negated flag's body is the CPU branch; so is the branch without a chosen GPU.
    assert found(source.replace("if args.cuda:", "if not args.cuda:"), TorchLoadWithoutMapLocation) == [3]
    assert found(source.replace("if args.cuda:", "if args.gpu is None:"), TorchLoadWithoutMapLocation) == [3]


DEVICE_HEAD = 'import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'


@pytest.mark.parametrize(
    "load, reported",
    [
        # fastai's load_learner: the unmapped load is the branch where the chosen device is not the CPU.
        ("torch.load(f, map_location='cpu') if defaults.device == torch.device('cpu') else torch.load(f)", False),
        ("torch.load(f, map_location='cpu') if device == 'cpu' else torch.load(f)['model']", False),
        ("torch.load(f)['model'] if device.type != 'cpu' else torch.load(f, map_location='cpu')", False),
        ("torch.load(f) if torch.cuda.is_available() else torch.load(f, map_location='cpu')", False),
        ("torch.load(f, map_location='cpu') if not args.cuda else torch.load(f)", False),
        # The branch that runs on the CPU, or a test that says nothing of the device, still loads there.
        ("torch.load(f) if device == 'cpu' else torch.load(f, map_location='cuda')", True),
        ("torch.load(f) if not torch.cuda.is_available() else torch.load(f, map_location='cuda')", True),
        ("torch.load(f) if fast else torch.load(f, map_location='cpu')", True),
    ],
)
def test_tdv201_a_conditional_expression_on_the_device(load, reported):
    assert found(DEVICE_HEAD + f"model = {load}\n", TorchLoadWithoutMapLocation) == ([3] if reported else [])


def test_tdv201_the_else_of_a_cpu_comparison_runs_off_the_cpu():
    source = DEVICE_HEAD + (
        "if device == 'cpu':\n"
        "    model = torch.load(f, map_location='cpu')\n"
        "else:\n"
        "    model = torch.load(f)\n"
    )
    assert found(source, TorchLoadWithoutMapLocation) == []
    assert found(source.replace("device == 'cpu'", "device.type != 'cpu'"), TorchLoadWithoutMapLocation) == [6]
    assert found(source.replace("device == 'cpu'", "str(device) != 'cpu'"), TorchLoadWithoutMapLocation) == [6]


def test_tdv201_the_else_of_a_negated_cuda_flag_runs_where_cuda_is():
    source = (
        "import torch\n"
        "if not args.cuda:\n"
        "    model = torch.load(f, map_location=lambda storage, loc: storage)\n"
        "elif args.half:\n"
        "    model = torch.load(f).half()\n"
        "else:\n"
        "    model = torch.load(f)\n"
        "other = torch.load(g)\n"
    )
    assert found(source, TorchLoadWithoutMapLocation) == [8]  # the branches after `not cuda` have CUDA


def _in(source: str, filename: str, full: bool = False) -> list[int]:
    result = check_source(textwrap.dedent(source), rules=(TorchLoadWithoutMapLocation,), filename=filename,
                          strict=True, full=full)
    assert result.error is None, result.error
    return [v.line for v in result.violations]


_SESSION = """\
    import torch
    device = "cuda" if torch.cuda.is_available() else "cpu"
    for epochs in (5, 10):
        name = f"07_{arch}_{epochs}_epochs.pth"
        utils.save_model(model=model.to(device), target_dir="models", model_name=name)
    best = "models/07_effnet_10_epochs.pth"
    model.load_state_dict(torch.load(best))
    other.load_state_dict(torch.load("models/published_weights.pth"))
    """


@pytest.mark.parametrize("full", [False, True])
def test_tdv201_a_notebook_reads_back_what_an_earlier_cell_saved(full):
    """A notebook is one session on one machine: a file saved by an earlier cell (here through a
    save helper, its name an f-string) loads back wherever it was written. A file it did not
    save may come from another machine; a script may run again elsewhere."""
    assert _in(_SESSION, "train.ipynb", full) == [8]
    assert _in(_SESSION, "train.py", full) == [7, 8]
    # The literal tail of the f-string must match: another extension is another file.
    assert _in(_SESSION.replace('{epochs}_epochs.pth', '{epochs}_epochs.pt'), "train.ipynb", full) == [7, 8]


@pytest.mark.parametrize("full", [False, True])
def test_tdv201_a_notebook_reads_back_through_file_objects(full):
    """An earlier cell writes through a file object (``with open(model_name, "wb") as f``), a later
    cell reads the same name, as a literal, through another: still one session's file. A file
    object on a name no cell saved is reported."""
    source = """\
        import torch
        device = "cuda" if torch.cuda.is_available() else "cpu"
        model_name = "rnn_20_epoch.net"
        with open(model_name, "wb") as f:
            torch.save(checkpoint, f)
        with open("rnn_20_epoch.net", "rb") as f:
            checkpoint = torch.load(f)
        with open("published.net", "rb") as f:
            other = torch.load(f)
        """
    assert _in(source, "char_rnn.ipynb", full) == [9]
    assert _in(source, "char_rnn.py", full) == [7, 9]


def test_tdv201_a_notebooks_helper_is_not_a_library_loading_a_users_path():
    """A notebook's function is called by the notebook: its path parameter is no sign of
    another machine. With a CPU path in the notebook, it is reported as any load is."""
    source = """\
        import torch
        def load_checkpoint(filepath):
            return torch.load(filepath)
        model = load_checkpoint("checkpoint.pth")
        """
    assert _in(source, "lesson.ipynb") == []
    assert _in(source, "lesson.py") == [3]
    with_cpu_path = source + 'device = "cuda" if torch.cuda.is_available() else "cpu"\n'
    assert _in(with_cpu_path, "lesson.ipynb") == [3]


def test_tdv201_a_cpu_saved_file_named_in_steps_is_still_the_same_file():
    """The saver and the loader build the same name through local names: what the saver wrote
    after ``.cpu()`` loads anywhere. A name the module never saved on the CPU is still reported."""
    source = """\
        import os
        import torch
        device = "cuda" if torch.cuda.is_available() else "cpu"
        def save_network(network, label, epoch, save_dir):
            save_filename = "%s_net_%s.pth" % (epoch, label)
            save_path = os.path.join(save_dir, save_filename)
            torch.save(network.cpu().state_dict(), save_path)
        def load_network(network, label, epoch, save_dir):
            save_filename = "%s_net_%s.pth" % (epoch, label)
            save_path = os.path.join(save_dir, save_filename)
            network.load_state_dict(torch.load(save_path))
        """
    assert found(source, TorchLoadWithoutMapLocation) == []
    assert found(source.replace("network.cpu().state_dict()", "network.state_dict()"),
                 TorchLoadWithoutMapLocation) == [11]
    head, _, tail = source.rpartition('"%s_net_%s.pth"')  # the loader's name only
    assert found(head + '"%s_opt_%s.pth"' + tail, TorchLoadWithoutMapLocation) == [11]


def test_tdv201_a_state_bound_with_a_cpu_model_then_saved_is_a_cpu_file():
    """``state = {"net": model.cpu() if use_cuda else model}`` then ``torch.save(state, p)``: the name
    saved holds the model on the CPU, as a literal ``torch.save({"net": model.cpu()}, p)`` does. A
    state bound without ``.cpu()``, or another name saved, is still a GPU file."""
    source = """\
        import torch
        use_cuda = torch.cuda.is_available()
        net = torch.nn.Linear(2, 2)
        def save(acc):
            state = {"net": net.cpu() if use_cuda else net, "acc": acc}
            torch.save(state, "./checkpoint/ckpt.train")
        def resume():
            return torch.load("./checkpoint/ckpt.train")
        def other():
            return torch.load("./checkpoint/other.pt")
        """
    assert found(source, TorchLoadWithoutMapLocation) == [10]
    assert found(source.replace("net.cpu() if use_cuda else net", "net"), TorchLoadWithoutMapLocation) == [8, 10]
    other_name = source.replace("torch.save(state,", "torch.save(acc,")  # not the name bound with .cpu()
    assert found(other_name, TorchLoadWithoutMapLocation) == [8, 10]


@pytest.mark.parametrize("saved, loaded, reported", [
    ('"{}.pkl".format(epoch)', '"{}.pkl".format(best)', False),
    ('f"ckpt_{epoch}.pt"', 'f"ckpt_{best}.pt"', False),
    ('"e%d.pt" % epoch', '"e%d.pt" % best', False),
    ('os.path.join(out, "{}.pkl".format(epoch))', 'os.path.join(out, "{}.pkl".format(best))', False),
    ('"{}.pkl".format(epoch)', '"{}.pth".format(best)', True),  # another template
    ('f"ckpt_{epoch}.pt"', 'f"best_{best}.pt"', True),
    ('os.path.join(out, "{}.pkl".format(epoch))', 'os.path.join(resume, "{}.pkl".format(best))', True),
])
def test_tdv201_a_file_from_the_template_this_run_saved_with_is_a_round_trip(saved, loaded, reported):
    source = (
        "import os\nimport torch\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "out = resume = 'runs'\nmodel = torch.nn.Linear(2, 2).to(device)\n"
        f"for epoch in range(3):\n    torch.save(model.state_dict(), {saved})\n"
        f"best = 1\nmodel.load_state_dict(torch.load({loaded}))\n"
    )
    assert found(source, TorchLoadWithoutMapLocation) == ([9] if reported else [])
    # A load before the first save reads a file of another run.
    early = f"best = 1\nmodel.load_state_dict(torch.load({loaded}))\nfor epoch"
    before = source.replace("best = 1\n", "").replace("for epoch", early)
    assert found(before.rsplit("model.load_state_dict", 1)[0], TorchLoadWithoutMapLocation) == [7]


@pytest.mark.parametrize("miss, reported", [
    ("corpus = build()\n    torch.save(corpus, fn)", False),  # a cache of data
    ("corpus = build()\n    torch.save(corpus, other)", True),  # writes another file
    ("corpus = train(model)\n    torch.save(model.state_dict(), fn)", True),  # weights trained on a miss
])
def test_tdv201_a_cache_written_on_a_miss_is_a_round_trip(miss, reported):
    source = (
        "import os\nimport torch\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        f"if os.path.exists(fn):\n    corpus = torch.load(fn)\nelse:\n    {miss}\n"
    )
    assert found(source, TorchLoadWithoutMapLocation) == ([5] if reported else [])
    loaded_into_model = source.replace("corpus = torch.load(fn)", "model.load_state_dict(torch.load(fn))")
    assert found(loaded_into_model, TorchLoadWithoutMapLocation) == [5]


@pytest.mark.parametrize("after, reported", [
    ("vectors = build()\n    torch.save(vectors, fn)", False),  # the cache written after an early return
    ("if vectors is None:\n        vectors = build()\n    torch.save(vectors, fn)", False),  # nested later
    ("model = train()\n    torch.save(model.state_dict(), fn)", True),  # weights: another run's checkpoint
    ("vectors = build()\n    torch.save(vectors, other)", True),  # another file
])
def test_tdv201_a_cache_written_later_in_its_scope_is_a_round_trip(after, reported):
    # ``if os.path.isfile(fn): return torch.load(fn)``, then the miss builds and saves:
    # not only an ``else`` writes the cache the test checks.
    source = (
        "import os\nimport torch\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n\n\n"
        "def load_vectors(fn, other, build, train):\n    vectors = None\n"
        f"    if os.path.isfile(fn):\n        return torch.load(fn)\n    {after}\n    return vectors\n"
    )
    assert found(source, TorchLoadWithoutMapLocation) == ([9] if reported else [])


@pytest.mark.parametrize("launcher, reported", [
    ("from accelerate import Accelerator\nACC = Accelerator()\n", True),
    ("import accelerate\nACC = accelerate.Accelerator(cpu=False)\n", True),
    ("from lightning.fabric import Fabric\nFABRIC = Fabric()\n", True),
    ("from mylib import Accelerator\nACC = Accelerator()\n", False),  # not Accelerate's
    ("ACC = None\n", False),
])
def test_tdv201_a_launcher_of_one_process_per_gpu_is_evidence(launcher, reported):
    # A class that saves its own file: silent unless the module meets another machine.
    trainer = (
        "import torch\n\n\nclass Trainer:\n    def save(self, path):\n        torch.save({}, path)\n\n"
        "    def load(self, path):\n        return torch.load(path)\n"
    )
    source = launcher + trainer
    load_line = source.split("\n").index("        return torch.load(path)") + 1
    assert found(source, TorchLoadWithoutMapLocation) == ([load_line] if reported else [])


@pytest.mark.parametrize("device, fixed", [
    ('"gpu"', '"cuda"'),
    ("'GPU:1'", None),  # "cuda:1" would hard-code an ordinal (TDV401): the author's call
    ('"Cuda"', '"cuda"'),
    ('"cuda0"', None),
    ('"cpu1"', '"cpu:1"'),
    ('"XPU:0"', '"xpu:0"'),
    ('"gpu:%d" % rank', None),  # templates are reported without a fix
    ('f"GPU:{rank}"', None),
    ('"cpu "', '"cpu"'),  # a space: torch rejects the whole string
    ('"cuda: 0"', None),  # the meant "cuda:0" names an ordinal: the author's call
    ('"gpu: 1"', None),
    ('f"cuda: {rank}"', None),
])
def test_tdv106_reports_and_fixes_device_strings_torch_cannot_parse(device, fixed):
    source = f"import torch\nrank = 0\nx = torch.ones(2).to({device})\n"
    assert found(source, InvalidDeviceType) == [3]
    expected = source.replace(device, fixed) if fixed else source
    assert fix_source(source) == expected


@pytest.mark.parametrize("device", [
    '"cuda:0"', '"cpu"', '"meta"', '"npu:0"', '"musa"', 'f"{kind}:{rank}"', '"%s:0" % kind', "args.device",
    # torch rejects these too, but no word of the source gives them away cheaply (the rule's page)
    '"cuda:x"', 'f"cuda{rank}"', '"cUDA"',
    '"npu: 0"',  # a space, in a type a backend registers: no word gives it away
])
def test_tdv106_leaves_parsable_and_unknowable_devices(device):
    source = f"import torch\nkind, rank = 'cpu', 0\nx = torch.zeros(2, device={device})\ny = torch.device({device})\n"
    assert found(source, InvalidDeviceType) == []


def test_tdv106_reads_only_device_positions():
    source = 'import torch\nlabel = "GPU"\nopts = {"device": "gpu"}\nprint("cuda0")\nx = torch.ones(2).sum("gpu")\n'
    assert found(source, InvalidDeviceType) == []


@pytest.mark.parametrize(
    "shown, reported",
    [
        ('print("visible GPUs:", args.gpu_id)', False),
        ('logger.info("GPU %s", args.gpu_id)', False),
        ('logger.warning(f"rank {args.local_rank}")', True),  # a rank shown: there are processes
        ('print(os.environ["LOCAL_RANK"])', True),
        ("torch.cuda.set_device(int(os.environ['LOCAL_RANK']))", True),
        ("model = DDP(model, device_ids=[args.gpu_id])", True),
    ],
)
def test_tdv201_a_gpu_id_that_is_only_shown_is_no_gpu_per_process(shown, reported):
    # A CUDA-only function (an unguarded .cuda()) loads where its GPU is, unless processes run
    # one per GPU; a GPU id printed or logged chooses nothing.
    source = (
        "import logging\nimport os\nimport torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "logger = logging.getLogger()\n\n\n"
        "def main(args, model):\n    model = model.cuda()\n"
        f"    {shown}\n    model.load_state_dict(torch.load(args.resume))\n"
    )
    lines = found(source, TorchLoadWithoutMapLocation)
    assert bool(lines) is reported


@pytest.mark.parametrize(
    "choice",
    [
        "model.cuda(args.gpu_id)",
        "model = nn.DataParallel(model, device_ids=[args.gpu_id]).cuda()",
        "model = nn.DataParallel(model, device_ids=args.device_ids).cuda()",
        'device = torch.device("cuda:{:d}".format(cfg.gpu_id))\n    model = model.cuda(device=device)',
        'os.environ["CUDA_VISIBLE_DEVICES"] = str(args.local_rank)',
    ],
)
def test_tdv201_a_gpu_id_is_one_process_choosing_its_gpu(choice):
    """A GPU's id says where one process runs (as ``set_device(args.gpu)`` does): a CUDA-only
    function's load reads a file saved from ``cuda:0`` wherever it runs. Only a rank makes
    processes per GPU."""
    source = (
        "import os\nimport torch\nfrom torch import nn\n\n\n"
        "def main(args, cfg, model):\n    model = model.cuda()\n"
        f"    {choice}\n    model.load_state_dict(torch.load(args.resume))\n"
    )
    assert found(source, TorchLoadWithoutMapLocation) == []
    pinned = "    torch.cuda.set_device(args.local_rank)\n    model.load_state_dict"
    ranked = source.replace("    model.load_state_dict", pinned)
    assert found(ranked, TorchLoadWithoutMapLocation) == [ranked.count("\n")]


@pytest.mark.parametrize(
    "question, reported",
    [
        ("print(torch.cuda.is_available())", False),
        ("torch.cuda.is_available()", False),  # a notebook cell's shown value
        ('logger.info("CUDA: %s", torch.cuda.is_available())', False),
        ('print("running on", "cuda" if torch.cuda.is_available() else "cpu")', False),
        ('logger.info("device: %s", "cpu")', False),
        ("use_gpu = torch.cuda.is_available()", True),  # asked and kept: the script branches on it
        ('if torch.cuda.is_available():\n    print("GPU")', True),
    ],
)
def test_tdv201_a_cuda_question_only_shown_is_no_cpu_path(question, reported):
    """A script that prints whether CUDA is there and then needs it (an unguarded ``.cuda()``)
    has no CPU path: its load reads where the GPU is."""
    source = (
        "import logging\nimport torch\nlogger = logging.getLogger()\n"
        f"{question}\n"
        "model = torch.nn.Linear(2, 2)\nmodel.load_state_dict(torch.load(\"model.pth\"))\n"
        "batch = torch.ones(2).cuda()\n"
    )
    lines = found(source, TorchLoadWithoutMapLocation)
    assert bool(lines) is reported
    # The loaded model itself put on CUDA unguarded: GPU code, whatever the script asked.
    assert found(source.replace("batch = torch.ones(2)", "model"), TorchLoadWithoutMapLocation) == []


@pytest.mark.parametrize("full", [False, True])
def test_tdv201_reads_a_library_path_and_a_rank_file_through_file_objects(full):
    """A file object is its path: a library function reading its caller's path through
    ``with open(path, "rb") as f`` loads a user's checkpoint (reported, as ``torch.load(path)`` is);
    a per-rank file written and read back through file objects is each process's own (not)."""
    source = """\
        import torch
        def load_weights(model, path):
            with open(path, "rb") as f:
                state = torch.load(f)
            model.load_state_dict(state)
        def load_queue(args, queue):
            name = "queue" + str(args.rank) + ".pth"
            if queue is None:
                with open(name, "rb") as f:
                    queue = torch.load(f)
            with open(name, "wb") as f:
                torch.save(queue, f)
        """
    assert _in(source, "lib.py", full) == [4]


@pytest.mark.parametrize("full", [False, True])
def test_tdv201_a_cache_written_through_file_objects_is_still_a_cache(full):
    """``if os.path.exists(p): with open(p, "rb") as f: x = torch.load(f)`` / ``else: ...; with
    open(p, "wb") as f: torch.save(x, f)`` reads back data this code writes on a miss; a cache of a
    model's weights (``net.state_dict()``) is another run's checkpoint and stays reported."""
    source = """\
        import os
        import torch
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        def features(path, compute):
            if os.path.exists(path):
                with open(path, "rb") as f:
                    feats = torch.load(f)
            else:
                feats = compute()
                with open(path, "wb") as f:
                    torch.save(feats, f)
            return feats
        def weights(path, train):
            if os.path.exists(path):
                with open(path, "rb") as f:
                    net = torch.load(f)
            else:
                net = train()
                with open(path, "wb") as f:
                    torch.save(net.state_dict(), f)
            return net
        """
    assert _in(source, "cache.py", full) == [16]


@pytest.mark.parametrize("pinned, reported", [
    ("torch.cuda.set_device(args.local_rank)", True),  # one process per GPU
    ("torch.cuda.set_device(rank)", True),
    ("torch.cuda.set_device(args.gpu)", False),  # one process choosing its GPU: cuda:0 exists
])
@pytest.mark.parametrize("full", [False, True])
def test_tdv201_set_device_is_a_process_per_gpu_only_with_a_rank(pinned, reported, full):
    source = f"""\
        import torch
        def main(args, rank, model):
            assert torch.cuda.is_available()
            {pinned}
            model.load_state_dict(torch.load("checkpoint.pth"))
        """
    assert _in(source, "train.py", full) == ([5] if reported else [])


_SCRIPT = """\
    import argparse
    import torch
    def load_model(checkpoint):
        return torch.load(checkpoint)
    def run(args):
        model = load_model(args.ckpt)
        return model(args.x)
    def library_load(path):
        return torch.load(path)
    if __name__ == "__main__":
        parser = argparse.ArgumentParser()
        args = parser.parse_args()
        {device}run(args)
    """


@pytest.mark.parametrize("device, reported", [
    ('device = "cuda"\n        ', [9]),  # the script chose a GPU; library_load stays a library's
    ("", [4, 9]),  # a script that never names a GPU runs on the CPU, where a GPU's checkpoint fails
    ('device = "cuda" if torch.cuda.is_available() else "cpu"\n        ', [4, 9]),  # a CPU path
])
@pytest.mark.parametrize("full", [False, True])
def test_tdv201_a_function_the_script_runs_loads_what_the_script_names(device, reported, full):
    """A path reaching a function through parameters is a library's user's, unless the file's own
    ``__main__`` runs that function (directly or through another function): then the script names
    it, and the script's evidence decides."""
    assert _in(_SCRIPT.replace("{device}", device), "sample.py", full) == reported


_SCRIPT_AT_IMPORT = """\
    import argparse
    import torch
    def load_model(checkpoint):
        return torch.load(checkpoint)
    def convert(path):
        return torch.load(path)
    parser = argparse.ArgumentParser()
    {parse}
    {device}
    model = load_model(args.ckpt)
    """


@pytest.mark.parametrize("parse, device, reported", [
    # a file that reads its command line at import is a script, never a library: every function of it
    # is the script's, called or not, so the script's evidence decides
    ("args = parser.parse_args()", 'model_device = "cuda"', []),
    ("args, unknown = parser.parse_known_args()", 'model_device = "cuda"', []),
    ("args = parser.parse_known_args()[0]", 'model_device = "cuda"', []),
    ("args = parser.parse_args()", "", [4, 6]),  # a script that never names a GPU runs on the CPU
    ("args = parser.parse_args()", 'model_device = "cuda" if torch.cuda.is_available() else "cpu"', [4, 6]),
    # no command line read at import: an importable module, whose functions' paths are their callers'
    ("args = get_args()", 'model_device = "cuda"', [4, 6]),
    ('if __name__ == "__main__":\n        args = parser.parse_args()', 'model_device = "cuda"', [4, 6]),
])
@pytest.mark.parametrize("full", [False, True])
def test_tdv201_a_file_that_reads_its_command_line_at_import_is_a_script(parse, device, reported, full):
    source = _SCRIPT_AT_IMPORT.replace("{parse}", parse).replace("{device}", device)
    assert _in(source, "student.py", full) == reported


_CLASS_LOG = """\
    import os
    import torch
    DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    class Loss:
        def __init__(self):
            self.log = torch.zeros(1, 3)
        def plot(self):
            return {read}
        def save(self, apath):
            torch.save(self.log, os.path.join(apath, "loss_log.pt"))
            torch.save(self.state, os.path.join(apath, "loss.pt"))
        def load(self, apath):
            self.log = torch.load(os.path.join(apath, "loss_log.pt"))
            self.state = torch.load(os.path.join(apath, "loss.pt"))
    """


@pytest.mark.parametrize("read, reported", [
    ("self.log[:, 0].numpy()", [14]),  # read with .numpy(): the log is a CPU tensor, so is its file
    ("self.log.data.numpy()", [14]),
    ("self.log.cpu().numpy()", [13, 14]),  # says nothing of where the log lives
    ("self.state.numpy()", [13]),  # another attribute read with .numpy(): that one's file
])
@pytest.mark.parametrize("full", [False, True])
def test_tdv201_an_attribute_read_with_numpy_is_saved_from_the_cpu(read, reported, full):
    assert _in(_CLASS_LOG.replace("{read}", read), "loss.py", full) == reported


_FALLBACK = """\
    import torch
    DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    def load_checkpoint(net, filename, other):
        try:
            checkpoint = torch.load({tried}, map_location="cpu")
        except Exception:
            print("a legacy file: loading it on the device it was saved from")
            checkpoint = torch.load(filename)
        net.load_state_dict(checkpoint["model"])
    """


@pytest.mark.parametrize("tried, reported", [
    ("filename", []),  # the mapped load failed: the saved device, on purpose, for a legacy file
    ("other", [8]),  # another file mapped: this one is not
])
@pytest.mark.parametrize("full", [False, True])
def test_tdv201_a_fallback_after_the_same_file_mapped_is_deliberate(tried, reported, full):
    assert _in(_FALLBACK.replace("{tried}", tried), "common.py", full) == reported


def test_tdv201_a_load_in_the_try_body_is_safe_where_the_handler_maps_the_same_file():
    # the reverse of the fallback above: the unmapped load raises where the saving GPU is missing, and
    # ``except Exception`` loads it mapped (this load was reported until v132's first read)
    mapped = 'checkpoint = torch.load(filename, map_location="cpu")\n        net'
    source = _FALLBACK.replace('torch.load({tried}, map_location="cpu")', "torch.load(filename)").replace(
        "checkpoint = torch.load(filename)\n        net", mapped)
    assert 'map_location="cpu")\n        net' in source
    assert _in(source, "common.py") == []
    assert _in(source.replace("except Exception:", "except KeyError:"), "common.py") == [5]


_TRIED = """\
    import torch
    DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    def partial_load(net, saved_path):
        state = torch.load(saved_path, map_location="cpu")
        net.load_state_dict(state, strict=False)
        return net
    def load_weights(net, path, other):
        try:
            net.load_state_dict(torch.load(path))
        except {caught}:
            {handler}
        return net.to(DEVICE)
    """


@pytest.mark.parametrize("caught, handler, reported", [
    # where the saving GPU is missing the load raises, and the handler loads the same file mapped
    ("Exception", "net = partial_load(net, path)", []),
    ("Exception", 'net.load_state_dict(torch.load(path, map_location="cpu"))', []),
    ("(OSError, RuntimeError)", "net = partial_load(net, path)", []),
    ("BaseException", "net = partial_load(net, path)", []),
    ("Exception", "net = partial_load(net, other)", [9]),  # another file mapped
    ("Exception", "net = partial_load(path, net)", [9]),  # the helper maps its second parameter, not this
    ("FileNotFoundError", "net = partial_load(net, path)", [9]),  # the load's RuntimeError passes it by
    ("Exception", 'net.load_state_dict(torch.load(path, map_location=None))', [9, 11]),
])
@pytest.mark.parametrize("full", [False, True])
def test_tdv201_a_load_whose_handler_loads_it_mapped_is_safe(caught, handler, reported, full):
    source = _TRIED.replace("{caught}", caught).replace("{handler}", handler)
    assert _in(source, "weights.py", full) == reported


def test_tdv201_a_bare_except_catches_the_load():
    source = _TRIED.replace("except {caught}:", "except:").replace("{handler}", "net = partial_load(net, path)")
    assert _in(source, "weights.py") == []


_LOCAL_SPLITS = """\
    import os
    import torch
    DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    def save_splits(train, val, root):
        torch.save(train, os.path.join(root, f"train_{VERSION}.pt"))
        torch.save(val, os.path.join(root, f"val_{VERSION}.pt"))
        counts = {read}
    def load_splits(root):
        train = torch.load(os.path.join(root, f"train_{VERSION}.pt"))
        val = torch.load(os.path.join(root, f"val_{VERSION}.pt"))
        return train, val
    """


@pytest.mark.parametrize("read, reported", [
    ("train[6].numpy()", [10]),  # the saved value read with .numpy() in its scope: CPU tensors, so is its file
    ("train.data.numpy()", [10]),
    ("train.cpu().numpy()", [9, 10]),  # says nothing of where the splits live
    ("len(train)", [9, 10]),
])
@pytest.mark.parametrize("full", [False, True])
def test_tdv201_a_local_value_saved_and_read_with_numpy_is_saved_from_the_cpu(read, reported, full):
    assert _in(_LOCAL_SPLITS.replace("{read}", read), "splits.py", full) == reported


def test_tdv201_a_value_read_with_numpy_in_another_scope_says_nothing():
    source = _LOCAL_SPLITS.replace("{read}", "0").replace(
        "    def load_splits", "    def count(train):\n        return train[6].numpy()\n    def load_splits")
    assert _in(source, "splits.py", False) == [11, 12] == _in(source, "splits.py", True)


@pytest.mark.parametrize("line, fixed", [
    ("model = model.cpu", "model = model.cpu()"),
    ("self.net = self.net.cuda", "self.net = self.net.cuda()"),
    ("net.cuda", "net.cuda()"),  # a statement that does nothing
    ("nn.Linear(2, 2).cuda", "nn.Linear(2, 2).cuda()"),  # reported once, as a statement and a built module
    ("wrapped = nn.DataParallel(net).cuda", "wrapped = nn.DataParallel(net).cuda()"),
    ("ready = net.eval().to", "ready = net.eval().to()"),
    ("x = torch.zeros(3).cuda", "x = torch.zeros(3).cuda()"),
])
def test_tdv111_reports_and_fixes_a_move_named_without_a_call(line, fixed):
    source = f"import torch\nfrom torch import nn\n\n\ndef f(self, model, net):\n    {line}\n"
    assert found(source, MoveNotCalled) == [6]
    assert fix_source(source, unsafe=True) == source.replace(line, fixed)


@pytest.mark.parametrize("line", [
    "use = args.cuda", "if self.cuda:\n        pass", "available = torch.cuda", "torch.cuda",
    "to_cpu = tensor.cpu", "moved = list(map(torch.Tensor.cpu, batch))", "wants = options().cuda",
    "model = model.cpu()", "model.cuda()", "run(fn=model.cuda)",
])
def test_tdv111_leaves_flags_modules_and_references(line):
    source = f"import torch\n\n\ndef f(self, args, tensor, batch, model, options, run):\n    {line}\n"
    assert found(source, MoveNotCalled) == []


@pytest.mark.parametrize(
    "function, reported",
    [
        ("def resnet50(pretrained=False, root='~/.torch/models'):\n    net = Net()\n    if pretrained:\n"
         "        net.load_state_dict(torch.load(get_model_file('resnet50', root=root)))\n    return net", False),
        ("def init_weights(self, pretrained=''):\n    state = torch.load(pretrained)\n    return state", False),
        ("def build(weight_path, use_pretrain=True):\n    return torch.load(weight_path)['model']", False),
        # A caller's checkpoint in a function that names no pretrained weights: still a library load.
        ("def load_model(net, path):\n    net.load_state_dict(torch.load(path))\n    return net", True),
        # A script's ``if args.pretrained:`` is no model zoo: its own checkpoint, on a machine with a CPU path.
        ("def main(args):\n    if args.pretrained:\n        net.load_state_dict(torch.load(args.pretrained))\n"
         "    device = 'cuda' if torch.cuda.is_available() else 'cpu'", True),
    ],
)
def test_tdv201_a_model_zoos_pretrained_weights_are_left_alone(function, reported):
    source = "import torch\n\n\n" + function + "\n"
    assert bool(found(source, TorchLoadWithoutMapLocation)) is reported


# A helper with a CPU path (the module asks whether CUDA is there), a class loading weights, then module code.
_CUDA_ONLY_HEAD = (
    "import torch\n"
    "def batch(x):\n"
    "    return x.cuda() if torch.cuda.is_available() else x\n"
    "class Net(torch.nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.load_state_dict(torch.load('net.pt'))\n"
)


@pytest.mark.parametrize(
    ("module_code", "reported"),
    [
        # Module code places on CUDA unconditionally and never branches on it: no machine without a GPU imports it.
        ("DEVICE = torch.device('cuda')\nmodel = Net().to(DEVICE)\n", False),
        ("model = Net().cuda()\n", False),
        ("model = Net()\nmodel.to('cuda:1')\n", False),
        ("model = Net()\nwith torch.no_grad():\n    out = model(torch.ones(2).cuda())\n", False),
        ("model = Net().to(device=torch.device('cuda', 0))\n", False),
        # A CUDA branch in module code: the unguarded `.cuda()` beside it breaks a CPU path (TDV101's mistake).
        ("use_gpu = torch.cuda.is_available()\nmodel = Net()\nif use_gpu:\n    model = model.cuda()\n"
         "x = torch.ones(2).cuda()\n", True),
        ("DEVICE = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\nmodel = Net().cuda()\n", True),
        ("DEVICE = 'cpu'\nmodel = Net().cuda()\n", True),
        # A branch or CPU choice only after the placement is never reached without a GPU: the placement fails first.
        ("model = Net().cuda()\nif torch.cuda.device_count() > 1:\n    model = torch.nn.DataParallel(model)\n", False),
        ("DEVICE = torch.device('cuda')\nmodel = Net().to(DEVICE)\nfor x in data:\n"
         "    if torch.cuda.is_available():\n        x = x.cuda()\n", False),
        ("model = Net().cuda()\nmodel.to('cpu')\n", False),
        ("if args.cuda:\n    torch.cuda.manual_seed(1)\nmodel = Net().cuda()\n", True),
        # A branch that picks which GPUs, or a loader backend named for one, places nothing: no CPU path.
        ("if args.gpus is not None:\n    devices = args.gpus\nelse:\n    devices = [0]\n"
         "model = torch.nn.DataParallel(Net().cuda(devices[0]), device_ids=devices)\n", False),
        ("if args.backend == 'dali-gpu':\n    loader = dali_loader\nmodel = Net().cuda()\n", False),
        ("if args.gpus is not None:\n    model = Net().cuda(args.gpus[0])\nmodel = Net().cuda()\n", True),
        # A result taken off the GPU is no CPU choice.
        ("model = Net().cuda()\nprint(model(torch.ones(2).cuda()).to('cpu'))\n", False),
        # Placements that may not run, or not on CUDA.
        ("model = Net().cuda() if use_gpu else Net()\n", True),
        ("for model in [Net()]:\n    model.cuda()\n", True),
        ("DEVICE = torch.device('cuda')\nDEVICE = torch.device('cpu')\nmodel = Net().to(DEVICE)\n", True),
        ("model = Net().to(args.device)\n", True),
        # Processes per GPU meet other GPUs whatever the module requires.
        ("rank = int(os.environ['LOCAL_RANK'])\nmodel = Net().cuda()\n", True),
    ],
)
def test_tdv201_module_code_that_requires_cuda(module_code, reported):
    source = _CUDA_ONLY_HEAD + module_code
    assert found(source, TorchLoadWithoutMapLocation) == ([7] if reported else [])


def test_tdv201_a_main_block_that_requires_cuda():
    source = (
        "import torch\n"
        "device = torch.device('cuda:0' if torch.cuda.is_available() else 'cpu')\n"
        "def evaluate(model):\n"
        "    model.load_state_dict(torch.load('best.pt'))\n"
        "if __name__ == '__main__':\n"
        "    model = torch.nn.Linear(2, 2)\n"
        "    model = model.cuda()\n"
        "    model.load_state_dict(torch.load('model.pt'))\n"
    )
    # The block cannot run without a GPU; the function, which another script may import, still can.
    assert found(source, TorchLoadWithoutMapLocation) == [4]
    guarded = source.replace("    model = model.cuda()\n", "    if torch.cuda.is_available():\n"
                             "        model = model.cuda()\n")
    assert found(guarded, TorchLoadWithoutMapLocation) == [4, 9]


@pytest.mark.parametrize(
    ("block", "reported"),
    [
        # The block places first; its GPU-count branch is reached only where a GPU is.
        ("    model = model.cuda()\n    if torch.cuda.device_count() > 1:\n        model = nn.DataParallel(model)\n",
         False),
        # A CPU option read before the placement: the unguarded `.cuda()` breaks that path, and so does the load.
        ("    if args.no_cuda:\n        print('no GPU')\n    batch = torch.ones(2).cuda()\n", True),
        # So does one that places the model the load fills: the module chooses its device (CUDA or the CPU).
        ("    if args.no_cuda:\n        print('no GPU')\n    model = model.cuda()\n", True),
    ],
)
def test_tdv201_a_main_blocks_cpu_path_counts_only_before_its_placement(block, reported):
    source = (
        "import torch\n"
        "device = torch.device('cuda:0' if torch.cuda.is_available() else 'cpu')\n"
        "if __name__ == '__main__':\n"
        "    model = torch.nn.Linear(2, 2)\n"
        "    model.load_state_dict(torch.load('model.pt'))\n"
    ) + block
    assert found(source, TorchLoadWithoutMapLocation) == ([5] if reported else [])


_RUN = """\
import os
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
encoder_file = os.path.join(args.save_folder, "encoder.pt")

def train(best):
    if best:
        torch.save(encoder.state_dict(), encoder_file)
    save_all()

def save_all():
    torch.save(model, os.path.join(args.work_dir, 'model.pt'))

def test():
    encoder.load_state_dict(torch.load(encoder_file))

def restore(path):
    return torch.load(path)

{order}
with open(os.path.join(args.work_dir, "model.pt"), "rb") as f:
    model = torch.load(f)
restore(encoder_file)
"""


@pytest.mark.parametrize(
    ("order", "lines"),
    [
        # test() and the module's own load run after train() wrote their files in this run: one machine.
        ("for epoch in range(9):\n    train(True)\ntest()", [18]),
        # test() runs once before any save: it may read another run's file; so may the module's load.
        ("test()\nfor epoch in range(9):\n    train(True)\ntest()", [15, 18]),
        ("test()", [15, 18, 22]),
        # A function another function calls may run anywhere.
        ("def main():\n    test()\ntrain(True)\nmain()", [15, 18]),
    ],
)
def test_tdv201_a_file_read_back_in_the_run_that_wrote_it(order, lines):
    assert found(_RUN.format(order=order), TorchLoadWithoutMapLocation) == lines


_ENTRY = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

def keep_best(model, epochs):
    for epoch in range(epochs):
        torch.save(model.state_dict(), "best_model.pth")

def main():
{body}

{call}
"""


@pytest.mark.parametrize(("body", "call", "lines"), [
    # main(), which module code runs, loads the file its own call of keep_best() has just written
    ("    model = Net().to(device)\n    keep_best(model, 9)\n    model.load_state_dict(torch.load('best_model.pth'))",
     "main()", []),
    ("    model = Net().to(device)\n    keep_best(model, 9)\n    model.load_state_dict(torch.load('other.pth'))",
     "main()", [11]),
    # loaded before the call that writes it: another run's file
    ("    model = Net().to(device)\n    model.load_state_dict(torch.load('best_model.pth'))\n    keep_best(model, 9)",
     "main()", [10]),
    # a function other code calls may run anywhere
    ("    keep_best(model, 9)\n    model.load_state_dict(torch.load('best_model.pth'))",
     "def cli():\n    main()", [10]),
])
def test_tdv201_an_entry_point_reads_back_what_its_own_calls_wrote(body, call, lines):
    assert found(_ENTRY.format(body=body, call=call), TorchLoadWithoutMapLocation) == lines


@pytest.mark.parametrize(
    ("saves", "reported"),
    [
        # Each save reads the handle of the `with` it sits in: the same name `f` opened twice, model.pt first.
        ("    with open(os.path.join(args.work_dir, 'model.pt'), 'wb') as f:\n        torch.save(model, f)\n"
         "    with open(os.path.join(args.work_dir, 'optimizer.pt'), 'wb') as f:\n        torch.save(opt, f)\n", []),
        ("    with open(os.path.join(args.work_dir, 'optimizer.pt'), 'wb') as f:\n        torch.save(opt, f)\n"
         "    with open(os.path.join(args.work_dir, 'model.pt'), 'wb') as f:\n        torch.save(model, f)\n", []),
        # Only optimizer.pt written: model.pt may come from another run.
        ("    with open(os.path.join(args.work_dir, 'optimizer.pt'), 'wb') as f:\n        torch.save(opt, f)\n", [10]),
    ],
)
def test_tdv201_a_reused_file_handle_name_saves_to_the_file_its_own_with_opened(saves, reported):
    source = (
        "import os\nimport torch\n"
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "def save_all():\n" + saves + "save_all()\n"
        "with open(os.path.join(args.work_dir, 'model.pt'), 'rb') as f:\n    model = torch.load(f)\n"
    )
    lines = source.splitlines()
    expected = [lines.index("    model = torch.load(f)") + 1] if reported else []
    assert found(source, TorchLoadWithoutMapLocation) == expected


@pytest.mark.parametrize(
    ("body", "reported"),
    [
        # A branch beside one that downloads published weights reads a local copy of them.
        ("if os.path.isfile(path):\n        w = torch.load(path)\n    else:\n        w = load_url(URL)", False),
        ("if not os.path.isfile(path):\n        w = model_zoo.load_url(URL)\n    else:\n        w = torch.load(path)",
         False),
        ("if name.endswith('.pth'):\n        w = torch.load(path)\n    elif name in URLS:\n"
         "        w = torch.hub.load_state_dict_from_url(URLS[name])", False),
        ("w = torch.load(path) if os.path.isfile(path) else load_url(URL)", False),
        # No download beside it, or one in the same branch: the file may be anything the caller saved.
        ("if os.path.isfile(path):\n        w = torch.load(path)\n    else:\n        w = None", True),
        ("if os.path.isfile(path):\n        w = torch.load(path)\n        extra = load_url(URL)", True),
        ("w = torch.load(path)\n    extra = load_url(URL)", True),
    ],
)
def test_tdv201_a_local_copy_of_published_weights_beside_their_download(body, reported):
    source = (
        "import os\nimport torch\nfrom torch.utils import model_zoo\nfrom torch.hub import load_url\n"
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "def weights(path, name):\n    " + body + "\n    return w\n"
    )
    load = _load_line(source)
    assert found(source, TorchLoadWithoutMapLocation) == ([load] if reported else [])


@pytest.mark.parametrize(
    ("call", "body", "reported"),
    [
        # The parameter reads as the module name the call passes: the script reads back what trainer() saved.
        ("trainer(model, config)", "", False),
        ("trainer(model, config=config)", "", False),
        # Another name passed, or the parameter rebound in the body: the path may be anything.
        ("trainer(model, other)", "", True),
        ("trainer(model, config)", "    config = load_config()\n", True),
        ("trainer(*jobs)", "", True),
    ],
)
def test_tdv201_a_parameter_given_a_module_name_reads_as_that_name_in_the_run(call, body, reported):
    source = (
        "import torch\n"
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "def trainer(model, config):\n" + body + "    torch.save(model.state_dict(), config['save_path'])\n"
        "if __name__ == '__main__':\n"
        "    config = {'save_path': 'models/model.ckpt'}\n"
        f"    {call}\n"
        "    model.load_state_dict(torch.load(config['save_path']))\n"
    )
    load = len(source.splitlines())
    assert found(source, TorchLoadWithoutMapLocation) == ([load] if reported else [])


@pytest.mark.parametrize(
    ("binding", "saved", "reported"),
    [
        # A local bound once to a string literal reads as that string: the script reads back what save_best() saved.
        ("    save_dir = '../models/dino/'\n", "f'{save_dir}{dataset}_best.pth'", False),
        ("    save_dir = '../models/dino/'\n", "save_dir + dataset + '_best.pth'", True),  # another spelling
        ("    save_dir = '../models/'\n", "f'{save_dir}{dataset}_best.pth'", True),  # another file
        # Bound twice, or a parameter rebound: the path may be anything.
        ("    save_dir = '../models/dino/'\n    if full:\n        save_dir = '../models/full/'\n",
         "f'{save_dir}{dataset}_best.pth'", True),
        ("    dataset = 'CIFAR'\n    save_dir = '../models/dino/'\n", "f'{save_dir}{dataset}_best.pth'", True),
    ],
)
def test_tdv201_a_local_string_constant_in_a_save_path_reads_as_its_string(binding, saved, reported):
    source = (
        "import torch\n"
        "dataset = 'MNIST'\n"
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "def save_best(model, full=False):\n" + binding + f"    torch.save(model.state_dict(), {saved})\n"
        "save_best(model)\n"
        "state = torch.load(f'../models/dino/{dataset}_best.pth')\n"
    )
    load = len(source.splitlines())
    assert found(source, TorchLoadWithoutMapLocation) == ([load] if reported else [])


def test_tdv201_two_handles_of_one_name_on_one_line_are_read_without_error():
    # Two items of one `with` bind the same name: the later one is the file the save writes.
    source = (
        "import torch\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "def train(model):\n    with open('a.pt', 'wb') as f, open('b.pt', 'wb') as f:\n        torch.save(model, f)\n"
        "train(1)\nwith open('b.pt', 'rb') as g:\n    m = torch.load(g)\n"
    )
    assert found(source, TorchLoadWithoutMapLocation) == []


@pytest.mark.parametrize(
    ("code", "reported"),
    [
        # The other branch of the `if` that saves runs only when this run saved nothing: an earlier run's file.
        ("if not os.path.exists(vae_file):\n    fit(vae, vae_file)\nelse:\n"
         "    vae.load_state_dict(torch.load(vae_file))", True),
        ("state = fit(vae, vae_file) if not os.path.exists(vae_file) else torch.load(vae_file)", True),
        # After the `if`, or in the same branch: the file this run may just have written.
        ("if not os.path.exists(vae_file):\n    fit(vae, vae_file)\nvae.load_state_dict(torch.load(vae_file))", False),
        ("if retrain:\n    fit(vae, vae_file)\n    vae.load_state_dict(torch.load(vae_file))", False),
    ],
)
def test_tdv201_a_save_counts_only_for_code_that_can_run_after_it(code, reported):
    source = (
        "import os\nimport torch\n"
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "vae_file = 'vae.pt'\n"
        "def fit(model, path):\n    torch.save(model.state_dict(), path)\n" + code + "\n"
    )
    load = _load_line(source)
    assert found(source, TorchLoadWithoutMapLocation) == ([load] if reported else [])


def test_tdv201_a_function_local_path_is_no_run_round_trip():
    source = (
        "import torch\n"
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "def train():\n"
        "    path = 'best.pt'\n"
        "    torch.save(model, path)\n"
        "def test(path):\n"
        "    return torch.load(path)\n"
        "train()\n"
        "test(args.checkpoint)\n"
    )
    assert found(source, TorchLoadWithoutMapLocation) == [7]


@pytest.mark.parametrize(
    ("exit_test", "exit_body", "reported"),
    [
        # The code after an early exit on the CPU (or without CUDA) runs where a GPU is.
        ("device == torch.device('cpu')", "return torch.load(path, map_location='cpu')", False),
        ("device.type == 'cpu'", "return None", False),
        ("not torch.cuda.is_available()", "raise RuntimeError('needs a GPU')", False),
        ("not args.cuda", "sys.exit(1)", False),
        # An exit that runs where the GPU is, or a branch that falls through, leaves the CPU path.
        ("device.type == 'cuda'", "return torch.load(path)", True),
        ("device == 'cpu'", "print('on the CPU')", True),
        ("fast", "return None", True),
    ],
)
def test_tdv201_after_an_early_exit_off_the_cpu(exit_test, exit_body, reported):
    source = DEVICE_HEAD + (
        "def load(path):\n"
        f"    if {exit_test}:\n"
        f"        {exit_body}\n"
        "    state = torch.load(path)\n"
        "    return state\n"
    )
    last = source.count("\n") - 1
    for full in (False, True):
        result = check_source(source, rules=(TorchLoadWithoutMapLocation,), strict=True, full=full)
        assert [v.line for v in result.violations if v.line == last] == ([last] if reported else [])


@pytest.mark.parametrize(
    ("branch", "reported"),
    [
        # The CPU path leaves before the load: only a machine with CUDA reaches it.
        ("    if use_gpu:\n        model = model.cuda()\n    else:\n        print('no CUDA')\n        return\n",
         False),
        ("    if torch.cuda.is_available():\n        model.cuda()\n    else:\n        raise SystemExit('no GPU')\n",
         False),
        # The CPU path goes on to the load, or only an elif leaves: the load may run without a GPU.
        ("    if use_gpu:\n        model = model.cuda()\n    else:\n        print('running on the CPU')\n", True),
        ("    if use_gpu:\n        model = model.cuda()\n    elif args.strict:\n        return\n", True),
        # A branch on something else leaving says nothing about the machine.
        ("    if args.arch:\n        model = build(args.arch)\n    else:\n        return\n", True),
    ],
)
def test_tdv201_a_cuda_branch_whose_else_leaves_before_the_load(branch, reported):
    source = (
        "import torch\n"
        "def main(args, model):\n"
        "    use_gpu = torch.cuda.is_available()\n" + branch +
        "    checkpoint = torch.load(args.resume)\n"
        "    model.load_state_dict(checkpoint['state_dict'])\n"
    )
    load = _load_line(source)
    assert found(source, TorchLoadWithoutMapLocation) == ([load] if reported else [])


@pytest.mark.parametrize(
    ("elsewhere", "reported"),
    [
        # The file hard-codes CUDA in its own code and never chooses the CPU: its helpers serve GPU code.
        ("def sample(G, n):\n    return G(torch.randn(n, 8).cuda())\n", False),
        ("def sample(G, n, device='cuda'):\n    return G(torch.randn(n, 8).cuda())\n", False),
        ("def sample(G, n):\n    return G(torch.randn(n, 8, device='cuda:0'))\n", False),
        # A CPU choice, a CUDA test, only a CUDA default (the caller may pass another) or no CUDA at all: the
        # helper may run on a machine without a GPU.
        ("def sample(G, n, device='cpu'):\n    return G(torch.randn(n, 8, device=device))\n", True),
        ("def sample(G, n, device='cuda'):\n    return G(torch.randn(n, 8, device=device))\n", True),
        # A device its caller chooses (no CUDA default) beside the hard-coded one: the caller may choose the CPU.
        ("def sample(G, n, device):\n    return G(torch.randn(n, 8, device=device)).cuda()\n", True),
        ("def sample(G, n, device=None):\n    return G(torch.randn(n, 8).cuda())\n", True),
        ("def sample(G, n):\n    z = torch.randn(n, 8)\n    if torch.cuda.is_available():\n        z = z.cuda()\n"
         "    return G(z)\n", True),
        ("def sample(G, n):\n    return G(torch.randn(n, 8).cuda() if use_gpu else torch.randn(n, 8))\n", True),
        ("def sample(G, n):\n    return G(torch.randn(n, 8))\n", True),
    ],
)
def test_tdv201_a_library_load_in_a_file_written_only_for_gpus(elsewhere, reported):
    load_weights = "def load_weights(G, root):\n    G.load_state_dict(torch.load(root + '/G.pth'))\n"
    source = "import torch\n" + elsewhere + load_weights
    load = len(source.splitlines())
    assert found(source, TorchLoadWithoutMapLocation) == ([load] if reported else [])


def test_tdv201_a_file_written_only_for_gpus_still_reports_a_process_per_gpu():
    # Each process of a torchrun job loads onto the GPU that saved the file, whatever this file's CUDA defaults.
    source = (
        "import os\nimport torch\n"
        "def sample(G, n):\n    return G(torch.randn(n, 8).cuda())\n"
        "def load_weights(G, root):\n    torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n"
        "    G.load_state_dict(torch.load(root + '/G.pth'))\n"
    )
    assert found(source, TorchLoadWithoutMapLocation) == [len(source.splitlines())]


@pytest.mark.parametrize(
    ("body", "reported"),
    [
        # The loaded tensor meets a CPU tensor made from NumPy: the file holds CPU tensors.
        ("    std = torch.from_numpy(np.array(STD).reshape(1, 3, 1, 1))\n    uap = torch.load(path) / std\n", False),
        ("    std = torch.from_numpy(np.array(STD))\n    uap = torch.load(path)\n    return std * uap\n", False),
        # A tensor of unknown device, or a plain number: nothing said about the file.
        ("    std = torch.tensor(STD)\n    uap = torch.load(path) / std\n", True),
        ("    uap = torch.load(path) / 255\n", True),
        ("    std = torch.from_numpy(np.array(STD))\n    other = torch.load(path)\n    return std * model(x)\n", True),
    ],
)
def test_tdv201_a_loaded_tensor_meeting_a_numpy_tensor_is_on_the_cpu(body, reported):
    source = (
        "import numpy as np\nimport torch\n"
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "def universal_perturbation(path, model, x):\n" + body
    )
    load = _load_line(source)
    assert found(source, TorchLoadWithoutMapLocation) == ([load] if reported else [])


@pytest.mark.parametrize(
    ("save", "load_in", "reported"),
    [
        # A save helper writes the path, and the same method reads it back: this process's own file.
        ("self.save_model(model.state_dict(), self.save_path)", "train", False),
        ("save_checkpoint({'state_dict': model.state_dict()}, self.save_path)", "train", False),
        # Read back in another method (another run may call it), or another file written: still reported.
        ("self.save_model(model.state_dict(), self.save_path)", "predict", True),
        ("self.save_model(model.state_dict(), self.best_path)", "train", True),
        # A helper whose name does not say it saves a model's state is not read as one.
        ("self.export(model.state_dict(), self.save_path)", "train", True),
    ],
)
def test_tdv201_a_save_helper_then_a_load_of_the_same_path_in_one_scope(save, load_in, reported):
    source = (
        "import torch\n"
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "def save_checkpoint(state, path):\n    torch.save(state, path)\n"
        "class Trainer:\n"
        "    def save_model(self, weights, path):\n        torch.save(weights, path)\n"
        "    def train(self, model):\n"
        f"        {save}\n"
        + ("        model.load_state_dict(torch.load(self.save_path))\n" if load_in == "train" else "")
        + "    def predict(self, model):\n"
        + ("        model.load_state_dict(torch.load(self.save_path))\n" if load_in == "predict" else "        pass\n")
    )
    load = _load_line(source)
    assert found(source, TorchLoadWithoutMapLocation) == ([load] if reported else [])


CPU_PROGRAM = '''
import torch

device = torch.device("cpu")


def main(args):
    if args.resume:
        state = torch.load(args.resume)
    model = torch.nn.Linear(2, 2).to(device)
    torch.save({"model": model.state_dict()}, args.out)
'''


@pytest.mark.parametrize("change, reported", [
    (None, False),  # names no GPU, chooses the CPU, saves: what it reads is what it wrote, on the CPU
    ('device = torch.device("cpu")  # switch to "cuda" on a GPU', False),  # a comment is no code
    ('device = torch.device("cuda" if torch.cuda.is_available() else "cpu")', True),  # it may save from a GPU
    ('device = torch.device("cpu")\n"""Runs on a GPU too."""', True),  # a string that names the GPU counts
    ('device = torch.accelerator.current_accelerator() if args.accel else torch.device("cpu")', True),
    ('device = "mps" if args.mps else "cpu"', True),  # another accelerator saves its own tensors too
    ('torch.save({"model": model.state_dict()}, args.out)', True),  # (removed below) it saves nothing itself
])
def test_a_cpu_only_program_loads_what_it_saved(change, reported):
    source = CPU_PROGRAM
    if change is not None and change.startswith("torch.save"):
        source = source.replace("    " + change + "\n", "")
    elif change is not None:
        source = source.replace('device = torch.device("cpu")', change)
    lines = found(source, TorchLoadWithoutMapLocation)
    assert lines == ([_load_line(textwrap.dedent(source))] if reported else [])
    full = check_source(textwrap.dedent(source), rules=(TorchLoadWithoutMapLocation,), full=True, strict=True)
    assert [v.line for v in full.violations] == lines


_OBJECT = """\
import torch
device = "cuda" if torch.cuda.is_available() else "cpu"


class Trainer:
    def __init__(self, model, start=None):
        self.model = model.to(device)
        self.best = None
        self.files = {}

    def fit(self, name):
        best = None
        path = name + ".pt"
        torch.save(self.model.state_dict(), path)
        best = path
        return best

    def train(self):
        BINDING

    def evaluate(self):
        self.model.load_state_dict(torch.load(LOADED))
"""


@pytest.mark.parametrize("binding, loaded, reported", [
    ('self.best = self.fit("a")', "self.best", False),  # a method that returns the path it saved to
    ('self.files["a"] = self.fit("a")', 'self.files["a"]', False),  # kept in a dict
    ('path = "a.pt"\n        torch.save(self.model.state_dict(), path)\n        self.best = path', "self.best", False),
    ("self.best = start_path", "self.best", True),  # a path from elsewhere
    ('self.best = self.fit("a")\n        self.best += ".bak"', "self.best", True),  # changed afterwards
    ('self.best = "a.pt"', "self.best", True),  # named, not saved here
    ('self.other = self.fit("a")', "self.best", True),  # another attribute
])
def test_tdv201_a_path_the_object_saved_to_and_kept(binding, loaded, reported):
    source = _OBJECT.replace("BINDING", binding).replace("LOADED", loaded)
    assert found(source, TorchLoadWithoutMapLocation) == ([_load_line(source)] if reported else [])
    # The attribute also bound to a constructor's argument may name another machine's file.
    from_argument = source.replace("self.best = None", "self.best = start")
    from_argument = from_argument.replace("self.files = {}", "self.files = start")
    assert found(from_argument, TorchLoadWithoutMapLocation) == [_load_line(source)]


@pytest.mark.parametrize("calls, reported", [
    ("reload(self.best)", False),
    ("reload(self.best)\n        reload(start_path)", True),  # one call hands another file
    ("pass", True),  # never called here: a path of unknown origin
])
def test_tdv201_a_nested_helper_given_the_object_path(calls, reported):
    source = _OBJECT.replace("BINDING", 'self.best = self.fit("a")').replace(
        "        self.model.load_state_dict(torch.load(LOADED))\n",
        f"        def reload(path):\n            return torch.load(path)\n\n        {calls}\n",
    )
    assert found(source, TorchLoadWithoutMapLocation) == ([_load_line(source)] if reported else [])


@pytest.mark.parametrize("target, reported", [
    ("voc", False), ("src_vocab", False), ("self.text.words_to_id", False), ("word2idx", False),
    ("config", False), ("train_cfg", False), ("args", False), ("self.hparams", False), ("splits", False),
    ("pairs", False), ("class_names", False), ("tokenizer", False),
    ("checkpoint", True), ("state", True), ("self.opt", True), ("stats", True), ("indices", True),
    ("voc, ckpt", True),  # one name of a tuple is no promise about the other
])
def test_a_load_bound_to_a_name_for_what_holds_no_tensors_is_left_alone(target, reported):
    source = f"""
    import torch
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    class Reader:
        def read(self, path):
            {target} = torch.load(path)
    """
    assert found(source, TorchLoadWithoutMapLocation) == ([6] if reported else [])


_REBOUND = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
{between}
device = torch.device("cpu")

class Agent:
    def __init__(self):
        self.actor = Actor().to(device)

    def save(self, path):
        torch.save(self.actor.state_dict(), path)

    def load(self, path):
        self.actor.load_state_dict(torch.load(path))
"""


@pytest.mark.parametrize(("between", "lines"), [
    # the CUDA choice is replaced by the CPU before any use: the module runs on the CPU, and the class
    # reads back the CPU files it writes (post-hoc, from the held-out yeshg/pytorch-ddpg labels)
    ("", []),
    ("def helper(x):\n    return x.to(device)", []),  # a body runs later, on the CPU device
    ("model = Net().to(device)", [14]),  # the CUDA choice placed a model before it was replaced
    ("def helper(x, d=device):\n    return x.to(d)", [14]),  # a default reads it now
])
@pytest.mark.parametrize("full", [False, True])
def test_tdv201_a_device_choice_replaced_by_the_cpu_is_no_gpu(between, lines, full):
    source = _REBOUND.format(between=between)
    if lines:
        lines = [lines[0] + between.count("\n")]
    assert _in(source, "agent.py", full) == lines


@pytest.mark.parametrize(("choice", "lines"), [
    # an uncalled check is always true (TDV114): the CPU branch never runs, so the script needs CUDA
    ('"cuda" if torch.cuda.is_available else "cpu"', []),
    ('"cuda" if torch.cuda.is_available() else "cpu"', [4]),
])
def test_tdv201_an_uncalled_availability_check_is_no_cpu_path(choice, lines):
    source = (
        f"import torch\nDEVICE = {choice}\nmodel = Net().to(DEVICE)\n"
        "model.load_state_dict(torch.load(CHECKPOINT))\n"
    )
    assert found(source, TorchLoadWithoutMapLocation) == lines


_OPTION = ("import argparse\nimport torch\nparser = argparse.ArgumentParser()\n{add}\nargs = parser.parse_args()\n"
           "{use}\n")


@pytest.mark.parametrize(("add", "use", "expected"), [
    ('parser.add_argument("--device", default="gpu")', "x = torch.zeros(2).to(args.device)", [4]),
    ('parser.add_argument("--device", type=str, default="GPU")', "d = torch.device(args.device)", [4]),
    ('parser.add_argument("--device", default="gpu")', "x = torch.zeros(2, device=args.device)", [4]),
    ('parser.add_argument("--de" "vice", default="g" "pu")', "x = torch.zeros(2).to(args.device)", [4]),  # joined
    # The value is checked, converted or rebound before torch reads it; or never read as a device.
    ('parser.add_argument("--device", default="gpu", choices=["gpu", "cpu"])',
     "x = torch.zeros(2).to(args.device)", []),
    ('parser.add_argument("--device", type=pick, default="gpu")', "x = torch.zeros(2).to(args.device)", []),
    ('parser.add_argument("--device", default="gpu")',
     'args.device = "cuda" if args.device == "gpu" else "cpu"\nx = torch.zeros(2).to(args.device)', []),
    ('parser.add_argument("--device", default="gpu")', 'use_gpu = args.device == "gpu"', []),
    ('parser.add_argument("--device", default="cuda")', "x = torch.zeros(2).to(args.device)", []),
    ('parser.add_argument("--gpu", default="gpu")', "x = torch.zeros(2).to(args.gpu)", []),
])
def test_tdv106_an_option_default_read_as_a_device(add, use, expected):
    assert found(_OPTION.format(add=add, use=use), InvalidDeviceType) == expected


_GUARDED = (
    "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
    "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(2, 2)\n"
    "    def forward(self, x):\n        return self.fc(x)\n"
    "    def predict(self, data):\n        if {test}:\n{moves}"
    "        return self(data)\n"
)


@pytest.mark.parametrize(("test", "moves", "expected"), [
    # a bare .cuda() under the method's own availability check is the guess written as a statement
    ("torch.cuda.is_available()", "            data = data.cuda()\n", [11]),
    ("torch.cuda.is_available() and use_gpu", "            data = data.cuda()\n", [11]),
    # the class moves itself under the same check; a flag of the caller's is no guess; an explicit GPU is no guess
    ("torch.cuda.is_available()", "            self.cuda()\n            data = data.cuda()\n", []),
    ("self.use_gpu", "            data = data.cuda()\n", []),
    ("torch.cuda.is_available()", "            data = data.cuda(0)\n", []),
    ("not torch.cuda.is_available()", "            data = data.cuda()\n", []),
])
def test_tdv110_a_cuda_move_under_the_methods_own_availability_check(test, moves, expected):
    assert found(_GUARDED.format(test=test, moves=moves), InputMovedToGuessedDevice) == expected


SAVED_MODEL_CLASS = """
import os
import torch
from torch import nn
class Model(nn.Module):
    def save_pretrained(self, directory):
        torch.save({saved}, os.path.join(directory, "model.bin"))
    {decorator}
    def from_pretrained(cls, pretrained_directory):
        return torch.load(os.path.join(pretrained_directory, "model.bin"))
"""


@pytest.mark.parametrize(
    "saved, decorator, reported",
    [
        # a later run builds a model from what a training run saved on its GPU
        ("self.state_dict()", "@classmethod", [10]),
        ('{"model": self.state_dict(), "step": 3}', "@staticmethod", [10]),
        # the class reads back numbers, or state it moved to the CPU, or its own state in one object
        ('{"step": 3}', "@classmethod", []),
        ("{k: v.cpu() for k, v in self.state_dict().items()}", "@classmethod", []),
        ("self.state_dict()", "", []),
    ],
)
def test_tdv201_a_class_building_a_model_from_a_saved_state(saved, decorator, reported):
    source = SAVED_MODEL_CLASS.format(saved=saved, decorator=decorator)
    assert found(source, TorchLoadWithoutMapLocation) == reported


_TRAINED = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

def main(args):
{body}
"""


@pytest.mark.parametrize(("body", "reported"), [
    # After a loop that trains (an early stopper keeps the best model on the way): the file this run wrote.
    ("    for epoch in range(9):\n        loss.backward()\n        stopper.step(acc, model)\n"
     "    model.load_state_dict(torch.load(best_path))", False),
    ("    for batch in loader:\n        optimizer.step()\n"
     "    if test_set:\n        state = torch.load(best_path)", False),
    ("    try:\n        acc = trainer.train(loader, model, args)\n        state = torch.load(glob(pattern)[0])\n"
     "    except KeyboardInterrupt:\n        pass", False),
    ("    trainer.fit()\n    state = torch.load(glob(pattern)[0])", False),
    # Before training, in the branch that may not train, or after a mode switch only: another run's file.
    ("    state = torch.load(best_path)\n    for epoch in range(9):\n        loss.backward()", True),
    ("    if args.train:\n        train(model, loader)\n    state = torch.load(best_path)", True),
    ("    model.train()\n    state = torch.load(best_path)", True),
    ("    for epoch in range(9):\n        torch.save(model, best_path)\n"
     "    state = torch.load(best_path + '.bak')", True),
    # Calls that train nothing: a split of the data, a scaler's fit, a module's mode.
    ("    x_train, x_test = train_test_split(x, y)\n    state = torch.load(best_path)", True),
    ("    scaler.fit(x)\n    state = torch.load(best_path)", True),
    ("    model.train(False)\n    state = torch.load(best_path)", True),
    ("    train_loader(data)\n    state = torch.load(best_path)", True),
    ("    agent.train(loader, epochs)\n    state = torch.load(best_path)", False),
    ("    model.fit(x, y)\n    state = torch.load(best_path)", False),
    # A file named as another run's, even after training.
    ("    train(model, loader)\n    teacher = torch.load(args.resume)", True),
])
def test_tdv201_a_load_after_training_reads_the_runs_own_file(body, reported):
    source = _TRAINED.format(body=body)
    load = _load_line(source)
    assert found(source, TorchLoadWithoutMapLocation) == ([load] if reported else [])


def test_tdv201_a_function_every_call_runs_after_training_loads_the_runs_file():
    source = (
        "import torch\n"
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "def train(config, model):\n"
        "    for batch in loader:\n        loss.backward()\n"
        "    test(config, model)\n"
        "def test(config, model):\n"
        "    model.load_state_dict(torch.load(config.save_path))\n"
        "def evaluate(path):\n"
        "    return torch.load(path)\n"
        "def check(config):\n"
        "    return torch.load(config.save_path)\n"
        "check(config)\n"
        "train(config, model)\n"
        "evaluate(config.save_path)\n"
        "check(config)\n"
    )
    # test() runs only after training; evaluate()'s path is its caller's to name; check() runs once before.
    assert found(source, TorchLoadWithoutMapLocation) == [10, 12]
