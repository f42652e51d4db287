"""``fake_cuda()``: run torch code as if on a machine with N GPUs, computing on the CPU."""

from __future__ import annotations

import contextlib
import threading
import warnings

import torch

from . import _api, _checkpoints, _parallel, _threads
from ._mode import FakeCudaMode
from ._state import State
from ._tags import device_of, set_device

_SESSIONS: list = []  # the sessions entered, innermost last
_LOCK = threading.Lock()


def current() -> State:
    return _SESSIONS[-1]


def _compile_eagerly(model=None, **_options):
    warnings.warn(
        "fake CUDA: torch.compile is not applied; the code runs eagerly "
        "(TorchDynamo cannot trace tensors that only pretend to be on CUDA)",
        RuntimeWarning, stacklevel=2,
    )
    return model if model is not None else (lambda fn: fn)


def _parameters():
    """``nn.Parameter(t)`` / ``nn.Buffer(t)`` make a new tensor object of ``t``'s data: on ``t``'s device."""
    patches = []
    for kind in (torch.nn.Parameter, getattr(torch.nn, "Buffer", None)):
        if kind is None:
            continue
        make = kind.__new__

        def new(cls, data=None, *args, _make=make, **kwargs):
            made = _make(cls, data, *args, **kwargs)
            if data is not None:
                set_device(made, device_of(data))
            return made

        patches.append((kind, "__new__", staticmethod(new)))
    return patches


class fake_cuda(contextlib.ContextDecorator):  # noqa: N801 - used like a function, as torch.no_grad
    """A context manager and decorator: ``torch.cuda.is_available()`` is True, ``device_count()``
    is ``device_count``, and tensors placed on ``cuda:k`` compute on the CPU while reporting
    ``cuda:k``; a meeting of devices, a ``.numpy()`` of a CUDA tensor or an ordinal past the
    last GPU raises torch's own CUDA error. ``saved_on_missing_gpu=True``: ``torch.load``
    without ``map_location`` of a CUDA-saved file fails as on a machine without that GPU.
    """

    def __init__(self, device_count: int = 1, *, saved_on_missing_gpu: bool = False):
        if isinstance(device_count, bool) or not isinstance(device_count, int) or device_count < 1:
            raise ValueError(f"fake_cuda: device_count must be a positive integer, not {device_count!r}")
        self.device_count = device_count
        self.saved_on_missing_gpu = saved_on_missing_gpu
        self._entered: list = []

    def __enter__(self) -> State:
        state = State(self.device_count, self.saved_on_missing_gpu)
        with _LOCK:
            undo = _install() if not _SESSIONS else None
            _SESSIONS.append(state)
        mode = FakeCudaMode(state)
        mode.__enter__()
        threads = _threads.install(lambda: FakeCudaMode(state))
        self._entered.append((state, mode, threads, undo))
        return state

    def __exit__(self, *exc) -> None:
        state, mode, threads, undo = self._entered.pop()
        threads()
        mode.__exit__(*exc)
        with _LOCK:
            _SESSIONS.remove(state)
            if undo is not None:
                undo()


def _install():
    """Patch torch's CUDA-facing functions for the first session; returns the undo."""
    serialization = torch.serialization
    # Dynamo indexes torch's functions once, when first imported (optimizers import it):
    # it must see the real ones, never the stand-ins below.
    import torch._dynamo as dynamo

    patches = [
        *_api.build(current),
        *_parallel.PATCHES,
        *_parameters(),
        (serialization, "location_tag", _checkpoints.patched_location_tag(serialization.location_tag)),
        (torch, "save", _checkpoints.patched_save(torch.save)),
        (torch, "load", _checkpoints.patched_load(torch.load, current)),
        (torch, "compile", _compile_eagerly),
    ]
    # Functions compiled before the session run eagerly inside it.
    patches.append((dynamo.config, "disable", True))
    return _apply(patches)


_ABSENT = object()


def _apply(patches):
    """Set each (owner, name, value); returns the undo, which restores exactly what was there."""
    saved = []
    for owner, name, value in patches:
        if isinstance(owner, type):  # a class: its own entry (a staticmethod __new__ stays one), or none
            saved.append((owner, name, owner.__dict__.get(name, _ABSENT)))
        else:
            saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    def undo():
        for owner, name, value in reversed(saved):
            if value is _ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, value)

    return undo
