"""TDV101: ``.cuda()`` in a module that places things with ``.to(device)``."""

from __future__ import annotations

import re
from typing import Optional

from .._lazy import cst
from ..analysis.guards import CudaGuards
from ..rule import Fix, Rule

# Device types torch accepts in a device string, optionally with an index.
_DEVICE_STRING = re.compile(r"(?:cuda|cpu|mps|xpu|xla|meta|hpu|npu|mtia|ipu|privateuseone)(?::\d*)?$")


class CudaMixedWithToDevice(CudaGuards, Rule):
    CODE = "TDV101"
    NAME = "cuda-call-mixed-with-to-device"
    SUMMARY = "`.cuda()` in a module that places things with `.to(device)`"
    MESSAGE = (
        ".cuda() ignores the device this module chooses for .to(); on a machine "
        "without CUDA (or with device='cuda:1') it breaks: use .to(device) instead"
    )
    FIX = "unsafe"

    # A finding is a ``.cuda()`` call in a module that also moves with ``.to``.
    NEEDS = [{".cuda"}, {".to"}]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._cuda_calls: list[tuple[cst.Call, Optional[int], bool]] = []  # statement, in a def
        self._places_with_to = False
        self._depth = 0  # functions open
        self._module_devices: dict[str, Optional[int]] = {}  # device-like module names -> statement

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        self._depth += 1

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().leave_FunctionDef(node)
        self._depth -= 1

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._depth == 0:
            for target in node.targets:
                self._module_device(target.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if self._depth == 0 and node.value is not None:
            self._module_device(node.target)

    def _module_device(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name) and _is_device_name(target):
            self._module_devices.setdefault(target.value, self.context.statement)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        if func.attr.value == "cuda":
            # ``.cuda(rank)`` names its device: a choice, only spelled differently.
            if device_argument(node) is None and not self.cuda_guarded():
                self._cuda_calls.append((node, self.context.statement, self._depth > 0))
        elif func.attr.value == "to" and not self._places_with_to:
            self._places_with_to = self._is_device_move(node)

    def leave_Module(self, node: cst.Module) -> None:
        super().leave_Module(node)
        # Only now is the whole module known: report if it also uses .to(device).
        if self._places_with_to:
            for call, statement, in_function in self._cuda_calls:
                self.report(call, fix=self._fix(call, statement, in_function), statement=statement)

    def _fix(self, call: cst.Call, statement: Optional[int], in_function: bool) -> Optional[Fix]:
        """``x.cuda()`` -> ``x.to(device)`` (unsafe: the device may not be
        CUDA, which is the point), only when exactly one device-like name is
        bound at module level, so there is no choice to guess, and it exists
        when the call runs: in a function, or after its assignment."""
        if len(self._module_devices) != 1:
            return None
        ((name, assigned),) = self._module_devices.items()
        if not in_function and (assigned is None or statement is None or assigned >= statement):
            return None
        return Fix(lambda updated: _to_device(updated, name))

    def _is_device_move(self, call: cst.Call) -> bool:
        target = device_argument(call)
        return target is not None and self.is_device_expression(target)

    def is_device_expression(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Call):
            return self.names.qualify(expr.func) == "torch.device"
        text = _string_text(expr)
        if text is not None:
            return bool(_DEVICE_STRING.match(text))
        return _is_device_name(expr)


def device_argument(call: cst.Call) -> Optional[cst.BaseExpression]:
    """The ``device=`` keyword, else the first positional argument, of ``.to()``."""
    first = None
    for arg in call.args:
        if arg.star:
            continue
        if arg.keyword is None:
            first = arg.value if first is None else first
        elif arg.keyword.value == "device":
            return arg.value
    return first


def _string_text(expr: cst.BaseExpression) -> Optional[str]:
    if isinstance(expr, cst.SimpleString):
        return expr.raw_value
    if isinstance(expr, cst.FormattedString):
        # f"cuda:{rank}": the literal head decides.
        head = expr.parts[0] if expr.parts else None
        return head.value if isinstance(head, cst.FormattedStringText) else None
    return None


def _is_device_name(expr: cst.BaseExpression) -> bool:
    """``device``, ``args.dev``, ``self.target_device``, ``device_``."""
    if isinstance(expr, cst.Attribute):
        last = expr.attr.value
    elif isinstance(expr, cst.Name):
        last = expr.value
    else:
        return False
    return last in ("device", "dev") or last.endswith("_device") or last.endswith("device_")


def _to_device(call: cst.Call, name: str) -> cst.Call:
    device = cst.Arg(cst.Name(name))
    if call.args:
        device = device.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return call.with_changes(func=call.func.with_changes(attr=cst.Name("to")), args=[device, *call.args])
