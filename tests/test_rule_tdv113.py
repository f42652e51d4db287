"""TDV113 (a placed module moved to the CPU in place inside a loop): what the fixtures do not pin down."""

from __future__ import annotations

import textwrap

import pytest

from flake8_torchdevice.engine import check_source
from flake8_torchdevice.rules.tdv113 import ModuleMovedToCpuInLoop

HEAD = """\
import torch
from torch import nn


def train(model, loader, device, path):
    model.to(device)
    model.train()
"""


def found(body: str, head: str = HEAD) -> list[int]:
    source = head + textwrap.indent(textwrap.dedent(body), "    ")
    result = check_source(source, rules=(ModuleMovedToCpuInLoop,), strict=True)
    assert result.error is None, result.error
    return [v.line for v in result.violations]


@pytest.mark.parametrize(
    "body, reported",
    [
        ("for x in loader:\n    model(x.to(device))\n    torch.save(model.cpu().state_dict(), path)\n", True),
        ("for x in loader:\n    model(x.to(device))\n    torch.save(model.to('cpu'), path)\n", True),
        ("while True:\n    model(next(loader))\n    model = model.cpu()\n", True),
        ("for x in loader:\n    model(x)\nmodel.cpu()\n", False),  # after the loop
        ("for x in loader:\n    model(x)\n    model.cpu()\n    model.cuda()\n", False),  # moved back
        ("for x in loader:\n    model.to(device)\n    model(x)\n    model.cpu()\n", False),  # placed each time round
        ("for x in loader:\n    model(x)\n    if x is None:\n        model.cpu()\n        break\n", False),
        ("for x in loader:\n    model.cpu()\n", False),  # nothing else in the loop runs it
        ("for x in loader:\n    model(x)\n    model.cpu(memory_format)\n", False),  # not Module.cpu()
        ("for model in loader:\n    model(device)\n    model.cpu()\n", False),  # the loop binds the name
        ("for x in loader:\n    self.model(x)\n    self.model.cpu()\n", False),  # attributes are left alone
        ("for x in loader:\n    model(x)\n    model.to(torch.float16)\n", False),  # a cast
    ],
)
def test_module_moved_to_cpu_in_a_loop(body, reported):
    assert bool(found(body)) is reported


def test_a_name_not_placed_first_or_not_shown_to_be_a_module_is_left_alone():
    unplaced = "import torch\n\n\ndef f(model, loader, path):\n    model.eval()\n"
    assert found("for x in loader:\n    model(x)\n    model.cpu()\n", head=unplaced) == []
    on_cpu = "import torch\n\n\ndef f(model, loader, path):\n    model.to('cpu')\n    model.eval()\n"
    assert found("for x in loader:\n    model(x)\n    model.cpu()\n", head=on_cpu) == []
    tensor = "import torch\n\n\ndef f(x, loader, device):\n    x = x.to(device)\n"
    assert found("for y in loader:\n    y = y + x\n    x.cpu()\n", head=tensor) == []


def test_the_message_names_the_module():
    source = HEAD + "    for x in loader:\n        model(x)\n        torch.save(model.cpu(), path)\n"
    (violation,) = check_source(source, rules=(ModuleMovedToCpuInLoop,), strict=True).violations
    assert violation.code == "TDV113" and violation.line == 10
    assert violation.message.startswith("model.cpu() moves the module to the CPU in place")
