"""``torch.cuda`` and ``torch.accelerator`` as a machine with N GPUs answers them: availability,
counts, the current device, and harmless stand-ins for streams, events, memory statistics
and synchronisation (there is nothing to wait for: every kernel ran on the CPU already)."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import torch

GIB = 1 << 30


class Event:
    def __init__(self, enable_timing=False, blocking=False, interprocess=False, **_):
        self.enable_timing = enable_timing

    def record(self, stream=None):
        return None

    def wait(self, stream=None):
        return None

    def query(self):
        return True

    def synchronize(self):
        return None

    def elapsed_time(self, end_event):
        return 0.0


class Stream(contextlib.nullcontext):
    def __init__(self, device=None, priority=0, **_):
        super().__init__()
        self.device = device
        self.priority = priority

    def wait_stream(self, stream):
        return None

    def wait_event(self, event):
        return None

    def record_event(self, event=None):
        return event or Event()

    def query(self):
        return True

    def synchronize(self):
        return None

    def is_capturing(self):
        return False


def build(state_of):
    """(object, attribute, replacement) for every call fake CUDA answers; ``state_of()`` is the session."""

    def index(device=None):
        if device is None:
            return state_of().current
        if isinstance(device, int):
            return state_of().cuda(device).index
        resolved = state_of().resolve(device)
        return resolved.index if resolved is not None else state_of().current

    def set_device(device):
        state_of().current = index(device)

    @contextlib.contextmanager
    def device(device):
        state = state_of()
        before = state.current
        if device is not None and device != -1:
            state.current = index(device)
        try:
            yield
        finally:
            state.current = before

    def properties(device=None):
        # torch checks the index against the device count itself before it asks the driver
        state = state_of()
        number = device if isinstance(device, int) else state.ordinal(device)
        number = state.current if number is None else number
        if not 0 <= number < state.device_count:
            raise AssertionError("Invalid device id")
        return SimpleNamespace(name=f"fake CUDA device {number} (computes on the CPU)", total_memory=80 * GIB,
                               multi_processor_count=132, major=9, minor=0, is_integrated=False)

    zero = (lambda device=None: 0)
    none = (lambda *args, **kwargs: None)
    cuda = torch.cuda
    found = {
        "is_available": lambda: True,
        "device_count": lambda: state_of().device_count,
        "current_device": lambda: state_of().current,
        "set_device": set_device,
        "device": device,
        "get_device_name": lambda device=None: properties(device).name,
        "get_device_capability": lambda device=None: (9, 0),
        "get_device_properties": properties,
        "is_initialized": lambda: True,
        "is_bf16_supported": lambda including_emulation=True: True,
        "init": none, "synchronize": none, "empty_cache": none, "ipc_collect": none,
        "manual_seed": none, "manual_seed_all": none, "seed": none, "seed_all": none,
        "memory_allocated": zero, "max_memory_allocated": zero, "memory_reserved": zero,
        "max_memory_reserved": zero, "reset_peak_memory_stats": none, "reset_max_memory_allocated": none,
        "reset_accumulated_memory_stats": none, "memory_stats": lambda device=None: {},
        "memory_summary": lambda device=None, abbreviated=False: "fake CUDA: no memory statistics\n",
        "mem_get_info": lambda device=None: (80 * GIB, 80 * GIB),
        "Event": Event, "Stream": Stream,
        "current_stream": lambda device=None: Stream(device), "default_stream": lambda device=None: Stream(device),
        "stream": lambda stream=None: contextlib.nullcontext(),
        "is_current_stream_capturing": lambda: False,
        "set_per_process_memory_fraction": none, "utilization": zero,
        # CUDA's generator state: the CPU's stands in (seeding is harmless, state round-trips)
        "get_rng_state": lambda device="cuda": torch.get_rng_state(),
        "set_rng_state": lambda new_state, device="cuda": torch.set_rng_state(new_state),
        "get_rng_state_all": lambda: [torch.get_rng_state() for _ in range(state_of().device_count)],
        "set_rng_state_all": lambda new_states: None,
    }
    patches = [(cuda, name, value) for name, value in found.items()]
    patches += [(cuda.nvtx, name, none) for name in ("range_push", "range_pop", "mark", "range_start", "range_end")
                if hasattr(cuda.nvtx, name)]
    patches.append((cuda.nvtx, "range", lambda *args, **kwargs: contextlib.nullcontext()))
    patches += _defaults(state_of)
    # cuDNN is never used (every kernel is the CPU's): asked about a fake-CUDA tensor, the CPU
    # build would warn that it lacks cuDNN.
    patches.append((torch.backends.cudnn, "is_acceptable", lambda tensor: False))
    patches.append((torch, "Generator", _generator_class(state_of)))
    patches += [(cuda, name, _legacy_type(name, state_of)) for name in _LEGACY if hasattr(cuda, name)]
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None:
        for name, value in {
            "is_available": lambda: True,
            "device_count": lambda: state_of().device_count,
            "current_accelerator": lambda check_available=False: torch.device("cuda"),
            "current_device_index": lambda: state_of().current,
            "set_device_index": set_device,
            "synchronize": lambda device=None: None,
            "current_stream": lambda device=None: Stream(device),
        }.items():
            if hasattr(accelerator, name):
                patches.append((accelerator, name, value))
    return patches


def _defaults(state_of):
    """``torch.set_default_device("cuda")``: the session keeps the CUDA default (factories
    without ``device=`` are made on it, see ``_mode``); torch's own default stays the CPU."""
    real_set, real_get = torch.set_default_device, torch.get_default_device

    def set_default_device(device):
        state = state_of()
        state.default = state.resolve(device)
        real_set(None if state.default is not None else device)

    def get_default_device():
        return state_of().default or real_get()

    return [(torch, "set_default_device", set_default_device), (torch, "get_default_device", get_default_device)]


def _generator_class(state_of):
    """``torch.Generator(device="cuda")``: a CPU generator that says it is on CUDA, still an
    instance of ``torch.Generator`` as are the real ones."""
    real = torch.Generator

    class _Meta(type(real)):
        def __instancecheck__(cls, obj):
            return isinstance(obj, real)

        def __subclasscheck__(cls, sub):
            return issubclass(sub, real)

    class Generator(real, metaclass=_Meta):
        def __new__(cls, device="cpu", *args, **kwargs):
            made = real.__new__(cls, "cpu")
            made._fake_device = state_of().resolve(device)
            return made

        def __init__(self, *args, **kwargs):  # the C type initialises in __new__
            pass

        @property
        def device(self):
            return self._fake_device or torch.device("cpu")

    Generator.__name__ = Generator.__qualname__ = "Generator"
    Generator.__module__ = "torch"
    return Generator


_LEGACY = ("FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor",
           "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor")


def _legacy_type(name: str, state_of):
    """``torch.cuda.FloatTensor(...)`` and ``isinstance(t, torch.cuda.FloatTensor)``, the
    pre-1.0 spellings: the CPU type's constructor, placed on the current fake GPU."""
    from ._tags import device_of, set_device

    cpu_type = getattr(torch, name)

    class _Meta(type):
        def __call__(cls, *args, **kwargs):
            made = cpu_type(*args, **kwargs)
            set_device(made, state_of().cuda(state_of().current))
            return made

        def __instancecheck__(cls, obj):
            return isinstance(obj, cpu_type) and device_of(obj) is not None

    legacy = _Meta(name, (), {"__module__": "torch.cuda", "dtype": cpu_type.dtype})
    return legacy
