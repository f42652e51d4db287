"""TDV114: a device-availability check tested, or a device count computed with, without being called."""

from __future__ import annotations

from .._lazy import cst
from ..analysis.vocabulary import availability_check, device_count_query
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

    Also a device-count query used as a number without being called: `torch.cuda.device_count` (also
    `torch.cuda.current_device`, `torch.xpu.device_count`, `torch.accelerator.device_count`, ...) as an
    operand of arithmetic or a comparison, or as the argument of `range()` (`batch_size *
    torch.cuda.device_count`, `if torch.cuda.device_count > 1:`). Post-hoc, from recall batch 110's
    pytorch-3dunet loaders, which scaled their batch size by the function where two or more GPUs were found.

    ## Why is this bad?
    A function is always true. The check never fails, so the code always takes its CUDA branch:
    the CPU fallback it was written for is dead, and on a machine without CUDA (a laptop, a CPU CI
    runner) the first placement raises. On a GPU machine nothing shows it. A count used uncalled is no
    number: arithmetic, an ordering comparison or `range()` raises `TypeError` wherever it runs, often only
    on the multi-GPU branch no test reaches, and `==` / `!=` never holds / always holds.

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
      `monkeypatch.setattr(torch.cuda, "is_available", lambda: False)`); a count handed on (`probe =
      torch.cuda.device_count`) or only shown (`f"{torch.cuda.device_count} GPUs"` prints the function);
    - another library's or the project's own `is_available` (`reporter.is_available`), which may be
      a property.

    ## The error torch raises
    On a machine without CUDA, where the CUDA branch places a tensor (CPU-only build; a CUDA build
    without a GPU says `RuntimeError: Found no NVIDIA driver on your system`):

    ```
    AssertionError: Torch not compiled with CUDA enabled
    ```

    For a count used as a number, on every machine (Python's error, not torch's):

    ```
    TypeError: unsupported operand type(s) for *: 'int' and 'function'
    ```
    """

    CODE = "TDV114"
    NAME = "uncalled-availability-check"
    SUMMARY = (
        "device-availability check tested, or device count computed with, without being called "
        "(`if torch.cuda.is_available:`, `n * torch.cuda.device_count`)"
    )
    MESSAGE = (
        "{name} is not called: a function is always true, so this check always takes its {device} branch and the "
        "fallback never runs; call it: {name}()"
    )
    FIX = "unsafe"
    COUNT_MESSAGE = (
        "{name} is not called: a function is no number, so this {use} {outcome}; call it: {name}()"
    )
    NEEDS = {".is_available", ".is_bf16_supported", ".is_built", "device_count", "current_device"}

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

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        for operand in (node.left, node.right):
            self._count(operand, "arithmetic", "raises TypeError wherever it runs")

    def visit_Comparison(self, node: cst.Comparison) -> None:
        # ``torch.cuda.device_count > 1`` raises; ``== 0`` is always False, silently.
        equality = any(isinstance(target.operator, (cst.Equal, cst.NotEqual, cst.Is, cst.IsNot))
                       for target in node.comparisons)
        fixed = "has a fixed answer (== is always False, != always True)"
        outcome = fixed if equality else "raises TypeError wherever it runs"
        for operand in (node.left, *(target.comparator for target in node.comparisons)):
            self._count(operand, "comparison", outcome)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "range":
            for arg in node.args:
                self._count(arg.value, "range()", "raises TypeError wherever it runs")

    def _count(self, operand: cst.BaseExpression, use: str, outcome: str) -> None:
        name = device_count_query(self.names, operand)
        if name is not None:
            message = self.COUNT_MESSAGE.format(name=dotted_name(operand) or name, use=use, outcome=outcome)
            self.report(operand, message, fix=Fix(lambda node: cst.Call(func=node)))

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
