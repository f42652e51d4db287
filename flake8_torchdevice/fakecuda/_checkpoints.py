"""Checkpoints under fake CUDA: ``torch.save`` tags a fake-CUDA tensor's storage ``cuda:k``,
as a GPU machine does, and ``torch.load`` gives such storages back as fake-CUDA tensors, or
fails as a machine without that GPU does (``saved_on_missing_gpu``, or ``k`` too large)."""

from __future__ import annotations

import torch

from ._tags import device_of, set_device

_SAVING: dict = {}  # storage address -> device, for the save in progress

NO_CUDA = (
    "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. "
    "If you are running on a CPU-only machine, please use torch.load with "
    "map_location=torch.device('cpu') to map your storages to the CPU."
)
NO_SUCH_GPU = (
    "Attempting to deserialize object on CUDA device {index} but torch.cuda.device_count() is {count}. "
    "Please use torch.load with map_location to map your storages to an existing device."
)


def patched_location_tag(real):
    def location_tag(storage):
        device = _SAVING.get(storage.data_ptr())
        return str(device) if device is not None else real(storage)

    return location_tag


def patched_save(real):
    def save(obj, *args, **kwargs):
        _note_placed(obj, depth=0, seen=set())
        try:
            return real(obj, *args, **kwargs)
        finally:
            _SAVING.clear()

    return save


def _note_placed(value, depth, seen) -> None:
    """Note the storage of every fake-CUDA tensor in ``value``: the save tags it ``cuda:k``."""
    if depth > 50 or id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, torch.Tensor):
        device = device_of(value)
        if device is not None:
            _SAVING[value.untyped_storage().data_ptr()] = device
        return
    for item in _contents(value):
        _note_placed(item, depth + 1, seen)


def _contents(value):
    """What a checkpoint holds inside ``value``: dict values, items, a module's tensors, attributes."""
    if isinstance(value, dict):
        return value.values()
    if isinstance(value, (list, tuple, set, frozenset)):
        return value
    if isinstance(value, torch.nn.Module):
        return (*value.parameters(), *value.buffers())
    if isinstance(value, (str, bytes, int, float, complex, bool, type(None))):
        return ()
    return getattr(value, "__dict__", {}).values()


def patched_load(real, state_of):
    def load(f, map_location=None, *args, **kwargs):
        state = state_of()
        placed: dict = {}  # storage address -> fake device
        locate = _locator(state, map_location, placed)
        out = real(f, locate, *args, **kwargs)
        if placed:
            _tag_loaded(out, placed, depth=0)
        return out

    return load


def _locator(state, map_location, placed):
    from ._report import explain

    def locate(storage, location):
        target = location
        if callable(map_location):
            moved = map_location(storage, location)
            if moved is not None:
                return moved
        elif isinstance(map_location, dict):
            target = map_location.get(location, location)
        elif map_location is not None:
            target = map_location
        device = _cuda_target(target, explicit=map_location is not None and not callable(map_location))
        if device is None:
            return storage
        placed[storage.data_ptr()] = device
        return storage

    def _cuda_target(target, explicit):
        if isinstance(target, int) and not isinstance(target, bool):
            return state.cuda(target)
        text = str(target)
        if not text.startswith("cuda"):
            return None
        index = int(text.split(":", 1)[1]) if ":" in text else state.current
        if state.saved_on_missing_gpu and not explicit:
            raise explain(RuntimeError(NO_CUDA), "TDV201")
        if index >= state.device_count:
            raise explain(RuntimeError(NO_SUCH_GPU.format(index=index, count=state.device_count)), "TDV201")
        return state.cuda(index)

    return locate


def _tag_loaded(value, placed, depth, seen=None) -> None:
    seen = set() if seen is None else seen
    if depth > 50 or id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, torch.Tensor):
        device = placed.get(value.untyped_storage().data_ptr())
        if device is not None:
            set_device(value, device)
        return
    for item in _contents(value):
        _tag_loaded(item, placed, depth + 1, seen)
