"""TDV105: CUDA-only ``torch.cuda`` calls in a module that chooses its device."""

from __future__ import annotations

from typing import Optional

from .._lazy import cst
from ..analysis.devices import DeviceChoice
from ..analysis.guards import CudaGuards
from ..rule import Rule

# torch.cuda functions that fail without CUDA (measured on a CPU build);
# empty_cache(), memory queries and cudnn flags are harmless and not here.
CUDA_ONLY = frozenset({"synchronize", "get_device_name", "reset_peak_memory_stats", "Event", "set_device"})


class CudaOnlyCallWithChosenDevice(DeviceChoice, CudaGuards, Rule):
    r"""**Off by default (opt-in: `extend-select = TDV105`).** Precision on real code: 33%
    on a seeded sample of 12 of its 38 held-out findings (3 true, 1 latent, 8 false; 2026-11-29),
    56% on the tune split (5 of 9), far below the 90% bar: most findings are in training loops
    that need CUDA for a reason the file does not show (a device built from a rank, DeepSpeed, an
    NCCL branch), which a `.to(device)` does not make device-agnostic. See docs/precision.md.

    ## What it does
    Flags a call to `torch.cuda.synchronize()`, `torch.cuda.get_device_name()`,
    `torch.cuda.reset_peak_memory_stats()`, `torch.cuda.Event(...)` or
    `torch.cuda.set_device(...)` (under any alias) in a module that chooses its device: one
    that places things with a device-style `.to(...)`, exactly as TDV101 decides it
    (`.to(device)`, `.to("cpu")`, `.to(torch.device(...))`, `.to(args.device)`), unless the
    call is guarded the way TDV101 accepts a `.cuda()`.

    ## Why is this bad?
    A module that chooses its device promises to run on the CPU, on Apple MPS or on any GPU.
    These calls exist only for CUDA and break that promise: timing and memory code in
    benchmark and example scripts that otherwise run anywhere dies on the first call.

    ## Example
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)
    start = time.perf_counter()
    model(batch.to(device))
    torch.cuda.synchronize()
    ```

    ## Use instead
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)
    start = time.perf_counter()
    model(batch.to(device))
    if device.type == "cuda":
        torch.cuda.synchronize()  # or torch.accelerator.synchronize() on any accelerator
    ```

    ## Fix safety
    None: the right guard depends on how the module names its device.

    ## When it does not report
    - the guards of TDV101: under `if torch.cuda.is_available():`, `if device.type ==
      "cuda":`, a `use_cuda` / `args.gpu` flag, after an early exit without CUDA, in a
      function or class with a CUDA skip decorator, in test code of a test module;
    - a module whose `.to()` calls never choose a device (a CUDA-only script), or that
      starts an NCCL process group (`init_process_group("nccl")`) or a launcher that demands a GPU
      (`Fabric(accelerator="gpu")`): it needs GPUs anyway;
    - `torch.cuda.empty_cache()`, `torch.cuda.max_memory_allocated()` and
      `torch.backends.cudnn` settings, which are harmless without CUDA.

    ## The error torch raises
    On a machine without CUDA (a CPU-only build of torch), `synchronize()` and
    `get_device_name()`:

    ```
    AssertionError: Torch not compiled with CUDA enabled
    ```

    `reset_peak_memory_stats()` and `set_device(0)`:

    ```
    AttributeError: module 'torch._C' has no attribute
    ```

    `torch.cuda.Event(enable_timing=True)`:

    ```
    RuntimeError: Tried to instantiate dummy base class Event
    ```

    A CUDA build of torch with no GPU visible (`CUDA_VISIBLE_DEVICES=""`, or a GPU
    workstation's build on a machine without one) words the same mistakes differently:
    `torch.cuda.Event()` constructs, and its `record()` fails, as do `synchronize()` and
    `get_device_name()`:

    ```
    RuntimeError: No CUDA GPUs are available
    ```

    `reset_peak_memory_stats()`:

    ```
    RuntimeError: invalid argument to reset_peak_memory_stats
    ```
    """

    CODE = "TDV105"
    DEFAULT_ENABLED = False
    NAME = "cuda-only-call-with-chosen-device"
    SUMMARY = "CUDA-only `torch.cuda` call (`synchronize`, `Event`, ...) in a module that chooses its device"
    MESSAGE = (
        "torch.cuda.{} fails without CUDA, but this module chooses its device with .to(); "
        "guard it (if device.type == \"cuda\":) or use torch.accelerator"
    )
    # A finding is one of these calls, in a module that also moves with ``.to``.
    NEEDS = [CUDA_ONLY, {".to"}]
    READS = DeviceChoice.READS

    def __init__(self, context) -> None:
        super().__init__(context)
        self._calls: list[tuple[cst.Call, str, Optional[int]]] = []

    def visit_Call(self, node: cst.Call) -> None:
        name = self.names.qualify(node.func) or ""
        prefix, _, last = name.rpartition(".")
        if prefix == "torch.cuda" and last in CUDA_ONLY and not self.cuda_guarded():
            self._calls.append((node, last, self.context.statement))
        self.note_call(node)

    def leave_Module(self, node: cst.Module) -> None:
        super().leave_Module(node)
        if self.chooses_device:  # the module chooses its device: these calls break its CPU path
            for call, last, statement in self._calls:
                self.report(call, self.MESSAGE.format(last + "()"), statement=statement)
