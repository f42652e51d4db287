"""TDV112 (a Parameter moved after it was made): the spellings and the fix the fixtures do not pin down."""

from __future__ import annotations

import textwrap

import pytest

from flake8_torchdevice.engine import check_source
from flake8_torchdevice.fixes import fix_source
from flake8_torchdevice.rules.tdv112 import ParameterMovedAfterCreation

HEAD = "import torch\nimport torch as th\nfrom torch import nn\nfrom torch.nn import Parameter as P\n\n\n"


def found(body: str) -> list[int]:
    source = HEAD + "class C:\n    def __init__(self, x, p, device, dtype):\n" + textwrap.indent(body, " " * 8)
    result = check_source(source, rules=(ParameterMovedAfterCreation,), strict=True)
    assert result.error is None, result.error
    return [v.line for v in result.violations]


@pytest.mark.parametrize(
    "value, reported",
    [
        ("nn.Parameter(x).to(device)", True),
        ("th.nn.Parameter(x).to(self.device)", True),
        ("P(x).to(device=device)", True),
        ("nn.Parameter(x, requires_grad=True).cuda()", True),
        ("nn.Parameter(x, requires_grad=False).cuda()", False),  # a constant: its copy is a leaf too
        ("nn.Parameter(x).cuda(1)", True),
        ('nn.Parameter(x).to("cuda:0")', True),
        ("nn.Parameter(x).to(torch.device('cuda'))", True),
        ("nn.Parameter(x.to(device))", False),  # the data moved first
        ("nn.Parameter(x).to(dtype)", False),  # a cast
        ("nn.Parameter(x).to(DEVICE)", True),
        ("nn.Parameter(x).to(x)", True),  # to another tensor's device (and dtype)
        ("nn.Parameter(x).to(memory_format=torch.channels_last)", False),
        ("nn.Parameter(x).to(torch.float16)", False),
        ('nn.Parameter(x).to("cpu")', False),  # a CPU Parameter is returned as it is
        ("nn.Parameter(p.data.float()).to(p.device)", False),  # already on p's device
        ("nn.Parameter(x).to(p.device)", True),
        ("torch.zeros(3).to(device)", False),
        ("nn.Linear(2, 2).to(device)", False),
    ],
)
def test_what_is_reported(value, reported):
    assert found(f"self.w = {value}\n") == ([9] if reported else [])


def test_only_state_kept_on_the_object_is_reported():
    body = (
        "token = nn.Parameter(x).to(device)\n"
        "self.w: nn.Parameter = nn.Parameter(x).to(device)\n"
        "self.a = self.b = nn.Parameter(x).to(device)\n"
    )
    assert found(body) == [10]


@pytest.mark.parametrize(
    "before, after",
    [
        ("nn.Parameter(x).to(device)", "nn.Parameter(x.to(device))"),
        ("nn.Parameter(x, requires_grad=True).cuda()", "nn.Parameter(x.cuda(), requires_grad=True)"),
        ("P(torch.randn(3) * 0.1).to(device=device)", "P((torch.randn(3) * 0.1).to(device=device))"),
    ],
)
def test_the_unsafe_fix_moves_the_data_instead(before, after):
    source = HEAD + f"class C:\n    def __init__(self, x, device):\n        self.w = {before}\n"
    assert fix_source(source, unsafe=True) == source.replace(before, after)
    assert fix_source(source) == source  # unsafe: not applied by default


def found_in(source: str) -> list[int]:
    result = check_source(HEAD + textwrap.dedent(source), rules=(ParameterMovedAfterCreation,), strict=True)
    assert result.error is None, result.error
    return [v.line for v in result.violations]


@pytest.mark.parametrize(
    "made, moved, reported",
    [
        ("torch.autograd.Variable(x, requires_grad=True)", "v = v.cuda()", True),
        ("nn.Parameter(x)", "v = v.to(device)", True),
        ("torch.randn(3, requires_grad=True)", "v = v.to(device)", True),
        ("torch.randn(3, requires_grad=True)", "v = v.to('cpu')", False),  # the CPU: the leaf itself
        ("torch.randn(3)", "v = v.to(device)", False),  # no leaf that requires grad
        ("torch.randn(3, requires_grad=False)", "v = v.cuda()", False),
        ("torch.randn(3, requires_grad=True, device=device)", "pass", False),
        ("torch.randn(3, requires_grad=True)", "v = v.to(device).detach().requires_grad_()", False),
    ],
)
def test_a_moved_leaf_given_to_an_optimizer(made, moved, reported):
    source = f"""
    def fit(x, device):
        v = {made}
        if device.type == "cuda":
            {moved}
        return torch.optim.Adam([v], lr=0.1)
    """
    assert found_in(source) == ([11] if reported else [])


@pytest.mark.parametrize(
    "optimizer, reported",
    [
        ("torch.optim.SGD([{'params': [v]}], lr=0.1)", True),
        ("th.optim.SGD(params=(v,), lr=0.1)", True),
        ("torch.optim.lr_scheduler.StepLR([v], 3)", False),  # no optimizer
        ("torch.optim.SGD(model.parameters(), lr=0.1)", False),
        ("print([v])", False),
    ],
)
def test_only_an_optimizer_given_the_name_counts(optimizer, reported):
    source = f"""
    v = torch.randn(3, requires_grad=True).to(device)
    opt = {optimizer}
    """
    assert found_in(source) == ([8] if reported else [])


def test_a_tensor_moved_to_the_device_it_was_made_on_stays_the_leaf():
    source = HEAD + (
        "def f(device, other):\n"
        "    w = torch.rand(1, requires_grad=True, device=device).to(device)\n"
        "    v = torch.rand(1, requires_grad=True, device=other).to(device)\n"
        "    p = nn.Parameter(torch.ones(1, device=device)).to(device)\n"
        "    return torch.optim.Adam([w, v]), p\n"
    )
    result = check_source(source, rules=(ParameterMovedAfterCreation,), strict=True)
    assert [v.line for v in result.violations] == [9]  # v: made on another device, moved: a copy
