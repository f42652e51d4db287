"""TDV104: ``.cuda()`` given a device that is not CUDA."""

from __future__ import annotations

from .._lazy import cst
from ..analysis.devices import device_argument, non_cuda_literal
from ..rule import Fix, Rule


class CudaGivenNonCudaDevice(Rule):
    r"""## What it does
    Flags `<expr>.cuda(device)` whose device is a literal that is not CUDA: a string
    (`"cpu"`, `"mps"`, `"cpu:0"`, `"xpu"`, `"meta"`), a `torch.device(...)` of one
    (`torch.device("cpu")`, `torch.device(type="mps")`, under any alias), or a name
    assigned one of those in the same scope (function, or module code) and nothing else
    there before the call. The device may be positional or `device=`.

    ## Why is this bad?
    `.cuda(device)` only chooses *which* GPU; it never goes anywhere else. Given a CPU, MPS
    or any other non-CUDA device it raises on every machine, GPU or not. The code usually
    meant `.to(device)`.

    ## Example
    ```python
    device = "cpu"
    model = model.cuda(device)
    ```

    ## Use instead
    ```python
    device = "cpu"
    model = model.to(device)
    ```

    ## Fix safety
    Safe. The fix renames `.cuda` to `.to` and keeps the arguments (`.to` takes the same
    `device` and `non_blocking`). The call always raised, so no working behaviour changes;
    now it moves to the device it names.

    ## When it does not report
    - `.cuda()`, `.cuda(0)`, `.cuda("cuda:1")`, `.cuda(torch.device("cuda"))`;
    - a device held by a parameter, an attribute, or a name assigned anything else in the
      scope (`device = "cuda" if ok else "cpu"`): it may be CUDA when the call runs;
    - a name bound in another scope (a module-level `d = "cpu"` used inside a function).

    ## The error torch raises
    On every machine:

    ```
    RuntimeError: Invalid device, must be cuda device
    ```
    """

    CODE = "TDV104"
    NAME = "cuda-given-non-cuda-device"
    SUMMARY = "`.cuda()` given a device that is not CUDA (`.cuda(\"cpu\")`)"
    MESSAGE = '.cuda() accepts only CUDA devices: .cuda("cpu") raises on every machine; use .to(device)'
    FIX = "safe"
    NEEDS = {".cuda("}

    def __init__(self, context) -> None:
        super().__init__(context)
        # Per scope: name -> bound only to non-CUDA literals so far.
        self._scopes: list[dict[str, bool]] = [{}]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.append({})

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._scopes.append({})

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._scopes.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target, None)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target, None)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._bind(node.name, None)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target, node.value)

    def _bind(self, target: cst.BaseExpression, value) -> None:
        if isinstance(target, cst.Name):
            scope = self._scopes[-1]
            literal = value is not None and non_cuda_literal(value, self.names)
            scope[target.value] = scope.get(target.value, True) and literal
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind(element.value, None)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "cuda"):
            return
        device = device_argument(node)
        if device is None:
            return
        if non_cuda_literal(device, self.names) or (
            isinstance(device, cst.Name) and self._scopes[-1].get(device.value, False)
        ):
            self.report(node, fix=Fix(lambda call: call.with_changes(func=call.func.with_changes(attr=cst.Name("to")))))
