"""TDV202: ``torch.jit.load`` / ``load_state_dict_from_url`` without ``map_location``."""

from __future__ import annotations

from .._lazy import cst
from ..analysis.checkpoints import RoundTrips, cpu_map_location, has_map_location
from ..rule import Rule

# Loader -> the 0-based position of its map_location parameter.
LOADERS = {
    "torch.jit.load": 1,
    "torch.hub.load_state_dict_from_url": 2,
    "torch.utils.model_zoo.load_url": 2,
}
SAVES = frozenset({"torch.jit.save"})


class OtherLoaderWithoutMapLocation(RoundTrips, Rule):
    r"""**Off by default (opt-in: `extend-select = TDV202`).** Precision on real code: 0% on
    the held-out projects (0 of 4) and on the tune split (0 of 1): the URL loaders mostly
    fetch published weights saved on the CPU. See docs/precision.md.

    ## What it does
    Flags `torch.jit.load(f)`, `torch.hub.load_state_dict_from_url(url)` and
    `torch.utils.model_zoo.load_url(url)` (under any alias) called without `map_location`,
    neither as a keyword nor in its position (second for `torch.jit.load`, third for the
    two URL loaders). `map_location=None` counts as missing. This is TDV201 for the other
    loaders, with its own code so that each can be chosen on its own.

    ## Why is this bad?
    Like `torch.save`, `torch.jit.save` and the checkpoints behind a URL record the device
    each tensor lived on, and these loaders put every tensor back there without
    `map_location`. A TorchScript model or a published checkpoint saved on a GPU then fails
    to load on a CPU-only machine, or on one with fewer GPUs than the one that saved it.

    ## Example
    ```python
    scripted = torch.jit.load("model_scripted.pt")
    state = torch.hub.load_state_dict_from_url(WEIGHTS_URL)
    ```

    ## Use instead
    ```python
    scripted = torch.jit.load("model_scripted.pt", map_location="cpu")
    state = torch.hub.load_state_dict_from_url(WEIGHTS_URL, map_location="cpu")
    ```

    ## Fix safety
    Safe. The fix adds `map_location="cpu"` (or replaces an explicit `None`) and changes
    nothing else. Loading to the CPU works on every machine; code that relied on the
    loaded tensors landing on the GPU must move them itself (`scripted.to(device)`).

    ## When it does not report
    - a call that passes `map_location` (not `None`) or forwards `*args` / `**kwargs`;
    - `torch.jit.load` of a file that `torch.jit.save` wrote in the same scope (a round trip);
    - `torch.load` (that is TDV201), `torch.hub.load(...)` and other loaders.

    ## The error torch raises
    On a machine without CUDA, `load_state_dict_from_url` of a checkpoint saved on
    `cuda:0`:

    ```
    RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False.
    ```

    `torch.jit.load` of a TorchScript file saved on `cuda:0`, on a CPU-only build of torch:

    ```
    NotImplementedError: Could not run 'aten::empty_strided' with arguments from the 'CUDA' backend.
    ```

    The same file on a CUDA build of torch with no GPU visible:

    ```
    RuntimeError: No CUDA GPUs are available
    ```
    """

    CODE = "TDV202"
    ROUND_TRIP_SAVES = SAVES
    NAME = "loader-without-map-location"
    SUMMARY = "`torch.jit.load` / `load_state_dict_from_url` without `map_location`"
    MESSAGE = (
        "{}() without map_location fails on a machine without the GPU the file was "
        'saved on; pass map_location="cpu" or map_location=device'
    )
    DEFAULT_ENABLED = False
    FIX = "safe"
    NEEDS = {"load", "load_state_dict_from_url", "load_url"}

    def visit_Call(self, node: cst.Call) -> None:
        name = self.names.qualify(node.func)
        if name in SAVES:
            self.note_save(node, position=1)
        elif name in LOADERS and not self.saved_here(node):
            position = LOADERS[name]
            if not has_map_location(node, position):
                self.report(node, self.MESSAGE.format(name), fix=cpu_map_location(node, position))
