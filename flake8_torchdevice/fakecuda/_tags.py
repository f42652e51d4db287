"""Which tensors are "on CUDA": a table from a tensor's identity to the device it would have.

Every tensor really lives on the CPU. A tensor absent from the table is a CPU tensor;
one in it reports the CUDA device it holds. The table holds weak references, so a tensor
that dies leaves it (its id may be reused by a new, untagged tensor).
"""

from __future__ import annotations

import weakref

import torch

_DEVICES: dict = {}  # id(tensor) -> (weakref to it, torch.device("cuda", k))
PLACED = [0]  # how many times a tensor was put on a fake device: proof that a session acted


def device_of(tensor) -> "torch.device | None":
    """The fake CUDA device of ``tensor``, or None where it is a CPU tensor."""
    entry = _DEVICES.get(id(tensor))
    if entry is None or entry[0]() is not tensor:
        return None
    return entry[1]


def set_device(tensor, device) -> None:
    """Record ``tensor`` as being on ``device`` (a CUDA torch.device), or on the CPU (None)."""
    key = id(tensor)
    if device is None:
        _DEVICES.pop(key, None)
        return
    PLACED[0] += 1
    _DEVICES[key] = (weakref.ref(tensor, lambda _ref, key=key: _forget(key, _ref)), device)


def _forget(key: int, ref) -> None:
    entry = _DEVICES.get(key)
    if entry is not None and entry[0] is ref:
        del _DEVICES[key]


def tag_outputs(value, device) -> None:
    """Put every tensor in ``value`` (a tensor, or a tuple/list of them) on ``device``."""
    if isinstance(value, torch.Tensor):
        set_device(value, device)
    elif isinstance(value, (tuple, list)):
        for item in value:
            if isinstance(item, torch.Tensor):
                set_device(item, device)


def tensors_in(args, kwargs):
    """Each tensor among the arguments, looking one level into lists and tuples."""
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            yield value
        elif isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, torch.Tensor):
                    yield item
