"""TDV101: ``.cuda()`` in a module that places things with ``.to(device)``."""

from __future__ import annotations

import re
from typing import Iterable, Optional

from .._lazy import cst

from .base import Rule
from .guards import CudaGuards
from .triggers import in_comment

_CUDA_CALL = re.compile(r"\.cuda\s*\(")
_TO_CALL = re.compile(r"\.to\s*\(")
# A module-level ``if not torch.cuda.is_available(): sys.exit()`` guards every
# function below it: its offset makes the engine keep module-level code.
_AVAILABILITY = re.compile(r"\.is_available\s*\(")
# Every device expression in ``.to(...)`` contains a quote (a device string)
# or "dev" (``device``, ``dev``, ``torch.device(...)``), unless torch.device
# has an alias; a ``.to(`` without either needs no parsing.
_DEVICE_HINT = re.compile(r"dev|[\"']")
_DEVICE_ALIAS = re.compile(r"\bdevice\s+as\b|=\s*(?:\w+\.)*device\s*$", re.M)
_ARGS_WINDOW = 400
# The start of a call's first argument, after blanks and comments: group 1 is
# set for an argument that is an expression or a keyword (group 2: the
# keyword), unset for ``)`` and ``*``/``**``.
_FIRST_ARGUMENT = re.compile(r"(?:[\s\\]|#[^\n]*)*(?:[)*]|((?:(\w+)\s*=(?!=))|[^)*\s\\#]))")
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

    @classmethod
    def trigger_offsets(cls, source: str) -> Iterable[int]:
        # A commented-out ``x.cuda()`` (doc examples) must not drag a huge
        # statement into the parse.
        cuda = [
            m.start()
            for m in _CUDA_CALL.finditer(source)
            if _may_lack_device(source, m.end()) and not in_comment(source, m.start())
        ]
        if not cuda:
            return ()
        aliased = bool(_DEVICE_ALIAS.search(source))
        moves = [m.start() for m in _TO_CALL.finditer(source) if aliased or _may_name_a_device(source, m.end())]
        if not moves:
            return ()
        exits = [m.start() for m in _AVAILABILITY.finditer(source) if _at_module_level(source, m.start())]
        return cuda + moves + exits

    def __init__(self, context) -> None:
        super().__init__(context)
        self._cuda_calls: list[tuple[cst.Call, Optional[int]]] = []  # with their statement
        self._places_with_to = False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        if func.attr.value == "cuda":
            # ``.cuda(rank)`` names its device: a choice, only spelled differently.
            if device_argument(node) is None and not self.cuda_guarded():
                self._cuda_calls.append((node, self.context.statement))
        elif func.attr.value == "to" and not self._places_with_to:
            self._places_with_to = self._is_device_move(node)

    def leave_Module(self, node: cst.Module) -> None:
        super().leave_Module(node)
        # Only now is the whole module known: report if it also uses .to(device).
        if self._places_with_to:
            for call, statement in self._cuda_calls:
                self.report(call, statement=statement)

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


def _may_lack_device(source: str, start: int) -> bool:
    """False when the ``.cuda(`` whose arguments start at ``start`` surely names
    its device (``device_argument`` is not None): a positional first argument
    (``.cuda(rank)``) or a leading ``device=``. No, ``*args``, or another
    keyword first (``non_blocking=True``): it may lack one."""
    match = _FIRST_ARGUMENT.match(source, start)
    if match is None or match.group(1) is None:
        return True  # ``)``, ``*``, or text we do not read: keep
    keyword = match.group(2)
    return keyword is not None and keyword != "device"


def _may_name_a_device(source: str, start: int) -> bool:
    """Cheap over-approximation: may the ``.to(`` whose arguments start at
    ``start`` name a device? Looks up to the matching ``)``."""
    depth = 1
    for index in range(start, min(len(source), start + _ARGS_WINDOW)):
        char = source[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return bool(_DEVICE_HINT.search(source, start, index))
    return True  # arguments too long to scan: parse them


def _at_module_level(source: str, offset: int) -> bool:
    line_start = source.rfind("\n", 0, offset) + 1
    return source[line_start:line_start + 1] not in (" ", "\t")


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
