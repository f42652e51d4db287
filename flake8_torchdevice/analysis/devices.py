"""What names a device: strings, ``torch.device(...)`` calls, device-like names.

One home for device-expression recognition, shared by the rules that ask
"does this module choose its device?" (TDV101, TDV105), "is this argument a
device?" (TDV103) and "is this device not CUDA?" (TDV104).
"""

from __future__ import annotations

import re
from typing import Optional

from .._lazy import cst
from ..names import NameResolver
from .code import argument, string_value
from .guards import is_nccl_init

# Device types torch accepts in a device string, optionally with an index.
DEVICE_STRING = re.compile(r"(?:cuda|cpu|mps|xpu|xla|meta|hpu|npu|mtia|ipu|privateuseone)(?::\d*)?$")
# The same types without CUDA: the words a non-CUDA device literal holds.
NON_CUDA_TYPES = frozenset("cpu mps xpu xla meta hpu npu mtia ipu privateuseone".split())


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


def literal_text(expr: cst.BaseExpression) -> Optional[str]:
    """A plain or joined string's text; an f-string's literal head (``f"cuda:{rank}"``)."""
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
        return string_value(expr)
    if isinstance(expr, cst.FormattedString):
        head = expr.parts[0] if expr.parts else None
        return head.value if isinstance(head, cst.FormattedStringText) else None
    return None


def is_device_name(expr: cst.BaseExpression) -> bool:
    """``device``, ``args.dev``, ``self.target_device``, ``device_``."""
    if isinstance(expr, cst.Attribute):
        last = expr.attr.value
    elif isinstance(expr, cst.Name):
        last = expr.value
    else:
        return False
    return last in ("device", "dev") or last.endswith("_device") or last.endswith("device_")


def is_device_expression(expr: cst.BaseExpression, names: NameResolver) -> bool:
    """A ``torch.device(...)`` call, a device string, or a device-like name."""
    if isinstance(expr, cst.Call):
        return names.qualify(expr.func) == "torch.device"
    text = literal_text(expr)
    if text is not None:
        return bool(DEVICE_STRING.match(text))
    return is_device_name(expr)


def is_device_move(call: cst.Call, names: NameResolver) -> bool:
    """A ``.to()`` call that chooses a device (not ``.to(torch.float16)``):
    the premise of "this module chooses its device". The literal ``"cuda"``
    and ``torch.device("cuda")`` are no choice: they go where ``.cuda()``
    goes (a CUDA-bound script is consistent); a device held in a variable or
    chosen at run time is."""
    target = device_argument(call)
    return target is not None and is_device_expression(target, names) and not _literal_cuda(target, names)


def _literal_cuda(expr: cst.BaseExpression, names: NameResolver) -> bool:
    if isinstance(expr, cst.Call):
        if names.qualify(expr.func) != "torch.device":
            return False
        first = expr.args[0].value if len(expr.args) == 1 and expr.args[0].keyword is None else None
        return first is not None and string_value(first) == "cuda"
    return string_value(expr) == "cuda"


def non_cuda_literal(expr: cst.BaseExpression, names: NameResolver) -> bool:
    """``"cpu"``, ``"mps:0"``, ``torch.device("cpu")``, ``torch.device(type="xpu")``:
    a literal device whose type is not CUDA."""
    if isinstance(expr, cst.Call) and names.qualify(expr.func) == "torch.device":
        arg = argument(expr, 0, "type")
        return arg is not None and non_cuda_literal(arg.value, names)
    text = string_value(expr) if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)) else None
    return text is not None and bool(DEVICE_STRING.match(text)) and text.partition(":")[0] in NON_CUDA_TYPES


class DeviceChoice:
    """Mixin for a ``Rule`` (before ``CudaGuards`` in its bases): does this
    module choose its device? It does when a ``.to()`` chooses one
    (``is_device_move``), unless it is a CUDA program anyway: it starts an
    NCCL process group, or the worker it spawns (``mp.spawn(worker, ...)``,
    ``start_processes``) selects its GPU with an unconditional
    ``torch.cuda.set_device``. Read ``chooses_device`` in ``leave_Module``,
    once the whole module is seen. Rules using it add ``DeviceChoice.READS``."""

    READS = frozenset({"init_process_group", "set_device", "spawn", "start_processes"})

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._moves_to_device = False
        self._nccl = False
        self._device_setters: set[str] = set()  # top-level functions calling set_device unconditionally
        self._spawned: set[str] = set()  # functions handed to mp.spawn / start_processes
        self._function_names: list[str] = []

    @property
    def chooses_device(self) -> bool:
        return self._moves_to_device and not self._nccl and not self._device_setters & self._spawned

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        self._function_names.append(node.name.value)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().leave_FunctionDef(node)
        self._function_names.pop()

    def note_call(self, call: cst.Call) -> None:
        """Call from the rule's ``visit_Call`` for every call."""
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "to":
            self._moves_to_device = self._moves_to_device or is_device_move(call, self.names)
        elif not self._nccl and is_nccl_init(call, self.names):
            self._nccl = True
        qualified = self.names.qualify(func) or ""
        if qualified == "torch.cuda.set_device" and not self.cuda_guarded() and len(self._function_names) == 1:
            self._device_setters.add(self._function_names[0])
        elif qualified.rpartition(".")[2] in ("spawn", "start_processes") and call.args:
            target = call.args[0].value
            if isinstance(target, cst.Name):
                self._spawned.add(target.value)
