"""TDV201: ``torch.load`` without ``map_location``."""

from __future__ import annotations

from typing import Optional

from .._lazy import cst
from ..analysis.checkpoints import RoundTrips, cpu_map_location, has_map_location
from ..analysis.code import last_name
from ..analysis.function_inputs import is_data_class_name
from ..analysis.guards import is_test_code
from ..rule import CLASS, Rule

TORCH_LOADS = frozenset({"torch.load", "torch.serialization.load"})
TORCH_SAVES = frozenset({"torch.save", "torch.serialization.save"})


class TorchLoadWithoutMapLocation(RoundTrips, Rule):
    r"""**Off by default (opt-in: `extend-select = TDV201`).** Precision on real code: 46%
    on the held-out projects (17 of 37 findings true or latent; 35% strict), 35% on the
    tune split (48), below the 90% bar: whether a load can meet a GPU-saved file depends
    on what wrote the file, which is mostly out of sight. See docs/precision.md.

    ## What it does
    Flags a call to `torch.load` (under any alias: `th.load`, `from torch import load as
    tl`, `f = torch.load`, `torch.serialization.load`) that passes no `map_location`,
    neither as a keyword nor as the second positional argument. `map_location=None` counts
    as missing. A call that forwards `*args` or `**kwargs` is not flagged: they may carry it.

    Its false findings on real code are mostly loads of files that hold no tensors (a
    class whose own `save()` writes only Python numbers), files saved on the CPU (published
    weights, a project that moves everything to the CPU before saving), and code that only
    runs with a GPU anyway; none of these can be told from the source alone.

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
    Safe. The fix (`torchdevice --fix --extend-select TDV201`) adds `map_location="cpu"`, or
    replaces an explicit `map_location=None`; it changes nothing else on the line. Loading
    to the CPU works on every machine; `load_state_dict` then copies the values into the module's parameters wherever
    they live. Code that relied on the loaded tensors landing on the GPU must move them itself.

    ## When it does not report
    - a call that passes `map_location` (keyword or second positional, not `None`) or forwards `*args` / `**kwargs`;
    - a file read back in the same scope after `torch.save` wrote it there, named by the same expression (`path`,
      `os.path.join(tmp, "x")`, `cache.as_posix()`): a round trip cannot meet a missing device;
    - test code: `test*` functions and private `_helpers` of a test module (named `test_*.py`, `*_test.py`,
      `conftest.py`, under `tests/`, or importing pytest/unittest), which read back what the test wrote and run where
      the suite's gates put them;
    - a data-loading class (`*Dataset`, `*DataSet`, `*DataModule`, `*Sampler`, ... by name or base) that also writes
      files itself (`torch.save`, a `*save` helper): it reads back the CPU data it prepared. A data class reading files
      something else wrote (activations saved from the model's device) is still reported;
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
    """  # noqa: E501 -- quotes torch's error messages verbatim

    CODE = "TDV201"
    NAME = "torch-load-without-map-location"
    SUMMARY = "`torch.load` without `map_location`"
    MESSAGE = (
        "torch.load() without map_location fails on a machine without the GPU the "
        'checkpoint was saved on; pass map_location="cpu" or map_location=device'
    )
    FIX = "safe"
    DEFAULT_ENABLED = False  # 46% held-out precision, 35% strict (docs/precision.md)
    NEEDS = {"load"}
    SCOPE = CLASS  # a data class's own writer may be another method

    def __init__(self, context) -> None:
        super().__init__(context)
        self._functions: list[str] = []
        # Per class being walked: is it a data class, does it write files
        # itself, and the loads waiting for its end.
        self._classes: list[_ClassFrame] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        bases = [last_name(arg.value) for arg in node.bases]
        self._classes.append(_ClassFrame(is_data_class_name([node.name.value, *bases])))

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        frame = self._classes.pop()
        if frame.data and frame.writes:
            return  # a data class reading back what it wrote itself (CPU data code)
        for call, statement in frame.loads:
            self.report(call, fix=cpu_map_location(call), statement=statement)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        self._functions.append(node.name.value)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().leave_FunctionDef(node)
        self._functions.pop()

    def visit_Call(self, node: cst.Call) -> None:
        name = self.names.qualify(node.func)
        if name in TORCH_SAVES:
            self.note_save(node, position=1)
        if self._classes and _writes_file(name, node):
            self._classes[-1].writes = True
        if name not in TORCH_LOADS or has_map_location(node) or self.saved_here(node):
            return
        # Tests read what they wrote (tmp dirs, handlers run a few lines
        # above) and run where the suite's gates put them.
        if any(is_test_code(function, self.context.is_test) for function in self._functions):
            return
        if self._classes and self._classes[-1].data:
            self._classes[-1].loads.append((node, self.context.statement))
            return
        self.report(node, fix=cpu_map_location(node))


class _ClassFrame:
    def __init__(self, data: bool) -> None:
        self.data = data  # a Dataset / DataModule / Sampler... class
        self.writes = False  # it calls torch.save (or a *save helper) itself
        self.loads: list = []  # (call, statement) waiting for the class's end


def _writes_file(name: Optional[str], call: cst.Call) -> bool:
    """``torch.save(...)`` or a save helper (``fs.torch_save``, ``self.save``)."""
    if name in TORCH_SAVES:
        return True
    last = last_name(call.func) or ""
    return last == "save" or last.endswith("_save")
