"""TDV505 (an optimizer's state loaded before its module moves): what the fixtures do not pin down."""

from __future__ import annotations

import textwrap

import pytest

from flake8_torchdevice.engine import check_source
from flake8_torchdevice.rules.tdv505 import OptimizerStateBeforePlacement


def found(source: str) -> list[int]:
    result = check_source(textwrap.dedent(source), rules=(OptimizerStateBeforePlacement,), strict=True)
    assert result.error is None, result.error
    return [v.line for v in result.violations]


def test_parameters_through_a_name_a_group_and_a_wrapper_move():
    source = """
    import torch
    from torch import nn
    if __name__ == "__main__":
        model = nn.Linear(4, 2)
        if args.resume:
            params = list(model.parameters())
            optimizer = torch.optim.Adam(params)
            optimizer.load_state_dict(torch.load(args.resume, map_location="cpu"))
        else:
            optimizer = torch.optim.Adam(model.parameters())
        if args.cuda:
            model = nn.DataParallel(model).cuda()
    def groups(args):
        model = nn.Linear(4, 2)
        optimizer = torch.optim.SGD([{"params": model.backbone.parameters()}], lr=0.1)
        optimizer.load_state_dict(torch.load(args.resume, map_location="cpu"))
        model.to(args.device)
    """
    assert found(source) == [9, 17]


def test_the_message_names_the_optimizer_and_the_module():
    source = """
    import torch
    def f(self, path, device):
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)
        self.opt.load_state_dict(torch.load(path, map_location="cpu"))
        self.net.to(device)
    """
    result = check_source(textwrap.dedent(source), rules=(OptimizerStateBeforePlacement,), strict=True)
    message = OptimizerStateBeforePlacement.MESSAGE.format(optimizer="self.opt", module="self.net")
    assert [(v.line, v.message) for v in result.violations] == [(5, message)]


def test_an_elif_is_the_other_branch_and_a_later_if_is_not():
    source = """
    import torch
    def exclusive(args, model):
        model = Net()
        optimizer = torch.optim.Adam(model.parameters())
        if args.resume:
            optimizer.load_state_dict(torch.load(args.resume, map_location="cpu"))
        elif args.cuda:
            model.cuda()
    def later(args):
        model = Net()
        optimizer = torch.optim.Adam(model.parameters())
        if args.resume:
            optimizer.load_state_dict(torch.load(args.resume, map_location="cpu"))
        for step in range(3):
            pass
        else:
            pass
        if args.cuda:
            model.cuda()
    """
    assert found(source) == [14]


def test_state_moved_by_a_helper_or_a_rebuilt_optimizer_or_a_cpu_move_are_left_alone():
    source = """
    import torch
    def helper(args, device):
        model = Net()
        optimizer = torch.optim.Adam(model.parameters())
        optimizer.load_state_dict(torch.load(args.resume, map_location="cpu"))
        model.to(device)
        optimizer_to(optimizer, device)
    def rebuilt(args, device):
        model = Net()
        optimizer = torch.optim.Adam(model.parameters())
        optimizer.load_state_dict(torch.load(args.resume, map_location="cpu"))
        optimizer = torch.optim.Adam(model.parameters())
        model.to(device)
    def cpu(args):
        model = Net()
        optimizer = torch.optim.Adam(model.parameters())
        optimizer.load_state_dict(torch.load(args.resume, map_location="cpu"))
        model.to("cpu")
        model.to(torch.float16)
    def not_an_optimizer(args, device):
        model = Net()
        ema = ModelEma(model.parameters())
        ema.load_state_dict(torch.load(args.resume, map_location="cpu"))
        model.to(device)
    """
    assert found(source) == []


@pytest.mark.parametrize(
    "setter, reported",
    [
        ("", True),
        ("torch.set_default_tensor_type('torch.cuda.FloatTensor')", False),
        ("torch.set_default_device(device)", False),
        ("torch.set_default_device('cpu')", True),  # names no CUDA
    ],
)
def test_a_cuda_default_set_at_import_builds_the_model_on_the_gpu(setter, reported):
    source = f"""
    import torch
    from torch import nn
    device = "cuda" if torch.cuda.is_available() else "cpu"


    def train(path):
        model = nn.Linear(4, 2)
        optimizer = torch.optim.Adam(model.parameters())
        optimizer.load_state_dict(torch.load(path, map_location="cpu"))
        model = model.cuda()


    if __name__ == "__main__":
        {setter}
        train("last.pt")
    """
    assert found(source) == ([10] if reported else [])
