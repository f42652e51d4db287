"""TDV501 (tensor state in plain attributes), TDV502 and TDV504 (factory without device=
meeting an input, in a helper / in a model's forward): behaviour the fixtures do not pin
down line by line."""

from __future__ import annotations

import importlib.util

import textwrap
from pathlib import Path

import pytest

from flake8_torchdevice.engine import check_source
from flake8_torchdevice.rules.tdv502 import FactoryWithoutDevice
from flake8_torchdevice.rules.tdv504 import FactoryWithoutDeviceInForward
from flake8_torchdevice.rules.tdv501 import TensorStateNotRegistered

ROOT = Path(__file__).resolve().parent.parent


def lines(rule, source: str) -> list[int]:
    result = check_source(textwrap.dedent(source), rules=[rule], strict=True)
    assert result.error is None, result.error
    return [v.line for v in result.violations]


def tdv501(source: str) -> list[int]:
    return lines(TensorStateNotRegistered, source)


def tdv502(source: str) -> list[int]:
    return lines(FactoryWithoutDevice, source)


def tdv504(source: str) -> list[int]:
    return lines(FactoryWithoutDeviceInForward, source)


# -- TDV501 ---------------------------------------------------------------
MODULE = """
import torch
from torch import nn

class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.counts = torch.zeros(3)
{body}
"""


@pytest.mark.parametrize(
    "body, expected",
    [
        ("    def forward(self, x):\n        self.counts += x", [8]),
        ("    def forward(self, x):\n        return x + self.counts.to(x.device)", []),
        ("    def forward(self, x):\n        return x + self.counts.type_as(x)", []),
        ("    def forward(self, x):\n        self.counts = self.counts.to(x)\n        return x + self.counts", []),
        ("    def _apply(self, fn, recurse=True):\n        return super()._apply(fn, recurse)", []),
        ("    def forward(self, x):\n        return x.shape == self.counts.shape", []),
        (
            "    def reset(self):\n        self.counts = torch.zeros(3)\n"
            "    def forward(self, x):\n        return x + self.counts",
            [8],
        ),
        # never used in the class: it is missing from state_dict(), but nothing can fail
        ("", []),
        ("    def forward(self, x):\n        return x.mm(self.counts[:, None])", [8]),
        ("    def forward(self, x):\n        return x + self.counts[0]", []),  # a 0-dim element
        ("    def forward(self, x):\n        self.counts += 1\n        return x", []),  # numbers only
        ("    def forward(self, x):\n        return self.count(self.counts)\n"
         "    def count(self, c):\n        return c.sum()", []),  # a method of the class, not a module
    ],
)
def test_uses_elsewhere_in_the_class_decide(body, expected):
    assert tdv501(MODULE.format(body=body)) == expected


def test_a_local_name_and_a_method_return_carry_the_attribute():
    source = """
    import torch
    from torch import nn
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.mask_te = torch.tensor([1.0])
            self.other = torch.ones(3)
        def _mask(self):
            if self.training:
                mask = torch.ones(1)
            else:
                mask = self.mask_te
            return mask
        def forward(self, x):
            drop = self._mask()
            kept = self.other
            kept = x.sum()
            return x * drop + kept
    """
    assert tdv501(source) == [7]  # other: the name was bound to something else before it met x


def test_zero_dim_state_only_matters_in_place():
    source = """
    import torch
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.eps = torch.tensor(1e-6)
            self.steps = torch.tensor(0)
            self.total = torch.zeros(())
        def forward(self, x):
            self.steps += 1
            self.total.add_(x.sum())
            return x / (x.norm() + self.eps)
    """
    # eps meets x out of place (legal for a 0-dim CPU tensor); steps only ever meets a number
    assert tdv501(source) == [8]


@pytest.mark.parametrize(
    "loop, index, found",
    [
        ("for i, out in enumerate(outs):", "i", []),  # a loop counter: one element, 0-dim
        ("for i in range(len(outs)):", "i", []),
        ("for out in outs:", "idx", [6]),  # an unknown index may keep dimensions
    ],
)
def test_an_element_taken_by_a_loop_counter_is_zero_dim(loop, index, found):
    source = f"""
    import torch
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weights = torch.FloatTensor([0.5, 0.25])
        def forward(self, outs, idx):
            total = 0
            {loop}
                total = total + self.weights[{index}] * outs[0]
            return total
    """
    assert tdv501(source) == found


def test_metric_aliases_and_add_state():
    source = """
    import torch
    from torchmetrics import Metric as M
    class Mean(M):
        def __init__(self):
            super().__init__()
            self.add_state("total", default=torch.zeros(()), dist_reduce_fx="sum")
            self.hist = torch.zeros(10)
        def update(self, x):
            self.total += x.sum()
            self.hist += x[:10]
    """
    result = check_source(textwrap.dedent(source), rules=[TensorStateNotRegistered], strict=True)
    assert [v.line for v in result.violations] == [8]
    assert 'self.add_state("hist"' in result.violations[0].message


@pytest.mark.parametrize(
    "header",
    [
        "import torch.nn as nn\nclass M(nn.Module):",
        "from torch import nn\nclass M(nn.Linear):",
        "from torch.nn import Module as Base\nclass B(Base): pass\nclass M(B):",
        "import torchmetrics\nclass M(torchmetrics.Metric):",
        "from torchmetrics.metric import Metric\nclass M(Metric):",
    ],
)
def test_base_class_aliases(header):
    source = (f"import torch\n{header}\n    def __init__(self):\n        self.a = torch.ones(2)\n"
              "    def forward(self, x):\n        return x * self.a\n")
    assert tdv501(source) == [source.count("\n", 0, source.index("self.a")) + 1]


@pytest.mark.parametrize(
    "header",
    [
        "class M:",  # not a Module
        "from mylib import Base\nclass M(Base):",  # unknown base: precision first
        "import torch\nclass M(torch.nn.Parameter):",  # a Tensor subclass, not a Module
    ],
)
def test_not_a_module(header):
    assert tdv501(f"import torch\n{header}\n    def __init__(self):\n        self.a = torch.ones(2)\n") == []


def test_registered_placed_and_late_state_are_fine():
    source = """
    import torch
    from torch import nn
    class M(nn.Module):
        def __init__(self, device=None):
            super().__init__()
            self.w = nn.Parameter(torch.zeros(3))
            self.register_buffer("b", torch.zeros(3))
            self.placed = torch.zeros(3, device=device)
            def helper():
                self.inner = torch.zeros(3)  # a nested function, not __init__ itself
            helper()
        def reset(self):
            self.late = torch.zeros(3)
    """
    assert tdv501(source) == []


# -- TDV502 ---------------------------------------------------------------
@pytest.mark.parametrize(
    "body",
    [
        "m = torch.zeros(x.shape)\n    return x + m",
        "m = torch.ones(x.shape[0])\n    return torch.cat([x, m])",
        "m = torch.ones(x.shape)\n    return torch.where(x > 0, x, m)",
        "acc = torch.zeros(())\n    acc += x.sum()\n    return acc",
        "acc = torch.tensor(0.0)\n    acc.add_(x.sum())\n    return acc",
        "idx = torch.tensor([0, 1])\n    return x.float().index_add_(0, idx, x)",
        "out = torch.zeros(3)\n    out.scatter_add_(0, x.long(), x)\n    return out",
        "mask = torch.ones(4, 4).tril()\n    return x.masked_fill(mask == 0, 0)",
        "pos = torch.arange(4)\n    return pos[None, :] < x[:, None]",
        "buf = torch.zeros(4)\n    buf[x.nonzero()] = 1\n    return buf",
        # The method forms of torch functions that check their operands' devices.
        "return x.index_select(dim=-1, index=torch.arange(3))",
        "return x.float().take_along_dim(torch.zeros(1, 1, dtype=torch.long), 1)",
        "return x.float().isclose(torch.zeros(3))",
    ],
)
def test_combinations_are_reported(body):
    assert tdv502(f"import torch\ndef f(x):\n    {body}\n") == [3]


@pytest.mark.parametrize(
    "body",
    [
        "return x + torch.zeros_like(x) + x.new_ones(x.shape)",
        "return x + torch.zeros(x.shape, device=x.device)",
        "return x + torch.zeros(x.shape, **kw)",
        "return x + torch.zeros(x.shape).to(x)",
        "return x + torch.zeros(x.shape).type_as(x)",
        "return x + torch.zeros(x.shape).cuda(x.get_device())",
        "return x + (torch.zeros(x.shape).cuda() if x.is_cuda else torch.zeros(x.shape, device=x.device))",
        "m = torch.zeros(3)\n    if use_gpu: m = m.cuda()\n    return x + m",
        "m = torch.zeros(3)\n    if torch.cuda.is_available():\n        m = m.cuda()\n    return x + m",
        "m = torch.zeros(3)\n    if not torch.cuda.is_available():\n        return x\n    return x + m.cuda(0)",
        "return x[: torch.arange(3).sum().item()]",
        "return x * torch.tensor(2.0) + torch.zeros(())",
        "return torch.where(x > 0, x, torch.tensor(0.0))",
        "return torch.as_tensor(x) + x.float()",
        "m = torch.zeros(3)\n    return (m + 1).tolist(), x.shape",
        "m = torch.zeros(3)\n    m = m.to(x.device)\n    return x + m",
        "m = torch.zeros(3)  # device elsewhere\n    return x.float()",
    ],
)
def test_exemptions(body):
    assert tdv502(f"import torch\ndef f(x, use_gpu, **kw):\n    {body}\n") == []


@pytest.mark.parametrize(
    "cast, found",
    [
        ("self.FloatTensor", False),  # chosen by the switch in __init__: may be CUDA's
        ("torch.cuda.FloatTensor", False),
        ("x.type()", False),  # the input's own type
        ("torch.FloatTensor", True),  # a CPU type: still on the CPU
        ("'torch.LongTensor'", True),
        ("torch.float64", True),  # a dtype
    ],
)
def test_a_cast_to_a_tensor_type_that_may_be_cuda_moves_the_factory(cast, found):
    source = f"""
    import torch
    from torch import nn
    class EnvModel(nn.Module):
        def __init__(self, use_cuda):
            super().__init__()
            self.FloatTensor = torch.cuda.FloatTensor if use_cuda else torch.FloatTensor
        def forward(self, x):
            one_hot = torch.zeros(x.shape[0], 4).type({cast})
            return x * one_hot
    """
    assert tdv504(source) == ([9] if found else [])  # at the factory


FORCED = """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(4, 4)

    def forward(self, x, use_gpu=False):
        noise = torch.rand(x.shape).cuda()
        h0 = torch.zeros(1, 2, 4)
        h0 = h0.cuda(non_blocking=True)
        out, _ = self.rnn(x + noise, h0)
        kept = 1.0
        if use_gpu:
            kept = torch.ones(4).cuda()
        return out * kept
"""


def test_a_factory_sent_to_the_current_gpu_is_reported_at_its_cuda_call():
    # ``.cuda()`` picks the current GPU, not where the caller put the model and ``x``: it
    # meets ``x`` on two devices on a laptop run or with the model on ``cuda:1``.
    result = check_source(FORCED, rules=[FactoryWithoutDeviceInForward], strict=True)
    found = [(v.line, v.col, v.message.split(",")[1].strip()) for v in result.violations]
    assert found == [
        (11, 16, "and it meets x (an input)"),
        (13, 13, "and self.rnn receives it: the layer's weights are on the module's device (the CPU"),
    ]
    assert all(v.message.startswith(".cuda() sends a tensor made without device=") for v in result.violations)
    # TDV502 decides the same shape outside a model's entry point.
    assert tdv502("import torch\ndef f(x):\n    return x.float() + torch.ones(3).cuda()\n") == [3]


def test_numbers_are_not_inputs():
    source = """
    import torch
    def shard(x, rank, scale=2.0, eps: float = 1e-6, n: int = 3):
        a = torch.ones(4) * rank
        b = torch.ones(4) * scale + eps
        c = torch.arange(n) + n
        return a, b, c, x.sum()
    """
    assert tdv502(source) == []


def test_parameter_becomes_an_input_once_used_as_a_tensor():
    unknown = "import torch\ndef f(w):\n    return torch.ones(3) * w\n"
    assert tdv502(unknown) == []
    later = "import torch\ndef f(w):\n    out = torch.ones(3) * w\n    return out, w.shape\n"
    assert tdv502(later) == [3]
    typed = "import torch\ndef f(w: torch.Tensor):\n    return torch.ones(3) * w\n"
    assert tdv502(typed) == [3]


def test_data_loading_and_module_level_code_are_left_alone():
    source = """
    import torch
    class Data:
        def __getitem__(self, i):
            x = torch.tensor([i]).float()
            return x + torch.zeros(1), x.shape
    def collate_fn(batch):
        return torch.stack(batch) + torch.zeros(len(batch)), batch[0].shape
    x = torch.randn(3)
    y = x + torch.zeros(3)
    """
    assert tdv502(source) == []


def test_methods_skip_self_and_follow_closures():
    source = """
    import torch
    class M:
        def combine(self, x):
            mask = torch.ones(x.shape[-1])
            def apply(y):
                return y.float() * mask
            return apply(x) + self.bias * torch.tensor(2.0)
    """
    assert tdv502(source) == [5]
    assert tdv504(source) == []  # not a model's forward


# -- TDV504: the same decision, in a model's entry point ------------------------
FORWARDS = """
import torch
from torch import nn
import torchmetrics

class Base(nn.Module):
    pass

class Norm(Base):  # a module through a class of this file
    def forward(self, x):
        mask = torch.ones(x.shape[-1])
        def apply(y):
            return y.float() * mask
        return apply(x)

    def stats(self, x):
        return x.float() + torch.zeros(x.shape)

class Accuracy(torchmetrics.Metric):
    def update(self, preds, target):
        self.correct += (preds.argmax(-1) == target).sum() + torch.zeros(target.shape)

class Reader:
    def forward(self, x):
        return x.float() + torch.zeros(x.shape)

def helper(x):
    return x.float() + torch.zeros(x.shape)
"""


def test_forward_and_update_are_tdv504s_the_rest_tdv502s():
    assert tdv504(FORWARDS) == [11, 21]
    assert tdv502(FORWARDS) == [17, 25, 28]  # a module's other method, a non-module, a function


def test_both_selected_report_each_finding_once():
    result = check_source(textwrap.dedent(FORWARDS), rules=[FactoryWithoutDevice, FactoryWithoutDeviceInForward],
                          strict=True)
    found = sorted((v.line, v.code) for v in result.violations)
    assert found == [(11, "TDV504"), (17, "TDV502"), (21, "TDV504"), (25, "TDV502"), (28, "TDV502")]


def test_forward_in_a_test_module_is_left_to_tdv502():
    result = check_source(textwrap.dedent(FORWARDS), filename="tests/test_norm.py",
                          rules=[FactoryWithoutDevice, FactoryWithoutDeviceInForward], strict=True)
    assert "TDV504" not in {v.code for v in result.violations}
    assert {v.line for v in result.violations} == {11, 17, 21, 25, 28}


def test_a_closure_of_forward_is_forward_for_the_selection_too():
    source = textwrap.dedent("""
        import torch
        from torch import nn
        class M(nn.Module):
            def forward(self, x):
                def apply(y):
                    return y.float() * torch.ones(3)
                return apply(x)
        """)
    fast = check_source(source, rules=[FactoryWithoutDeviceInForward], strict=True).violations
    full = check_source(source, rules=[FactoryWithoutDeviceInForward], full=True, strict=True).violations
    assert [v.line for v in fast] == [v.line for v in full] == [7]


LOSSES = """
    import torch
    import torch.nn.functional as F
    from torch.nn.functional import cross_entropy


    def total(est, gt, masks):
        loss = torch.Tensor([0])
        for m in masks:
            valid = m > 0
            part = est[valid]
            loss = loss + F.smooth_l1_loss(part, gt[valid])
        return loss


    def weighted(logits, labels):
        return cross_entropy(logits, labels, weight=torch.ones(logits.shape[1]))


    def ctc(log_probs, targets, lengths):
        sizes = torch.IntTensor([log_probs.size(0)] * log_probs.size(1))
        return F.ctc_loss(log_probs, targets, sizes, lengths)


    def criterion_given(out, y, criterion):
        return criterion(out, y) + torch.zeros(3)


    def no_loss(x):
        return x.float() + torch.zeros(3)


    def train_step(pred, target, optimizer):
        loss = torch.Tensor([0]) + F.mse_loss(pred, target)
        loss.backward()
        optimizer.step()
    """


@pytest.mark.parametrize("full", [False, True])
def test_a_module_level_loss_function_is_decided_as_a_forward(full):
    """Its inputs are a model's outputs and targets: TDV504's; CTC's CPU lengths are no
    meeting; a function that calls no torch.nn.functional loss (or only one it is given), or does
    not return the loss (a training step), stays TDV502's."""
    source = textwrap.dedent(LOSSES)
    result = check_source(source, rules=[FactoryWithoutDevice, FactoryWithoutDeviceInForward], full=full,
                          strict=True)
    found = sorted((v.line, v.code) for v in result.violations)
    assert found == [(8, "TDV504"), (17, "TDV504"), (30, "TDV502"), (34, "TDV502")]


def test_a_loss_function_imported_under_another_name_is_still_a_loss():
    """The loss words are read from the file's text: an alias keeps the loss's own name in the import."""
    source = textwrap.dedent("""
        import torch
        from torch.nn.functional import mse_loss as distance


        def loss_of(pred, target):
            weight = torch.ones(pred.shape[0])
            return distance(pred * weight[:, None], target)
    """)
    result = check_source(source, rules=[FactoryWithoutDevice, FactoryWithoutDeviceInForward], strict=True)
    assert [(v.line, v.code) for v in result.violations] == [(7, "TDV504")]
    renamed = source.replace("mse_loss as distance", "l1_loss as distance")
    result = check_source(renamed, rules=[FactoryWithoutDevice, FactoryWithoutDeviceInForward], strict=True)
    assert [(v.line, v.code) for v in result.violations] == [(7, "TDV504")]
    no_loss = source.replace("from torch.nn.functional import mse_loss as distance", "from mylib import distance")
    result = check_source(no_loss, rules=[FactoryWithoutDevice, FactoryWithoutDeviceInForward], strict=True)
    assert [(v.line, v.code) for v in result.violations] == [(7, "TDV502")]


LAYERS = """
import torch
from torch import nn
from elsewhere import Encoder

class Block(nn.Module):
    pass

class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.pos = nn.Embedding.from_pretrained(torch.randn(8, 4))

class Model(Base):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(4, 4)
        self.block = Block()
        self.drop = nn.Dropout(0.1)
        self.encoder = Encoder()
        self.width = self.rnn(torch.zeros(1, 2, 4))[0].shape[-1]  # built on the CPU: fine here

    def forward(self, x):
        a = self.pos(torch.arange(x.size(1)))
        b, _ = self.rnn(x, (torch.zeros(1, 2, 4), torch.zeros(1, 2, 4)))
        c = self.block(torch.ones(3, 4))
        d = self.drop(torch.ones(3, 4))
        e = self.encoder(torch.ones(3, 4))
        f = self.pos(torch.arange(3).to(x.device)) + self.pos(torch.tensor(1))
        return a, b, c, d, e, f
"""


def test_a_cpu_tensor_handed_to_a_weighted_layer_of_the_module():
    # 24: an nn.Embedding of a base class of this file; 25: an LSTM's hidden state (the
    # first of the tuple is reported); 26: a module class of this file. Not: Dropout has no
    # weights, Encoder is not known to be a module, a moved or a 0-dim tensor.
    assert tdv504(LAYERS) == [24, 25, 26]
    assert lines(FactoryWithoutDevice, LAYERS) == []  # __init__ is TDV502's: nothing either
    result = check_source(textwrap.dedent(LAYERS), rules=[FactoryWithoutDeviceInForward], strict=True)
    assert "self.pos receives it" in result.violations[0].message
    assert result.violations[0].message.endswith("pass device=x.device")


@pytest.mark.parametrize("other, reported", [
    ("nn.LSTM(4, 4)", [13]),  # a layer with weights in every branch: a layer
    ("nn.Dropout(0.1)", []),  # one branch binds a layer without weights: not known to hold any
    ("make_rnn(kind)", []),  # a callee not known to build a module
])
def test_a_layer_built_in_branches_of_init_is_a_layer_when_every_branch_builds_one(other, reported):
    source = f"""
    import torch
    from torch import nn
    class LM(nn.Module):
        def __init__(self, kind):
            super().__init__()
            if kind == "GRU":
                self.rnn = nn.GRU(4, 4)
            else:
                self.rnn = {other}

        def forward(self, x):
            h0 = torch.zeros(1, x.shape[1], 4)
            return self.rnn(x, h0)
    """
    assert tdv504(source) == reported


def test_a_tensor_made_where_cuda_is_missing_meets_nothing_on_a_gpu():
    source = """
    import torch
    from torch import nn
    class W(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(4, 4)

        def forward(self, x):
            if torch.cuda.is_available():
                h = torch.zeros(1, 2, 4).cuda()
            elif x.dim() == 2:
                h = torch.zeros(1, 4)
            else:
                h = torch.zeros(1, 2, 4).cpu()
            if not x.is_cuda:
                m = torch.ones(4)
            else:
                m = torch.ones(4, device=x.device)
            ids = torch.zeros(2, 4)
            if torch.cuda.is_available():
                out = self.rnn(x, ids.cuda())
            else:
                out = self.rnn(x, ids)  # met only where CUDA is missing
            return self.rnn(x, h), x * m, x + torch.zeros(4), out
    """
    assert tdv504(source) == [25]


@pytest.mark.parametrize("imports, base", [
    ("import pytorch_lightning as pl", "pl.LightningModule"),
    ("from lightning import LightningModule", "LightningModule"),
    ("import lightning.pytorch as L", "L.LightningModule"),
])
def test_a_lightning_module_is_a_module(imports, base):
    source = (f"import torch\n{imports}\nclass M({base}):\n"
              "    def forward(self, x):\n        return x.float() + torch.zeros(3)\n")
    assert tdv504(source) == [5]


def test_the_layers_a_forward_loops_over_and_variable_wrappers():
    source = """
    import torch
    from torch import nn
    from torch.autograd import Variable
    class Stacked(nn.Module):
        def __init__(self):
            super().__init__()
            self.dims = [4]
            self.rnns = nn.ModuleList([nn.LSTM(4, 4)])

        def forward(self, x):
            out = x
            for dim, layer in zip(self.dims, self.rnns):
                hidden = (Variable(torch.zeros(1, 2, dim)), Variable(torch.zeros(1, 2, dim)))
                out, _ = layer(out, hidden)
            for layer in self.rnns:
                state = layer(torch.zeros(2, 4))  # no input goes in: maybe no layer at all
            out, _ = self.rnns[0](out, (torch.zeros(1, 2, 4), torch.zeros(1, 2, 4)))
            return out
    """
    assert tdv504(source) == [14, 18]
    result = check_source(textwrap.dedent(source), rules=[FactoryWithoutDeviceInForward], strict=True)
    assert "layer (a layer of self.rnns) receives it" in result.violations[0].message


def test_forward_default_mask_and_exemptions():
    source = """
    import torch
    from torch import nn
    class Loss(nn.Module):
        def forward(self, est, target, pad_mask=None, eps: float = 1e-8):
            if pad_mask is None:
                pad_mask = torch.ones(est.shape[0], 1)
            scale = torch.tensor(0.5)
            ok = torch.zeros(est.shape, device=est.device) + torch.zeros(est.shape).to(est)
            return (est - target).abs() * pad_mask * scale + ok + eps
    """
    assert tdv504(source) == [7]


def test_message_names_the_input_and_the_fix():
    result = check_source("import torch\ndef f(preds):\n    return preds.float() + torch.ones(3)\n",
                          rules=[FactoryWithoutDevice], strict=True)
    (violation,) = result.violations
    assert violation.col == 27  # at the factory call, where device= goes
    assert "device=preds.device" in violation.message and "torch.ones()" in violation.message


# -- shared vocabulary --------------------------------------------------------
@pytest.mark.parametrize(
    "text, placed",
    [
        ("torch.zeros(3)", False),
        ("torch.zeros(3, device=d)", True),
        ("torch.zeros(3, **opts)", True),
        ("torch.zeros(3, out=buffer)", True),
        ("torch.zeros(3, dtype=x.dtype)", False),
        ("torch.zeros(len(x.device_ids))", True),  # any mention counts, on both sides alike
    ],
)
def test_passes_device(text, placed):
    import libcst as cst

    from flake8_torchdevice.analysis.vocabulary import passes_device

    assert passes_device(cst.parse_expression(text)) is placed


@pytest.mark.parametrize(
    "text, name, operands, whole",
    [
        ("t.sum()", "sum", 0, True),
        ("t.sum(dtype=torch.float64)", "sum", 0, True),  # a dtype is no dimension
        ("t.count_nonzero()", "count_nonzero", 0, True),
        ("t.sum(1)", "sum", 0, False),
        ("t.max(dim=0)", "max", 0, False),
        ("torch.max(t)", "max", 1, True),
        ("torch.max(t, u)", "max", 1, False),  # elementwise of two tensors
        ("torch.mean(t, axis=1)", "mean", 1, False),
        ("torch.sum(*parts)", "sum", 1, False),  # unknown operands
        ("torch.sin(t)", "sin", 1, False),  # no reduction
    ],
)
def test_reduces_all(text, name, operands, whole):
    """One reading of a whole-tensor reduction (0-dim), for the flow and the factory rules alike."""
    import libcst as cst

    from flake8_torchdevice.analysis.vocabulary import reduces_all

    assert reduces_all(cst.parse_expression(text), name, operands) is whole


# -- selection never drops what the rules report ----------------------------
def _samples():
    fixtures = sorted((ROOT / "fixtures").glob("TDV50*/*.py"))
    spec = importlib.util.find_spec("torch")  # located, not imported
    if spec is None or spec.origin is None:
        return fixtures
    torch_dir = Path(spec.origin).parent
    real = [torch_dir / p for p in ("_export/db/examples/static_if.py", "testing/_internal/common_subclass.py",
                                    "ao/quantization/fx/_model_report/model_report_observer.py")]
    return fixtures + [p for p in real if p.exists()]


@pytest.mark.parametrize("rule", [TensorStateNotRegistered, FactoryWithoutDevice, FactoryWithoutDeviceInForward],
                         ids=lambda r: r.CODE)
def test_selection_and_scope_lose_nothing(rule):
    reported = 0
    for path in _samples():
        source = path.read_text(encoding="utf-8")
        fast = check_source(source, rules=[rule], strict=True).violations
        slow = check_source(source, rules=[rule], full=True, strict=True).violations
        assert [(v.line, v.col) for v in fast] == [(v.line, v.col) for v in slow], path
        reported += len(fast)
    assert reported >= (2 if rule is FactoryWithoutDeviceInForward else 5)  # TDV504: its two fixtures


def test_option_values_are_not_operands():
    source = textwrap.dedent(
        """
        import torch
        def update(self, preds):
            self.add_state("total", default=torch.zeros(3), dist_reduce_fx="sum")
            out = combine(preds.float(), weight=torch.ones(3))
            out = torch.where(preds > 0, preds.float(), other=torch.ones(preds.shape))
            return out, helper(scale=torch.ones(3) * preds.float())
        """
    )
    fast = check_source(source, rules=[FactoryWithoutDevice], strict=True).violations
    slow = check_source(source, rules=[FactoryWithoutDevice], full=True, strict=True).violations
    assert [v.line for v in fast] == [v.line for v in slow] == [6, 7]  # 4, 5: whole option values


def test_calls_in_strings_and_comments_are_not_reported():
    source = textwrap.dedent(
        '''
        import torch
        def f(x):
            """Example:

            >>> f(torch.ones(3))  # a docstring is no code
            """
            note = "torch.zeros(3) + x"  # torch.zeros(3) + x
            return x.float() + torch.zeros(3)
        '''
    )
    assert tdv502(source) == [9]


@pytest.mark.parametrize(
    "init, use, found",
    [
        ("self.a = [torch.tensor(v) for v in (1.0, 2.0)]", "return x * self.a[0]", True),
        ("self.a = [torch.zeros(2)] * 3", "return x + self.a[i]", True),
        ("self.a = [torch.ones(2), torch.ones(2)]", "return torch.cat([x, self.a[1]])", True),
        ("self.a = [torch.zeros(1)] * 3", "self.a[i] = torch.zeros(x.shape).to(x.device)\n"
         "            return x + self.a[i]", False),  # rebuilt on the input's device
        ("self.a = [torch.zeros(2)]", "self.a.append(x)\n            return x + self.a[0]", False),
        ("self.a = [torch.zeros(2), 3]", "return x * self.a[0]", False),  # not a list of tensors alone
        ("self.a = [torch.zeros(2)] * 3", "return len(self.a)", False),  # never meets a tensor
    ],
)
def test_a_list_attribute_of_factory_tensors_is_state(init, use, found):
    source = f"""
    import torch
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            {init}
        def forward(self, x, i):
            {use}
    """
    assert tdv501(source) == ([6] if found else [])


HELPED = '''
import torch
from torch import nn


def pad(x, n):
    return torch.cat([x, torch.zeros(x.shape[0], n)], dim=1)


def sized(n):
    return torch.ones(n, n)


class Net(nn.Module):
    def forward(self, x):
        return pad(x, 2) + sized(x.shape[0]).sum()


class NotAModule:
    def forward(self, y):
        return pad(y, 3)
'''


def test_a_helper_the_forward_hands_its_input_to_is_tdv504s():
    assert tdv504(HELPED) == [7]  # pad: given the forward's x; sized: given a size only
    assert tdv502(HELPED) == []  # pad is TDV504's; sized's factory meets no input


def test_a_helper_of_a_non_module_or_of_a_test_stays_tdv502s():
    source = HELPED.replace("class Net(nn.Module):", "class Net:")
    assert tdv504(source) == []
    assert tdv502(source) == [7]
    result = check_source(textwrap.dedent(HELPED), filename="tests/test_pad.py",
                          rules=[FactoryWithoutDevice, FactoryWithoutDeviceInForward], strict=True)
    assert {v.code for v in result.violations} <= {"TDV502"}


def test_the_selection_keeps_a_helper_of_a_forward_for_tdv504():
    source = textwrap.dedent(HELPED)
    selective = check_source(source, rules=[FactoryWithoutDeviceInForward], strict=True).violations
    whole = check_source(source, rules=[FactoryWithoutDeviceInForward], strict=True, full=True).violations
    assert [(v.line, v.code) for v in selective] == [(v.line, v.code) for v in whole] == [(7, "TDV504")]


@pytest.mark.parametrize(
    "helper, reported",
    [
        ("def match(*inputs):\n    return inputs[0] + torch.ones(inputs[0].shape)\n", [2]),
        (
            "def match(*inputs):\n    left, right = inputs[0], inputs[1]\n"
            "    return left * right + torch.ones(left.shape)\n",
            [3],
        ),
        ("def match(*inputs):\n    left, right = 1.0, inputs[1]\n    return left + torch.ones(right.shape)\n", []),
    ],
)
def test_tdv504_a_forward_handing_on_all_its_inputs(helper, reported):
    # ``def forward(self, *inputs): return match(*inputs)``: inside ``match`` the inputs live
    # where the model lives; ``left, right = inputs[0], inputs[1]`` binds each name its own value.
    source = (
        "import torch\nfrom torch import nn\n\n\n" + helper
        + "\n\nclass Matching(nn.Module):\n    def forward(self, *inputs):\n        return match(*inputs)\n"
    )
    assert lines(FactoryWithoutDeviceInForward, source) == [line + 4 for line in reported]


@pytest.mark.parametrize(
    "read, found",
    [
        ("torch.arange(n)[x > 0]", [7]),  # a mask of the input on the GPU cannot index a CPU tensor
        ("torch.arange(n)[~(x > 0) & (x < 5)]", [7]),
        ("[i for i in torch.arange(n)[x[0] == 1]]", [7]),
        ("torch.arange(n, device=x.device)[x > 0]", []),
        ("torch.arange(n)[x.argmax()]", []),  # a 0-dim index is read as a number, wherever it is
        ("torch.arange(n)[idx]", []),  # not written as a mask: maybe a number (precision first)
        ("x[torch.arange(n) > 0]", []),  # a CPU mask may index a GPU tensor
    ],
)
def test_a_cpu_factory_read_through_a_mask_of_the_input_meets_it(read, found):
    source = f"""
    import torch
    class M(torch.nn.Module):
        def forward(self, x, idx):
            n = x.size(0)
            y = x * 2
            return {read}
    """
    assert tdv504(source) == found


@pytest.mark.parametrize(
    "setter, reported",
    [
        ("torch.set_default_device(device)", False),
        ("torch.set_default_device('cuda')", False),
        ("if use_cuda:\n    torch.set_default_tensor_type('torch.cuda.FloatTensor')", False),
        ("torch.set_default_tensor_type(torch.cuda.FloatTensor)", False),
        ("torch.set_default_device('cpu')", True),  # names no CUDA
        ("torch.set_default_tensor_type(torch.FloatTensor)", True),
        ("def main():\n    torch.set_default_device(device)", True),  # not module code: only when main runs
    ],
)
def test_a_default_device_set_at_import_makes_factories_there(setter, reported):
    source = (
        "import torch\nfrom torch import nn\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        f"use_cuda = True\n{setter}\n\n\nclass Positions(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.emb = nn.Embedding(8, 4)\n\n"
        "    def forward(self, x):\n        return x + self.emb(torch.arange(x.shape[1])) + torch.zeros(x.shape)\n\n\n"
        "def helper(x):\n    return x.float() + torch.zeros(x.shape)\n"
    )
    found = check_source(source, rules=[FactoryWithoutDevice, FactoryWithoutDeviceInForward], strict=True).violations
    assert bool(found) == reported
    if reported:
        assert sorted({v.code for v in found}) == ["TDV502", "TDV504"]


def test_a_default_device_leaves_a_factory_sent_on_with_cuda():
    source = (
        "import torch\nfrom torch import nn\ntorch.set_default_device('cuda')\n\n\nclass Hidden(nn.Module):\n"
        "    def forward(self, x):\n        return x + torch.zeros(x.shape).cuda()\n"
    )
    found = check_source(source, rules=[FactoryWithoutDeviceInForward], strict=True).violations
    assert [(v.line, v.code) for v in found] == [(8, "TDV504")]


@pytest.mark.parametrize("script, reported", [
    ("rnn = Hidden()\nrnn.cuda()\n", False),  # importing the module needs a GPU: .cuda() goes where rnn went
    ("rnn = Hidden().cuda()\n", False),
    ("if torch.cuda.is_available():\n    rnn = Hidden().cuda()\n", True),  # a CPU path: rnn stays on the CPU
    ("device = 'cuda' if torch.cuda.is_available() else 'cpu'\nrnn = Hidden().cuda()\n", True),  # a CPU choice first
    ("if __name__ == '__main__':\n    Hidden().cuda()\n", True),  # another script may import the class
    ("", True),
])
def test_a_factory_sent_to_the_current_gpu_in_a_module_that_needs_a_gpu(script, reported):
    """A module whose own code places on CUDA unguarded cannot be imported without a GPU: its forward's
    ``.cuda()`` sends the state to the current GPU, where that code put the model (a CUDA-only script's RNN)."""
    source = (
        "import torch\nfrom torch import nn\n\n\nclass Hidden(nn.Module):\n"
        "    def forward(self, x):\n        return x + torch.zeros(x.shape).cuda()\n\n\n" + script
    )
    for rule in (FactoryWithoutDeviceInForward, FactoryWithoutDevice):
        found = check_source(source, rules=[rule], strict=True).violations
        expected = [7] if reported and rule is FactoryWithoutDeviceInForward else []
        assert [v.line for v in found] == expected


# -- TDV504: a module's registered state and layers in its other methods ------------
STATE = """
import torch
from torch import nn
from torch.nn import Parameter

class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.ones(4))

class Rotary(Base):
    def __init__(self, width):
        super().__init__()
        self.register_buffer("theta", torch.rand(width))
        self.register_buffer("unset", None)
        self.w = Parameter(torch.ones(width))
        self.plain = torch.ones(width)
        self.emb = nn.Embedding(8, width)
        self.table = self._build(4)

    def _build(self, n):
        return torch.arange(n)[:, None] * self.theta

    def resize(self, n):
        return torch.arange(n)[:, None] * self.theta

    def weighted(self, n):
        return torch.zeros(n) + self.w + torch.ones(n) * self.scale

    def untouched(self, n):
        return torch.zeros(n) + self.plain, torch.arange(n, device=self.theta.device) * self.theta

    def decode(self, n):
        return self.emb(torch.full((n, 1), 2))

    def switched(self, n, cuda=True):
        if cuda:
            return self.emb(torch.zeros(n, dtype=torch.long).cuda())
        else:
            return self.emb(torch.zeros(n, dtype=torch.long))

    def forward(self, x):
        return x + self.table
"""


def test_a_factory_meeting_registered_state_in_any_method_but_init_is_tdv504s():
    # _build runs only from __init__ (the module is on the CPU); self.plain is not registered;
    # the else of the method's own GPU switch is its CPU path
    assert tdv504(STATE) == [25, 28, 28, 34]
    assert tdv502(STATE) == []  # each finding once: registered state and layers are TDV504's


def test_module_state_reads_registrations_parameters_and_same_file_bases():
    import ast

    from flake8_torchdevice.analysis.module_state import init_only_methods, state_attributes
    from flake8_torchdevice.names import resolver_from_ast

    tree = ast.parse(textwrap.dedent(STATE))
    names = resolver_from_ast(tree, set())
    assert state_attributes(names, "Rotary") == {"scale", "theta", "w"}
    assert init_only_methods(names, "Rotary") == {"_build"}


def test_state_in_a_test_module_is_left_alone():
    result = check_source(textwrap.dedent(STATE), filename="tests/test_rotary.py",
                          rules=[FactoryWithoutDevice, FactoryWithoutDeviceInForward], strict=True)
    assert "TDV504" not in {v.code for v in result.violations}


def test_a_factory_sent_to_the_current_gpu_beside_registered_state_says_so():
    source = textwrap.dedent("""
        import torch
        from torch import nn
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.weight = nn.Parameter(torch.ones(3))
            def forward(self, x, style=None):
                if style is None:
                    style = torch.ones(3).cuda()
                return x * (self.weight * style)
    """)
    (violation,) = check_source(source, rules=[FactoryWithoutDeviceInForward], strict=True).violations
    assert violation.line == 10
    assert "meets self.weight, which the module registered" in violation.message


OUTPUTS = """
import torch
from torch import nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.drop = nn.Dropout(0.1)
        self.heads = nn.ModuleDict({"a": nn.Linear(3, 3)})
    def forward(self, batch):
        {body}
"""


@pytest.mark.parametrize(("body", "reported"), [
    # The output of a layer with weights is on the module's device, whatever it was given: a mapping's item.
    ('e = self.lin(batch["a"])\n        return e + torch.zeros(1, 1, 3)', True),
    ('return self.heads["a"](batch) * torch.ones(2, 3)', True),
    ('y = torch.zeros(2, 3)\n        for k in ("a",):\n            y = self.heads[k](batch[k]) + y\n'
     '        return y', True),
    # Not: a layer without weights, a 0-dim factory out of place, a factory moved, sent to the current GPU
    # (left to the input and state forms), made with the output's device.
    ('return self.drop(batch["a"]) + torch.zeros(1, 1, 3)', False),
    ('return self.lin(batch["a"]) + torch.tensor(2.0)', False),
    ('return self.lin(batch["a"]) + torch.zeros(2, 3).to(batch["a"].device)', False),
    ('return self.lin(batch["a"]) + torch.zeros(2, 3).cuda()', False),
    ('e = self.lin(batch["a"])\n        return e + torch.zeros(2, 3, device=e.device)', False),
])
def test_a_factory_that_meets_a_layers_output(body, reported):
    source = OUTPUTS.replace("{body}", body)
    found = check_source(textwrap.dedent(source), rules=[FactoryWithoutDeviceInForward], strict=True).violations
    assert bool(found) == reported
    if reported:
        message = found[0].message
        assert "meets the output of self." in message and "which is on the module's device" in message
    # TDV502 leaves a module's layers to TDV504, and the whole-file run decides alike.
    assert tdv502(source) == []
    whole = check_source(textwrap.dedent(source), rules=[FactoryWithoutDeviceInForward], full=True, strict=True)
    assert [v.line for v in whole.violations] == [v.line for v in found]


ONE_ARMED = """
import torch
from torch import nn
class M(nn.Module):
    def forward(self, x, flag):
        n = x.size(0)
        y = torch.zeros(n)
{branch}
        return x.mean(1) + y
"""


@pytest.mark.parametrize(
    "branch, found",
    [
        # the path past a one-armed ``if`` keeps the CPU start
        ("        if flag:\n            y = x.sum(1)", [7]),
        ("        if flag:\n            y = x.sum(1)\n            y = y * 2", [7]),
        # every path rebinds it, or the test asks where things are
        ("        if flag:\n            y = x.sum(1)\n        else:\n            y = x.max(1)[0]", []),
        ("        if y.device != x.device:\n            y = y.to(x.device)", []),
        ("        if x.is_cuda:\n            y = x.sum(1)", []),
        # rebound to something the flow does not know: no CPU tensor to keep
        ("        if flag:\n            y = compute(n)", []),
    ],
)
def test_tdv504_a_cpu_start_replaced_in_one_arm_only(branch, found):
    assert tdv504(ONE_ARMED.format(branch=branch)) == found


@pytest.mark.parametrize(
    "expression",
    ["torch.mv(w, x.mean(0))", "torch.addmm(x, x, w)", "x.addcmul(w, w)", "torch.tensordot(x, w, 1)",
     "torch.kron(x, w)", "torch.hypot(x, w)"],
)
def test_tdv504_products_and_fused_ops_need_one_device(expression):
    # matrix-vector products and fused multiply-adds check every operand's device, as ``matmul`` does
    source = f"""
    import torch
    class M(torch.nn.Module):
        def forward(self, x):
            w = torch.ones(x.size(1), x.size(1))
            return {expression}
    """
    assert tdv504(source) == [5]


def test_tdv501_state_in_a_matrix_vector_product():
    source = """
    import torch
    class Constraint(torch.nn.Module):
        def __init__(self, n):
            super().__init__()
            self.M = torch.zeros((n, n))
        def forward(self, x):
            return torch.mv(self.M, x.mean(0))
    """
    assert tdv501(source) == [6]
