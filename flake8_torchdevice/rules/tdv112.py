"""TDV112: ``self.w = nn.Parameter(x).to(device)``: the moved copy is no Parameter."""

from __future__ import annotations

from typing import Optional

from .._lazy import cst
from ..analysis.code import code_of, subtree
from ..analysis.devices import cpu_literal, device_argument, is_device_expression
from ..rule import Fix, Rule

PARAMETERS = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})


class ParameterMovedAfterCreation(Rule):
    r"""## What it does
    Flags an attribute of an object bound to a `torch.nn.Parameter` (under any alias:
    `nn.Parameter`, `torch.nn.Parameter`, `from torch.nn import Parameter`) that is moved in
    the same expression, after it was made: `self.w = nn.Parameter(x).to(device)`,
    `self.centers = nn.Parameter(torch.randn(n, d)).cuda()`. A `.to(...)` counts when it
    names a device (`device`, `self.device`, `args.device`, `"cuda"`, `torch.device(...)`,
    as `device=` or first); `.cuda(...)` always does.

    ## Why is this bad?
    Moving a tensor to another device makes a copy, and the copy of a Parameter is a plain
    tensor computed from it: no Parameter, and no leaf of the autograd graph. In an
    `nn.Module` the attribute is then no registered parameter (it is missing from
    `model.parameters()` and `state_dict()`, the optimizer never updates it, and
    `model.to(...)` leaves it where it is); in any other class an optimizer given it raises
    at once. Where the device is the CPU, `.to("cpu")` returns the Parameter itself and
    everything works, so the mistake shows only on a GPU machine.

    ## Example
    ```python
    class Projection:
        def __init__(self, dim, device):
            self.A = nn.Parameter(torch.randn(dim, dim)).to(device)
            self.optimizer = torch.optim.SGD([self.A], lr=0.1)
    ```

    ## Use instead
    ```python
    class Projection:
        def __init__(self, dim, device):
            self.A = nn.Parameter(torch.randn(dim, dim).to(device))
            self.optimizer = torch.optim.SGD([self.A], lr=0.1)
    ```

    or make the tensor on its device: `nn.Parameter(torch.randn(dim, dim, device=device))`.

    ## Fix safety
    Unsafe. The fix moves the data instead of the Parameter, `nn.Parameter(x.to(device))`. On a
    GPU the attribute then becomes a registered, trainable parameter: the module's
    `parameters()`, its `state_dict()` keys and what its optimizer updates change, as intended,
    but a checkpoint saved without it no longer loads strictly.

    ## When it does not report
    - the data moved first, `nn.Parameter(x.to(device))`, `nn.Parameter(x.cuda())`;
    - a `.to(...)` that names no device (`.to(torch.float16)`, `.to(dtype)`, a name that is not
      device-like), or the CPU (`.to("cpu")`: a CPU Parameter is returned as it is);
    - a move to the device the data already lives on, `nn.Parameter(p.data.float()).to(p.device)`
      (the same `p` inside the Parameter): `.to` returns the Parameter itself;
    - a local name or any other target (`cls_token = nn.Parameter(...).to(x.device)` in a
      function): the value is used where it is made, not kept as trainable state.

    ## The error torch raises
    For an optimizer given the moved copy, on a GPU machine, and on a CPU machine with the meta device
    standing in:

    ```
    ValueError: can't optimize a non-leaf Tensor
    ```

    In an `nn.Module` nothing raises: the attribute is silently no parameter (the fixture asserts that
    the moved copy is no registered parameter: `len(list(model.parameters()))` counts none of them).
    """

    CODE = "TDV112"
    NAME = "parameter-moved-after-creation"
    SUMMARY = "`self.w = nn.Parameter(x).to(device)`: the moved copy is no Parameter"
    MESSAGE = (
        "nn.Parameter(...).{method}(...) is a moved copy, no Parameter and no leaf: on a GPU the module does "
        "not register it and an optimizer rejects it; move the data first: nn.Parameter(x.{method}(...))"
    )
    FIX = "unsafe"
    NEEDS = [{"Parameter"}, {".to(", ".cuda("}]

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1 and _is_self_attribute(node.targets[0].target):
            self._check(node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None and _is_self_attribute(node.target):
            self._check(node.value)

    def _check(self, value: cst.BaseExpression) -> None:
        method = _moved_parameter(value, self.names)
        if method is not None:
            self.report(value, self.MESSAGE.format(method=method), fix=Fix(_move_data))


def _moved_parameter(value: cst.BaseExpression, names) -> Optional[str]:
    """``to`` / ``cuda`` where ``value`` is ``<Parameter(...)>.to(<device>)`` or ``.cuda(...)``."""
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)):
        return None
    made, method = value.func.value, value.func.attr.value
    if not (isinstance(made, cst.Call) and names.qualify(made.func) in PARAMETERS and made.args):
        return None
    if method == "cuda":
        return method
    if method != "to":
        return None
    device = device_argument(value)
    if device is None or not is_device_expression(device, names) or cpu_literal(device, names):
        return None
    return None if _already_there(made, device) else method


def _already_there(made: cst.Call, device: cst.BaseExpression) -> bool:
    """``nn.Parameter(p.data.float()).to(p.device)``: the data is read off ``p``, already on ``p.device``."""
    if not (isinstance(device, cst.Attribute) and device.attr.value == "device"):
        return False
    owner = code_of(device.value)
    return any(code_of(node) == owner for arg in made.args for node in subtree(arg.value))


def _move_data(call: cst.Call) -> cst.Call:
    """``nn.Parameter(x, ...).to(d)`` -> ``nn.Parameter(x.to(d), ...)``."""
    made = call.func.value
    first = made.args[0]
    data = first.value
    atoms = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.List, cst.Tuple, cst.Dict, cst.SimpleString)
    if not isinstance(data, atoms) and not data.lpar:  # ``(x * 0.1).to(d)``, not ``x * 0.1.to(d)``
        data = data.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    moved = call.with_changes(func=call.func.with_changes(value=data))
    return made.with_changes(args=[first.with_changes(value=moved), *made.args[1:]])


def _is_self_attribute(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self"
