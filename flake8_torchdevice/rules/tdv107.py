"""TDV107: a legacy typed constructor (``torch.LongTensor(...)``) given ``device=``."""

from __future__ import annotations

from .._lazy import cst
from ..analysis.code import argument
from ..analysis.devices import cpu_literal
from ..analysis.vocabulary import LEGACY_KINDS
from ..rule import Rule

# The legacy constructors build CPU tensors only; ``torch.cuda.FloatTensor`` and friends are
# CUDA's own and not here.
LEGACY = frozenset(f"torch.{kind}Tensor" for kind in LEGACY_KINDS)
# Called, and given ``device=`` (``Tensor`` alone is in every annotation of torch's own code).
_CALLS = frozenset(f"{kind}Tensor(" for kind in LEGACY_KINDS)


def _names_the_cpu(value: cst.BaseExpression, names) -> bool:
    """``"cpu"``, ``torch.device("cpu")`` (or ``type="cpu"``), ``None``: where the constructor works."""
    return cpu_literal(value, names) or (isinstance(value, cst.Name) and value.value == "None")


class LegacyConstructorGivenDevice(Rule):
    r"""## What it does
    Flags a legacy typed constructor, `torch.Tensor(...)`, `torch.FloatTensor(...)`,
    `torch.LongTensor(...)` and the other `torch.<Type>Tensor` classes (under any alias),
    called with a `device=` that is not the CPU (`"cpu"`, `torch.device("cpu")` and `None`
    are left alone).

    ## Why is this bad?
    These constructors build CPU tensors only. Given a device they check it and raise unless
    it is the CPU, so code that looks device-aware (`torch.LongTensor(ids, device=self.device)`)
    runs on a laptop, where the device is the CPU, and fails on the first GPU machine.

    ## Example
    ```python
    ids = torch.LongTensor(active, device=self.device)
    ```

    ## Use instead
    ```python
    ids = torch.tensor(active, dtype=torch.long, device=self.device)
    # or, for a size: torch.empty(n, dtype=torch.long, device=self.device)
    ```

    ## Fix safety
    None: `torch.LongTensor(3)` is a size and `torch.LongTensor([3])` is data; the right
    factory (`torch.tensor`, `torch.empty`) depends on which one the argument is.

    ## When it does not report
    - `device="cpu"`, `device=torch.device("cpu")`, `device=None`: the constructor accepts them;
    - the constructors without `device=`, which TDV502 and the flow rules follow as CPU values;
    - `torch.cuda.FloatTensor(...)` and the other CUDA types, and `torch.tensor(...)` /
      `x.new_tensor(...)`, which place where they are told.

    ## The error torch raises
    On a GPU machine:

    ```
    RuntimeError: legacy constructor expects device type: cpu but device type: cuda was passed
    ```

    The same check on a CPU machine, with the meta device standing in for the GPU:

    ```
    RuntimeError: legacy constructor expects device type: cpu but device type: meta was passed
    ```
    """

    CODE = "TDV107"
    NAME = "legacy-constructor-given-device"
    SUMMARY = "legacy typed constructor (`torch.LongTensor(...)`) given a `device=` that is not the CPU"
    MESSAGE = (
        "torch.{name}() makes CPU tensors only and raises when device= is not the CPU (on every GPU "
        "machine); use torch.tensor(data, dtype=..., device=...) or torch.empty(size, ..., device=...)"
    )
    NEEDS = [_CALLS, {"device="}]
    TOGETHER = True

    def visit_Call(self, node: cst.Call) -> None:
        name = self.names.qualify(node.func)
        if name not in LEGACY:
            return
        device = argument(node, None, "device")
        if device is None or _names_the_cpu(device.value, self.names):
            return
        self.report(device.value, self.MESSAGE.format(name=name.rpartition(".")[2]))
