"""TDV101: ``.cuda()`` in a module that places things with ``.to(device)``."""

from __future__ import annotations

from typing import Optional

from .._lazy import cst
from ..analysis.devices import DeviceChoice, device_argument, is_device_name
from ..analysis.guards import CudaGuards
from ..rule import Fix, Rule


class CudaMixedWithToDevice(DeviceChoice, CudaGuards, Rule):
    r"""## What it does
    Flags each `<expr>.cuda(...)` call in a module that also places things with a
    device-style `.to(...)`: a `.to()` whose first positional argument or `device=` keyword
    is a device — a `torch.device(...)` call, a device string (`"cuda"`, `"cpu"`, `"cuda:0"`,
    `"mps"`, `f"cuda:{rank}"`, ...), or a name or attribute whose last part is `device`,
    `dev`, or ends in `_device` / `device_` (`device`, `args.device`, `self.target_device`).
    `.to(torch.float16)`, `.to(dtype=...)`, `.to(memory_format=...)` and `.to(other_tensor)`
    do not choose a device and do not count. A module that only ever uses `.cuda()` is
    consistent and is not flagged.

    A `.cuda()` is not flagged where the code has already made sure CUDA is there:

    - inside an `if` or conditional expression whose test checks for CUDA:
      `torch.cuda.is_available()`, `torch.cuda.device_count()`, `<x>.is_cuda`,
      `<x>.device.type == "cuda"`, `device == "cuda"`, or a flag whose name says `cuda` or
      `gpu` (`use_cuda`, `args.cuda`, `args.gpu`);
    - after an early `return`, `raise`, `continue`, `pytest.skip()`, `self.skipTest()` or
      `sys.exit()` under `if not torch.cuda.is_available():` in the same block;
    - after `torch.cuda.set_device(rank)` in the same block (`.cuda()` then follows the
      chosen GPU);
    - in a function or class decorated to skip without CUDA (`@unittest.skipIf(not
      torch.cuda.is_available(), ...)`, `@unittest.skipUnless(...)`,
      `@pytest.mark.skipif(...)`, `@onlyCUDA`, `@requires_gpu`);
    - inside a method named `cuda` (an override that forwards to `super().cuda()`);
    - inside `with pytest.raises(...)` / `with self.assertRaises(...)` (written to fail);
    - in a test module whose tests skip without a GPU (it has a decorator such as
      `@skip_if_no_gpu` or `@unittest.skipIf(not torch.cuda.is_available(), ...)`): inside
      `test*` functions and private `_helpers`, which those gated tests call.

    `.cuda(rank)` / `.cuda(device=d)` names its device and is not flagged either.

    A string test such as `if device != "cpu":` or `if device.type != "cpu":` is **not** a
    check: on Apple MPS or Intel XPU it is true and `.cuda()` still fails.

    ## Why is this bad?
    Code that chooses a device (`device = torch.device("cuda" if torch.cuda.is_available()
    else "cpu")`, `args.device`, a rank) promises to run wherever that choice points. A
    `.cuda()` elsewhere in the same module ignores the choice: on a CPU-only machine (a
    laptop, CI) or on MPS it raises, and with `device="cuda:1"` the `.cuda()` tensors land on
    `cuda:0`, so the next operation mixes two devices.

    ## Example
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)

    for features, labels in loader:
        logits = model(features.cuda())
    ```

    ## Use instead
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)

    for features, labels in loader:
        logits = model(features.to(device))
    ```

    ## Fix safety
    Unsafe. Rewriting `.cuda()` as `.to(device)` needs a name for the device that is in
    scope at the call, which the linter cannot always find (the device may be chosen in
    another function, or be an attribute). `torchdevice --fix --unsafe-fixes` rewrites only when exactly one
    device-like name (`device`, `dev`, `*_device`) is assigned at module level, and the call
    runs after that assignment (inside a function, or later in the module); otherwise it
    leaves the call alone. `.cuda(non_blocking=True)` becomes
    `.to(device, non_blocking=True)`. On a GPU machine whose chosen device is `cuda:0` the
    behaviour is unchanged; elsewhere the fix changes where the tensor goes, which is the
    point.

    ## When it does not report
    - `.cuda()` under a CUDA check (`if torch.cuda.is_available():`, `x.is_cuda`, `device.type == "cuda"`, a `use_cuda`/`args.gpu` flag), after an early exit when CUDA is missing (also at module level: `if torch.cuda.device_count() == 0: sys.exit()`), or after `torch.cuda.set_device(rank)` in the same block;
    - in a function or class with a decorator or mark that speaks of CUDA or a GPU (`@onlyCUDA`, `@RunIf(min_cuda_gpus=2)`, `@requires_cuda`, `@pytest.mark.gpu`, a `pytest.param(..., marks=...)` case) -- torch's own decorators (`@torch.cuda.amp.custom_fwd`) gate nothing;
    - in test code: `test*` functions and private `_helpers` of a test module (named `test_*.py`, `*_test.py`, `conftest.py`, under `tests/`, or importing pytest/unittest);
    - inside `with pytest.raises(...)` / `self.assertRaises(...)`, and in a method named `cuda`;
    - `.cuda(rank)` / `.cuda(device=d)`, which name their device;
    - a module whose `.to()` calls never choose a device, or that starts an NCCL process
      group (`init_process_group("nccl")`: it needs GPUs anyway).

    ## The error torch raises
    On a machine without CUDA (a CPU-only build of torch):

    ```
    AssertionError: Torch not compiled with CUDA enabled
    ```

    With a CUDA build but no GPU: `RuntimeError: Found no NVIDIA driver on your system.`
    With `device = torch.device("cuda:1")` on a two-GPU machine, the first operation that
    mixes the two:

    ```
    RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cuda:0!
    ```
    """

    CODE = "TDV101"
    NAME = "cuda-call-mixed-with-to-device"
    SUMMARY = "`.cuda()` in a module that places things with `.to(device)`"
    MESSAGE = (
        ".cuda() ignores the device this module chooses for .to(); on a machine "
        "without CUDA (or with device='cuda:1') it breaks: use .to(device) instead"
    )
    FIX = "unsafe"

    # A finding is a ``.cuda()`` call in a module that also moves with ``.to``.
    NEEDS = [{".cuda"}, {".to"}]
    READS = DeviceChoice.READS

    def __init__(self, context) -> None:
        super().__init__(context)
        self._cuda_calls: list[tuple[cst.Call, Optional[int], bool]] = []  # statement, in a def
        self._depth = 0  # functions open
        self._module_devices: dict[str, Optional[int]] = {}  # device-like module names -> statement

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        self._depth += 1

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().leave_FunctionDef(node)
        self._depth -= 1

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._depth == 0:
            for target in node.targets:
                self._module_device(target.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if self._depth == 0 and node.value is not None:
            self._module_device(node.target)

    def _module_device(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name) and is_device_name(target):
            self._module_devices.setdefault(target.value, self.context.statement)

    def visit_Call(self, node: cst.Call) -> None:
        self.note_call(node)
        func = node.func
        # ``.cuda(rank)`` names its device: a choice, only spelled differently.
        if isinstance(func, cst.Attribute) and func.attr.value == "cuda":
            if device_argument(node) is None and not self.cuda_guarded():
                self._cuda_calls.append((node, self.context.statement, self._depth > 0))

    def leave_Module(self, node: cst.Module) -> None:
        super().leave_Module(node)
        # Only now is the whole module known: report if it also uses .to(device).
        if self.chooses_device:
            for call, statement, in_function in self._cuda_calls:
                self.report(call, fix=self._fix(call, statement, in_function), statement=statement)

    def _fix(self, call: cst.Call, statement: Optional[int], in_function: bool) -> Optional[Fix]:
        """``x.cuda()`` -> ``x.to(device)`` (unsafe: the device may not be
        CUDA, which is the point), only when exactly one device-like name is
        bound at module level, so there is no choice to guess, and it exists
        when the call runs: in a function, or after its assignment."""
        if len(self._module_devices) != 1:
            return None
        ((name, assigned),) = self._module_devices.items()
        if not in_function and (assigned is None or statement is None or assigned >= statement):
            return None
        return Fix(lambda updated: _to_device(updated, name))


def _to_device(call: cst.Call, name: str) -> cst.Call:
    device = cst.Arg(cst.Name(name))
    if call.args:
        device = device.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return call.with_changes(func=call.func.with_changes(attr=cst.Name("to")), args=[device, *call.args])
