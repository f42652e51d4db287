"""Where values are made and moved: ``.to(...)`` / ``.cuda()``, a factory's ``device=``,
``torch.load(..., map_location=...)``, and which destinations are the CPU or may be CUDA."""

from __future__ import annotations

from typing import Optional

from ..._lazy import cst
from ..code import argument, code_of, last_name, string_value
from ..self_calls import follows_self_calls
from ..vocabulary import DATA_FACTORIES, LEGACY_KINDS, maybe_zero_dim, unseen_shape
from .values import BATCH, CPU, DEVICE, FRAMEWORK, INPUT, NUMPY, PLACED, SIBLING, Value
from .words import DTYPES, OPTION_HOLDERS


class Places:
    """Mixin of the flow walk (``analysis._Analysis``)."""

    def move(self, call: cst.Call, receiver: Optional[Value], method: str, args, env: dict) -> Optional[Value]:
        """``.to(...)`` / ``.cuda(...)``: where does the result live?"""
        if method == "cuda":
            where = PLACED
        else:
            where = self.destination(call, args, env)
        if receiver is not None and receiver.kind == SIBLING and where == PLACED:  # ``.to("cpu")`` moves it nowhere
            receiver.loop.moved.append(receiver.label)
        if where is None:
            if receiver is not None and receiver.kind in (CPU, PLACED) and dtype_only(call, self.names):
                return receiver
            return None
        if receiver is not None and receiver.kind == BATCH:
            return None
        local = receiver is not None and receiver.local
        param = receiver is not None and (receiver.param or receiver.kind == INPUT)
        if where == CPU:
            zero = receiver.zero if receiver is not None and receiver.kind in (CPU, PLACED) else True
            return Value(CPU, call, zero=zero)
        label = call.func.value if receiver is None or receiver.kind != PLACED else receiver.label
        moved = Value(PLACED, label, local=local, param=param)
        moved.scatters = receiver is not None and receiver.scatters
        moved.ctc = receiver is not None and receiver.ctc  # ``nn.CTCLoss().to(device)``
        if receiver is not None and receiver.kind == SIBLING:
            moved.moved_from = receiver.loop
        return moved

    def configured_self_device(self, expr: cst.Attribute) -> bool:
        """``self.device`` of a class that is no ``torch.nn`` module (a trainer, a predictor): the
        device its caller configured, as ``args.device`` is; a module's is its own weights'."""
        return isinstance(expr.value, cst.Name) and expr.value.value == "self" and self.cls is not None \
            and follows_self_calls(self.names, self.cls.name.value)

    def device_argument(self, call: cst.Call, device: cst.Arg, values: list, env: dict) -> Optional[str]:
        """Where ``device=`` of a factory or a layer puts it: ``CPU``, ``PLACED`` or None."""
        return self.destination(cst.Call(func=call.func, args=[device]), [values[call.args.index(device)]], env)

    def destination(self, call: cst.Call, args, env: dict) -> Optional[str]:
        """``CPU``, ``PLACED`` or None (a dtype, another tensor's device unknown)."""
        arg = argument(call, 0, "device")
        if arg is None:
            return None
        value = args[[a for a in call.args].index(arg)] if arg in call.args else None
        expr = arg.value
        text = string_value(expr)
        if text is not None:
            return CPU if text.startswith("cpu") else PLACED
        if isinstance(expr, cst.Integer):
            return PLACED
        if value is not None:
            if value.kind == DEVICE:
                return CPU if value.zero else PLACED
            if value.kind in (CPU, PLACED):
                return value.kind  # .to(other): other's device
            if value.kind not in (INPUT,):
                return None
        if isinstance(expr, cst.Attribute) and expr.attr.value == "device":
            # else the device of something unknown (a module's own ``self.device``)
            return PLACED if _option_device(expr) or self.configured_self_device(expr) else None
        if _option_lookup(expr):
            return PLACED
        name = code_of(expr).lower()
        if "cpu" in name:
            return CPU
        if isinstance(expr, (cst.Name, cst.Attribute)) and any(
            w in name for w in ("device", "dev", "gpu", "cuda", "rank")
        ):
            return PLACED
        return None

    def factory(self, call: cst.Call, qualified: str, env: dict) -> Optional[Value]:
        values = [self.ev(arg.value, env) for arg in call.args]
        if any(arg.star == "**" for arg in call.args) or argument(call, None, "out") is not None:
            return None
        device = argument(call, None, "device")
        if device is None and self.default_device:
            return None  # on the default device this scope set: not known to be the CPU
        if device is not None:
            where = self.device_argument(call, device, values, env)
            if where == PLACED:
                return Value(PLACED, call.func)
            if where == CPU:
                return _cpu_factory(qualified, call)
            return None
        if qualified in DATA_FACTORIES and values:
            first = values[0]
            if first is not None and first.kind in (PLACED, SIBLING, FRAMEWORK):
                return None  # torch.tensor(x) keeps x's device
            if first is not None and first.kind == INPUT and qualified != "torch.tensor":
                return None  # as_tensor(x) of an input: x may be a tensor, whose device it keeps
            if first is not None and first.kind == NUMPY:
                return Value(CPU, call.func, factory=True)
        if qualified == "torch.from_numpy":
            return Value(CPU, call.func, factory=True)
        return _cpu_factory(qualified, call)

    def load(self, call: cst.Call, env: dict) -> Optional[Value]:
        for arg in call.args:
            self.ev(arg.value, env)
        where = argument(call, 1, "map_location")
        text = string_value(where.value) if where is not None else None
        if text is not None and text.startswith("cpu"):
            return Value(CPU, "torch.load(...)", zero=True)  # a model or a checkpoint dict
        return None


def _option_device(expr: cst.Attribute) -> bool:
    """``args.device`` / ``self.cfg.device`` / ``accelerator.device``: the run's chosen device."""
    holder = expr.value
    return bool(OPTION_HOLDERS.match(last_name(holder) or ""))


def _option_lookup(expr: cst.BaseExpression) -> bool:
    """``config.get("General", "device")``, ``cfg["device"]``, ``config["train"]["device"]``: the run's
    chosen device read from a configuration by its key, as ``args.device`` is read as an attribute."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "get":
        holder, keys = expr.func.value, [string_value(arg.value) for arg in expr.args[:2] if not arg.keyword]
    elif isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
        holder, keys = expr.value, [string_value(expr.slice[0].slice.value)]
    else:
        return False
    while isinstance(holder, cst.Subscript):  # ``config["train"]["device"]``: the configuration's section
        holder = holder.value
    named = any(key is not None and key.lower().endswith("device") and "cpu" not in key.lower() for key in keys)
    return named and bool(OPTION_HOLDERS.match(last_name(holder) or ""))


def _cpu_factory(qualified: str, call: cst.Call) -> Value:
    value = Value(CPU, call.func, zero=maybe_zero_dim(qualified, call), factory=True)
    value.unseen = unseen_shape(qualified, call)
    return value


def cpu_type_cast(call: cst.Call, names) -> bool:
    """``.type(torch.float32)``, ``.type(torch.FloatTensor)``, ``.type("torch.LongTensor")``: a cast to a
    CPU tensor type or a dtype, which leaves a CPU tensor on the CPU. A CUDA type
    (``.type(torch.cuda.FloatTensor)``) moves it, and a type held in a name (``self.FloatTensor``, which
    ``__init__`` chose as ``torch.cuda.FloatTensor if use_cuda else torch.FloatTensor``) may."""
    arg = argument(call, 0, "dtype")
    if arg is None:
        return False
    qualified = string_value(arg.value) or names.qualify(arg.value) or ""
    if not qualified.startswith("torch.") or qualified.startswith("torch.cuda."):
        return False
    name = qualified.rpartition(".")[2]
    return name in DTYPES or (name.endswith("Tensor") and name[:-len("Tensor")] in LEGACY_KINDS)


def dtype_only(call: cst.Call, names) -> bool:
    """``.to(torch.float16)`` / ``.to(dtype=...)``: the device does not change."""
    if not call.args:
        return False
    first = call.args[0]
    if first.keyword is not None:
        return all(a.keyword is not None and a.keyword.value in ("dtype", "non_blocking", "copy") for a in call.args)
    if any(a.keyword is None or a.keyword.value not in ("non_blocking", "copy") for a in call.args[1:]):
        return False  # ``.to(torch.float64, device)``: not a cast alone (and no valid call)
    qualified = names.qualify(first.value) or ""
    return qualified.startswith("torch.") and qualified.rpartition(".")[2] in DTYPES
