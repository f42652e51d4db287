"""TDV303: ``model.module`` where ``model`` is wrapped in DataParallel only under a CUDA test."""

from __future__ import annotations

from typing import Optional

from .._lazy import cst
from ..analysis.code import subtree
from ..analysis.guards import CudaGuards, is_cuda_test
from ..rule import CLASS, DEFINITION, Rule
from .tdv301 import WRAPPERS

# A test that asks whether the value is wrapped: ``isinstance(m, nn.DataParallel)``,
# ``hasattr(m, "module")``, a helper such as ``is_parallel(m)``, or the run's distributed mode, the
# condition DistributedDataParallel wraps under (``args.distributed``, ``config["distributed"]``,
# ``use_ddp``); code under it knows what it holds.
_WRAPPER_TEST_WORDS = ("isinstance", "hasattr", "getattr", "parallel", "module", "wrap", "distributed", "ddp")


def _key(expr: cst.BaseExpression) -> Optional[str]:
    """``model`` or ``self.net``: a name the code wraps and unwraps."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        return "self." + expr.attr.value
    return None


def _asks_about_wrapper(test: cst.BaseExpression) -> bool:
    """A test on the wrapper, or on the GPUs (``if self.n_GPUs == 1: ... else: m.module``): both
    branches of an ``if`` on the condition of the wrap mirror it."""
    for node in subtree(test):
        text = node.value.lower() if isinstance(node, (cst.Name, cst.SimpleString)) else ""
        if any(word in text for word in _WRAPPER_TEST_WORDS):
            return True
    return is_cuda_test(test)


class WrapperAttributeOnCpuPath(CudaGuards, Rule):
    r"""## What it does
    Flags `model.module` (or `self.net.module`) where every `DataParallel` /
    `DistributedDataParallel` wrap of that name in the function (of that attribute in the
    class) sits under a CUDA test (`if torch.cuda.device_count() > 1:`, `if self.use_gpu:`,
    `if args.cuda:`), and the `.module` access does not.

    ## Why is this bad?
    `.module` is the wrapper's attribute: the model itself has none. On the path where the
    CUDA test is false (a CPU machine, or a machine with fewer GPUs than the test wants) the
    model is never wrapped, and the first `model.module.state_dict()` raises, typically at the
    end of an epoch, when the checkpoint is written.

    ## Example
    ```python
    if torch.cuda.device_count() > 1:
        model = nn.DataParallel(model)
    ...
    torch.save(model.module.state_dict(), path)
    ```

    ## Use instead
    ```python
    torch.save(getattr(model, "module", model).state_dict(), path)
    ```

    ## Fix safety
    None: some code keeps a second name for the bare model; which one to use is the
    author's choice.

    ## When it does not report
    - a wrap that is not under a CUDA test anywhere in the scope (`model = nn.DataParallel(model)`
      unconditionally): `.module` always exists;
    - an access under a CUDA test too, in either branch of an `if` on the GPUs (`if n_gpus == 1:
      return m` / `else: return m.module`), or under a test or `try` that asks about the wrapper
      (`if isinstance(model, nn.DataParallel):`, `model.module if hasattr(model, "module") else
      model`, `model.module if is_parallel(model) else model`, `except AttributeError`), or about the
      run's distributed mode, the condition `DistributedDataParallel` wraps under (`model.module if
      config["distributed"] else model`, `if args.ddp:`);
    - names and attributes that are never wrapped in the scope (an `nn.Module` holding a
      submodule called `module`).

    ## The error torch raises
    On the path where the model was not wrapped:

    ```
    AttributeError: 'Linear' object has no attribute 'module'
    ```
    """

    CODE = "TDV303"
    NAME = "wrapper-attribute-on-cpu-path"
    SUMMARY = "`model.module` where `model` is wrapped in `DataParallel` only under a CUDA test"
    MESSAGE = (
        "{key}.module exists only on the wrapper, and {key} is wrapped in {wrapper} only under a "
        "CUDA test: where the test is false (CPU, fewer GPUs) this raises AttributeError; use "
        "getattr({key}, \"module\", {key})"
    )
    NEEDS = [{".module"}, {"DataParallel(", "DistributedDataParallel("}]
    SCOPE = CLASS  # a class wraps ``self.net`` in one method and unwraps it in another
    # The wrap and the unwrap meet in one function, one class, or module-level code.
    TOGETHER = DEFINITION

    def __init__(self, context) -> None:
        super().__init__(context)
        self._scopes: list[dict] = [self._new_scope()]  # module, then each class / function
        self._asking = 0  # open regions that ask whether a value is wrapped
        self._asks: list[bool] = []  # per open if / conditional expression: does its test ask?

    @staticmethod
    def _new_scope() -> dict:
        return {"wraps": {}, "uses": []}

    # -- scopes: names per function, ``self.x`` per class ---------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        super().visit_ClassDef(node)
        self._scopes.append(self._new_scope())

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._close(self._scopes.pop())
        super().leave_ClassDef(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        self._scopes.append(self._new_scope())

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        scope = self._scopes.pop()
        owner = self._scopes[-1]
        for key in [k for k in scope["wraps"] if k.startswith("self.")]:  # ``self.x`` belongs to the class
            owner["wraps"].setdefault(key, []).extend(scope["wraps"].pop(key))
        owner["uses"].extend(use for use in scope["uses"] if use[0].startswith("self."))
        scope["uses"] = [use for use in scope["uses"] if not use[0].startswith("self.")]
        self._close(scope)
        super().leave_FunctionDef(node)

    def leave_Module(self, node: cst.Module) -> None:
        self._close(self._scopes.pop())
        super().leave_Module(node)

    # -- regions that ask about the wrapper -----------------------------------
    def _enter_test(self, test: cst.BaseExpression) -> None:
        self._asks.append(_asks_about_wrapper(test))
        self._asking += self._asks[-1]

    def _leave_test(self) -> None:
        self._asking -= self._asks.pop()

    def visit_If(self, node: cst.If) -> None:
        super().visit_If(node)
        self._enter_test(node.test)

    def leave_If(self, node: cst.If) -> None:
        self._leave_test()
        super().leave_If(node)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        super().visit_IfExp(node)
        self._enter_test(node.test)

    def leave_IfExp(self, node: cst.IfExp) -> None:
        self._leave_test()
        super().leave_IfExp(node)

    def visit_Try(self, node: cst.Try) -> None:
        self._asking += 1  # ``try: m.module ... except AttributeError``: the code expects either

    def leave_Try(self, node: cst.Try) -> None:
        self._asking -= 1

    # -- wraps and unwraps -----------------------------------------------------
    def _wrapper(self, value: cst.BaseExpression) -> Optional[str]:
        """The wrapper a value is, through chained calls (``nn.DataParallel(m).cuda()``)."""
        while isinstance(value, cst.Call):
            wrapper = WRAPPERS.get(self.names.qualify(value.func) or "")
            if wrapper is not None or not isinstance(value.func, cst.Attribute):
                return wrapper
            value = value.func.value
        return None

    def visit_Assign(self, node: cst.Assign) -> None:
        wrapper = self._wrapper(node.value)
        if wrapper is None:
            return
        for target in node.targets:
            key = _key(target.target)
            if key is not None:
                self._scopes[-1]["wraps"].setdefault(key, []).append((wrapper, self.cuda_guarded()))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value != "module":
            return
        key = _key(node.value)
        if key is not None and not self.cuda_guarded() and not self._asking:
            self._scopes[-1]["uses"].append((key, node, self.context.statement))

    def _close(self, scope: dict) -> None:
        for key, node, statement in scope["uses"]:
            wraps = scope["wraps"].get(key)
            if wraps and all(guarded for _, guarded in wraps):
                message = self.MESSAGE.format(key=key, wrapper=wraps[0][0])
                self.report(node, message, statement=statement)
