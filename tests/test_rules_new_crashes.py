"""TDV107, TDV302, TDV303 and TDV201's device comparison: behaviour the fixtures do not pin down."""

from __future__ import annotations

import textwrap

import pytest

from flake8_torchdevice.engine import check_source
from flake8_torchdevice.rules.tdv107 import LegacyConstructorGivenDevice
from flake8_torchdevice.rules.tdv201 import TorchLoadWithoutMapLocation
from flake8_torchdevice.rules.tdv302 import FunctionalDataParallelOnCpuPath
from flake8_torchdevice.rules.tdv303 import WrapperAttributeOnCpuPath


def found(source: str, rule) -> list[int]:
    result = check_source(textwrap.dedent(source), rules=(rule,), strict=True)
    assert result.error is None, result.error
    return [v.line for v in result.violations]


def test_legacy_constructor_under_its_aliases():
    source = """
    import torch as th
    from torch import LongTensor as LT
    FT = th.FloatTensor
    def f(ids, d):
        return LT(ids, device=d), FT(3, device=d), th.BoolTensor([True], device="cuda:0")
    """
    assert found(source, LegacyConstructorGivenDevice) == [6, 6, 6]


def test_legacy_constructor_told_the_cpu_or_not_a_device():
    source = """
    import torch
    cpu = torch.device("cpu")
    a = torch.LongTensor([1], device="cpu:0")
    b = torch.IntTensor([1], device=torch.device("cpu"))
    c = torch.tensor([1], device="cuda")
    d = torch.cuda.FloatTensor([1], device=1)
    """
    assert found(source, LegacyConstructorGivenDevice) == []


def test_functional_data_parallel_under_its_aliases_and_only_with_a_cpu_path():
    body = """
    import torch
    import torch.nn.parallel as P
    from torch.nn.parallel import data_parallel as dp
    {choice}
    def step(model, x):
        return P.data_parallel(model, x), dp(model, (x,)), torch.nn.parallel.data_parallel(model, x)
    """
    with_cpu = body.format(choice='device = "cuda" if torch.cuda.is_available() else "cpu"')
    assert found(with_cpu, FunctionalDataParallelOnCpuPath) == [7, 7, 7]
    cuda_only = body.format(choice="assert torch.cuda.is_available()")
    assert found(cuda_only, FunctionalDataParallelOnCpuPath) == []
    no_choice = body.format(choice="")
    assert found(no_choice, FunctionalDataParallelOnCpuPath) == []


def test_functional_data_parallel_after_an_early_exit_without_cuda():
    source = """
    import torch
    use_cuda = torch.cuda.is_available()
    def step(model, x):
        if not use_cuda:
            return model(x)
        return torch.nn.parallel.data_parallel(model, x)
    """
    assert found(source, FunctionalDataParallelOnCpuPath) == []


def test_module_of_a_wrapper_made_in_one_function_is_not_matched_in_another():
    source = """
    import torch
    from torch import nn
    def build(model):
        if torch.cuda.device_count() > 1:
            model = nn.DataParallel(model)
        return model
    def save(model):
        return model.module.state_dict()
    """
    assert found(source, WrapperAttributeOnCpuPath) == []


def test_module_of_an_attribute_wrapped_under_a_gpu_flag_in_another_method():
    source = """
    from torch.nn.parallel import DistributedDataParallel as DDP
    class Trainer:
        def setup(self, net):
            self.net = net
            if self.args.use_gpu:
                self.net = DDP(self.net, device_ids=[0])
        def save(self):
            return self.net.module.state_dict()
    """
    assert found(source, WrapperAttributeOnCpuPath) == [9]


@pytest.mark.parametrize("read, reported", [
    ("self.net.module.state_dict() if self.config['distributed'] else self.net.state_dict()", False),
    ("self.net.module.state_dict() if self.args.ddp else self.net.state_dict()", False),
    ("self.net.module.state_dict() if self.args.fp16 else self.net.state_dict()", True),  # another question
    ("self.net.module.state_dict()", True),
])
def test_module_read_under_the_runs_distributed_mode(read, reported):
    # The distributed mode is the condition DistributedDataParallel wraps under: code that asks it
    # knows what it holds, as under isinstance(m, DDP) (DBNet, v42: the flag and the wrap agree
    # through another file).
    source = f"""
    import torch
    class Trainer:
        def setup(self, net):
            self.net = net
            if torch.cuda.device_count() > 1:
                self.net = torch.nn.parallel.DistributedDataParallel(self.net, device_ids=[0])
        def save(self):
            return {read}
    """
    assert found(source, WrapperAttributeOnCpuPath) == ([9] if reported else [])


def test_load_in_the_branch_of_a_device_comparison_is_not_reported():
    source = """
    import torch
    device = "cuda" if torch.cuda.is_available() else "cpu"
    def load(path):
        if device == "cuda":
            return torch.load(path)
        return torch.load(path, map_location="cpu")
    def load_other(path):
        if device != "cuda":
            return torch.load(path)
        return torch.load(path, map_location="cpu")
    """
    assert found(source, TorchLoadWithoutMapLocation) == [10]


def test_torch_load_beside_a_move_to_a_literal_cuda_device_is_gpu_code():
    source = """
    import torch
    DEVICE = "cuda"
    def demo(args):
        model = RAFT(args)
        model.load_state_dict(torch.load(args.model))
        model.to(DEVICE)
    def literal(args):
        state = torch.load(args.model)
        return state, torch.zeros(3).to("cuda:0")
    def chosen(args, device):
        state = torch.load(args.model)
        return state, torch.zeros(3).to(device)
    """
    assert found(source, TorchLoadWithoutMapLocation) == [12]
    rebound = source.replace('DEVICE = "cuda"', 'DEVICE = "cuda"\n    DEVICE = args.device')
    assert found(rebound, TorchLoadWithoutMapLocation) == [7, 13]
