"""Calls fake CUDA answers itself: moves between devices, what a tensor says of its device,
host copies, indexing, and the few calls where CUDA lets devices mix."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from . import _errors
from ._tags import device_of, set_device

Tensor = torch.Tensor


def _moved(tensor, out, target):
    """``out`` (the real call's result) placed on ``target``: a new tensor where the device changes."""
    if target != device_of(tensor) and out is tensor:
        out = tensor.clone()
    if out is not tensor:
        set_device(out, target)
    return out


def to(state, func, args, kwargs):
    tensor, rest = args[0], args[1:]
    other = rest[0] if rest and isinstance(rest[0], Tensor) else kwargs.get("other")
    if isinstance(other, Tensor):
        return _moved(tensor, func(*args, **kwargs), device_of(other))
    if rest and isinstance(rest[0], int) and not isinstance(rest[0], bool):
        rest = (torch.device("cpu"), *rest[1:])  # an integer device is a CUDA ordinal
        target = state.cuda(args[1])
    else:
        parsed = {k: v for k, v in kwargs.items() if k != "copy"}
        device = torch._C._nn._parse_to(*rest[:3], **parsed)[0]  # raises torch's own TypeError
        if device is None:  # a dtype or memory format only: the device stays
            return _moved(tensor, func(*args, **kwargs), device_of(tensor))
        target = state.resolve(device)
        rest = tuple("cpu" if _is_device(a) else a for a in rest)
        kwargs = {k: ("cpu" if k == "device" else v) for k, v in kwargs.items()}
    return _moved(tensor, func(tensor, *rest, **kwargs), target)


def _is_device(value) -> bool:
    return isinstance(value, torch.device) or (isinstance(value, str) and value != "")


def cuda(state, func, args, kwargs):
    tensor = args[0]
    device = args[1] if len(args) > 1 else kwargs.get("device")
    if device is None:
        target = state.cuda(state.current)
    else:
        target = state.resolve(device)
        if target is None:
            raise _errors.not_a_cuda_device()
    if device_of(tensor) == target:
        return tensor
    return _moved(tensor, tensor, target)


def cpu(state, func, args, kwargs):
    tensor = args[0]
    return tensor.clone() if device_of(tensor) is not None else func(*args, **kwargs)


def to_numpy(state, func, args, kwargs):
    device = device_of(args[0])
    if device is not None:
        raise _errors.numpy_of(device)
    return func(*args, **kwargs)


def device_getter(state, func, args, kwargs):
    return device_of(args[0]) or func(*args)


def is_cuda(state, func, args, kwargs):
    return device_of(args[0]) is not None


def is_cpu(state, func, args, kwargs):
    return device_of(args[0]) is None and func(*args)


def get_device(state, func, args, kwargs):
    device = device_of(args[0])
    return device.index if device is not None else func(*args, **kwargs)


def set_data(state, func, args, kwargs):
    func(*args, **kwargs)
    set_device(args[0], device_of(args[1]))


def grad_getter(state, func, args, kwargs):
    grad = func(*args)
    if grad is not None:  # autograd gives a parameter its gradient on its own device
        set_device(grad, device_of(args[0]))
    return grad


def _check_indices(tensor, index) -> None:
    """On CUDA, indices may be on the CPU or on the indexed tensor's device, no other."""
    where = device_of(tensor)
    for item in index if isinstance(index, (tuple, list)) else (index,):
        if isinstance(item, Tensor):
            device = device_of(item)
            if device is not None and device != where:
                raise _errors.index_elsewhere(where or "cpu")


def getitem(state, func, args, kwargs):
    _check_indices(args[0], args[1])
    out = func(*args, **kwargs)
    if device_of(args[0]) is not None:
        set_device(out, device_of(args[0]))
    return out


def setitem(state, func, args, kwargs):
    _check_indices(args[0], args[1])  # the value is copied across devices, as on CUDA
    return func(*args, **kwargs)


def on_self(state, func, args, kwargs):
    """A copy into ``self`` from anywhere: CUDA copies across devices."""
    out = func(*args, **kwargs)
    if out is not args[0] and device_of(args[0]) is not None:
        set_device(out, device_of(args[0]))
    return out


def ctc_loss(state, func, args, kwargs):
    """CUDA's CTC takes its targets and lengths on the CPU: only the log-probabilities decide."""
    log_probs = args[0] if args else kwargs["log_probs"]
    out = func(*args, **kwargs)
    if device_of(log_probs) is not None:
        set_device(out, device_of(log_probs))
    return out


def unchecked(state, func, args, kwargs):
    """A question about tensors, not arithmetic on them: any devices may meet."""
    return func(*args, **kwargs)


def type_as(state, func, args, kwargs):
    return _moved(args[0], func(*args, **kwargs), device_of(args[1]))


def type_(state, func, args, kwargs):
    """``t.type()`` names CUDA types for a CUDA tensor; ``t.type(torch.cuda.FloatTensor)``
    (or its name) casts and places, as on a GPU."""
    tensor = args[0]
    wanted = args[1] if len(args) > 1 else kwargs.get("dtype")
    if wanted is None:
        name = func(tensor)
        return name.replace("torch.", "torch.cuda.", 1) if device_of(tensor) is not None else name
    if isinstance(wanted, str):
        name = wanted
    else:
        name = f"{getattr(wanted, '__module__', '')}.{getattr(wanted, '__name__', '')}"
    if not name.startswith("torch.cuda."):
        return _moved(tensor, func(*args, **kwargs), device_of(tensor))
    rest = {k: v for k, v in kwargs.items() if k != "dtype"}
    return _moved(tensor, func(tensor, name.replace("torch.cuda.", "torch.", 1), **rest), state.cuda(state.current))


def unchanged(state, func, args, kwargs):
    return args[0]


def nothing(state, func, args, kwargs):
    return None


def not_pinned(state, func, args, kwargs):
    return False


SPECIAL = {
    Tensor.to: to,
    Tensor.cuda: cuda,
    Tensor.cpu: cpu,
    Tensor.numpy: to_numpy,
    Tensor.__array__: to_numpy,
    Tensor.device.__get__: device_getter,
    Tensor.is_cuda.__get__: is_cuda,
    Tensor.is_cpu.__get__: is_cpu,
    Tensor.get_device: get_device,
    Tensor.data.__set__: set_data,
    Tensor.grad.__get__: grad_getter,
    Tensor.__getitem__: getitem,
    Tensor.__setitem__: setitem,
    Tensor.copy_: on_self,
    Tensor.new_tensor: on_self,
    Tensor.pin_memory: unchanged,
    Tensor.is_pinned: not_pinned,
    Tensor.record_stream: nothing,
    Tensor.type_as: type_as,
    Tensor.type: type_,
    torch._has_compatible_shallow_copy_type: unchecked,
    F.ctc_loss: ctc_loss,
    torch.ctc_loss: ctc_loss,
}

# Calls that only read the other tensor's shape: the result stays where ``self`` is.
SAME_AS_SELF = frozenset({Tensor.view_as, Tensor.expand_as, Tensor.reshape_as})
