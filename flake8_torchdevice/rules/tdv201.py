"""TDV201: ``torch.load`` without ``map_location``."""

from __future__ import annotations

from .._lazy import cst
from ..analysis.checkpoints import RoundTrips, cpu_map_location, has_map_location
from ..rule import Rule

TORCH_LOADS = frozenset({"torch.load", "torch.serialization.load"})
TORCH_SAVES = frozenset({"torch.save", "torch.serialization.save"})


class TorchLoadWithoutMapLocation(RoundTrips, Rule):
    r"""## What it does
    Flags a call to `torch.load` (under any alias: `th.load`, `from torch import load as
    tl`, `f = torch.load`, `torch.serialization.load`) that passes no `map_location`,
    neither as a keyword nor as the second positional argument. `map_location=None` counts
    as missing. A call that forwards `*args` or `**kwargs` is not flagged: they may carry it.

    ## Why is this bad?
    `torch.save` records, for every tensor storage, the device it lived on (`cuda:0`,
    `cuda:1`, ...). `torch.load` without `map_location` puts every storage back on that
    device. A checkpoint written on a GPU server therefore fails to load on a laptop, in CI,
    or on a machine with fewer GPUs than the one that saved it. `weights_only=True` does not
    change this: it restricts what may be unpickled, not where it goes.

    ## Example
    ```python
    state = torch.load("checkpoint.pt")
    model.load_state_dict(state)
    ```

    ## Use instead
    ```python
    state = torch.load("checkpoint.pt", map_location="cpu")  # or map_location=device
    model.load_state_dict(state)
    ```

    ## Fix safety
    Safe. The fix (`torchdevice --fix`) adds `map_location="cpu"`, or replaces an explicit
    `map_location=None`; it changes nothing else on the line. Loading to the CPU works on every machine;
    `load_state_dict` then copies the values into the module's parameters wherever they
    live. Code that relied on the loaded tensors landing on the GPU must move them itself.

    ## When it does not report
    - a call that passes `map_location` (keyword or second positional, not `None`) or forwards `*args` / `**kwargs`;
    - a file read back in the same scope after `torch.save` wrote it there (a round trip cannot meet a missing device);
    - calls that are not `torch.load` under any alias (`json.load`, `self.load`, `pickle.load`).

    ## The error torch raises
    On a machine without CUDA, for a checkpoint saved on `cuda:0`:

    ```
    RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If you are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') to map your storages to the CPU.
    ```

    On a one-GPU machine, for a checkpoint saved on `cuda:1`:

    ```
    RuntimeError: Attempting to deserialize object on CUDA device 1 but torch.cuda.device_count() is 1.
    ```
    """

    CODE = "TDV201"
    NAME = "torch-load-without-map-location"
    SUMMARY = "`torch.load` without `map_location`"
    MESSAGE = (
        "torch.load() without map_location fails on a machine without the GPU the "
        'checkpoint was saved on; pass map_location="cpu" or map_location=device'
    )
    FIX = "safe"
    NEEDS = {"load"}

    def visit_Call(self, node: cst.Call) -> None:
        name = self.names.qualify(node.func)
        if name in TORCH_SAVES:
            self.note_save(node, position=1)
        elif name in TORCH_LOADS and not has_map_location(node) and not self.saved_here(node):
            self.report(node, fix=cpu_map_location(node))
