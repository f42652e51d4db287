"""TDV302: ``torch.nn.parallel.data_parallel(...)`` where the module also runs without CUDA."""

from __future__ import annotations

from .._lazy import cst
from ..analysis import machines
from ..analysis.guards import CudaGuards
from ..analysis.machines import MachineEvidence
from ..rule import STATEMENT, Rule

# The functional form and its module path; ``nn.DataParallel`` (the class) runs on the CPU.
DATA_PARALLEL = frozenset({"torch.nn.parallel.data_parallel", "torch.nn.parallel.data_parallel.data_parallel"})


class FunctionalDataParallelOnCpuPath(MachineEvidence, CudaGuards, Rule):
    r"""## What it does
    Flags a call to the functional `torch.nn.parallel.data_parallel(module, inputs, ...)`
    (under any alias: `nn.parallel.data_parallel`, `import torch.nn.parallel as P;
    P.data_parallel`, `from torch.nn.parallel import data_parallel`) outside any CUDA test,
    in a module that also runs without CUDA: one with a CPU path, as TDV201 decides it (a
    device fallback such as `"cuda" if torch.cuda.is_available() else "cpu"`, a `use_cuda` /
    `no_cuda` flag, a `"cpu"` device or option, a branch on a CUDA flag).

    ## Why is this bad?
    Unlike the `nn.DataParallel` class, which calls the module directly when there is no GPU,
    the function asks torch for an accelerator first and raises when there is none. A training
    script whose device falls back to the CPU therefore dies at its first forward pass on a
    laptop or in CI, although everything else in it was written to run there.

    ## Example
    ```python
    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    model = Net().to(device)

    def train_step(x):
        return torch.nn.parallel.data_parallel(model, (x.to(device),))
    ```

    ## Use instead
    ```python
    def train_step(x):
        if use_cuda:
            return torch.nn.parallel.data_parallel(model, (x.to(device),))
        return model(x.to(device))
    ```

    or wrap once with `model = nn.DataParallel(model)`, which runs the module itself where there
    is no GPU.

    ## Fix safety
    None: where the CPU branch goes, and what it calls, is the author's choice.

    ## When it does not report
    - a call under a CUDA test (`if use_cuda:`, `if input.is_cuda and self.ngpu > 1:`,
      `if self.n_GPUs > 1:`, a conditional expression on one), after an early exit without
      CUDA, in a function named for CUDA (`def forward_gpu`), or in test code of a test module;
    - a module with no CPU path (a CUDA-only script), or one that asserts
      `torch.cuda.is_available()`;
    - `nn.DataParallel(model)` and `DistributedDataParallel`: the class runs the module
      directly without GPUs, and DDP's CPU form is TDV301's business.

    ## The error torch raises
    On a machine without CUDA (a CPU-only build of torch, or a CUDA build with no GPU
    visible):

    ```
    RuntimeError: device type could not be determined
    ```
    """

    CODE = "TDV302"
    NAME = "functional-data-parallel-on-cpu-path"
    SUMMARY = "`torch.nn.parallel.data_parallel(...)` outside a CUDA test in code that also runs on the CPU"
    MESSAGE = (
        "torch.nn.parallel.data_parallel() raises without a GPU (device type could not be "
        "determined), and this module also runs on the CPU; call the module directly there "
        "(if use_cuda: ... else: model(x)) or wrap it once in nn.DataParallel"
    )
    NEEDS = {"data_parallel"}
    # The module's CPU path (TDV201's evidence), anywhere in it.
    READS = machines.READS
    READS_SCOPE = STATEMENT

    def __init__(self, context) -> None:
        super().__init__(context)
        self._calls: list[tuple[cst.Call, object]] = []

    def visit_Call(self, node: cst.Call) -> None:
        self.note_machine_call(node)
        if self.names.qualify(node.func) in DATA_PARALLEL and not self.cuda_guarded():
            self._calls.append((node, self.context.statement))

    def leave_Module(self, node: cst.Module) -> None:
        super().leave_Module(node)
        if self.has_cpu_path and not self.requires_cuda:
            for call, statement in self._calls:
                self.report(call, self.MESSAGE, statement=statement)
