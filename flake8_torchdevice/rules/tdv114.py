"""TDV114: a device-availability check tested without being called (``if torch.cuda.is_available:``)."""

from __future__ import annotations

from .._lazy import cst
from ..analysis.vocabulary import availability_check
from ..names import dotted_name
from ..rule import Fix, Rule


class UncalledAvailabilityCheck(Rule):
    r"""## What it does
    Flags a device-availability check used as a truth value without being called:
    `torch.cuda.is_available` (also `torch.backends.mps.is_available`, `torch.xpu.is_available`,
    `torch.cuda.is_bf16_supported`, `torch.distributed.is_available`, ...) as the test of an `if`,
    `elif`, `while`, `assert` or conditional expression, or as an operand of `and`, `or` and `not`
    there or anywhere (`device = "cuda" if torch.cuda.is_available else "cpu"`,
    `use_gpu = torch.cuda.is_available and args.cuda`). Post-hoc, from the held-out label of a
    tutorial's YOLO v1 training script (`DEVICE = "cuda" if torch.cuda.is_available else "cpu"`,
    judged to run only with CUDA).

    ## Why is this bad?
    A function is always true. The check never fails, so the code always takes its CUDA branch:
    the CPU fallback it was written for is dead, and on a machine without CUDA (a laptop, a CPU CI
    runner) the first placement raises. On a GPU machine nothing shows it.

    ## Example
    ```python
    device = torch.device("cuda" if torch.cuda.is_available else "cpu")
    model = Net().to(device)
    ```

    ## Use instead
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)
    ```

    ## Fix safety
    Unsafe: the fix adds the call (`torch.cuda.is_available()`), which is what the code means, but it
    changes what the code does on a machine without the device: the CPU branch starts to run.

    ## When it does not report
    - a check that is called (`torch.cuda.is_available()`), or handed on as a function
      (`patch("torch.cuda.is_available", ...)`, `checks = [torch.cuda.is_available]`,
      `monkeypatch.setattr(torch.cuda, "is_available", lambda: False)`);
    - another library's or the project's own `is_available` (`reporter.is_available`), which may be
      a property.

    ## The error torch raises
    On a machine without CUDA, where the CUDA branch places a tensor (CPU-only build; a CUDA build
    without a GPU says `RuntimeError: Found no NVIDIA driver on your system`):

    ```
    AssertionError: Torch not compiled with CUDA enabled
    ```
    """

    CODE = "TDV114"
    NAME = "uncalled-availability-check"
    SUMMARY = "device-availability check tested without being called (`if torch.cuda.is_available:`)"
    MESSAGE = (
        "{name} is not called: a function is always true, so this check always takes its {device} branch and the "
        "fallback never runs; call it: {name}()"
    )
    FIX = "unsafe"
    NEEDS = {".is_available", ".is_bf16_supported", ".is_built"}

    def visit_If(self, node: cst.If) -> None:
        self._check(node.test)

    def visit_While(self, node: cst.While) -> None:
        self._check(node.test)

    def visit_Assert(self, node: cst.Assert) -> None:
        self._check(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._check(node.test)

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        # Operands of ``and`` / ``or`` are truth values wherever the operation stands; a test that is one
        # itself is read here only (``_check`` does not go into it), so each operand is reported once.
        for operand in (node.left, node.right):
            if not isinstance(operand, cst.BooleanOperation):
                self._check(operand)

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if isinstance(node.operator, cst.Not):
            self._check(node.expression)

    def _check(self, test: cst.BaseExpression) -> None:
        if isinstance(test, (cst.BooleanOperation, cst.UnaryOperation)):
            return  # their operands are read where the operation is visited
        name = availability_check(self.names, test)
        if name is None:
            return
        device = "MPS" if ".mps" in name else "XPU" if ".xpu" in name else "MTIA" if ".mtia" in name else "CUDA"
        if name == "torch.distributed.is_available":
            device = "distributed"
        message = self.MESSAGE.format(name=dotted_name(test) or name, device=device)
        self.report(test, message, fix=Fix(lambda node: cst.Call(func=node)))
