"""The torch-function mode: every torch call passes here, is checked for a meeting of
devices, runs on the CPU, and its tensors are tagged with the device CUDA would give them."""

from __future__ import annotations

from functools import lru_cache

from torch._C._nn import _parse_to
from torch.overrides import TorchFunctionMode

from . import _errors
from ._moves import SPECIAL, SAME_AS_SELF
from ._tags import device_of, tag_outputs, tensors_in

# In-place operators that do not end in "_" (most in-place ops do: add_, mul_, ...).
_OPERATORS = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift",
              "rshift")
_IN_PLACE_DUNDERS = frozenset(f"__i{op}__" for op in _OPERATORS)


# Packed sequences: CUDA takes their lengths and batch sizes on the CPU (at these tensor
# positions), and gives them back there.
_HOST_ARGUMENTS = {name: (1,) for name in ("_pack_padded_sequence", "_pad_packed_sequence", "lstm", "gru",
                                           "rnn_tanh", "rnn_relu")}
_FIRST_OUTPUT_ONLY = frozenset(("_pack_padded_sequence", "_pad_packed_sequence"))


class FakeCudaMode(TorchFunctionMode):
    def __init__(self, state):
        super().__init__()
        self.state = state

    def __torch_function__(self, func, types, args=(), kwargs=None):
        __tracebackhide__ = True  # pytest shows the user's line, not this machinery
        kwargs = kwargs or {}
        special = SPECIAL.get(func)
        if special is not None:
            return special(self.state, func, args, kwargs)
        if kwargs.get("device") is None and self.state.default is not None and func in _constructors():
            return _created(self.state, func, args, {**kwargs, "device": self.state.default})  # device=None too
        # ``Module.to`` reads its arguments with ``_parse_to(device=...)``, which makes nothing: answered with the
        # CPU as a factory would be, it would leave the module's tensors there.
        if "device" in kwargs and func is not _parse_to:
            return _created(self.state, func, args, kwargs)
        if func in SAME_AS_SELF:
            target = device_of(args[0])
        else:
            target = meeting_device(func, args, kwargs)
        out = func(*args, **kwargs)
        if target is not None:
            if getattr(func, "__name__", "") in _FIRST_OUTPUT_ONLY:
                tag_outputs(out[0], target)  # batch sizes and lengths stay on the CPU, as on CUDA
            else:
                tag_outputs(out, target)
        return out


@lru_cache(maxsize=1)
def _constructors() -> frozenset:
    """The factories a default device applies to (torch's own list)."""
    from torch.utils._device import _device_constructors

    return frozenset(_device_constructors())


def _created(state, func, args, kwargs):
    """A call that names its device: made on the CPU, tagged with that device."""
    __tracebackhide__ = True
    target = state.resolve(kwargs["device"])
    if target is None:
        return func(*args, **kwargs)
    out = func(*args, **{**kwargs, "device": "cpu"})
    tag_outputs(out, target)
    return out


def _in_place(func) -> bool:
    name = getattr(func, "__name__", "")
    return (name.endswith("_") and not name.endswith("__")) or name in _IN_PLACE_DUNDERS


def meeting_device(func, args, kwargs):
    """The device the tensors of one call share, or torch's error where they cannot meet.

    As on CUDA, a 0-dim CPU tensor may meet a CUDA one, except as the target of an
    in-place operation.
    """
    __tracebackhide__ = True
    found = None
    behind = None  # a CPU tensor that counts
    host_only = _HOST_ARGUMENTS.get(getattr(func, "__name__", ""), ())
    for position, tensor in enumerate(tensors_in(args, kwargs)):
        device = device_of(tensor)
        if device is None and position in host_only:
            continue
        if device is None:
            if behind is None and (tensor.dim() > 0 or (position == 0 and _in_place(func))):
                behind = tensor
        elif found is None:
            found = device
        elif device != found:
            raise _errors.devices_differ(found, device)
    if found is not None and behind is not None:
        raise _errors.devices_differ(found, "cpu")
    return found
