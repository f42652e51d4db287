"""The whole-file device flow (analysis/flow), through the rules that read it."""

from __future__ import annotations

import pytest

from flake8_torchdevice.engine import check_source
from flake8_torchdevice.rules.tdv601 import CpuMeetsPlaced
from flake8_torchdevice.rules.tdv602 import LoaderSiblingNotMoved
from flake8_torchdevice.rules.tdv603 import NumpyOfPlacedTensor

FLOW = [CpuMeetsPlaced, LoaderSiblingNotMoved, NumpyOfPlacedTensor]
HEAD = "import numpy as np\nimport torch\nfrom torch import nn\n"


def codes(source: str) -> list:
    return [(v.code, v.line) for v in check_source(HEAD + source, rules=FLOW, strict=True).violations]


@pytest.mark.parametrize("choice", ['"cuda" if torch.cuda.is_available() else "cpu"', '"cpu" if False else "cuda"'])
def test_a_device_that_may_be_cuda_places_what_moves_to_it(choice):
    source = f"device = {choice}\nmodel = nn.Linear(2, 2).to(device)\n\n\ndef f(x):\n    return model(x).numpy()\n"
    assert codes(source) == [("TDV603", 9)]


def test_a_device_proven_cpu_places_nothing():
    source = "device = 'cpu'\nmodel = nn.Linear(2, 2).to(device)\n\n\ndef f(x):\n    return model(x).numpy()\n"
    assert codes(source) == []


def test_a_value_placed_on_one_branch_is_placed_after_it():
    source = (
        "def f(flag, x):\n    m = nn.Linear(2, 2)\n    if flag:\n        m = m.cuda()\n"
        "    return m(torch.ones(1, 2))\n"
    )
    assert codes(source) == [("TDV601", 8)]


@pytest.mark.parametrize("call", [
    "index_select(0, idx)", "gather(0, idx)", "take(idx)", "take_along_dim(idx, 0)",
    "index_add(0, idx, x)", "scatter(0, idx, 1.0)",
])
def test_a_placed_tensor_indexed_by_a_cpu_tensor_through_a_method(call):
    # x.index_select(0, idx) checks its index's device like torch.index_select(x, 0, idx).
    source = f"def f():\n    x = torch.ones(4, device='cuda')\n    idx = torch.arange(2)\n    return x.{call}\n"
    assert codes(source) == [("TDV601", 7)]


@pytest.mark.parametrize("guard", ["__name__ == '__main__'", "'__main__' == __name__"])
def test_main_block_bindings_reach_the_functions_it_calls(guard):
    # Either way round: one reading of the guard (analysis.code.is_main_guard) for every rule.
    source = (
        "def run():\n    return model(sample)\n\n\n"
        f"if {guard}:\n    model = nn.Linear(2, 2).cuda()\n    sample = torch.ones(1, 2)\n    run()\n"
    )
    assert codes(source) == [("TDV601", 5)]  # the CPU sample is known only where the block is the script's run


def test_a_method_rebinding_the_attribute_wins_over_init():
    source = (
        "class P:\n    def __init__(self):\n        self.m = nn.Linear(2, 2).cuda()\n\n"
        "    def f(self):\n        self.m = self.m.cpu()\n        return self.m(torch.ones(1, 2))\n"
    )
    assert codes(source) == []


AGENT = (
    "class Agent{name}:\n{default}    def __init__(self, policy, flag):\n        self.policy = policy.cuda()\n{before}"
    "        if flag:\n            self.state = torch.zeros(2, 4)\n{orelse}\n"
    "    def act(self, obs):\n        return self.policy(obs, self.state)\n"
)


def test_an_attribute_init_makes_on_one_path_only_is_what_that_path_made():
    # On the other path the attribute does not exist: wherever it is read, it is the CPU tensor.
    source = AGENT.format(name="", default="", before="", orelse="")
    assert codes(source) == [("TDV601", 11)]


@pytest.mark.parametrize("default, before, orelse", [
    ("    state = None\n", "", ""),  # a class attribute it falls back to
    ("", "        self.state = make_state()\n", ""),  # bound before the if to something unknown
    ("", "", "        else:\n            self.state = make_state()\n"),  # bound on the other path too
])
def test_an_attribute_with_another_binding_stays_unknown(default, before, orelse):
    assert codes(AGENT.format(name="", default=default, before=before, orelse=orelse)) == []


def test_a_name_bound_on_one_path_only_outside_init_stays_unknown():
    # Only ``__init__``'s attributes: a method's ``self.x`` may exist from ``__init__`` on the other path.
    source = (
        "class Agent:\n    def __init__(self, policy):\n        self.policy = policy.cuda()\n\n"
        "    def act(self, obs, flag):\n        if flag:\n            self.state = torch.zeros(2, 4)\n"
        "        return self.policy(obs, self.state)\n"
    )
    assert codes(source) == []


def test_pairwise_moves_make_a_loader_of_placed_tensors():
    source = (
        "def f(a, b):\n    model = nn.Linear(2, 2).cuda()\n    a, b = a.cuda(), b.cuda()\n"
        "    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(a, b))\n"
        "    for x, y in loader:\n        out = model(x)\n    return out\n"
    )
    assert codes(source) == []


def test_an_element_moved_inline_still_names_the_cpu_tensor():
    source = (
        "def f(loader, vgg):\n    vgg = vgg.cuda()\n    for x, _ in loader:\n"
        "        y = vgg(x.cuda())\n        z = vgg(x)\n    return y, z\n"
    )
    found = check_source(HEAD + source, rules=FLOW, strict=True).violations
    assert [(v.code, v.line) for v in found] == [("TDV602", 8)]
    assert "moved inline" in found[0].message


def test_ctc_targets_and_lengths_may_stay_on_the_cpu():
    """CTC takes CPU targets and lengths: a CTC call meets nothing, another loss still does."""
    source = (
        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
        "model = nn.Linear(8, 5).to(device)\n"
        "criterion = nn.CTCLoss().to(device)\n"
        "\n"
        "def step(x, text, length, loss_fn):\n"
        "    preds = model(x.to(device)).log_softmax(2)\n"
        "    counts = torch.IntTensor([preds.size(0)] * preds.size(1))\n"
        "    return criterion(preds, text, counts, length) + loss_fn(preds, text, counts, length)\n"
    )
    assert codes(source) == []
    other = source.replace("nn.CTCLoss()", "nn.CrossEntropyLoss()").replace(
        "criterion(preds, text, counts, length)", "criterion(preds, counts)")
    assert codes(other) == [("TDV601", 11)]


def test_a_placed_reduction_taken_to_the_cpu_is_a_zero_dim_tensor():
    """``norm.cpu()`` of ``x.norm()`` (also through ``clamp``) mixes with the device legally;
    the same division by a CPU vector does not."""
    source = (
        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
        "def scale(w):\n"
        "    up = w.to(device)\n"
        "    norm = up.norm().clamp(min=0.5)\n"
        "    desired = torch.clamp(norm, max=1.0)\n"
        "    ratio = desired.cpu() / norm.cpu()\n"
        "    return up.norm() * ratio\n"
    )
    assert codes(source) == []
    vector = source.replace("    return up.norm() * ratio\n", "    return up.norm() * torch.ones(3)\n")
    assert codes(vector) == [("TDV601", 10)]


def test_factories_after_set_default_device_are_not_cpu_values():
    source = (
        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
        "def run(envs):\n"
        "    torch.set_default_device(device)\n"
        "    values = torch.zeros((4, 2))\n"
        "    advantages = torch.zeros(4, 2).to(device)\n"
        "    return advantages + values\n"
    )
    assert codes(source) == []
    assert codes(source.replace("    torch.set_default_device(device)\n", "    pass\n")) == [("TDV601", 9)]


@pytest.mark.parametrize(
    "call, found",
    [
        ("summarize(model)", [("TDV601", 6)]),
        ("summarize(model=model)", [("TDV601", 6)]),
        ("summarize(nn.Linear(8, 3))", []),  # not placed: nothing is given
        ("summarize(*[model])", []),  # a starred argument binds no known parameter
        ("other(model)", []),  # another function's argument says nothing of summarize's
    ],
)
def test_module_code_gives_a_top_level_function_its_placed_arguments(call, found):
    source = (
        "def summarize(model):\n    dummy = torch.randn(1, 8)\n    return model(dummy)\n\n\n"
        f"def other(net):\n    return net\n\n\nmodel = nn.Linear(8, 3).cuda()\n{call}\n"
    )
    assert codes(source) == found


_SUMMARIZE = "def summarize(model):\n    dummy = torch.randn(1, 8)\n    return model(dummy)\n\n\n"


@pytest.mark.parametrize(
    "caller, found",
    [
        ("def main():\n    model = nn.Linear(8, 3).cuda()\n    summarize(model)\n", [("TDV601", 6)]),
        ("def main():\n    model = nn.Linear(8, 3).cuda()\n    print(summarize(model=model))\n", [("TDV601", 6)]),
        # what it hands is not placed, or it moves nothing itself: not followed
        ("def main():\n    model = nn.Linear(8, 3)\n    summarize(model)\n", []),
        ("def main(model):\n    summarize(model)\n", []),
        # ``summarize`` defined twice: which one the call runs is not read
        ("def main():\n    summarize(nn.Linear(8, 3).cuda())\n\n\n" + _SUMMARIZE, []),
        # functions that call each other: each is walked once, nothing is lost or invented
        ("def main(n=1):\n    model = nn.Linear(8, 3).cuda()\n    summarize(model)\n    if n:\n        again(n)\n\n\n"
         "def again(n):\n    x = torch.zeros(2).cuda()\n    main(x)\n", [("TDV601", 6)]),
    ],
)
def test_a_function_gives_another_top_level_function_its_placed_arguments(caller, found):
    # ``main()`` placing a model and calling ``summarize(model)``: on a GPU machine that call runs,
    # as module code's call does (the test above).
    assert codes(_SUMMARIZE + caller) == found


_TRAIN = "def train(model, x, criterion):\n    return criterion(model(x), x)\n\n\n"
_MAIN = (
    "def main(x):\n    model = nn.Linear(4, 4).cuda()\n    criterion = nn.MSELoss(weight=torch.ones(4))\n"
    "    {call}\n"
)


@pytest.mark.parametrize(
    "call, after, found",
    [
        ("train(model, x.cuda(), criterion)", "", [("TDV601", 5)]),
        # a second call may hand it other values: a CPU value is no fact of the function then
        ("train(model, x.cuda(), criterion)", "\n\ntrain(nn.Linear(4, 4), torch.ones(4), nn.MSELoss())\n", []),
        # the function handed on as a value (a callback) may run with anything
        ("train(model, x.cuda(), criterion)", "\n\nhooks = [train]\n", []),
        # no placed value handed: the call is not followed at all
        ("train(nn.Linear(4, 4), x, criterion)", "", []),
    ],
)
def test_the_only_call_of_a_function_gives_it_its_cpu_arguments_too(call, after, found):
    # FluxGAT's shape: main() builds the loss around a CPU weight and hands it, with a placed
    # model, to train(), once; that call is everything train() is ever given.
    assert codes(_TRAIN + _MAIN.format(call=call) + after) == found


@pytest.mark.parametrize(
    "helper, found",
    [
        ("def load(v):\n    return torch.tensor(v).unsqueeze(0)\n", [("TDV601", 11)]),
        ("def load(v):\n    if v:\n        return torch.zeros(1, 4)\n    return torch.ones(1, 4)\n", [("TDV601", 13)]),
        # one of its returns may be placed, or it returns what it is handed: no CPU result
        ("def load(v):\n    if v:\n        return torch.zeros(1, 4).cuda()\n    return torch.ones(1, 4)\n", []),
        ("def load(v):\n    return v\n", []),
        # it may fall off its end (None is one of its results)
        ("def load(v):\n    if v:\n        return torch.zeros(1, 4)\n", []),
        # functions that call each other: each walk ends, nothing is invented
        ("def load(v):\n    if v:\n        run(v)\n    return torch.zeros(1, 4)\n", [("TDV601", 13)]),
    ],
)
def test_a_helper_whose_every_return_is_on_the_cpu_gives_a_cpu_value(helper, found):
    # An inference script's ``load_image(path)`` returning ``TF.to_tensor(...)``: ``main()`` hands
    # the model it placed what the helper made on the CPU.
    caller = "\n\ndef run(v):\n    model = nn.Linear(4, 2).cuda()\n    x = load(v)\n    return model(x)\n"
    assert codes(helper + caller) == found


def test_a_helper_result_is_followed_only_from_a_caller_that_moves_something():
    helper = "def load(v):\n    return torch.zeros(1, 4)\n\n\n"
    assert codes(helper + "def run(model, v):\n    return model(load(v))\n") == []
    # called without an argument: no edge of the graph either (``function_calls``)
    assert codes(helper.replace("load(v)", "load()") + "def run():\n    return nn.Linear(4, 2).cuda()(load())\n") == []


@pytest.mark.parametrize(
    "before, found",
    [
        ("", [("TDV601", 11)]),
        # module code set a default device first: the helper's factories follow it there
        ("torch.set_default_device(device)\n", []),
    ],
)
def test_module_code_meets_a_helpers_cpu_result(before, found):
    # A notebook's ``batch = pad_batch(histories)`` fed to the model its module code placed.
    source = (
        "def pad_batch(h):\n    return torch.zeros(len(h), 4)\n\n\ndevice = torch.device('cuda')\n" + before +
        "model = nn.Linear(4, 2).to(device)\nbatch = pad_batch([[1.0]])\nout = model(batch)\n"
    )
    found = [(code, line + bool(before)) for code, line in found]
    assert codes(source) == found


def test_a_submodule_wrapped_in_data_parallel_scatters_the_models_input():
    # The ImageNet example: ``model.features = nn.DataParallel(model.features); model.cuda()``
    # scatters a CPU input to the GPUs as a wrapped model does, in the function that wraps it
    # and in the one it hands the model to.
    train = (
        "def train(loader, model):\n    for images, target in loader:\n        target = target.cuda()\n"
        "        out = model(images)\n\n\n"
    )
    main = "def main(loader):\n    model = Net()\n{wrap}    model.cuda()\n    train(loader, model)\n"
    wrapped = "    model.features = nn.DataParallel(model.features)\n"
    assert codes(train + main.format(wrap=wrapped)) == []
    assert codes(train + main.format(wrap="")) == [("TDV602", 7)]


@pytest.mark.parametrize("wrap, reported", [
    ("DDP(Halves())", []),  # a module of this file that moves its input itself takes the CPU images
    ("DDP(nn.Linear(4, 2).cuda())", [("TDV602", 13)]),  # a placed module: no device_ids, so nothing moves them
    ("DDP(nn.Linear(4, 2).cuda(), device_ids=[0])", []),  # device_ids: the wrapper moves them to device 0
    # the options may name device_ids: an unknown wrapper, read as before (its answer carries the images it got)
    ("DDP(nn.Linear(4, 2).cuda(), **options)", [("TDV602", 14)]),
])
def test_distributed_data_parallel_without_device_ids_is_called_as_its_module(wrap, reported):
    source = (
        "from torch.nn.parallel import DistributedDataParallel as DDP\n\n\n"
        "class Halves(nn.Module):\n    def forward(self, x):\n        return x.to('cuda:1')\n\n\n"
        f"def train(loader, options):\n    model = {wrap}\n    for images, labels in loader:\n"
        "        labels = labels.cuda()\n        out = model(images)\n"
        "        loss = nn.functional.cross_entropy(out, labels)\n"
    )
    assert codes(source) == [(code, line + 3) for code, line in reported]


@pytest.mark.parametrize("filled, reported", [
    ("lin.weight.data = w\n    lin.bias.data = b\n", []),  # its parameters now hold the placed tensors
    ("lin.weight = w\n", []),
    ("lin.weight.data = torch.zeros(3, 8)\n", ["TDV601"]),  # still CPU tensors
    ("lin.head = nn.Linear(3, 3).cuda()\n", ["TDV601"]),  # a placed submodule moves nothing else
])
def test_a_layer_given_placed_weights_is_no_longer_on_the_cpu(filled, reported):
    source = (
        "def f(x):\n    w, b = torch.rand(3, 8).cuda(), torch.rand(3).cuda()\n    lin = nn.Linear(8, 3)\n"
        f"    {filled}    return lin(x.cuda())\n"
    )
    call = 7 + filled.count("\n")  # the line of ``lin(x.cuda())``, after the three of HEAD
    assert codes(source) == [(code, call) for code in reported]


@pytest.mark.parametrize("given, reported", [
    ("np.zeros((3, 4))", []),  # a NumPy array: no torch module's generate, some helper object's method
    ("torch.ones(3, 4).to(device)", [("TDV603", 8)]),  # a model's generate, its answer on the device
])
def test_generate_of_numpy_arrays_is_no_models_answer(given, reported):
    source = (
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "net = nn.Linear(4, 4).to(device)\ngen = net.voxel_generator\n"
        f"coords = gen.generate({given}, max_voxels=9)\nout = np.pad(coords, 1)\n"
    )
    assert codes(source) == reported


@pytest.mark.parametrize("evidence, reported", [
    ("self.network.train()", [("TDV603", 9)]),  # used as a module: its answer to a placed batch is placed
    ("self.network.parameters()", [("TDV603", 9)]),
    ("pass", []),  # any callable the object keeps may answer with no tensor: its unpacked parts say nothing
])
def test_a_module_the_object_keeps_answers_a_placed_batch_on_its_device(evidence, reported):
    source = (
        "class Trainer:\n    def step(self, data):\n"
        f"        {evidence}\n"
        "        data = data.to(self.device)\n        out, explain = self.network(data)\n"
        "        return explain.sum(0).detach().numpy()\n"
    )
    assert codes(source) == reported


@pytest.mark.parametrize("sample, reported", [
    ("(x.to(device), y.to(device))", []),  # a dataset of placed samples: its batches are placed
    ("x.to(device)", []),
    ("(x, y)", [("TDV602", 8)]),  # CPU samples: the placed model meets a CPU batch
])
def test_a_dataset_appended_sample_by_sample_keeps_where_its_samples_are(sample, reported):
    source = (
        "def train(raw, model, device):\n    model = model.to(device)\n    items = []\n"
        f"    for x, y in raw:\n        items.append({sample})\n"
        "    loader = torch.utils.data.DataLoader(items)\n    for xb, yb in loader:\n        model(xb)\n"
    )
    assert codes(source) == [(code, line + 3) for code, line in reported]


@pytest.mark.parametrize("returns, unpack, reported", [
    ("return grid.to(device), mask", "grid, mask", [("TDV601", 15)]),  # the placed part meets a CPU tensor
    ("return grid.to(device), mask", "mask, grid", []),  # the CPU part is what meets it
    ("return grid, mask", "grid, mask", []),  # no part placed
    ("return grid.to(device), mask", "pair", []),  # not unpacked: the tuple itself says nothing
    ("return grid.to(device), mask\n    return grid, mask", "grid, mask", []),  # one return leaves it on the CPU
])
def test_a_helpers_tuple_unpacks_into_its_parts_devices(returns, unpack, reported):
    source = (
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n\n\n"
        f"def make(image):\n    grid, mask = torch.rand(2, 2), np.zeros(2)\n    {returns}\n\n\n"
        f"def run(image):\n    base = torch.zeros(2, 2)\n    {unpack} = make(image)\n"
        "    return torch.cat((base, grid))\n"
    )
    shift = returns.count("\n")
    assert codes(source) == [(code, line + shift) for code, line in reported]


@pytest.mark.parametrize("call, reported", [
    ("ddpm.model(torch.cat([p, p]), t)", [("TDV601", 9)]),  # the placed model's submodule runs on its device
    ("ddpm.unet(p)", [("TDV601", 9)]),
    ("ddpm.sample_images(p)", []),  # any other method may move what it is given itself
    ("ddpm.model(p.to(device), t)", []),
])
def test_a_placed_modules_submodule_is_on_its_device(call, reported):
    source = (
        "from ldm.util import load_model\n\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "ddpm = load_model('x').to(device)\nt = torch.tensor([3], device=device)\n"
        f"p = torch.rand(1, 3, 8, 8)\nout = {call}\n"
    )
    assert codes(source) == [(code, line + 1) for code, line in reported]


@pytest.mark.parametrize("element, found", [("data_info", []), ("file_names", []), ("mask", [("TDV602", 8)])])
def test_a_batchs_metadata_handed_to_a_placed_model_is_no_tensor(element, found):
    # ``model(data_info)``: a model may take the batch's file names, whatever the loop moved.
    source = (
        f"def run(loader):\n    model = nn.Linear(4, 2).cuda()\n    for data_in, {element} in loader:\n"
        f"        data_in = data_in.cuda()\n        model({element})\n"
    )
    assert codes(source) == found


def test_a_move_back_under_the_guard_that_placed_it_is_on_the_cpu():
    source = (
        "def f(model, x, use_gpu):\n    if use_gpu:\n        model, x = model.cuda(), x.cuda()\n"
        "    out = model(x)\n    if use_gpu:\n        out = out.cpu()\n    return out.numpy()\n"
    )
    assert codes(source) == []
    assert codes(source.replace("        out = out.cpu()\n", "        out = out + 1\n")) == [("TDV603", 10)]


_STEP = (
    "class Model({base}):\n"
    "    def {hook}(self, batch, batch_idx):\n"
    "        x, y = batch\n"
    "        return y.numpy()\n"
)


@pytest.mark.parametrize("imports, base, hook, found", [
    ("import lightning as L\n", "L.LightningModule", "validation_step", True),
    ("import pytorch_lightning as pl\n", "object", "training_step", True),  # a task mixin of a Lightning file
    ("", "LightningModule", "test_step", True),  # based on LightningModule by name
    ("", "nn.Module", "validation_step", False),  # a hand-written loop may hand it a CPU batch
    ("import lightning as L\n", "L.LightningModule", "on_validation_batch_end", False),  # not a step hook
])
def test_a_lightning_steps_batch_is_on_the_modules_device(imports, base, hook, found):
    source = imports + _STEP.format(base=base, hook=hook)
    line = HEAD.count("\n") + imports.count("\n") + 4
    assert codes(source) == ([("TDV603", line)] if found else [])


def test_only_a_frameworks_batch_spreads_its_device_to_what_it_unpacks_into():
    # ``out, lengths = pad_packed_sequence(...)``: lengths is a CPU tensor whatever ``out`` is.
    source = (
        "device = 'cuda'\n\n\ndef f(packed):\n"
        "    out, lengths = nn.utils.rnn.pad_packed_sequence(packed.to(device))\n"
        "    return lengths.numpy()\n"
    )
    assert codes(source) == []


@pytest.mark.parametrize("imports, call, found", [
    ("import matplotlib.pyplot as plt\n", "plt.plot(scores)", True),
    ("import matplotlib.pyplot as plt\n", "ax.imshow(scores)", True),
    ("from matplotlib import pyplot\n", "pyplot.scatter(scores, scores)", True),
    ("import matplotlib.pyplot as plt\n", "plt.plot(scores.cpu())", False),
    ("", "ax.plot(scores)", False),  # no matplotlib here: another library's plot() may copy it
])
def test_matplotlib_reads_its_data_as_numpy(imports, call, found):
    source = imports + f"device = 'cuda'\n\n\ndef show(ax, x):\n    scores = x.to(device)\n    {call}\n"
    line = HEAD.count("\n") + imports.count("\n") + 6
    assert codes(source) == ([("TDV603", line)] if found else [])


@pytest.mark.parametrize("move, found", [
    ("    x.data = x.data.cuda()\n", []),  # the old Variable idiom: x now holds CUDA storage
    ("    pass\n", [("TDV601", 10)]),
])
def test_assigning_data_moves_the_tensor_that_holds_it(move, found):
    source = (
        "model = nn.Linear(1, 1)\nif args.cuda:\n    model.cuda()\nx = torch.rand(1, 1)\n"
        "if args.cuda:\n" + move + "out = model(x)\n"
    )
    assert codes(source) == found


@pytest.mark.parametrize(
    "data, found",
    [
        ("torch.tensor(read_rows())", True),  # shape unseen: no scalar to a module's weights
        ("torch.tensor(rows)", True),
        ("torch.tensor(0.5)", False),  # surely 0-dim: may be a scalar the forward mixes legally
        ("torch.tensor(x)", True),  # a copy of the caller's data (a tensor there draws torch's clone() warning)
        ("torch.as_tensor(x)", False),  # the parameter may be a tensor anywhere: as_tensor keeps its device
    ],
)
def test_a_placed_module_given_data_of_unseen_shape(data, found):
    source = (
        "def f(model, x, device):\n    model.to(device)\n    rows = load()\n"
        f"    features = {data}\n    return model(features)\n"
    )
    assert codes(source) == ([("TDV601", 8)] if found else [])


def test_data_of_unseen_shape_still_mixes_with_a_placed_tensor_as_a_scalar():
    source = "def f(x, device):\n    y = x.to(device)\n    scale = torch.tensor(read_scale())\n    return y * scale\n"
    assert codes(source) == []


@pytest.mark.parametrize(
    "device, found",
    [
        ("args.device", True),
        ("self.cfg.device", True),
        ("accelerator.device", True),
        ("training_args.device", True),
        ("batch.device", False),  # the device of an unknown tensor: maybe the CPU
        ("self.device", False),
    ],
)
def test_a_run_option_names_a_device_that_may_be_cuda(device, found):
    source = (
        "def f(self, args, accelerator, training_args, batch, x):\n"
        f"    y = x.to({device})\n    return y + torch.ones(3)\n"
    )
    assert codes(source) == ([("TDV601", 6)] if found else [])


@pytest.mark.parametrize(
    "device, found",
    [
        ('config.get("General", "device")', True),  # a configuration's section, read by its key
        ('cfg["device"]', True),
        ('self.config["train"]["device"]', True),
        ('opts.get("train_device")', True),
        ('config.get("General", "dtype")', False),  # another key
        ('batch["device"]', False),  # not a configuration
        ('config.get("General", "cpu_device")', False),  # the key names the CPU
    ],
)
def test_a_configuration_read_by_its_key_names_a_device_that_may_be_cuda(device, found):
    source = (
        "def f(self, config, cfg, opts, batch, x):\n"
        f"    y = x.to({device})\n    return y + torch.ones(3)\n"
    )
    assert codes(source) == ([("TDV601", 6)] if found else [])


@pytest.mark.parametrize(
    "moves, found",
    [
        ("out = model(x.to(device))", [("TDV602", 7)]),
        ("x, y = x.to(device), y.to(device)\n    out = model(x)", []),
        ("out = model(x)", []),  # nothing moved, the model not placed here: nothing is known
    ],
)
def test_a_first_batch_from_next_iter_is_a_batch(moves, found):
    source = (
        "def f(model, val_loader, device):\n    x, y = next(iter(val_loader))\n"
        f"    {moves}\n    return out.argmax(1) == y\n"
    )
    if found:
        found = [(code, line + moves.count("\n")) for code, line in found]
    assert codes(source) == found


@pytest.mark.parametrize("switch", ["self.gpu_mode", "args.cuda", "use_gpu"])
def test_the_else_of_the_codes_own_gpu_switch_is_the_cpu_run(switch):
    source = (
        f"def f(self, args, use_gpu, x):\n    model = nn.Linear(2, 2)\n    if {switch}:\n        model.cuda()\n"
        f"    out = model(x)\n    if {switch}:\n        return out.cpu().numpy()\n"
        "    else:\n        return out.numpy()\n"
    )
    assert codes(source) == []


def test_the_else_of_a_switch_that_is_no_gpu_switch_still_reports():
    source = (
        "def f(flag, x):\n    model = nn.Linear(2, 2).cuda()\n    out = model(x)\n"
        "    if flag:\n        return out.cpu().numpy()\n    else:\n        return out.numpy()\n"
    )
    assert codes(source) == [("TDV603", 10)]


@pytest.mark.parametrize(
    "body, found",
    [
        ("model = nn.Linear(4, 2)\n    return model(x)", True),
        ("model = nn.Sequential(nn.Linear(4, 2), nn.ReLU())\n    return model(x)", True),
        ("model = nn.Linear(4, 2)\n    model.to(device)\n    return model(x)", False),
        ("model = nn.Linear(4, 2)\n    if use_cuda:\n        model.cuda()\n    return model(x)", False),
        ("model = nn.Linear(4, 2)\n    train(model)\n    return model(x)", False),  # train may move it
        ("model = nn.Linear(4, 2)\n    self.model = model\n    self.model.to(device)\n    return model(x)", False),
        ("model = nn.Linear(4, 2, device=device)\n    return model(x)", False),
        ("with torch.device(device):\n        model = nn.Linear(4, 2)\n    return model(x)", False),
        ("model = nn.Sequential(*layers)\n    return model(x)", False),  # what it holds is unknown
        ("model = nn.ReLU()\n    return model(x)", False),  # no weights
        ("model = nn.Linear(4, 2)\n    model.to(d)\n    return model(x)", False),  # moved somewhere unknown
        ("model = nn.Linear(4, 2)\n    model.to_empty(device=d)\n    return model(x)", False),
        ("model = nn.Linear(4, 2)\n    model.to('cpu')\n    return model(x)", True),
    ],
)
def test_a_layer_built_here_and_never_moved_is_on_the_cpu(body, found):
    source = (
        "def f(self, device, use_cuda, train, layers, d):\n    x = torch.randn(3, 4, device=device)\n"
        f"    {body}\n"
    )
    result = codes(source)
    assert (result != []) == found, result
    assert all(code == "TDV601" for code, _ in result)


def test_a_layer_built_in_init_follows_its_module():
    source = (
        "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(4, 2)\n\n"
        "    def predict(self, x, device):\n        return self.fc(x.to(device))\n"
    )
    assert codes(source) == []


def test_a_factory_built_under_a_device_context_is_there():
    source = (
        "def f(x, device):\n    y = x.to(device)\n    with torch.device(device):\n        z = torch.zeros(3)\n"
        "    return y + z\n"
    )
    assert codes(source) == []


OWN_CLASS = (
    "class VAE(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.fc = nn.Linear(2, 8)\n\n"
    "    def decode(self, z):\n"
    "        return self.fc(BODY)\n\n\n"
    "model = VAE()\n"
    "model.cuda()\n"
    "out = model(torch.randn(4, 2))\n"
    "sample = model.decode(torch.randn(4, 2))\n"
)


@pytest.mark.parametrize("body, found", [
    ("z", [("TDV601", 15), ("TDV601", 16)]),  # its code moves nothing: the CPU tensors meet its weights
    ("z.to(self.fc.weight.device)", []),  # it moves what it is given
    ("z.type_as(self.fc.weight)", []),  # type_as takes the weight's type, device included
    ("z if self.use_cuda else z", []),  # names a device switch
    ("to_model(z)", []),  # a same-file helper that moves
    ("scale(z)", [("TDV601", 15), ("TDV601", 16)]),  # a same-file helper that does not
])
def test_a_module_class_of_this_file_that_never_moves_its_inputs_is_followed(body, found):
    helpers = "def to_model(z):\n    return z.cuda()\n\n\ndef scale(z):\n    return z * 2\n\n\n"
    assert codes(helpers + OWN_CLASS.replace("BODY", body)) == [(c, line + 8) for c, line in found]


def test_a_module_class_with_a_foreign_base_may_move_its_inputs():
    source = "from mylib import Base\n" + OWN_CLASS.replace("VAE(nn.Module)", "VAE(Base)").replace("BODY", "z")
    assert codes(source) == []


def test_a_method_that_is_no_method_of_a_still_class_is_not_a_meeting():
    source = OWN_CLASS.replace("BODY", "z").replace("model.decode(", "model.load_state_dict(")
    assert codes(source) == [("TDV601", 15)]


@pytest.mark.parametrize("line, found", [
    ("y = torch.zeros(3).type_as(x)\nz = y + x\n", []),  # type_as takes x's device
    ("y = x.type_as(torch.ones(3))\nz = y + x\n", [("TDV601", 7)]),  # ... and a CPU tensor's
])
def test_type_as_moves_to_the_arguments_device(line, found):
    assert codes("device = 'cuda'\nx = torch.ones(3).to(device)\n" + line) == found


SIBLINGS = (
    "class Trainer:\n"
    "    def embed(self, x):\n"
    "        RETURNS\n\n"
    "    def score(self, d):\n"
    "        return d.numpy()\n\n"
    "    def fit(self, model, x):\n"
    "        model = model.cuda()\n"
    "        d = self.embed(model(x.cuda()))\n"
    "        return self.score(d)\n"
)


@pytest.mark.parametrize("returns, found", [
    ("return x * 2", [("TDV603", 9)]),  # every return placed: the result is placed
    ("if x is None:\n            return None\n        return x * 2", []),  # one return is not
    ("if x is not None:\n            return x * 2", []),  # it may fall off its end
    ("return np.ones(3)", []),
])
def test_methods_hand_each_other_what_they_return_and_are_given(returns, found):
    source = SIBLINGS.replace("RETURNS", returns)
    line_of_score = source.split("\n").index("        return d.numpy()") + 4  # HEAD's three lines
    assert codes(source) == [(code, line_of_score) for code, _ in found]
    # ``embed`` holds no word a flow rule needs: the selection keeps it as ``fit``'s partner.
    full = check_source(HEAD + source, rules=FLOW, strict=True, full=True).violations
    assert [(v.code, v.line) for v in full] == codes(source)


def test_methods_that_call_each_other_end_and_agree_either_way():
    source = (
        "class Loop:\n"
        "    def a(self, x, n):\n        return self.b(x.cuda(), n)\n\n"
        "    def b(self, y, n):\n        return self.a(y, n - 1) if n else y.numpy()\n"
    )
    assert codes(source) == [("TDV603", 9)]
    full = check_source(HEAD + source, rules=FLOW, strict=True, full=True).violations
    assert [(v.code, v.line) for v in full] == [("TDV603", 9)]


@pytest.mark.parametrize("appended, found", [
    ("out.append(model(x.cuda()))", [("TDV603", 9)]),  # only placed values: the concatenation is placed
    ("out.append(model(x.cuda()))\n        out.append(torch.zeros(2))", []),  # a CPU one too: unknown
    ("out.extend([model(x.cuda())])", []),
])
def test_a_list_of_placed_values_concatenates_to_a_placed_tensor(appended, found):
    source = (
        "def run(model, xs):\n    model = model.cuda()\n    out = []\n"
        f"    for x in xs:\n        {appended}\n    return torch.cat(out).numpy()\n"
    )
    last = len(source.split("\n")) - 1 + 3
    assert codes(source) == [(code, last) for code, _ in found]


@pytest.mark.parametrize("base, found", [
    ("object", [("TDV603", 9)]),
    ("nn.Module", []),  # a module's methods pass on inputs on its device: not followed
])
def test_self_calls_are_followed_outside_torch_modules(base, found):
    source = (
        f"class Head({base}):\n"
        "    def run(self, x):\n        return self.show(x.cuda())\n\n"
        "    def show(self, h):\n        return h.numpy()\n"
    )
    assert codes(source) == found


def test_only_a_method_that_moves_something_hands_facts_on():
    source = (
        "class Trainer:\n"
        "    def __init__(self, model):\n        self.model = model.cuda()\n\n"
        "    def run(self, x):\n        return self.show(self.model(x))\n\n"  # no move here: no edge
        "    def show(self, h):\n        return h.numpy()\n"
    )
    assert codes(source) == []


@pytest.mark.parametrize("line, found", [
    ("g = torch.autograd.grad(out, x, torch.ones(4, 1))", [("TDV601", 6)]),
    ("g = torch.autograd.grad(outputs=out, inputs=x, grad_outputs=torch.ones(4, 1))", [("TDV601", 6)]),
    ("torch.autograd.backward(out, torch.ones(4, 1))", [("TDV601", 6)]),
    ("out.backward(torch.ones(4, 1))", [("TDV601", 6)]),
    ("out.sum().backward(torch.tensor(2.0))", []),  # a 0-dim gradient: autograd moves it
    ("g = torch.autograd.grad(out, x, torch.ones_like(out))", []),
])
def test_a_gradient_lives_where_its_output_does(line, found):
    source = "x = torch.randn(4, 3).cuda()\nout = nn.Linear(3, 1).cuda()(x)\n" + line + "\n"
    assert codes(source) == found


LOOP = (
    "def validate(val_set, device):\n"
    "    {binding}\n"
    "    model = nn.Linear(4, 2).to(device)\n"
    "    for data in val_generator:\n"
    "        imgs = data['img']\n"
    "        annot = data['annot'].to(device)\n"
    "        out = model(imgs)\n"
)


@pytest.mark.parametrize("binding, reported", [
    ("val_generator = torch.utils.data.DataLoader(val_set)", [("TDV602", 10)]),  # a loader, whatever its name
    ("val_generator = tqdm(torch.utils.data.DataLoader(val_set))", [("TDV602", 10)]),  # a wrapper of one
    ("val_generator = make_batches(val_set)", []),  # anything else: not known to be a loader
    ("val_generator = torch.utils.data.DataLoader(val_set); val_generator = list(val_generator)", []),  # rebound
])
def test_a_name_bound_to_a_dataloader_is_a_loader(binding, reported):
    assert codes(LOOP.format(binding=binding)) == reported


@pytest.mark.parametrize("test, reported", [
    ("torch.cuda.device_count() > 1", [("TDV602", 10)]),  # one GPU skips the wrap: the placed model stays
    ("n_gpu >= 2", [("TDV602", 10)]),
    ("use_gpu", []),  # the GPU path: the body is what follows on a GPU machine
    ("torch.cuda.device_count() > 0", []),
    ("n_gpu > 0x1", [("TDV602", 10)]),  # any integer literal Python accepts (it raised on these)
    ("n_gpu >= 1_0", [("TDV602", 10)]),
])
def test_a_wrap_for_several_gpus_leaves_the_one_gpu_path_placed(test, reported):
    source = LOOP.format(binding="val_generator = torch.utils.data.DataLoader(val_set)").replace(
        "    for data", f"    if {test}:\n        model = nn.DataParallel(model)\n    for data")
    assert codes(source) == [(code, line + 2) for code, line in reported]


@pytest.mark.parametrize("evidence, reported", [
    ("model.train()", [("TDV601", 11)]),  # used as a module: fed a placed tensor, it is on that device
    ("model.eval()", [("TDV601", 11)]),
    ("params = model.parameters()", [("TDV601", 11)]),
    ("pass", []),  # any callable may take a tensor on any device: nothing proves it a module
])
def test_a_parameter_module_fed_a_placed_tensor_is_placed(evidence, reported):
    source = (
        "sample = torch.rand(1, 8)\n\n\n"
        "def step(model, loader, device):\n"
        f"    {evidence}\n"
        "    for x, _ in loader:\n"
        "        model(x.to(device))\n"
        "    return model(sample)\n"
    )
    assert codes(source) == reported


@pytest.mark.parametrize("comparison, reported", [
    ("assert_close(out, expected)", True),
    ("torch.testing.assert_allclose(out, expected)", True),
    ("assert_close(expected, out, rtol=0, atol=0)", True),
    ("assert_close(out, expected, check_device=True)", True),
    ("assert_close(out, expected, check_device=False)", False),  # values only: moved to the CPU first
    ("assert_close(out, expected, check_device=strict)", False),  # a flag whose value is unknown
    ("assert_close(out, expected, **options)", False),  # may carry check_device=False
    ("assert_close(out.cpu(), expected)", False),
])
def test_torch_testing_comparisons_check_the_device(comparison, reported):
    """torch.testing's comparisons check that both sides share a device before their values."""
    source = (
        "from torch.testing import assert_close\n\n\ndef test_relu(device, strict, options):\n"
        "    out = nn.Linear(2, 2).to(device)(torch.ones(1, 2).to(device))\n"
        f"    expected = torch.zeros(1, 2)\n    {comparison}\n"
    )
    assert codes(source) == ([("TDV601", 10)] if reported else [])


@pytest.mark.parametrize("use, reported", [
    ("model(sample[None])", True),  # None, slices and ... drop no dimension
    ("model(sample[:, None])", True),
    ("model(sample[..., 1:])", True),
    ("model(sample[0])", False),  # maybe one element: a CPU scalar may meet a device tensor
])
def test_indexing_that_keeps_dimensions_keeps_a_cpu_tensor_a_tensor(use, reported):
    source = (
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\nmodel = nn.Linear(8, 2).to(device)\n\n\n"
        f"def show():\n    sample = torch.rand(3, 8)\n    return {use}\n"
    )
    assert codes(source) == ([("TDV601", 10)] if reported else [])


def test_a_name_some_function_declares_global_is_no_module_fact():
    """``main`` may move it before ``show`` runs: what module code bound it to says nothing there."""
    source = (
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\nmodel = nn.Linear(8, 2).to(device)\n"
        "sample = torch.rand(1, 8)\n\n\ndef main():\n    global sample\n    sample = sample.to(device)\n\n\n"
        "def show():\n    return model(sample)\n"
    )
    assert codes(source) == []
    assert codes(source.replace("    global sample\n", "")) == [("TDV601", 14)]  # a local of main then


@pytest.mark.parametrize("image", [
    "transforms.ToTensor()(Image.open(path))",
    "TF.to_tensor(Image.open(path))",
    "T.PILToTensor()(Image.open(path))",
])
def test_torchvision_image_conversions_make_cpu_tensors(image):
    source = (
        "import torchvision.transforms as T\nimport torchvision.transforms.functional as TF\n"
        "from torchvision import transforms\n"
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\nmodel = nn.Conv2d(3, 8, 3).to(device)\n\n\n"
        f"def predict(path):\n    image = {image}\n"
        "    return model(image.unsqueeze(0)), model(image.to(device)[None])\n"
    )
    assert codes(source) == [("TDV601", 13)]


def test_a_function_without_a_word_of_its_own_is_parsed_when_module_code_holds_them_all():
    """Selection keeps every definition when module code alone meets the rule's groups: the
    finding below comes from module facts only, and the selected parse must find what the whole
    file's parse finds."""
    source = HEAD + (
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\nmodel = nn.Linear(8, 2).to(device)\n"
        "sample = torch.rand(1, 8)\n\n\ndef show():\n    return model(sample)\n"
    )
    selected = check_source(source, rules=FLOW, strict=True).violations
    full = check_source(source, rules=FLOW, full=True, strict=True).violations
    assert [(v.code, v.line) for v in selected] == [(v.code, v.line) for v in full] == [("TDV601", 10)]


@pytest.mark.parametrize(
    "listed, reported",
    [
        ("[x.to(device) for x in xs]", True),
        ("[(x.to(device), x.cuda()) for x in xs]", True),
        ("[xs[0].to(device), xs[1].to(device)]", True),
        ("[x.to(device).cpu() for x in xs]", False),
        ("[(x.to(device), x) for x in xs]", False),  # one element on the CPU: unknown as a whole
        ("[xs[0].to(device), xs[1]]", False),
        ("[x for x in xs]", False),
        ("(xs[0].to(device), xs[1].to(device))", True),  # a tuple display: each tensor converted the same
    ],
)
def test_numpy_of_a_list_of_placed_tensors(listed, reported):
    source = f"device = 'cuda'\n\n\ndef f(xs):\n    kept = {listed}\n    return np.array(kept)\n"
    assert codes(source) == ([("TDV603", 9)] if reported else [])


@pytest.mark.parametrize(
    "bound, reported",
    [
        ("total, batches = 0, iter(val_loader)", True),
        ("batches, total = tqdm(val_loader), 0", True),
        ("total, batches = 0, make_batches()", False),
        ("total, batches = stats()", False),  # no element-wise value: unknown
    ],
)
def test_a_loader_bound_element_by_element(bound, reported):
    source = (
        "from tqdm import tqdm\n\n\ndef f(model, val_loader):\n    model = model.to('cuda')\n"
        f"    {bound}\n    for x, y in batches:\n        out = model(x.to('cuda'))\n"
        "        total = total + (out.argmax(1) == y).sum()\n    return total\n"
    )
    assert codes(source) == ([("TDV602", 12)] if reported else [])


@pytest.mark.parametrize(
    "helper, reported",
    [
        ("return x.view(x.size(0), -1)", True),  # a same-file helper that keeps the element on the CPU
        ("return to_var(x.view(x.size(0), -1))", False),  # ... that moves it through another helper
        ("return x.view(-1).to(DEVICE)", False),  # ... that moves it itself
    ],
)
def test_a_same_file_helper_of_a_loader_element(helper, reported):
    source = (
        "DEVICE = 'cuda'\n\n\ndef to_var(x):\n    if torch.cuda.is_available():\n        x = x.cuda()\n"
        "    return x\n\n\n"
        f"def flatten(x):\n    {helper}\n\n\n"
        "def f(model, data):\n    model = model.cuda()\n    loader = torch.utils.data.DataLoader(data)\n"
        "    for images, _ in loader:\n        images = flatten(images)\n        out = model(images)\n    return out\n"
    )
    assert codes(source) == ([("TDV602", 22)] if reported else [])


@pytest.mark.parametrize(
    "tokenized, call, reported",
    [
        ('tokenizer.encode(text, return_tensors="pt")', "model.generate(ids)", True),
        ('tokenizer(text, return_tensors="pt")["input_ids"]', "model(ids)", True),
        ('tokenizer.encode(text, return_tensors="pt").to(device)', "model.generate(ids)", False),
        ('tokenizer.encode(text, return_tensors="np")', "model.generate(ids)", False),  # NumPy, not a tensor
        ('tokenizer.encode(text)', "model.generate(ids)", False),  # a list: nothing known
    ],
)
def test_a_tokenizers_tensors_are_on_the_cpu(tokenized, call, reported):
    source = (
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n\n\n"
        f"def f(model, tokenizer, text):\n    model = model.to(device)\n    ids = {tokenized}\n    return {call}\n"
    )
    assert codes(source) == ([("TDV601", 10)] if reported else [])


@pytest.mark.parametrize(
    "use, reported",
    [
        ("np.isnan(out.max())", True),  # NumPy reads its argument with __array__
        ("np.mean(out)", True),
        ("metrics.f1_score(y, out.argmax(1))", True),  # so does a scikit-learn metric
        ("np.float64(out.max())", False),  # a Python float: it calls .item()
        ("np.float(out.max())", False),  # NumPy's old alias of Python's float (until 1.24)
        ("np.int(out.argmax())", False),
        ("np.float32(out.max())", True),  # a NumPy scalar type reads an array
        ("np.isnan(out.max().cpu())", False),
        ("np.mean([v.item() for v in out])", False),
        ("np.int32(net.r)", False),  # a module's attribute: maybe a number
        ("np.exp(out.data[0])", False),  # torch 0.3's way to read a loss: a Python number then
        ("np.mean(score_fn(out))", False),  # any callable's answer: maybe no tensor
    ],
)
def test_numpy_functions_and_sklearn_metrics_read_tensors_as_arrays(use, reported):
    source = (
        "from sklearn import metrics\n\n\n"
        "def f(net, batch, y, device, score_fn):\n    data = [t.to(device) for t in batch]\n"
        f"    out = net.forward(data[0])\n    return {use}\n"
    )
    assert codes(source) == ([("TDV603", 10)] if reported else [])


@pytest.mark.parametrize(
    "imported, call",
    [
        ("from numpy import isnan", "isnan(out.max())"),
        ("import numpy", "numpy.isnan(out.max())"),
        ("import numpy as np", "np.isnan(out.max())"),
        ("from sklearn.metrics import f1_score", "f1_score(y, out)"),
        ("from sklearn import metrics", "metrics.f1_score(y, out)"),
    ],
)
def test_the_selection_keeps_numpy_and_sklearn_calls_however_imported(imported, call):
    """TDV603 alone (the selection reads its words) finds what the whole-file run finds."""
    source = (
        f"{imported}\nimport torch\n\n\ndef f(net, batch, y, device):\n    net.eval()\n"
        "    out = net(batch.to(device))\n"
        f"    return {call}\n"
    )
    alone = check_source(source, rules=[NumpyOfPlacedTensor], strict=True).violations
    whole = check_source(source, rules=[NumpyOfPlacedTensor], full=True, strict=True).violations
    assert [v.line for v in alone] == [v.line for v in whole] == [8]


@pytest.mark.parametrize(
    "use, says",
    [
        ("out.numpy()", "NumPy needs host memory: call .cpu() before .numpy()"),
        ("np.asarray(out)", "NumPy needs host memory: call .cpu() before .numpy()"),
        ("np.isnan(out)", "np.isnan() reads it as a NumPy array, which needs host memory: pass .cpu() of it"),
    ],
)
def test_the_numpy_message_names_what_reads_the_tensor(use, says):
    source = f"def f(x):\n    out = x.to('cuda')\n    return {use}\n"
    found = check_source(HEAD + source, rules=[NumpyOfPlacedTensor], strict=True).violations
    assert [v.message for v in found] == [f"out is on the device; {says}"]


HELPER_CALL = "out = nn.Linear(2, 2).cuda()(torch.ones(1, 2).cuda())\nnp.asarray(helper(out, out))\n"


@pytest.mark.parametrize("body, reported", [
    ("return torch.abs(a - b).mean()", True),
    ("return ((a - b) ** 2).sum(dim=1)[0] * 0.5", True),
    ("return torch.nn.functional.mse_loss(a, b)", True),
    ("return a if a.sum() > 0 else b", False),  # not an expression the helper is proven to compute
    ("return (a - b).abs().mean().item()", False),
    ("return (a - b).cpu()", False),
    ("a = a.cpu()\n    return a - b", False),  # the parameter no longer holds what the caller gave
    ("c = torch.zeros(2)\n    return a + c", False),  # another tensor of unknown place
    ("if a is None:\n        return b\n    print(a)", False),  # may fall off its end: None
    ("yield a", False),
])
def test_a_same_file_helper_answers_on_its_arguments_device(body, reported):
    source = f"def helper(a, b):\n    {body}\n\n\n" + HELPER_CALL
    found = [(code, line) for code, line in codes(source) if code == "TDV603"]  # TDV601 may meet inside it
    assert found == ([("TDV603", 3 + source.count("\n"))] if reported else []), found


@pytest.mark.parametrize("moves, reported", [
    ("model.cpu()\n", []),  # moved back in place: its output is no device tensor
    ("model.to('cpu')\n", []),
    ("model.cpu()\nmodel.to(device)\n", [("TDV601", 0), ("TDV603", 0)]),  # and on the device again
    ("", [("TDV601", 0), ("TDV603", 0)]),
])
def test_a_placed_module_moved_back_with_cpu_is_no_longer_placed(moves, reported):
    source = (
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "model = nn.Linear(1, 1).to(device)\n" + moves + "print(model(torch.ones(1, 1)).numpy())\n"
    )
    line = 3 + source.count("\n")
    assert codes(source) == [(code, line) for code, _ in reported]


LOSS_HELPER_CALL = (
    "model = nn.Linear(2, 2).cuda()\ntrain_loss = estimate_loss('train', model)\nprint(np.mean(train_loss))\n"
)


@pytest.mark.parametrize("body, reported", [
    # A function named like a loss answers on its inputs' device, unless every return is a host value.
    ("losses = [model(torch.ones(1, 2).cuda()).sum().item()]\n    return np.mean(losses)", False),
    ("total = model(torch.ones(1, 2).cuda()).sum()\n    return float(total)", False),
    ("total = model(torch.ones(1, 2).cuda()).sum()\n    return total.item() / 2, 0", False),
    ("return 0.0", False),
    ("total = model(torch.ones(1, 2).cuda()).sum()\n    return total", True),  # a tensor of unknown place: a loss's
    ("total = model(torch.ones(1, 2).cuda()).sum()\n    return total / len(split)", True),
    ("total = model(torch.ones(1, 2).cuda()).sum()\n    return sum([total])", True),  # sum of tensors: a tensor
    ("yield 0.0", True),
    ("print(split)", True),  # no return: nothing known of it
])
def test_a_loss_named_helper_of_this_file_returning_host_values_is_no_loss_on_the_device(body, reported):
    source = f"def estimate_loss(split, model):\n    {body}\n\n\n" + LOSS_HELPER_CALL
    found = [(code, line) for code, line in codes(source) if code == "TDV603"]
    assert found == ([("TDV603", 3 + source.count("\n"))] if reported else []), found


def test_a_helper_given_a_cpu_tensor_answers_nothing_placed():
    source = "def helper(a, b):\n    return a * b\n\n\nnp.asarray(helper(torch.ones(2), torch.ones(2)))\n"
    assert codes(source) == []


@pytest.mark.parametrize("store, reported", [
    ("g_loss[i] = loss", True),  # a row of a (n, 1) array: converted with np.asarray
    ("g_loss[i, :] = loss", True),
    ("g_loss[i, 0] = loss", False),  # one element: float(loss), which reads a device scalar
    ("flat[i] = loss", False),
    ("flat[1:3] = loss", True),
    ("shaped[i] = loss", False),  # the shape is not written out: rank unknown
    ("g_loss[i] = loss.cpu()", False),
    ("g_loss[i], count = loss, i", True),  # a paired assignment stores the same way (one reading of a store)
    ("g_loss[i]: float = loss", True),
])
def test_a_placed_tensor_stored_into_a_numpy_array(store, reported):
    source = (
        "g_loss = np.zeros((8, 1))\nflat = np.zeros(8)\nshaped = np.zeros(shape)\n"
        "loss = nn.Linear(2, 1).cuda()(torch.ones(1, 2).cuda()).sum()\n"
        f"for i in range(3):\n    {store}\n"
    )
    assert codes(source) == ([("TDV603", 9)] if reported else [])


@pytest.mark.parametrize("store, reported", [
    ('batch["x"] = batch["x"].to(device)', [("TDV602", 13)]),  # rebound: moved; "y" stays behind
    ('batch["x"] = batch["x"].float()', [("TDV602", 12)]),  # still the loader's CPU tensor
    ('batch["x"], batch["y"] = batch["x"].to(device), batch["y"].to(device)', []),
    ("for k, v in batch.items():\n            batch[k] = to_device(v)", []),  # every key rebound
    ('batch["x"] = batch["x"].to(device)\n        size = batch.size', [("TDV602", 14)]),  # an attribute read too
])
def test_a_store_into_a_dict_batch_rebinds_its_element(store, reported):
    source = (
        "device = torch.device('cuda')\nmodel = nn.Linear(4, 3).to(device)\n\n\n"
        "def train(data):\n    loader = torch.utils.data.DataLoader(data)\n    for batch in loader:\n"
        f"        {store}\n"
        "        out = model(batch['x'])\n        return nn.functional.cross_entropy(out, batch['y'])\n"
    )
    assert codes(source) == reported


def test_a_module_never_moved_is_named_by_its_weights_where_it_is_called():
    source = (
        "import torch\nfrom torch import nn\n\n\ndef f(x, device):\n    layer = nn.Linear(4, 2)\n"
        "    y = x.to(device)\n    return layer(y), layer.weight + y\n"
    )
    messages = [v.message for v in check_source(source, rules=[CpuMeetsPlaced], strict=True).violations]
    assert messages == [
        "layer's weights are on the CPU and y is on the device where they meet; move the module with "
        ".to(device) before calling it",
        "layer is on the CPU and y is on the device where they meet; move it with .to(device) or create it "
        "with device=",
    ]


@pytest.mark.parametrize(
    "build, found",
    [
        ("nn.Linear(4, 2).cuda()", True),
        ("nn.DataParallel(nn.Linear(4, 2)).cuda()", False),  # DataParallel scatters its inputs to its devices
        ("torch.nn.DataParallel(nn.Linear(4, 2).cuda())", False),
        ("nn.DataParallel(net).to(device)", False),  # a module of unknown origin, wrapped
    ],
)
def test_a_dataparallel_wrapper_takes_cpu_inputs(build, found):
    source = f"def f(net, device):\n    model = {build}\n    return model(torch.ones(3, 4))\n"
    assert codes(source) == ([("TDV601", 6)] if found else [])


@pytest.mark.parametrize(
    "build, found",
    [
        ("TSN(8, nn.DataParallel(net).cuda()).cuda()", False),  # its forward hands the batch to the wrapper
        ("TSN(8, base=nn.DataParallel(net)).to(device)", False),
        ("TSN(8, net).cuda()", True),  # no scattering wrapper inside: the CPU batch meets the model
        ("TSN(8, nn.DataParallel).cuda()", True),  # the class, not a wrapper
    ],
)
def test_a_module_built_around_a_dataparallel_wrapper_scatters_its_input(build, found):
    source = (
        "from models import TSN\n\n\ndef test(net, loader, device):\n"
        f"    tsn = {build}\n    for data, label in loader:\n        label = label.cuda()\n"
        "        print(tsn(data), label)\n"
    )
    assert codes(source) == ([("TDV602", 11)] if found else [])


@pytest.mark.parametrize(
    "made, found",
    [
        ("torch.tensor(data)", True),  # a copy of the caller's data: on the CPU
        ("torch.as_tensor(data)", False),  # as_tensor keeps a tensor input where it is
        ("torch.asarray(data)", False),
        ("torch.tensor(data.to(device))", False),
        ("torch.tensor(data, device=device)", False),
    ],
)
def test_a_copy_of_a_functions_input_is_made_on_the_cpu(made, found):
    source = (
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\nmodel = nn.Linear(3, 3).to(device)\n\n\n"
        f"def predict(data):\n    return model({made})\n"
    )
    assert codes(source) == ([("TDV601", 9)] if found else [])


@pytest.mark.parametrize(
    "stacked, found",
    [
        ("torch.stack([torch.tensor(t) for t in tokens])", True),  # 0-dim items, one dimension more
        ("torch.nn.utils.rnn.pad_sequence([torch.tensor(t) for t in tokens], batch_first=True)", True),
        ("torch.cat([torch.zeros(2, 3), torch.zeros(1, 3)], dim=0)", True),  # dim= is an option, no tensor
        ("torch.stack([torch.tensor(t).to(device) for t in tokens])", False),
        ("torch.stack([torch.tensor(t) for t in tokens]).to(device)", False),
        ("torch.stack([torch.zeros(3), x])", False),  # one item of unknown place: unknown as a whole
    ],
)
def test_a_list_of_cpu_tensors_stacked_stays_on_the_cpu(stacked, found):
    source = (
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\nmodel = nn.Linear(3, 3).to(device)\n\n\n"
        f"def predict(tokens, x):\n    batch = {stacked}\n    return model(batch)\n"
    )
    assert codes(source) == ([("TDV601", 10)] if found else [])


def test_a_list_of_cpu_tensors_read_by_numpy_is_no_placed_value():
    source = "def f(xs):\n    kept = [torch.zeros(2) for x in xs]\n    return np.array(kept)\n"
    assert codes(source) == []


@pytest.mark.parametrize(
    "imports, build, found",
    [
        ("from torchvision import models", "models.resnet18(weights='DEFAULT')", True),
        ("import torchvision", "torchvision.models.detection.fasterrcnn_resnet50_fpn()", True),
        ("from torchvision.models import get_model", "get_model('vit_b_16')", True),
        ("import torchvision.models as tvm", "tvm.resnet50(pretrained=True)", True),
        ("from torchvision import models", "models.resnet18(**options)", False),  # ** may pass anything
        ("from torchvision import models", "models.get_weight('ResNet18_Weights.DEFAULT')", False),  # no model
        ("from torchvision.models import feature_extraction",
         "feature_extraction.create_feature_extractor(net, ['layer4'])", False),  # wraps a given module
        ("from mylib import models", "models.resnet18()", False),  # not torchvision's
    ],
)
def test_a_torchvision_model_is_built_on_the_cpu(imports, build, found):
    source = (
        f"{imports}\n\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n\n\n"
        f"def evaluate(loader, net, options):\n    model = {build}\n    model.eval()\n"
        "    for x, y in loader:\n        out = model(x.to(device))\n"
    )
    assert codes(source) == ([("TDV601", 13)] if found else [])


@pytest.mark.parametrize("move", [
    "model = model.to(device)", "model.to(device)", "model.cuda()", "model = nn.DataParallel(model).cuda()",
    "train(model)",  # another function may move it
    "with torch.device(device):\n        model = models.resnet18()",  # built on the device
])
def test_a_torchvision_model_moved_or_handed_on_is_not_reported(move):
    source = (
        "from torchvision import models\n\ndevice = torch.device('cuda')\n\n\n"
        f"def evaluate(loader):\n    model = models.resnet18()\n    {move}\n"
        "    for x, y in loader:\n        out = model(x.to(device))\n"
    )
    assert codes(source) == []


@pytest.mark.parametrize(
    "build, found",
    [
        ("nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 3.0]))", True),
        ("nn.CrossEntropyLoss(torch.tensor([1.0, 2.0, 3.0]))", True),  # weight is its first parameter
        ("nn.NLLLoss(weight=torch.FloatTensor(counts))", True),
        ("nn.BCEWithLogitsLoss(pos_weight=torch.tensor([3.0]))", True),
        ("nn.MultiMarginLoss(torch.tensor([1.0, 2.0]))", False),  # its first parameter is p
        ("nn.BCEWithLogitsLoss(pos_weight=torch.tensor(3.0))", False),  # a 0-dim weight mixes with any device
        ("nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 3.0], device=device))", False),
        ("nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 3.0]).to(device))", False),
        ("nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 3.0])).to(device)", False),
        ("nn.CrossEntropyLoss(weight=counts)", False),  # a parameter: its device is unknown
        ("nn.CrossEntropyLoss(label_smoothing=0.1)", False),
    ],
)
def test_a_loss_given_a_cpu_class_weight_is_a_cpu_layer(build, found):
    source = (
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n\n\n"
        f"def train(loader, model, counts):\n    criterion = {build}\n"
        "    for x, y in loader:\n        x, y = x.to(device), y.to(device)\n"
        "        loss = criterion(model(x), y)\n"
    )
    assert codes(source) == ([("TDV601", 11)] if found else [])


@pytest.mark.parametrize("move", ["criterion.to(device)", "criterion = criterion.cuda()", "fit(criterion)"])
def test_a_weighted_loss_moved_or_handed_on_is_not_reported(move):
    source = (
        "device = torch.device('cuda')\n\n\n"
        "def train(loader, model):\n    criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0]))\n"
        f"    {move}\n    for x, y in loader:\n        loss = criterion(model(x.to(device)), y.to(device))\n"
    )
    assert codes(source) == []


def test_a_weighted_loss_still_compares_its_inputs():
    source = (
        "device = torch.device('cuda')\n\n\n"
        "def train(loader, model):\n    criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0])).to(device)\n"
        "    for x, y in loader:\n        out = model(x.to(device))\n        loss = criterion(out, y)\n"
    )
    assert codes(source) == [("TDV602", 11)]


def test_a_cpu_class_weight_is_named_in_the_message():
    source = HEAD + (
        "def step(model, x, y):\n    criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0]))\n"
        "    return criterion(model(x.cuda()), y.cuda())\n"
    )
    messages = [v.message for v in check_source(source, rules=[CpuMeetsPlaced], strict=True).violations]
    assert messages == [
        "criterion's class weight is on the CPU and x is on the device where they meet; move the loss "
        "with .to(device) or make the weight with device="
    ]


@pytest.mark.parametrize(
    "code, reported",
    [
        # another module built the loader (over tensors it may have placed): nothing shows its batches
        ("from data import train_loader, device\nmodel = nn.Linear(4, 3).to(device)\n"
         "for x, y in train_loader:\n    out = model(x)\n", []),
        ("from data import loaders as train_loader\nmodel = nn.Linear(4, 3).cuda()\n"
         "def fit():\n    for x, y in train_loader:\n        out = model(x)\n", []),
        ("from data import train_loader\nfrom tqdm import tqdm\nmodel = nn.Linear(4, 3).cuda()\n"
         "train_loader = tqdm(train_loader)\nfor x, y in train_loader:\n    out = model(x)\n", []),  # wrapped
        ("from data import train_loader\nmodel = nn.Linear(4, 3).cuda()\n"
         "def fit(loader=train_loader):\n    for x, y in loader:\n        out = model(x)\n", []),  # a default
        ("from data import train_loader\nmodel = nn.Linear(4, 3).cuda()\n"
         "def fit(epochs, loader):\n    for x, y in loader:\n        out = model(x)\n\n\nfit(3, train_loader)\n",
         []),  # what module code hands the function
        # a parameter, or a loader this file builds, shadows the import; a parameter shows CPU batches where
        # module code hands it a loader it builds with torch's DataLoader
        ("from data import train_loader\nmodel = nn.Linear(4, 3).cuda()\n"
         "def fit(train_loader):\n    for x, y in train_loader:\n        out = model(x)\n", []),
        ("from data import train_loader, dataset\nmodel = nn.Linear(4, 3).cuda()\n"
         "def fit(train_loader):\n    for x, y in train_loader:\n        out = model(x)\n\n\n"
         "fit(torch.utils.data.DataLoader(dataset))\nloader = torch.utils.data.DataLoader(dataset)\nfit(loader)\n",
         [("TDV602", 8)]),
        ("from data import train_loader, dataset\nmodel = nn.Linear(4, 3).cuda()\n"
         "train_loader = torch.utils.data.DataLoader(dataset)\nfor x, y in train_loader:\n    out = model(x)\n",
         [("TDV602", 8)]),
    ],
)
def test_a_loader_imported_from_another_module_shows_no_cpu_batches(code, reported):
    assert codes(code) == reported


@pytest.mark.parametrize("setter, reported", [
    ("torch.set_default_device(device)\n", []),  # default collate makes a batch's numbers there
    ("", [("TDV602", 11)]),
])
def test_a_default_device_may_hold_a_batchs_elements(setter, reported):
    source = (
        f"device = 'cuda' if torch.cuda.is_available() else 'cpu'\n{setter}"
        "model = nn.Linear(4, 3).to(device)\n\n\ndef train(train_loader):\n    for x, y in train_loader:\n"
        "        out = model(x.to(device))\n        loss = nn.functional.cross_entropy(out, y)\n"
    )
    assert codes(source) == reported


@pytest.mark.parametrize(
    "imports, build, found",
    [
        ("from transformers import AutoModelForSequenceClassification as Auto", "Auto.from_pretrained(name)", True),
        ("import transformers", "transformers.BertModel.from_pretrained(name, num_labels=2)", True),
        ("from transformers import T5ForConditionalGeneration", "T5ForConditionalGeneration.from_pretrained(name)",
         True),
        ("from transformers import AutoModel", "AutoModel.from_pretrained(name, device_map='auto')", False),
        ("from transformers import AutoModel", "AutoModel.from_pretrained(name, load_in_8bit=True)", False),
        ("from transformers import AutoModel", "AutoModel.from_pretrained(name, **options)", False),
        ("from transformers import AutoModel", "AutoModel.from_pretrained(name).to(device)", False),
        ("from transformers import AutoTokenizer", "AutoTokenizer.from_pretrained(name)", False),  # no model
        ("from peft import PeftModel", "PeftModel.from_pretrained(base, name)", False),  # not transformers'
        ("from mylib import AutoModel", "AutoModel.from_pretrained(name)", False),
    ],
)
def test_a_transformers_model_loads_on_the_cpu(imports, build, found):
    source = (
        f"{imports}\n\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n\n\n"
        f"def evaluate(loader, name, base, options):\n    model = {build}\n    model.eval()\n"
        "    for batch in loader:\n        out = model(batch['input_ids'].to(device))\n"
    )
    assert codes(source) == ([("TDV601", 13)] if found else [])


def test_a_transformers_model_meets_a_placed_encoding_through_its_keywords():
    source = (
        "from transformers import AutoModel, AutoTokenizer\n\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "\n\ndef embed(text):\n    tokenizer = AutoTokenizer.from_pretrained('bert')\n"
        "    model = AutoModel.from_pretrained('bert')\n"
        "    inputs = tokenizer(text, return_tensors='pt').to(device)\n    return model(**inputs)\n"
    )
    assert codes(source) == [("TDV601", 13)]


@pytest.mark.parametrize(
    "state, found",
    [
        ("(torch.zeros(1, 3, 8), torch.zeros(1, 3, 8))", True),  # an LSTM's (h0, c0), made on the CPU
        ("[torch.zeros(1, 3, 8)]", True),
        ("(torch.zeros(1, 3, 8, device=device), torch.zeros(1, 3, 8, device=device))", False),
        ("(torch.zeros(1, 3, 8).to(device), torch.zeros(1, 3, 8).to(device))", False),
        ("(torch.zeros(1, 3, 8).to(device), torch.zeros(1, 3, 8))", False),  # mixed: not followed
        ("(h, c)", False),  # parameters: their device is the caller's
    ],
)
def test_a_tuple_or_list_of_cpu_tensors_meets_the_placed_module_it_is_handed_to(state, found):
    source = (
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "rnn = nn.LSTM(4, 8).to(device)\n\n\n"
        f"def run(x, h, c):\n    state = {state}\n    out, _ = rnn(x.to(device), state)\n"
        f"    return rnn(x.to(device), {state})\n"
    )
    assert codes(source) == ([("TDV601", 10), ("TDV601", 11)] if found else [])


def test_a_tuple_handed_to_a_module_of_this_file_is_its_own_business():
    source = (
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n\n\n"
        "class Net(nn.Module):\n    def forward(self, x, state):\n        return x + state[0].to(x.device)\n\n\n"
        "net = Net().to(device)\nout = net(torch.ones(2).to(device), (torch.zeros(2), torch.zeros(2)))\n"
    )
    assert codes(source) == []


@pytest.mark.parametrize("rebinding, found", [
    ("self.rot = np.repeat([rot_star], n, axis=0)", []),  # a NumPy array from here on
    ("self.rot = torch.ones(n, 3, 3)", [("TDV603", 13)]),  # still a tensor: __init__'s placement stands
    ("rot = np.repeat([rot_star], n, axis=0)", [("TDV603", 13)]),  # a local name, not the attribute
])
def test_an_attribute_a_method_rebinds_to_numpy_is_not_believed_placed(rebinding, found):
    source = (
        "class ParticleFilter:\n"
        "    def __init__(self, n):\n"
        "        self.rot = torch.ones(n, 3, 3).cuda()\n"
        "        self.w = torch.ones(n).cuda()\n"
        "\n"
        "    def reset(self, rot_star, n):\n"
        f"        {rebinding}\n"
        "\n"
        "    def add_noise(self, i, rot_m):\n"
        "        self.rot[i] = np.matmul(self.rot[i], rot_m)\n"
        "        return np.asarray(self.w)\n"
    )
    assert codes(source) == sorted(found + [("TDV603", 14)])


@pytest.mark.parametrize("loss, logits, found", [
    ("nn.CrossEntropyLoss().cuda()", "torch.randn(4, 3)", []),  # holds no tensor: meets CPU inputs on the CPU
    ("nn.CrossEntropyLoss(reduction='sum').to('cuda')", "torch.randn(4, 3)", []),
    ("nn.CrossEntropyLoss(weight=torch.ones(3)).cuda()", "torch.randn(4, 3)", [("TDV601", 7)]),  # its weight moved
    ("nn.CrossEntropyLoss().cuda()", "torch.randn(4, 3).cuda()", [("TDV601", 7)]),  # CPU labels meet placed logits
])
def test_a_moved_loss_that_holds_no_tensor_stays_where_its_inputs_are(loss, logits, found):
    source = (
        f"criterion = {loss}\n"
        f"logits = {logits}\n"
        "labels = torch.tensor([0, 1, 2, 0])\n"
        "print(criterion(logits, labels))\n"
    )
    assert codes(source) == found


_FLAGGED = '''\
cuda, cpu = torch.device("cuda"), torch.device("cpu")


class Net(nn.Module):
    def __init__(self, layer_gpu):
        super().__init__()
        self.layer_gpu = layer_gpu
        if self.layer_gpu == 1:
            self.layer = nn.Linear(4, 4).to(device=cuda)
        else:
            self.layer = nn.Linear(4, 4)
        self.act = nn.Sigmoid()

    def forward(self, x):
        if (self.layer_gpu == 1):
            out = self.act(self.layer(x.to(device=cuda)).to(device=cpu))
        else:
            out = self.act(self.layer(x))
        return out.detach().numpy()
'''


def test_an_attribute_placed_under_a_flag_is_unplaced_where_a_method_tests_the_same_flag_false():
    # The else path of forward runs where __init__'s else ran: the layer stayed on the CPU.
    assert codes(_FLAGGED) == []


@pytest.mark.parametrize("change", [
    # the true path still returns what the placed layer made
    ("            out = self.act(self.layer(x.to(device=cuda)).to(device=cpu))\n",
     "            return self.layer(x.to(device=cuda)).numpy()\n"),
    # another test: nothing ties the paths
    ("        if (self.layer_gpu == 1):\n", "        if self.layer_gpu == 2:\n"),
    # the flag is not stable: a method rebinds it
    ("    def forward(self, x):\n",
     "    def switch(self, n):\n        self.layer_gpu = n\n\n    def forward(self, x):\n"),
    # __init__ binds the attribute again after its if
    ("        self.act = nn.Sigmoid()\n", "        self.act = nn.Sigmoid()\n        self.layer = self.layer.cuda()\n"),
    # forward rebinds the attribute itself before testing the flag
    ("        if (self.layer_gpu == 1):\n",
     "        self.layer = self.layer.cuda()\n        if (self.layer_gpu == 1):\n"),
])
def test_an_attribute_placed_under_a_flag_stays_placed_where_nothing_ties_the_paths(change):
    assert codes(_FLAGGED.replace(*change)) != []


_BATCH_LOOP = '''\
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
loader = torch.utils.data.DataLoader(data, batch_size=4)


def run():
    for batch in loader:
        batch.to_torch_(device)
        out = model(batch.src)
'''


@pytest.mark.parametrize("move", [
    "batch.to_torch_(device)", "batch.to(device)", "batch.cuda()", "batch.to(args.device)", "batch.send(dev=device)",
])
def test_a_batch_moved_by_its_own_method_holds_elements_that_may_be_placed(move):
    assert codes(_BATCH_LOOP.replace("batch.to_torch_(device)", move)) == []


@pytest.mark.parametrize("move", [
    "batch.to(torch.float16)", 'batch.to("cpu")', "batch.pin_memory()", "print(batch)",
    # an element read before the move is the CPU tensor still
    "src = batch.src\n        batch.to(device)\n        out = model(src)\n        out = model(batch.src)",
])
def test_a_batch_not_moved_by_its_method_still_leaves_its_elements_behind(move):
    assert codes(_BATCH_LOOP.replace("batch.to_torch_(device)", move)) != []


def test_a_part_taken_before_the_batchs_own_method_may_be_moved_with_it():
    # ``to_torch_`` of a project's batch class may move the objects it shares in place; ``.to()`` rebinds tensors.
    before = "src = batch.src\n        batch.{move}\n        out = model(src)"
    assert codes(_BATCH_LOOP.replace("batch.to_torch_(device)", before.format(move="to_torch_(device)"))) == []
    assert codes(_BATCH_LOOP.replace("batch.to_torch_(device)", before.format(move="to(device)"))) != []


_UNPACKED = '''\
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def evaluate(model, xs):
    model = model.to(device)
    xs = xs.to(device)
    score, (ratio, _) = model(xs)
    return score.detach().numpy(), ratio.detach().numpy()
'''


@pytest.mark.parametrize("call", ["model(xs)", "model(xs)[0]", "xs * 2"])
def test_names_unpacked_from_a_placed_value_are_placed(call):
    assert codes(_UNPACKED.replace("model(xs)", call)) == [("TDV603", 11), ("TDV603", 11)]


@pytest.mark.parametrize("call", [
    "xs.cpu()",
    "[t.cpu() for t in model(xs)]",
    "summarize(xs)",  # any callable given a placed value: maybe no tensor at all
])
def test_names_unpacked_from_what_is_not_known_placed_are_unknown(call):
    assert codes(_UNPACKED.replace("model(xs)", call)) == []


_UNMOVED_BATCH = '''\
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def predict(model, dataloader, device):
    model.to(device)
    for src, trg in dataloader:
        out = model(src)
'''


@pytest.mark.parametrize("loader", [
    "dataloader",  # a parameter: its dataset may hold tensors already placed
    "self.loader",
    "DataLoader(data)",  # the project's own loader class (imported below)
])
def test_a_loader_the_file_does_not_build_shows_no_cpu_batch_unless_an_element_is_moved(loader):
    source = "from dataset import DataLoader\n" + _UNMOVED_BATCH.replace("in dataloader", f"in {loader}")
    assert codes(source) == []
    moved = source.replace("        out = model(src)", "        src = src.to(device)\n        out = model(src) + trg")
    assert codes(moved) == [("TDV602", 12)]


@pytest.mark.parametrize("binding", [
    "loader = DataLoader(data)",  # the project's own loader class, bound to a name before the loop
    "loader = DictDataLoader(data, batch_size=2)",
    "loader = tqdm(DictDataLoader(data))",
    "loader = get_loader(data)",  # a function of the project's own that builds it
])
def test_a_name_bound_to_the_projects_own_loader_shows_no_cpu_batch_unless_an_element_is_moved(binding):
    source = "from dataset import DataLoader, DictDataLoader, get_loader\n" + _UNMOVED_BATCH.replace(
        "    for src, trg in dataloader:", f"    {binding}\n    for src, trg in loader:")
    assert codes(source) == []
    moved = source.replace("        out = model(src)", "        src = src.to(device)\n        out = model(src) + trg")
    assert codes(moved) == [("TDV602", 13)]


def test_a_name_bound_by_a_helper_of_this_file_is_a_loader_of_cpu_batches():
    source = _UNMOVED_BATCH.replace("    for src, trg in dataloader:", "    loader = make_loader(data)\n"
                                    "    for src, trg in loader:")
    helper = "def make_loader(data):\n    return torch.utils.data.DataLoader(data)\n\n\n"
    assert codes(helper + source) == [("TDV602", 15)]


@pytest.mark.parametrize("loader", [
    "torch.utils.data.DataLoader(data)",
    "loader",  # bound below to torch's DataLoader
])
def test_a_loader_the_file_builds_shows_cpu_batches_a_placed_model_meets(loader):
    source = _UNMOVED_BATCH.replace("    for src", "    loader = torch.utils.data.DataLoader(data)\n    for src")
    assert codes(source.replace("in dataloader", f"in {loader}")) == [("TDV602", 11)]


def test_a_name_bound_to_a_parameter_loader_on_any_branch_shows_no_cpu_batch():
    source = _UNMOVED_BATCH.replace(
        "    for src, trg in dataloader:",
        "    if isinstance(dataloader, list):\n        loader = dataloader\n    else:\n"
        "        loader = dataloader.subsets.get('val')\n    for src, trg in loader:",
    )
    assert codes(source) == []
    built = source.replace("loader = dataloader\n", "loader = torch.utils.data.DataLoader(dataloader)\n")
    assert codes(built) == [("TDV602", 14)]


@pytest.mark.parametrize("test, reported", [
    ("args.cuda", []),
    ("args.cuda > 0", []),  # the switch asked as a number: its else is the CPU run
    ("args.cuda >= 1", []),
    ("use_gpu == 1", []),
    ("opt.cuda is True", []),
    ("args.cuda >= 0", [("TDV601", 9)]),  # true with the switch off as well
    ("args.batch > 0", [("TDV601", 9)]),  # no GPU switch
])
def test_the_else_of_a_gpu_switch_asked_as_a_number_is_the_cpu_run(test, reported):
    source = (
        "def f(out, args, use_gpu, opt):\n    out = out.cuda()\n"
        f"    if {test}:\n        return out * torch.ones(2).cuda()\n    else:\n        return out * torch.ones(2)\n"
    )
    assert codes(source) == reported


_MODULE_LAYER = '''\
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def train(loader):
    model.train()
    for x, y in loader:
        out = model(x.to(device))
'''


def test_a_module_level_layer_no_code_moves_meets_a_placed_input_in_a_function():
    assert codes(_MODULE_LAYER) == [("TDV601", 12)]


@pytest.mark.parametrize("elsewhere", [
    "def setup():\n    model.cuda()\n",  # any function may move it
    "model.to(device)\n",  # module code, after the function
    "def fit():\n    train(model)\n",  # handed to a call: it may be moved there
    "wrapped = nn.DataParallel(model)\n",
    "model = nn.Linear(4, 2).to(device)\n",  # bound twice
    "def reset():\n    global model\n    model = nn.Linear(4, 2)\n",
    "model.fc = nn.Linear(2, 2)\n",  # any other use: unknown
])
def test_a_module_level_layer_some_code_may_move_crosses_into_no_function(elsewhere):
    assert codes(_MODULE_LAYER + "\n\n" + elsewhere) == []


@pytest.mark.parametrize("read, reported", [
    ("decoded.detach().numpy()", [("TDV603", 12)]),  # .numpy() shows a tensor
    ("np.array(decoded)", []),  # a model's answer may be a Python list (a CRF's decoded tags)
    ("np.asarray(scores)", [("TDV603", 12)]),  # the model's answer itself, not unpacked
])
def test_names_unpacked_from_a_model_answer_may_be_no_tensor(read, reported):
    source = _UNPACKED.replace(
        "    return score.detach().numpy(), ratio.detach().numpy()",
        f"    scores = model(xs)\n    decoded, _ = model(xs)\n    return {read}",
    ).replace("    score, (ratio, _) = model(xs)\n", "")
    assert codes(source) == reported


_CHOSEN = '''\
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)


def evaluate(dataset):
    for offsets, feats, labels in torch.utils.data.DataLoader(dataset):
        feats = feats.to(device)
        pred = model(CALL)
'''


@pytest.mark.parametrize("call", [
    "offsets, feats",  # the loop moved feats for this call and left offsets: graph offsets, crop boxes
    "feats, crops=offsets",
    "offsets, feats.float()",  # a value derived from the moved sibling
    "offsets, labels.to(device)",  # a sibling moved inline, in the call itself
])
def test_an_element_handed_to_a_placed_module_beside_a_moved_sibling_was_chosen_to_stay(call):
    assert codes(_CHOSEN.replace("CALL", call)) == []


@pytest.mark.parametrize("call, line", [
    ("offsets", 11),  # nothing moved beside it: the module's weights meet the CPU batch
    ("feats) + offsets.sum(", 11),  # it meets the placed output in arithmetic
])
def test_an_element_left_behind_is_still_reported_where_no_moved_sibling_goes_with_it(call, line):
    assert codes(_CHOSEN.replace("CALL", call)) == [("TDV602", line)]


def test_the_unbound_tensor_cpu_call_brings_a_value_home():
    source = (
        "import torch\nfrom torch import Tensor, nn\n"
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "model = nn.Linear(3, 2).to(device)\n"
        "a = Tensor.cpu(model.weight.data).numpy()\n"
        "b = torch.Tensor.cpu(model(torch.ones(1, 3, device=device))).numpy()\n"
        "c = model(torch.ones(1, 3, device=device)).detach().numpy()\n"
    )
    result = check_source(source, rules=[NumpyOfPlacedTensor], strict=True)
    assert [v.line for v in result.violations] == [7]


_PREPARED = """\
from accelerate import Accelerator
from tqdm import tqdm


def main(model, opt, loader, critic):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    accelerator = Accelerator()
    crit = critic.to(device)
    {prepare}
    {bar}
    for step, X in enumerate({loop}):
        batch = torch.tensor(X[0], dtype=torch.float16)
        out = crit(batch)
        out = crit(torch.zeros(2, 2))
"""


@pytest.mark.parametrize("prepare, bar, loop, reported", [
    # a copy of a framework's batch stays where the framework put it (post-hoc, from v132's first read)
    ("model, opt, loader = accelerator.prepare(model, opt, loader)", "pass", "loader", [17]),
    ("model, opt, loader = accelerator.prepare(model, opt, loader)", "bar = tqdm(loader)", "bar", [17]),
    ("model, opt, loader = accelerator.prepare(model, opt, loader)", "pass", "tqdm(loader)", [17]),
    ("items = make_items()", "pass", "items", [16, 17]),  # no framework's loader: made as the factory makes it
])
def test_a_copy_of_a_prepared_loaders_batch_is_on_the_frameworks_device(prepare, bar, loop, reported):
    source = _PREPARED.replace("{prepare}", prepare).replace("{bar}", bar).replace("{loop}", loop)
    assert [line for code, line in codes(source) if code == "TDV601"] == reported


@pytest.mark.parametrize(("expression", "reported"), [
    ("torch.rand(1, 2) * 2.0 - 1.0", True),  # a CPU tensor and number literals: a CPU tensor
    ("-1 + torch.rand(1, 2)", True),
    ("2 ** torch.rand(1, 2)", True),
    ("torch.rand(1, 2) * scale", False),  # an unknown name may be a placed tensor
    ("torch.rand(1, 2).to(device) * 2.0", False),  # moved first
])
def test_a_cpu_tensor_and_a_number_stay_on_the_cpu(expression, reported):
    source = (
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\nmodel = nn.Linear(2, 2).to(device)\n\n\n"
        f"def f(scale):\n    x = {expression}\n    return model(x)\n"
    )
    assert codes(source) == ([("TDV601", 10)] if reported else [])


@pytest.mark.parametrize(("decorator", "reported"), [
    ("", True),
    ('@skip_but_pass_in_sandcastle_if(BACKEND == "nccl", "Nccl does not support CPU tensors")\n', False),
    ("@unittest.skipIf(backend in ('nccl', 'ucc'), 'CPU tensors')\n", False),
    ('@unittest.skipIf(BACKEND != "nccl", "needs NCCL")\n', True),  # runs only with NCCL: still its mistake
    ('@requires_gloo()\n', True),
])
def test_a_collective_in_a_test_that_skips_nccl_meets_no_nccl_group(decorator, reported):
    source = (
        "import torch.distributed as dist\n"
        "dist.init_process_group('nccl')\n\n\n"
        f"{decorator}def test_sum():\n    output = torch.ones(1) * -1\n    dist.all_reduce(output)\n"
    )
    line = 10 + decorator.count("\n")
    assert codes(source) == ([("TDV601", line)] if reported else [])


@pytest.mark.parametrize(("wrap", "reported"), [
    ("DDP(model, device_ids=[rank])", False),  # moves the forward's inputs to device_ids[0] itself
    ("DDP(model, [rank])", False),
    ("torch.nn.DataParallel(model)", False),
    ("DDP(model)", True),  # no device_ids: the inputs stay where they are
    ("DDP(model, device_ids=None)", True),
])
def test_a_wrapper_that_moves_its_inputs_takes_a_loader_element_as_it_is(wrap, reported):
    source = (
        "from torch.nn.parallel import DistributedDataParallel as DDP\n\n\n"
        "def train(rank, loader):\n    model = nn.Linear(2, 2).to(rank)\n"
        f"    wrapped = {wrap}\n"
        "    for x, y in loader:\n        y = y.to(rank)\n        loss = (wrapped(x) - y).sum()\n"
    )
    found = [code for code, _ in codes(source)]
    assert ("TDV602" in found) == reported


_HANDED = (
    "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
    "{helper}\n"
    "images = torch.rand(4, 3, 8, 8)\n"
    "shown = show(images[0])\n"
    "{placed} = {placed}.to(device)\n"
    "shown = show({argument})\n"
)


@pytest.mark.parametrize("helper, placed, argument, found", [
    # the helper reads what it is handed: reported at the call that hands it a placed tensor (line 10)
    ("def show(img):\n    return np.transpose(img / 2 + 0.5, (1, 2, 0))", "images", "images[1]", [10]),
    ("def show(img):\n    return np.transpose(img / 2 + 0.5, (1, 2, 0))", "images", "images[1].cpu()", []),
    # a parameter it calls is a module: the NumPy read of its output is the helper's own finding (line 6)
    ("def show(net):\n    return net(torch.ones(2, 2).to(device)).numpy()", "model", "model", [6]),
    # a read another parameter chooses is the caller's choice: left where it was, inside the helper (line 7)
    ("def show(img, raw=False):\n    if raw:\n        return np.asarray(img)\n    return img.sum().item()",
     "images", "images[1]", [7]),
])
def test_a_numpy_read_of_what_a_caller_hands_is_reported_at_the_call(helper, placed, argument, found):
    source = _HANDED.format(helper=helper, placed=placed, argument=argument)
    if placed == "model":
        source = source.replace("shown = show(images[0])\n", "model = nn.Linear(2, 2)\n")
    assert codes(source) == [("TDV603", line) for line in found]


_LOOP = (
    "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
    "model = nn.Linear(2, 2).to(device)\n"
    "loader = torch.utils.data.DataLoader([(torch.ones(2), torch.ones(2), 1)], batch_size=1)\n"
    "for ids, extra, {name} in loader:\n"
    "    ids = ids.to(device)\n"
    "    out = model({call})\n"
    "{after}"
)


@pytest.mark.parametrize("name, call, after, reported", [
    # the labels a model computes its loss from meet its output there: not chosen to stay beside the moved ids
    ("label_ids", "ids, extra, label_ids", "", True),
    ("y", "ids, labels=y", "", True),
    ("targets", "ids, targets", "", True),
    # another element handed beside moved siblings stays on the CPU on purpose (lengths, crop boxes)
    ("lengths", "ids, lengths", "", False),
    ("y", "ids, y", "", False),
    # a later ``.to("cpu")`` moves the labels nowhere: the message does not call them moved inline
    ("label_ids", "ids, extra, label_ids", "    label_ids = label_ids.to('cpu').numpy()\n", True),
])
def test_labels_handed_to_a_placed_model_beside_moved_inputs_are_left_behind(name, call, after, reported):
    source = _LOOP.format(name=name, call=call, after=after)
    found = check_source(HEAD + source, rules=FLOW, strict=True).violations
    assert [v.code for v in found] == (["TDV602"] if reported else [])
    assert all("moved inline" not in v.message and f"{name} from the loader stays" in v.message for v in found)


_SETUP = (
    "class Runner:\n"
    "    def __init__(self):\n"
    "        self.device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
    "    def {setup}(self):\n"
    "        self.model = nn.Linear(4, 2).to(self.device)\n"
    "    def run(self):\n"
    "        return self.model(torch.ones(3, 4))\n"
)


@pytest.mark.parametrize("setup, reported", [
    # what a setup or build method binds on self is seen by the class's other methods, as __init__'s is
    ("setup", True), ("_setup", True), ("build", True), ("_build", True),
    # ... and so is what any other method binds, when every binding of the attribute places it (flow/late.py)
    ("prepare", True),
])
def test_a_setup_methods_bindings_are_seen_by_the_other_methods(setup, reported):
    source = _SETUP.format(setup=setup)
    selective = check_source(HEAD + source, rules=FLOW, strict=True).violations
    whole = check_source(HEAD + source, rules=FLOW, strict=True, full=True).violations
    assert [(v.code, v.line) for v in selective] == ([("TDV601", 10)] if reported else [])
    assert [(v.code, v.line) for v in whole] == [(v.code, v.line) for v in selective]


@pytest.mark.parametrize("extra, reported", [
    ("", True),
    ("    def reset(self):\n        self.model = None\n", True),  # a placeholder places nothing
    ("    def reset(self):\n        self.model = nn.Linear(4, 2)\n", False),  # bound on the CPU too
    ("    def offload(self):\n        self.model.cpu()\n", False),  # moved to the CPU in place
    ("    def offload(self):\n        self.model.to('cpu')\n", False),
    ("    def offload(self):\n        del self.model\n", False),
    ("    def half(self):\n        self.model = self.model.to(torch.float16)\n", False),  # no device move
])
def test_an_attribute_every_method_binds_placed_is_placed_in_the_others(extra, reported):
    source = _SETUP.format(setup="prepare") + extra
    selective = check_source(HEAD + source, rules=FLOW, strict=True).violations
    whole = check_source(HEAD + source, rules=FLOW, strict=True, full=True).violations
    assert [(v.code, v.line) for v in selective] == ([("TDV601", 10)] if reported else [])
    assert [(v.code, v.line) for v in whole] == [(v.code, v.line) for v in selective]


def test_a_method_binding_the_attribute_itself_does_not_read_the_late_fact():
    source = (
        "class Runner:\n"
        "    def __init__(self):\n"
        "        self.device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "    def prepare(self):\n"
        "        out = self.model(torch.ones(3, 4))\n"  # before its own binding: not yet placed here
        "        self.model = nn.Linear(4, 2).to(self.device)\n"
        "        return out\n"
    )
    assert check_source(HEAD + source, rules=FLOW, strict=True).violations == []


ACCUMULATOR = (
    "import torch\nfrom torch import nn\n"
    "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
    "model = nn.Linear(4, 1).to(device)\n"
    "total = torch.tensor(0.0)\n"
    "loss = model(torch.randn(3, 4, device=device)).sum()\n"
    "{line}\n"
)


def test_a_placed_value_written_into_a_cpu_scalar_is_a_meeting():
    # ``total += loss`` writes the CUDA loss into the CPU tensor: no 0-dim exemption for a write.
    assert codes(ACCUMULATOR.format(line="total += loss")) == [("TDV601", 10)]


@pytest.mark.parametrize("line", [
    "total = total + loss",  # out of place: the 0-dim CPU tensor is read, the result is on the device
    "loss += total",  # the CPU scalar is read into the placed loss
    "scaled = loss * total",
    "total += loss.item()",  # a Python number written into it
])
def test_a_cpu_scalar_read_beside_placed_values_stays_legal(line):
    assert codes(ACCUMULATOR.format(line=line)) == []


PLACING_HELPER = (
    "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n\n\n"
    "def build(width):\n{body}\n\n\n"
    "def main():\n    model = build(4)\n    print(model(torch.randn(3, 4)))\n"
)


@pytest.mark.parametrize("body", [
    "    return nn.Linear(width, 2).to(device)",
    "    model = nn.Linear(width, 2)\n    model = model.to(device)\n    return model",
    "    if width > 8:\n        return nn.Linear(width, 4).cuda()\n    return nn.Linear(width, 2).to(device)",
])
def test_a_model_a_helper_places_is_placed_where_it_is_built(body):
    # the helper moves something, so the caller's call of it is an edge of the file's call graph
    assert codes(PLACING_HELPER.format(body=body)) == [("TDV601", 13 + body.count("\n"))]


@pytest.mark.parametrize("body", [
    "    return nn.Linear(width, 2)",  # never moved: a CPU layer, unknown to the caller
    "    if width > 8:\n        return nn.Linear(width, 2)\n    return nn.Linear(width, 2).to(device)",  # one only
    "    return width.to(device)",  # computed from what it is handed: helper_result's, with the caller's values
])
@pytest.mark.parametrize("params", ["width", "width, use_cuda=True", "width, device=device"])
def test_a_helper_that_does_not_place_every_return_gives_nothing(body, params):
    assert codes(PLACING_HELPER.format(body=body).replace("def build(width)", f"def build({params})")) == []


@pytest.mark.parametrize("params", ["width, use_cuda=True", "width, device=device", "width, gpu_id=0"])
def test_a_helper_told_where_to_place_leaves_it_to_its_caller(params):
    # ``def grid(flow, use_cuda=False)``: a parameter chooses the device, so what it returns is the caller's choice
    body = "    return nn.Linear(width, 2).to(device)"
    assert codes(PLACING_HELPER.format(body=body).replace("def build(width)", f"def build({params})")) == []


def test_module_code_sees_what_a_placing_helper_returns():
    source = (
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n\n\n"
        "def load_weights():\n    return torch.ones(4, 2).to(device)\n\n\n"
        "weights = load_weights()\nprint(torch.mm(torch.randn(3, 4), weights))\n"
    )
    assert codes(source) == [("TDV601", 12)]


_AGENT = (
    "class Agent{bases}:\n"
    "    def __init__(self):\n"
    "        self.device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
    "        self.net = nn.Linear(4, 2)\n"
    "        self.opt = torch.optim.Adam(self.net.parameters())\n"
    "    def act(self, x):\n"
    "        self.net.eval()\n"
    "        return self.net(x.to(self.device))\n"
    "{extra}"
)


@pytest.mark.parametrize("bases, extra, reported", [
    ("", "", True),  # a plain class's layer, built on the CPU and never moved, meets the placed input
    ("(object)", "", True),
    ("(ABC)", "", True),
    ("(BaseAgent)", "", False),  # an imported base may be a module
    ("(nn.Module)", "", False),  # a module: its owner's .to() moves the layer
    ("(BaseModel)", "", False),  # an imported base that may be one
    ("", "    def forward(self, x):\n        return self.net(x)\n", False),
    ("", "    def place(self):\n        self.net.to(self.device)\n", False),  # moved in place somewhere
    ("", "agent = Agent()\nagent.net.cuda()\n", False),  # ... by any code of the file
    ("", "    def share(self):\n        train(self.net)\n", False),  # handed to code that may move it
    ("", "    def reset(self):\n        self.net = nn.Linear(4, 2).to(self.device)\n", False),  # bound twice
    # another class's own ``self.net`` is another object
    ("", "class Other:\n    def __init__(self):\n        self.net = nn.Linear(2, 2).cuda()\n", True),
])
def test_a_plain_classs_layer_no_code_moves_meets_a_placed_input(bases, extra, reported):
    source = _AGENT.format(bases=bases, extra=extra)
    if "BaseAgent" in bases or "BaseModel" in bases:
        source = f"from agents import {bases.strip('()')}\n" + source
    if "ABC" in bases:
        source = "from abc import ABC\n" + source
    selective = check_source(HEAD + source, rules=FLOW, strict=True).violations
    whole = check_source(HEAD + source, rules=FLOW, strict=True, full=True).violations
    line = HEAD.count("\n") + source.splitlines().index("        return self.net(x.to(self.device))") + 1
    assert [(v.code, v.line) for v in selective] == ([("TDV601", line)] if reported else [])
    assert [(v.code, v.line) for v in whole] == [(v.code, v.line) for v in selective]
    assert all("self.net's weights are on the CPU" in v.message for v in selective)


def test_a_still_method_of_a_plain_classs_cpu_layer_meets_a_placed_input():
    source = (
        "class Policy(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.body = nn.Linear(4, 2)\n"
        "    def forward(self, x):\n"
        "        return self.body(x)\n"
        "    def distribution(self, x):\n"
        "        return torch.distributions.Categorical(logits=self.forward(x))\n"
        "class Agent:\n"
        "    def __init__(self):\n"
        "        self.device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "        self.policy = Policy()\n"
        "    def act(self, x):\n"
        "        return self.policy.distribution(x.to(self.device)).sample()\n"
    )
    found = check_source(HEAD + source, rules=FLOW, strict=True).violations
    assert [v.code for v in found] == ["TDV601"]
    assert "self.policy's weights are on the CPU" in found[0].message


_OPAQUE = (
    "import models\n"
    "from helpers import mask_rows, to_cpu\n"
    "from .local import smooth\n"
    "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
    "def predict(e, other):\n"
    "    e = e.to(device)\n"
    "    {line}\n"
)


@pytest.mark.parametrize("line, codes", [
    # an imported function handed a placed tensor: its tensor answer is read with .numpy() on the device
    ("return mask_rows(e, 2).detach().numpy()", ["TDV603"]),
    ("return models.support_to_scalar(e, 3).squeeze().numpy()", ["TDV603"]),
    ("return smooth(e).numpy()", ["TDV603"]),  # a relative import: code of another file too
    ("return to_cpu(e).numpy()", []),  # its name says where its answer is
    ("return mask_rows(other, e).numpy()", []),  # the placed tensor is not its first argument
    ("return np.asarray(mask_rows(e, 2))", []),  # NumPy reads anything: maybe no tensor
    ("return mask_rows(e, 2) + torch.ones(3)", []),  # where it meets values, nothing is believed
])
def test_an_imported_functions_answer_is_placed_for_a_numpy_read_only(line, codes):
    source = HEAD + _OPAQUE.format(line=line)
    found = check_source(source, rules=FLOW, strict=True).violations
    assert [v.code for v in found] == codes


@pytest.mark.parametrize("line, codes", [
    # a method the flow does not read, on a module moved in place or a placed tensor: its answer is where they are
    ("return model.encode(x.to(device)).numpy()", ["TDV603"]),
    ("return x.to(device).matmul(w).numpy()", ["TDV603"]),
    ("return helpers.score(model.encode(x.to(device))[0], 3).numpy()", ["TDV603"]),  # and an imported helper's
    ("return model.to_numpy(x).numpy()", []),  # a name that speaks of the host
    # a helper of a helper's answer: each guess compounds (``rescale(nms(out)[0])``, where nms copies to the host)
    ("return helpers.rescale(helpers.nms(x.to(device))[0], 3).numpy()", []),
    ("return np.asarray(model.encode(x.to(device)))", []),  # NumPy reads anything: maybe no tensor
    ("return model.encode(x.to(device)) + torch.ones(3)", []),  # where it meets values, nothing is believed
])
def test_an_unread_methods_answer_is_placed_for_a_numpy_read_only(line, codes):
    source = HEAD + (
        "import helpers\n"
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "def run(model, w, x):\n"
        "    model.to(device)\n"
        f"    {line}\n"
    )
    found = check_source(source, rules=FLOW, strict=True).violations
    assert [v.code for v in found] == codes


_BRANCHES = """import sys
import torch
from torch import nn


def main(name, x):
    if name == "small":
        net = nn.Linear(4, 2)
    elif name == "large":
        net = nn.Linear(4, 2, bias=False)
    else:
        {other}
    return net(x.cuda())
"""


@pytest.mark.parametrize("other, reported", [
    ("raise ValueError(name)", True),  # the path that goes on is one of the CPU layers
    ("print(name); sys.exit(1)", True),
    ("return None", True),
    ("net = None", False),  # a third path with another value: nothing agreed on
    ("pass", True),  # a path where net is unbound: a later read raises NameError there
    ("print(net)", False),  # the path names it: it may be bound there (a global, another binding)
])
def test_a_path_that_leaves_does_not_dilute_what_the_others_agree_on(other, reported):
    source = _BRANCHES.format(other=other)
    found = [v.line for v in check_source(source, rules=[CpuMeetsPlaced], strict=True).violations]
    assert found == ([13] if reported else [])


def test_a_project_model_is_on_the_cpu_only_with_evidence_of_weights():
    base = (
        "import torch\nfrom models.resnet import ResNet\n\ndevice = torch.device('cuda' if torch.cuda.is_available()"
        " else 'cpu')\nnet = {build}\n{use}\n\n\ndef run(x):\n    return net(x.to(device))\n"
    )

    def lines(build, use):
        source = base.format(build=build, use=use)
        return [v.line for v in check_source(source, rules=[CpuMeetsPlaced], strict=True).violations]
    assert lines("ResNet()", "opt = torch.optim.SGD(net.parameters(), lr=0.1)") == [10]
    assert lines("ResNet()", "print(net)") == []  # no weights read: an augmentation mixes with any device
    assert lines("ResNet(device)", "opt = torch.optim.SGD(net.parameters(), lr=0.1)") == []
    assert lines("ResNet(args.gpu)", "net.load_state_dict({})") == []
    base_helper = base.replace("from models.resnet import ResNet", "from models.resnet import build_resnet")
    source = base_helper.format(build="build_resnet()", use="net.eval(); net.state_dict()")
    assert check_source(source, rules=[CpuMeetsPlaced], strict=True).violations == []
    whisper = base.replace("from models.resnet import ResNet", "from whisper import ResNet")
    source = whisper.format(build="ResNet()", use="net.state_dict()")
    assert check_source(source, rules=[CpuMeetsPlaced], strict=True).violations == []


@pytest.mark.parametrize("imported, rebuilt", [
    ("from typing import cast", "cast(torch.nn.Module, torch.compile(net))"),  # Python's: hands back its argument
    ("from copy import deepcopy", "deepcopy(net)"),
    ("from models.wrap import Compiled", "Compiled(torch.compile(net))"),  # given the placed model, inside a call
])
def test_a_call_handed_the_placed_model_builds_no_project_model(imported, rebuilt):
    source = (
        f"import torch\n{imported}\nfrom models.resnet import ResNet\n\n"
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        f"net = ResNet()\nnet.to(device)\nnet = {rebuilt}\nopt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
        "out = net(torch.ones(2, 3).to(device))\n"
    )
    assert check_source(source, rules=[CpuMeetsPlaced], strict=True).violations == []


@pytest.mark.parametrize("signature, before, reported", [
    ("def main(name, x):", "", True),
    ("def main(name, x, net=None):", "", False),  # a parameter: bound on the path that binds nothing
    ("def main(name, x):", "    net = build(name)\n", False),  # bound before the if, to what the walk cannot tell
    ("def main(name, x):", "    print(args.net)\n", True),  # an attribute's name is no variable
])
def test_a_name_first_bound_in_one_arm_holds_that_arms_value(signature, before, reported):
    source = (
        f"import torch\nfrom torch import nn\n\n\n{signature}\n{before}    if name == 'small':\n"
        "        net = nn.Linear(4, 2)\n    elif name == 'large':\n        net = nn.Linear(4, 2, bias=False)\n"
        "    else:\n        print('unsupported', name)\n    return net(x.cuda())\n"
    )
    found = check_source(source, rules=[CpuMeetsPlaced], strict=True).violations
    assert bool(found) == reported


_HANDED_MODULE = """\
device = "cuda" if torch.cuda.is_available() else "cpu"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


def train(net, loader):
    for images, labels in loader:
        images = images.to(device)
        out = net(images)


def main():
{body}
"""


@pytest.mark.parametrize(("body", "reported"), [
    # The one call of train() hands it a module built on the CPU: the placed batches meet its weights.
    ("    net = Net()\n    train(net, loader)", True),
    ("    train(nn.Linear(4, 2), loader)", True),
    # Moved first, or handed a module the walk does not know, or train() called twice (another call may
    # hand a placed one): nothing is known to meet.
    ("    net = Net().to(device)\n    train(net, loader)", False),
    ("    net = Net()\n    net.to(device)\n    train(net, loader)", False),
    ("    net = build()\n    train(net, loader)", False),
    ("    train(Net(), loader)\n    train(Net().to(device), loader)", False),
])
def test_a_cpu_module_handed_to_the_function_that_feeds_it_placed_batches(body, reported):
    source = _HANDED_MODULE.format(body=body)
    line = HEAD.count("\n") + source.splitlines().index("        out = net(images)") + 1
    assert codes(source) == ([("TDV601", line)] if reported else [])


def test_a_function_that_builds_a_module_links_to_the_functions_it_hands_it_to():
    import ast

    from flake8_torchdevice.analysis.function_calls import function_call_graph

    source = _HANDED_MODULE.format(body="    net = Net()\n    train(net, loader)") + "\n\ndef other():\n    report(x)\n"
    graph = function_call_graph(ast.parse(source).body, source.splitlines())
    assert graph["main"] == {"train"}
    assert graph["other"] == frozenset()  # neither moves nor builds a module


@pytest.mark.parametrize(("device", "reported"), [
    ("device", True),  # the module's CUDA-if-available device
    ("'cpu'", False),  # the one call gives it the CPU: nothing it moves leaves the CPU
])
def test_a_cpu_device_the_one_caller_gives_places_nothing(device, reported):
    source = _HANDED_MODULE.format(body=f"    net = Net()\n    fit(net, loader, {device})").replace(
        "def train(net, loader):\n    for images, labels in loader:\n        images = images.to(device)\n",
        "def fit(net, loader, device):\n    for images, labels in loader:\n        images = images.to(device)\n")
    line = HEAD.count("\n") + source.splitlines().index("        out = net(images)") + 1
    assert codes(source) == ([("TDV601", line)] if reported else [])


@pytest.mark.parametrize(("statement", "reported"), [
    ("model.cpu().eval()", False),  # moved back to the CPU, through a method that returns the module
    ("model.cpu()", False),
    ("model.eval()", True),
])
def test_a_placed_module_moved_back_to_the_cpu_by_a_chained_statement(statement, reported):
    source = (
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "def export(model):\n"
        f"    {statement}\n"
        "    return model(torch.randn(1, 1)).detach()\n"
        "model = nn.Linear(1, 1).to(device)\n"
        "export(model)\n"
    )
    assert codes(source) == ([("TDV601", 7)] if reported else [])


@pytest.mark.parametrize(("call", "reported"), [
    ("np.squeeze(out)", False),  # ``out.squeeze()``: a tensor, on its device
    ("np.squeeze(out, axis=0)", False),
    ("np.swapaxes(out, 0, 1)", False),
    ("np.nonzero(out)", False),
    ("np.shape(out)", False),
    ("np.ndim(out)", False),
    ("np.transpose(out)", True),  # torch's transpose wants two dims: NumPy falls back to np.asarray
    ("np.argmax(out)", True),
    ("np.clip(out, 0, 1)", True),
    ("np.asarray(out)", True),
])
def test_numpy_functions_that_call_the_tensors_own_method_read_no_array(call, reported):
    source = (
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "model = nn.Linear(3, 2).to(device)\n\n\n"
        f"def run(x):\n    out = model(x.to(device))\n    return {call}\n"
    )
    assert codes(source) == ([("TDV603", 10)] if reported else [])


@pytest.mark.parametrize(("statement", "reported"), [
    ("model.to(device).eval()", True),  # moved in place, under a method that returns the module
    ("model.eval().to(device)", True),
    ("model.train().float().cuda()", True),
    ("model.to(device)", True),
    ("model.eval()", False),  # never moved: a CPU module fed a CPU batch
    ("model.eval().cpu()", False),
    ("model.half()", False),
])
def test_a_module_moved_by_a_chained_statement_is_placed(statement, reported):
    source = (
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n\n\n"
        "def evaluate(data):\n    model = nn.Linear(3, 2)\n"
        f"    {statement}\n"
        "    for xb, yb in DataLoader(data):\n        out = model(xb)\n"
    )
    assert codes(source) == ([("TDV602", 11)] if reported else [])


@pytest.mark.parametrize(("statement", "reported"), [
    ("model.cpu().eval()", False),  # a local bound to something unknown stays unknown after .cpu()
    ("model.eval()", False),
])
def test_a_module_of_unknown_place_moved_back_stays_unknown(statement, reported):
    source = (
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "model = nn.Linear(1, 1).to(device)\n\n\n"
        "def export(path):\n    model = load_model(path)\n"
        f"    {statement}\n"
        "    return model(torch.randn(1, 1)).detach().numpy()\n"
    )
    assert codes(source) == ([("TDV601", 11)] if reported else [])


@pytest.mark.parametrize("read, reported", [
    ("grid = make(image)[0]", True),  # the placed part, read by its position
    ("grid = make(image)[1]", False),  # the CPU part
    ("grid = make(image)[5]", False),  # no such part
    ("grid = make(image)[i]", False),  # a position the code computes
])
def test_a_helpers_tuple_part_read_by_its_position(read, reported):
    source = (
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n\n\n"
        "def make(image):\n    grid, mask = torch.rand(2, 2), torch.rand(2, 2)\n    return grid.to(device), mask\n\n\n"
        f"def run(image, i):\n    base = torch.zeros(2, 2)\n    {read}\n"
        "    return torch.cat((base, grid))\n"
    )
    assert codes(source) == ([("TDV601", 15)] if reported else [])
