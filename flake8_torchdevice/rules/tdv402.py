"""TDV402 (opt-in): a literal CUDA ordinal 0; the visitor is TDV401's."""

from __future__ import annotations

from .tdv401 import HardCodedOrdinal


class HardCodedCudaZero(HardCodedOrdinal):
    r"""## What it does
    The checks of [TDV401](TDV401.md) for ordinal 0, where it selects a device:
    `.to("cuda:0")`, `.cuda(0)`, `.to(0)`, `device=torch.device("cuda", 0)`,
    `map_location="cuda:0"`, `torch.cuda.set_device(0)`, `device=0` in a torch call, an
    f-string ending in `:0` (`f"{kind}:0"`) -- directly, or through a name bound once in
    the same function or module code (`device = 0` ... `model.cuda(device)`). The same
    places are exempt (a device that only travels as data, comparisons, dict keys, run-time
    ordinals, multi-GPU guards, test code).

    **Off by default.** It is an opinion, for teams that want no fixed device in their
    code at all. Turn it on with `extend-select = TDV402` in your flake8 configuration or
    `flake8 --extend-select=TDV402`. Selecting only the plugin's prefix (`select = TDV`,
    `extend-select = TDV`) keeps it off: name the code (or `TDV40`). With the standalone
    CLI: `torchdevice --select TDV402` or `select = ["TDV402"]` under `[tool.torchdevice]`.

    ## Why is this bad?
    `"cuda:0"` works on any machine with a GPU, which is why it spreads. It pins the code
    to the first GPU: under `torchrun` or any multi-process launcher every rank that runs
    this line uses GPU 0 (out of memory on GPU 0, the other GPUs idle; NCCL refuses two
    ranks on one GPU), and it overrides `torch.cuda.set_device`, which `"cuda"` follows.

    ## Example
    ```python
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    model = model.to(device)
    ```

    ## Use instead
    ```python
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")
    model = model.to(device)
    ```

    ## Fix safety
    No fix is offered: replacing `"cuda:0"` with `"cuda"` changes the meaning wherever
    the current device was set to another GPU.

    ## When it does not report
    The exemptions of [TDV401](TDV401.md): a device or string that selects nothing (a
    pytest id, a dict value, a mock's or any other function's argument, a value only
    compared or returned), names bound more than once or not by a plain assignment,
    run-time ordinals, docstrings and bare strings, comparisons and assertions,
    `map_location` dict keys, multi-GPU guards, and test code.

    ## The error torch raises
    On one GPU nothing fails: the cost is silent (every process on GPU 0). On a CPU-only
    machine (CPU build of torch 2.13), like any CUDA device:

    ```
    AssertionError: Torch not compiled with CUDA enabled
    ```
    """

    CODE = "TDV402"
    NAME = "hard-coded-cuda-zero"
    SUMMARY = 'a literal CUDA ordinal 0 where it selects a device (`.to("cuda:0")`, `.cuda(0)`, `device=0`)'
    MESSAGE = (
        'hard-coded CUDA device 0 puts every process on the first GPU; use "cuda" (the '
        "current device) or a device taken from configuration or LOCAL_RANK"
    )
    DEFAULT_ENABLED = False

    @staticmethod
    def wants(ordinal: int) -> bool:
        return ordinal == 0
