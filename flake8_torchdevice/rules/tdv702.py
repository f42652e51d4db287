"""TDV702: a renamed CUDA memory query (``torch.cuda.memory_cached()`` is ``memory_reserved()``)."""

from __future__ import annotations

from .._lazy import cst
from ..names import dotted_name
from ..rule import Fix, Rule

# The caching allocator's old names and the names torch gives them now (each old one warns).
RENAMED = {
    "torch.cuda.memory_cached": "memory_reserved",
    "torch.cuda.max_memory_cached": "max_memory_reserved",
    "torch.cuda.memory.memory_cached": "memory_reserved",
    "torch.cuda.memory.max_memory_cached": "max_memory_reserved",
}
_OLD = frozenset(name.rpartition(".")[2] for name in RENAMED)  # the last parts, to ask the resolver only about them


class RenamedCudaMemoryQuery(Rule):
    r"""## What it does
    Flags the caching allocator's old names, `torch.cuda.memory_cached` and
    `torch.cuda.max_memory_cached` (also through `from torch.cuda import memory_cached` or an alias of
    `torch`), called or named. Post-hoc, from recall batch 111's StackGAN trainer, whose fix renamed the
    call.

    ## Why is this bad?
    torch renamed them to `memory_reserved` and `max_memory_reserved` (the memory the allocator holds,
    not a cache of freed blocks), and every call of an old name emits a `FutureWarning`: a test suite or
    a training job run with `-W error` (or `filterwarnings = error`) stops there, and a log that reads
    the number every step fills with the warning.

    ## Example
    ```python
    print("reserved (GB):", torch.cuda.memory_cached() / 1e9)
    ```

    ## Use instead
    ```python
    print("reserved (GB):", torch.cuda.memory_reserved() / 1e9)
    ```

    ## Fix safety
    Safe: the fix writes the new name in the same spelling (`torch.cuda.memory_reserved`,
    `cuda.max_memory_reserved`); the old names only warn and call the new ones.

    ## When it does not report
    - the new names, and other objects' `memory_cached` (`stats.memory_cached`, a project's helper);
    - an assignment to an old name (`torch.cuda.memory_cached = torch.xpu.memory_reserved`, an IPEX
      compatibility patch): it calls nothing;
    - an imported name (`from torch.cuda import memory_cached`) at the import: its calls are reported,
      without a fix (renaming a call alone would break the import).

    ## The error torch raises
    Under `warnings.simplefilter("error")` (or `python -W error`), on every machine:

    ```
    FutureWarning: `torch.cuda.memory_cached` has been renamed to `torch.cuda.memory_reserved`
    ```
    """

    CODE = "TDV702"
    NAME = "renamed-cuda-memory-query"
    SUMMARY = "renamed CUDA memory query (`torch.cuda.memory_cached()` is `memory_reserved()`)"
    MESSAGE = "{name} was renamed: it warns on every call; use {new}"
    FIX = "safe"
    NEEDS = {"memory_cached"}

    def __init__(self, context) -> None:
        super().__init__(context)
        self._targets: set[int] = set()  # ids of assignment targets: ``torch.cuda.memory_cached = ...`` patches

    def visit_Assign(self, node: cst.Assign) -> None:
        self._targets.update(id(target.target) for target in node.targets)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._targets.add(id(node.target))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if id(node) in self._targets:
            return  # an IPEX-style patch binds the old name to another device's function: no call of it
        new = self._new_name(node) if node.attr.value in _OLD else None
        if new is not None:
            name = dotted_name(node) or node.attr.value
            spelled = f"{name.rpartition('.')[0]}.{new}"
            self.report(node, self.MESSAGE.format(name=name, new=spelled),
                        fix=Fix(lambda target: target.with_changes(attr=cst.Name(new))))

    def visit_Call(self, node: cst.Call) -> None:
        # ``memory_cached()`` imported from ``torch.cuda``: renaming the call alone would break the import.
        if isinstance(node.func, cst.Name) and node.func.value in _OLD:
            new = self._new_name(node.func)
            if new is not None:
                self.report(node.func, self.MESSAGE.format(name=node.func.value, new=f"torch.cuda.{new}"))

    def _new_name(self, node) -> "str | None":
        return RENAMED.get(self.names.qualify(node) or "")
