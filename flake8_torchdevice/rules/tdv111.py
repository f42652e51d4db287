"""TDV111: ``.cuda`` / ``.cpu`` / ``.to`` named but not called (``model = model.cpu``)."""

from __future__ import annotations

from typing import Optional

from .._lazy import cst
from ..analysis.code import layout_free
from ..rule import Fix, Rule

_MOVES = frozenset({"cuda", "cpu", "to"})
# Methods of a module or tensor that return one: ``net.eval().cuda`` is still a module's method.
_CHAINED = frozenset({"eval", "train", "float", "half", "double", "detach", "clone", "contiguous", "cuda", "cpu", "to"})


class MoveNotCalled(Rule):
    r"""## What it does
    Flags `.cuda`, `.cpu` or `.to` written without a call where the moved value was meant:
    - the whole value of an assignment to the name it reads (`model = model.cpu`,
      `self.net = self.net.cuda`);
    - a statement of its own (`model.cuda`);
    - read off a module or tensor the same expression builds (`nn.DataParallel(net).cuda`,
      `nn.Linear(2, 2).cpu`, `torch.zeros(3).cuda`, `net.eval().cuda`), wherever it is used.

    ## Why is this bad?
    Without the parentheses the expression is the bound method, not a moved module or tensor.
    Nothing moves, and the name now holds a method: the next `model(x)` calls `Module.cpu(x)`
    or `Module.cuda(x)`, which raises a `TypeError` on every machine, far from the line that
    went wrong; a statement of its own does nothing at all.

    ## Example
    ```python
    model = model.cpu
    wrapped = nn.DataParallel(net).cuda
    ```

    ## Use instead
    ```python
    model = model.cpu()
    wrapped = nn.DataParallel(net).cuda()
    ```

    ## Fix safety
    Unsafe. The fix adds the call, `()`. That makes the move happen where it did not before:
    a statement `model.cuda` becomes `model.cuda()`, which needs a GPU on the machine that runs
    it. That was the intent, but it changes what the program does.

    ## When it does not report
    - a method passed or stored on purpose under another name (`to_cpu = tensor.cpu`,
      `map(torch.Tensor.cpu, batch)`, `apply(fn=model.cuda)`);
    - attributes that are flags or modules: `args.cuda`, `self.cuda` read in a test (`if
      self.cuda:`), `opts = parse_args(); use = opts.cuda`, `torch.cuda`;
    - a receiver that is a call of something other than a `torch` constructor or a
      module/tensor method (`get_config().cuda` may be an option).

    ## The error torch raises
    On every machine, at the next call of the name:

    ```
    TypeError: Module.cpu() takes 1 positional argument but 2 were given
    ```

    or, for `.cuda`, `TypeError: cuda(): argument 'device' (position 1) must be torch.device, not Tensor`.
    """

    CODE = "TDV111"
    NAME = "device-move-not-called"
    SUMMARY = "`.cuda` / `.cpu` / `.to` named but not called (`model = model.cpu`)"
    MESSAGE = ".{method} without a call is the method, not the moved value: nothing moves; write .{method}()"
    FIX = "unsafe"
    NEEDS = {".cuda", ".cpu", ".to"}

    def __init__(self, context) -> None:
        super().__init__(context)
        self._called: set[int] = set()  # ids of attributes that are a call's function
        self._reported: set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        self._called.add(id(node.func))

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if _uncalled_move(value) and len(node.targets) == 1 \
                and layout_free(node.targets[0].target) == layout_free(value.value):
            self._report(value)

    def visit_Expr(self, node: cst.Expr) -> None:
        if _uncalled_move(node.value) and not self._is_torch(node.value.value):
            self._report(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if id(node) in self._called or not _uncalled_move(node):
            return
        if isinstance(node.value, cst.Call) and self._builds_module_or_tensor(node.value):
            self._report(node)

    def _report(self, node: cst.Attribute) -> None:
        if id(node) in self._reported:
            return
        self._reported.add(id(node))
        self.report(node, self.MESSAGE.format(method=node.attr.value), fix=Fix(_called))

    def _builds_module_or_tensor(self, call: cst.Call) -> bool:
        """``nn.DataParallel(net)``, ``torch.zeros(3)``, ``net.eval()``: a module or a tensor."""
        qualified = self.names.qualify(call.func) or ""
        if qualified.startswith("torch.") and not qualified.startswith(("torch.cuda.", "torch.device")):
            return True
        return isinstance(call.func, cst.Attribute) and call.func.attr.value in _CHAINED

    def _is_torch(self, expr: cst.BaseExpression) -> bool:
        return (self.names.qualify(expr) or "").split(".", 1)[0] == "torch"


def _uncalled_move(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Attribute) and expr.attr.value in _MOVES


def _called(node: cst.CSTNode) -> Optional[cst.CSTNode]:
    return cst.Call(func=node) if isinstance(node, cst.Attribute) else node
