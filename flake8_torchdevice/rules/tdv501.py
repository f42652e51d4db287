"""TDV501: tensor state in a plain attribute of an nn.Module / torchmetrics.Metric.

``module.to(device)`` moves parameters, registered buffers and torchmetrics
states, not plain attributes. The rule needs the whole class: an attribute
that the class only ever uses after moving it (``self.a.to(x.device)``), or
that it rebinds to something else, is fine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .._lazy import cst
from ..analysis.modules import MOVING_OVERRIDES, MethodFrames, class_kind
from ..analysis.vocabulary import FACTORY_NAMES, factory_name, maybe_zero_dim
from ..rule import CLASS, Rule

# A use as the receiver of these is safe: it moves the tensor or never meets a device.
MOVE_METHODS = frozenset({"to", "type_as", "cuda"})
META_USES = frozenset(
    """item tolist numpy size dim numel nelement shape dtype device ndim is_cuda
    cpu clone detach""".split()
)
NOT_INPLACE = frozenset({"requires_grad_", "share_memory_"})
# Methods that keep a fresh factory tensor a plain CPU tensor (dtype/shape changes).
CHAIN_KEEPS = frozenset(
    """float double half bfloat16 long int short bool byte char view reshape unsqueeze
    squeeze expand repeat t transpose permute flatten contiguous clone detach fill_ zero_
    uniform_ normal_ requires_grad_ cumsum flip""".split()
)


@dataclass
class _Candidate:
    node: cst.CSTNode
    zero_dim: bool


@dataclass
class _ClassInfo:
    kind: Optional[str]  # "module", "metric" or None (not interesting)
    candidates: dict = field(default_factory=dict)  # attr -> _Candidate
    uses: dict = field(default_factory=dict)  # attr -> set of use kinds
    rebound: set = field(default_factory=set)
    moves_itself: bool = False


class TensorStateNotRegistered(Rule):
    r"""## What it does
    Flags `self.<attr> = <torch factory>(...)` inside `__init__` of a class that derives,
    under any alias, from `torch.nn.Module` (or any `torch.nn` module class, or a class of the
    same file that does) or from `torchmetrics.Metric`: `torch.zeros`, `ones`, `empty`,
    `full`, `tensor`, `as_tensor`, `arange`, `linspace`, `eye`, `rand*`, `randn*`,
    `from_numpy`, the legacy `torch.FloatTensor(...)` family, spelled `torch.zeros`,
    `th.zeros`, `from torch import zeros`, or followed by dtype/shape methods
    (`torch.zeros(3).long()`).

    Not flagged:
    - `nn.Parameter(...)`, `self.register_buffer(...)`, `self.add_state(...)`;
    - an attribute the class only ever uses after moving it (`self.a.to(x.device)`,
      `self.a.type_as(x)`, `.to(x)`) or only reads metadata of (`.shape`, `.item()`);
    - an attribute the class rebinds elsewhere to something other than a fresh factory
      tensor (`self.a = self.a.to(x)`, `self.a = torch.zeros_like(x)`);
    - a class that overrides `_apply`, `to` or `cuda` (it moves its own state);
    - a 0-dim tensor (`torch.tensor(1e-6)`) that is never updated in place: PyTorch lets a
      0-dim CPU tensor meet CUDA tensors in out-of-place ops;
    - a factory given `device=` (placed on purpose).

    **Off by default.** Precision on real code: 67% on the tune split (judged findings, see
    docs/precision.md; 33% counting `latent` as false); the held-out figure is in
    docs/precision.md. The false findings are classes that move their state themselves
    in ways the rule cannot see (an owner's `_apply` that moves the attribute, a
    `set_default_device` convention). Turn it on with `extend-select = TDV501` (flake8)
    or `torchdevice --select TDV501`.

    ## Why is this bad?
    `module.to(device)` (and `.cuda()`, and Lightning/Accelerate moving your model) moves
    parameters, registered buffers and torchmetrics `add_state` states. A plain attribute
    holding a tensor is not moved: after `metric.to("cuda")` the counts are still on the
    CPU, and the first update with GPU inputs fails. In-place updates into a CPU tensor fail
    even for 0-dim tensors. The state is also missing from `state_dict()`, so it is neither
    saved nor restored, and torchmetrics cannot reset or sync it across processes.

    ## Example
    ```python
    class ConfusionCounts(nn.Module):
        def __init__(self, num_classes):
            super().__init__()
            self.counts = torch.zeros(num_classes, num_classes)

        def update(self, preds, target):
            self.counts += torch.bincount(target * n + preds, minlength=n * n).view(n, n)
    ```

    ## Use instead
    ```python
    class ConfusionCounts(nn.Module):
        def __init__(self, num_classes):
            super().__init__()
            self.register_buffer("counts", torch.zeros(num_classes, num_classes))
    ```

    For a `torchmetrics.Metric`:

    ```python
    self.add_state("counts", default=torch.zeros(n, n), dist_reduce_fx="sum")
    ```

    ## Fix safety
    No fix is offered. `register_buffer` adds the tensor to `state_dict()` (pass
    `persistent=False` to keep old checkpoints loadable), and `add_state` also changes
    `reset()` and distributed syncing: both are decisions for the author.

    ## When it does not report
    - `nn.Parameter(...)`, `self.register_buffer(...)`, `self.add_state(...)`;
    - an attribute the class only uses after moving it (`self.a.to(x.device)`, `.type_as(x)`) or only reads metadata of
      (`.shape`, `.item()`), or rebinds elsewhere;
    - a class that overrides `_apply`, `to` or `cuda`;
    - a 0-dim tensor never updated in place;
    - factories given `device=`; classes that are not modules or metrics.

    ## The error torch raises
    On a GPU machine, the first in-place update after `module.to("cuda")`:

    ```
    RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
    ```

    torchmetrics re-raises it as `RuntimeError: Encountered different devices in metric
    calculation (see stacktrace for details). This could be due to the metric class not
    being on the same device as input.`

    On a CPU machine the fixture moves the module to the meta device and checks that every
    tensor attribute followed; the check fails with
    `AssertionError: tensor attribute counts stayed on cpu after .to('meta')`; with a GPU
    the same program updates the moved metric and torch raises the error above.
    """

    CODE = "TDV501"
    NAME = "tensor-state-not-registered"
    SUMMARY = "tensor created in `__init__` of an nn.Module/Metric kept in a plain attribute"
    MESSAGE = (
        "tensor attribute self.{attr} does not follow module.to(device); "
        'register it: self.register_buffer("{attr}", ...)'
    )
    METRIC_MESSAGE = (
        "tensor attribute self.{attr} does not follow metric.to(device); "
        'register it: self.add_state("{attr}", default=..., dist_reduce_fx=...)'
    )
    DEFAULT_ENABLED = False  # 67% tune precision (docs/precision.md)
    NEEDS = FACTORY_NAMES
    SCOPE = CLASS  # every method's uses of the attribute decide

    def __init__(self, context) -> None:
        super().__init__(context)
        # Owners are _ClassInfo; a closure in __init__ is not __init__ ("<nested>").
        self._frames = MethodFrames(nested_is_method=False)
        self._safe: dict[int, str] = {}  # id(self.attr node) -> use kind

    # -- classes ------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._frames.enter_class(_ClassInfo(class_kind(self.names, node)))

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        info = self._frames.leave_class()
        if info.kind is None or info.moves_itself:
            return
        template = self.METRIC_MESSAGE if info.kind == "metric" else self.MESSAGE
        for attr, candidate in info.candidates.items():
            if self._exempt(info, attr, candidate):
                continue
            self.report(candidate.node, template.format(attr=attr))

    @staticmethod
    def _exempt(info: _ClassInfo, attr: str, candidate: _Candidate) -> bool:
        if attr in info.rebound:
            return True
        uses = info.uses.get(attr, set())
        if uses and uses <= {"moved", "meta"}:
            return True
        # A 0-dim CPU tensor may meet CUDA tensors in out-of-place ops.
        return candidate.zero_dim and "inplace" not in uses

    # -- methods ------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        method = self._frames.enter_function(node)
        if method is not None and method.name in MOVING_OVERRIDES:
            method.owner.moves_itself = True

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._frames.leave_function()

    def _self_attr(self, expr: cst.BaseExpression) -> Optional[str]:
        return self._frames.self_attr(expr)

    # -- assignments --------------------------------------------------
    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind(node.target, node.value)

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        attr = self._self_attr(target)
        if attr is None:
            if isinstance(target, (cst.Tuple, cst.List)):
                for element in target.elements:
                    self._bind(element.value, cst.Name("None"))
            return
        method = self._frames.current
        info = method.owner
        self._safe[id(target)] = "store"
        factory = self._unplaced_factory(value)
        if factory is None:
            info.rebound.add(attr)
        elif method.name == "__init__" and attr not in info.candidates:
            info.candidates[attr] = _Candidate(target, maybe_zero_dim(*factory))

    def _unplaced_factory(self, value: cst.BaseExpression):
        """(qualified, call) if ``value`` is a factory call, possibly followed by
        dtype/shape methods, without device=; else None."""
        while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            if value.func.attr.value not in CHAIN_KEEPS:
                break
            value = value.func.value
        if not isinstance(value, cst.Call):
            return None
        qualified = factory_name(self.names, value)
        if qualified is None or any(a.keyword and a.keyword.value == "device" for a in value.args):
            return None
        return qualified, value

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if self._self_attr(node.target) is not None:
            self._safe[id(node.target)] = "inplace"
        self._mark_item_write(node.target)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._mark_item_write(node.target)

    def _mark_item_write(self, target: cst.BaseExpression) -> None:
        """``self.a[i] = v`` / ``self.a[i] += v`` write into the tensor itself."""
        if isinstance(target, cst.Subscript) and self._self_attr(target.value) is not None:
            self._safe[id(target.value)] = "inplace"

    # -- uses -----------------------------------------------------------
    def visit_Attribute(self, node: cst.Attribute) -> None:
        inner = node.value
        if self._self_attr(inner) is not None:
            name = node.attr.value
            if name in MOVE_METHODS:
                self._safe[id(inner)] = "moved"
            elif name in META_USES:
                self._safe[id(inner)] = "meta"
            elif name.endswith("_") and not name.startswith("_") and name not in NOT_INPLACE:
                self._safe[id(inner)] = "inplace"
        attr = self._self_attr(node)
        if attr is not None:
            kind = self._safe.pop(id(node), "other")
            if kind != "store":
                self._frames.current.owner.uses.setdefault(attr, set()).add(kind)
