"""TDV108 (a parameter whose default device is CUDA): behaviour the fixtures do not pin down."""

from __future__ import annotations

import textwrap

import pytest

from flake8_torchdevice.engine import check_source
from flake8_torchdevice.rules.tdv108 import CudaDefaultDevice


def found(source: str, filename: str = "lib.py") -> list[tuple[int, int]]:
    result = check_source(textwrap.dedent(source), filename=filename, rules=(CudaDefaultDevice,), strict=True)
    assert result.error is None, result.error
    return [(v.line, v.col) for v in result.violations]


def test_every_spelling_of_a_cuda_default_is_reported_at_the_default():
    source = """
    import torch as th
    from torch import device as D
    def a(x, device="cuda:0"):
        return x.to(device)
    def b(x, *, dev=th.device("cuda", 1)):
        return th.zeros(3, device=dev)
    def c(x, target=D(type="cuda")):
        return x.to(target)
    def d(x, out_device="cuda"):
        return helper(x, out_device)
    """
    assert found(source) == [(4, 16), (6, 16), (8, 16), (10, 20)]


def test_a_method_and_a_constructor_report_their_own_parameter_by_name():
    source = """
    class Encoder:
        def __init__(self, width, device="cuda"):
            self.device = device
    """
    result = check_source(textwrap.dedent(source), rules=(CudaDefaultDevice,), strict=True)
    assert [v.message for v in result.violations] == [CudaDefaultDevice.MESSAGE.format(name="device")]


def test_a_parameter_neither_named_nor_used_as_a_device_is_left_alone():
    source = """
    def upfirdn(x, f, impl="cuda"):
        assert impl in ("ref", "cuda")
        return run(x, f, impl=impl)
    """
    assert found(source) == []


def test_amp_device_types_alone_are_left_alone_but_not_beside_a_placement():
    source = """
    import torch
    def only_amp(x, device="cuda"):
        with torch.autocast(device):
            return x * 2
    def amp_and_move(x, device="cuda"):
        with torch.autocast(device):
            return x.to(device)
    def scaler(device="cuda"):
        return torch.amp.GradScaler(device)
    def compared(x, device="cuda"):
        return x if device == "cpu" or device.startswith("mps") else x * 2
    """
    assert found(source) == [(6, 27)]


def test_cuda_code_by_guard_name_or_test_is_left_alone():
    source = """
    import torch
    if torch.cuda.is_available():
        def fast(x, device="cuda"):
            return x.to(device)
    class GPUTimer:
        def start(self, device="cuda"):
            return torch.cuda.Event(device)
    def load_gpu(x, device="cuda"):
        return x.to(device)
    def asks(x, device="cuda"):
        return x.to(device) if torch.cuda.device_count() else x
    """
    assert found(source) == []
    test = """
    import torch
    def test_kernel(device="cuda"):
        assert torch.ones(2, device=device).sum() == 2
    """
    assert found(test, filename="tests/test_kernel.py") == []
    assert found(test, filename="lib.py") == [(3, 23)]  # outside a test module the name proves nothing


def test_a_module_that_asserts_cuda_is_left_alone():
    source = """
    import torch
    assert torch.cuda.is_available()
    def make(n, device="cuda"):
        return torch.randn(n, device=device)
    """
    assert found(source) == []
    assert found(source.replace("assert torch.cuda.is_available()", "")) == [(4, 19)]


def test_a_module_named_for_cuda_and_a_builtin_look_are_left_alone():
    source = """
    import torch
    def device_module(device="cuda"):
        return getattr(torch, device)
    def make(n, device="cuda"):
        return torch.randn(n, device=device)
    """
    assert found(source) == [(5, 19)]
    assert found(source, filename="pkg/cuda/random.py") == []
    assert found(source, filename="pkg/gpu_utils.py") == []


def test_a_script_without_a_cpu_path_is_cuda_code_and_one_with_a_fallback_is_not():
    source = """
    import torch
    def render(G, seeds, device=torch.device("cuda")):
        return G(torch.randn(len(seeds), 512, device=device))
    if __name__ == "__main__":
        render(load_generator(), [1, 2])
    """
    assert found(source) == []
    fallback = source.replace('load_generator()', 'load_generator("cuda" if torch.cuda.is_available() else "cpu")')
    assert found(fallback) == [(3, 28)]
    library = source.replace('if __name__ == "__main__":', 'def main():')
    assert found(library) == [(3, 28)]  # a library: its callers are elsewhere
    # A notebook is a program too: its cells are its functions' only callers.
    cells = source.replace('if __name__ == "__main__":\n        ', '')
    assert found(cells, filename="sample.ipynb") == []
    assert found(cells.replace("load_generator()", 'load_generator("cpu")'), filename="sample.ipynb") == [(3, 28)]
    assert found(cells, filename="sample.py") == [(3, 28)]


def test_a_library_file_written_for_gpus_only_is_left_alone():
    source = """
    import torch
    def sample(G, n, device="cuda"):
        return G(torch.randn(n, 128, device=device))
    def interpolate(G, a, b):
        steps = torch.linspace(0, 1, 8).cuda()
        return G(a + (b - a) * steps[:, None])
    """
    assert found(source) == []  # it places on CUDA itself and offers the CPU nowhere: its default repeats that
    without_placement = source.replace(".cuda()", "")
    assert found(without_placement) == [(3, 24)]
    # Any CPU path, CUDA branch or device left to the caller makes the default a choice again.
    for offer in ('fallback = "cpu"',
                  'steps = steps if torch.cuda.is_available() else steps.cpu()',
                  'def helper(t, device=None): return t.to(device)'):
        assert found(source.replace("return G(a +", offer + "\n        return G(a +")) == [(3, 24)], offer


def test_a_switch_on_by_default_is_reported_where_it_turns_cuda_on():
    source = """
    import torch
    def one_hot(idx, size, cuda=True):
        v = torch.zeros(size)
        if cuda: v = v.cuda()
        return v
    class Predictor:
        def __init__(self, model, use_gpu=True):
            self.use_gpu = use_gpu
            if self.use_gpu and model is not None:
                model.to("cuda")
    def pick(x, gpu=True):
        return x.to(torch.device("cuda" if gpu else "cpu"))
    """
    result = check_source(textwrap.dedent(source), filename="lib.py", rules=(CudaDefaultDevice,), strict=True)
    assert [(v.line, v.col) for v in result.violations] == [(3, 28), (8, 38), (12, 16)]
    assert result.violations[0].message == CudaDefaultDevice.SWITCH.format(name="cuda")


def test_a_switch_that_asks_turns_nothing_on_or_is_off_is_left_alone():
    source = """
    import torch
    def asks(x, use_gpu=True):
        if use_gpu and torch.cuda.is_available():
            x = x.cuda()
        return x
    def stores(x, cuda=True):
        return {"cuda": cuda, "x": x}
    def negated(x, cuda=True):
        if not cuda:
            x = x.cpu()
        return x
    def off(x, cuda=False):
        return x.cuda() if cuda else x
    def named_gpu(x, cuda=True):
        if cuda:
            x = x.cuda(0)
        return x
    def not_a_switch(x, pin=True):
        if pin:
            x = x.cuda()
        return x
    """
    assert found(source) == []


def test_a_switch_in_code_that_places_on_cuda_anyway_is_left_alone():
    source = """
    import torch
    def extract(model, loader, use_cuda=True):
        for batch in loader:
            batch = batch.cuda(non_blocking=True)
            feats = model(batch)
            if use_cuda:
                feats = feats.cuda()
        return feats
    """
    assert found(source) == []
    assert found(source.replace("batch = batch.cuda(non_blocking=True)", "batch = batch")) == [(3, 36)]


def test_only_the_switch_and_names_bound_to_it_test_it():
    source = """
    def f(model, flags, cuda=True):
        flags[0] = cuda
        if model.ready():
            model.cuda()
        return model
    """
    assert found(source) == []


STORED = """
import torch
class Loss(torch.nn.Module):
    def __init__(self, use_gpu=True):
        super().__init__()
        self.use_gpu = use_gpu
    def forward(self, x, t):
{body}        return (x - t).sum()
"""


def test_a_switch_init_stores_is_reported_where_another_method_turns_cuda_on_with_it():
    body = "        if self.use_gpu:\n            t = t.cuda()\n"
    assert found(STORED.format(body=body)) == [(4, 31)]


@pytest.mark.parametrize("body", [
    "        if self.use_gpu and torch.cuda.is_available():\n            t = t.cuda()\n",  # it asks
    "        x = x.cuda()\n        if self.use_gpu:\n            t = t.cuda()\n",  # CUDA code anyway
    "        if self.other:\n            t = t.cuda()\n",  # another attribute
    "        t = t.to(x.device)\n",  # the switch turns nothing on
])
def test_a_stored_switch_that_turns_nothing_on_by_itself_is_left_alone(body):
    assert found(STORED.format(body=body)) == []


def test_a_stored_switch_tested_only_in_a_method_named_for_cuda_is_left_alone():
    source = STORED.format(body="").replace(
        "    def forward", "    def to_cuda(self, t):\n        if self.use_gpu:\n            return t.cuda()\n"
        "    def forward")
    assert found(source) == []


@pytest.mark.parametrize(
    "communicate, reported",
    [
        ("dist.broadcast(seed, src=0)", False),  # NCCL takes CUDA tensors only: the backend's need
        ("torch.distributed.all_reduce(seed)", False),
        ("dist.barrier()", True),  # no tensor handed to a collective
        ("helper.broadcast(seed, src=0)", True),  # not torch.distributed's
    ],
)
def test_a_cuda_default_for_tensors_handed_to_a_collective_is_left_alone(communicate, reported):
    source = f"""
    import torch
    import torch.distributed as dist
    def init_random_seed(seed=None, device="cuda"):
        seed = torch.tensor(seed, dtype=torch.int32, device=device)
        {communicate}
        return seed.item()
    """
    assert found(source) == ([(4, 39)] if reported else [])
