"""TDV304: a ``DataParallel`` / ``DistributedDataParallel`` wrapper built and thrown away."""

from __future__ import annotations

from typing import Optional

from .._lazy import cst
from ..analysis.sessions import displayed
from ..names import dotted_name
from ..rule import Rule

WRAPPERS = frozenset({
    "torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel",
    "torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel",
})


_WRAPPER_NAMES = frozenset({"DataParallel", "DistributedDataParallel"})


class DiscardedParallelWrapper(Rule):
    r"""## What it does
    Flags a statement that builds `torch.nn.DataParallel(model)` or
    `torch.nn.parallel.DistributedDataParallel(model)` (under any alias, `DDP(model.cuda(device))`), or a class
    of either name from a library the linter does not follow (Apex's `apex.parallel.DistributedDataParallel`,
    which wraps and returns too), and keeps nothing of it: the wrapper is the statement's whole value. Post-hoc,
    from recall batch 92's miss (a segmentation script's Apex `DistributedDataParallel(model.cuda(device))` on
    its GPU path).

    ## Why is this bad?
    Wrapping does not change the module: the wrapper is a new module around it, and only calls of the wrapper
    scatter the batch over the GPUs (`DataParallel`) or synchronise the gradients of every process
    (`DistributedDataParallel`). Thrown away, the script trains the bare module: each process of a distributed job
    trains its own copy, the replicas drift apart silently, and code that expects the wrapper fails later
    (`model.module.state_dict()` raises `AttributeError`).

    ## Example
    ```python
    model = Net().cuda(local_rank)
    DistributedDataParallel(model, device_ids=[local_rank])
    ```

    ## Use instead
    ```python
    model = Net().cuda(local_rank)
    model = DistributedDataParallel(model, device_ids=[local_rank])
    ```

    ## Fix safety
    No fix: which name should hold the wrapper (the module's own, or a new one beside it) is the author's choice.

    ## When it does not report
    - a wrapper bound to a name, returned, passed on or kept in any expression;
    - test code (a test module by its name, or one that imports pytest or unittest), which builds a wrapper to
      check what its constructor raises or warns (torch's own `distributed_test.py`: four such statements);
    - a notebook cell's last value (`nn.DataParallel(model)` at the end of a `.ipynb` cell or a `# %%` cell):
      Jupyter shows it;
    - wrappers of other names (FairScale's `ShardedDataParallel`, `FullyShardedDataParallel`), which change the
      module in place as they wrap it.

    ## The error torch raises
    Nothing at the wrap; later, where the code expects the wrapper:

    ```
    AttributeError: 'Linear' object has no attribute 'module'
    ```
    """

    CODE = "TDV304"
    NAME = "discarded-parallel-wrapper"
    SUMMARY = "`DataParallel(model)` / `DistributedDataParallel(model)` built and thrown away"
    MESSAGE = (
        "{name}(...) builds a wrapper and this statement throws it away: the bare module trains unwrapped; "
        "bind it, model = {name}(...)"
    )
    NEEDS = {"DataParallel", "DistributedDataParallel"}

    def __init__(self, context) -> None:
        super().__init__(context)
        self._module: Optional[cst.Module] = None

    def visit_Module(self, node: cst.Module) -> None:
        self._module = node

    def visit_Expr(self, node: cst.Expr) -> None:
        call = node.value
        name = self._wrapper(call) if isinstance(call, cst.Call) else None
        if name is None or self.context.is_test:
            return  # a test builds a wrapper to check what its constructor says (torch's own DDP tests)
        if displayed(self.context, self._module, node, self.context.statement):
            return  # a notebook cell's last value: Jupyter shows it
        self.report(call, self.MESSAGE.format(name=name))

    def _wrapper(self, call: cst.Call) -> Optional[str]:
        """torch's wrapper under any alias, or a class of that name from a library the resolver does not track
        (Apex's ``apex.parallel.DistributedDataParallel``, which also wraps and returns)."""
        qualified = self.names.qualify(call.func)
        if qualified is not None:
            return qualified.rpartition(".")[2] if qualified in WRAPPERS else None
        name = dotted_name(call.func)
        last = name.rpartition(".")[2] if name else None
        return last if last in _WRAPPER_NAMES else None
