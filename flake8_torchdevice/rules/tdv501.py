"""TDV501: tensor state in a plain attribute of an nn.Module / torchmetrics.Metric.

``module.to(device)`` moves parameters, registered buffers and torchmetrics
states, not plain attributes. The rule needs the whole class: such an attribute
is reported only where another method makes it meet a tensor that moved
(``analysis/state_meets.py``); one that it rebinds to something else is fine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .._lazy import cst
from ..analysis.bindings import AssignmentBindings
from ..analysis.modules import MOVING_OVERRIDES, MethodFrames, class_kind
from ..analysis.state_meets import Meeting, MeetingLog, Operand, call_meeting, operand
from ..analysis.factory_kinds import VARIABLES
from ..analysis.vocabulary import FACTORY_NAMES, factory_name, maybe_zero_dim
from ..rule import CLASS, Rule

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
    listed: bool = False  # a list of factory tensors (``self.grid = [torch.zeros(1)] * n``)


@dataclass
class _ClassInfo:
    kind: Optional[str]  # "module", "metric" or None (not interesting)
    candidates: dict = field(default_factory=dict)  # attr -> _Candidate
    log: MeetingLog = field(default_factory=MeetingLog)  # where attributes meet tensors
    methods: set = field(default_factory=set)  # names of the class's methods
    rebound: set = field(default_factory=set)
    moves_itself: bool = False


class TensorStateNotRegistered(AssignmentBindings, Rule):
    r"""## What it does
    Flags `self.<attr> = <torch factory>(...)` inside `__init__` of a class that derives,
    under any alias, from `torch.nn.Module` (or any `torch.nn` module class, or a class of the
    same file that does) or from `torchmetrics.Metric` -- `torch.zeros`, `ones`, `empty`,
    `full`, `tensor`, `as_tensor`, `arange`, `linspace`, `eye`, `rand*`, `randn*`,
    `from_numpy`, the legacy `torch.FloatTensor(...)` family, the window functions (`torch.hann_window`, ...),
    spelled `torch.zeros`,
    `th.zeros`, `from torch import zeros`, followed by dtype/shape methods
    (`torch.zeros(3).long()`), or wrapped in `Variable(...)`, which is the tensor itself since torch 0.4
    (`Variable(torch.zeros(1))`; post-hoc, from a held-out fix of recall batch 101, a world model's KL
    accumulator) -- when another method of the class makes that attribute
    **meet a tensor that moves with the module**: an operand of arithmetic or a comparison
    with an input or a submodule's output (`x @ self.w`, `preds == self.edges[:n]`), an
    argument of a torch function next to one (`torch.cat([self.history, x])`,
    `torch.bucketize(x, self.edges)`), an argument of a submodule (`self.linear(self.w)`),
    or the target of an in-place update with one (`self.correct += (p == y).sum()`,
    `self.counts.add_(batch_counts)`). The operand is followed through calls and slices that
    keep its device (`self.w.t()`, `self.w.data`, `self.w[:n]`, `self.w * 2`). A plain list
    of such tensors (`self.anchors = [torch.tensor(a) for a in anchors]`, `[torch.zeros(1)] * n`)
    is state too: its elements (`self.anchors[i]`) meet what moved.

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
    - an attribute that never meets a moved tensor: only moved before use
      (`self.a.to(x.device)`, `.type_as(x)`), read for metadata (`.shape`, `len()`, `.item()`),
      copied into another CPU tensor, met with Python numbers or other plain attributes,
      or never read at all (it is still missing from `state_dict()`, but nothing fails);
    - a 0-dim tensor (or an integer element: `self.edges[1]`, `self.weights[i]` of a loop counter,
      `for i in range(n)` / `for i, x in enumerate(xs)`) met out of place:
      CUDA lets a 0-dim CPU tensor meet anything; an in-place update into it still counts;
    - an attribute rebound elsewhere to something other than a fresh factory tensor, and a list
      attribute whose elements another method rebinds or adds to (`self.grid[i] =
      make_grid(...).to(x.device)`, `self.cache.append(x)`): it is rebuilt where it is used;
    - a class that overrides `_apply`, `to` or `cuda` (it moves its own state);
    - factories given `device=`; classes that are not modules or metrics; uses in `__init__`.

    ## The error torch raises
    On a GPU machine, the first in-place update after `module.to("cuda")`:

    ```
    RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
    ```

    torchmetrics re-raises it as `RuntimeError: Encountered different devices in metric
    calculation (see stacktrace for details). This could be due to the metric class not
    being on the same device as input.`

    On a CPU machine, where a listed tensor meets the moved input out of place (the meta device
    stands in for the GPU):

    ```
    RuntimeError: Tensor on device cpu is not on the expected device meta!
    ```

    For in-place updates the fixture moves the module to the meta device and checks that every
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
    LIST_MESSAGE = (
        "tensors in list attribute self.{attr} do not follow module.to(device); "
        "register each as a buffer or keep them in a tensor buffer"
    )
    METRIC_MESSAGE = (
        "tensor attribute self.{attr} does not follow metric.to(device); "
        'register it: self.add_state("{attr}", default=..., dist_reduce_fx=...)'
    )
    # A finding is a factory call in ``__init__``: both words are in that method.
    NEEDS = [FACTORY_NAMES, {"__init__"}]
    TOGETHER = True
    ASSIGNED = True  # ``self.<attr> = factory(...)``: nn.Parameter(torch.empty(...)) is none
    SCOPE = CLASS  # every method's uses of the attribute decide

    def __init__(self, context) -> None:
        super().__init__(context)
        # Owners are _ClassInfo; a closure in __init__ is not __init__ ("<nested>").
        self._frames = MethodFrames(nested_is_method=False)
        self._aliases: dict = {}  # id(method frame) -> {local name: the attribute it holds}
        self._counters: dict = {}  # id(method frame) -> its loop counters (``for i, x in enumerate(xs)``)

    # -- classes ------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._frames.enter_class(_ClassInfo(class_kind(self.names, node)))

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        info = self._frames.leave_class()
        if info.kind is None or info.moves_itself:
            return
        template = self.METRIC_MESSAGE if info.kind == "metric" else self.MESSAGE
        for attr, candidate in info.candidates.items():
            if attr in info.rebound:
                continue
            if info.log.meets(attr, candidate.zero_dim, info.candidates, info.methods, candidate.listed):
                self.report(candidate.node, (self.LIST_MESSAGE if candidate.listed else template).format(attr=attr))

    # -- methods ------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        method = self._frames.enter_function(node)
        if method is not None:
            method.owner.methods.add(method.name)
            if method.name in MOVING_OVERRIDES:
                method.owner.moves_itself = True

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._aliases.pop(id(self._frames.current), None)
        self._counters.pop(id(self._frames.current), None)
        self._frames.leave_function()

    def _self_attr(self, expr: cst.BaseExpression) -> Optional[str]:
        return self._frames.self_attr(expr)

    def _operand(self, expr) -> Optional[Operand]:
        """``operand`` with this method's local names: ``mask = self.mask_te`` holds it."""
        method = self._frames.current
        held = self._aliases.get(id(method)) if method is not None else None
        counters = self._counters.get(id(method), frozenset())
        return operand(expr, self._self_attr, held, counters)

    # -- assignments (AssignmentBindings calls _bind) --------------------
    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name) and self._frames.current is not None:
            held = self._operand(value)  # ``mask = self.mask_te``: the name holds the attribute
            aliases = self._aliases.setdefault(id(self._frames.current), {})
            if held is not None and (held.attr is not None or held.returned_by is not None):
                aliases[target.value] = held
            else:
                aliases.pop(target.value, None)
        attr = self._self_attr(target)
        if attr is None and isinstance(target, cst.Subscript) and self._frames.current is not None:
            element_of = self._self_attr(target.value)  # ``self.grid[i] = ...``: the list is rebuilt
            if element_of is not None and self._frames.current.name != "__init__":
                self._frames.current.owner.rebound.add(element_of)
        if attr is None:
            if isinstance(target, (cst.Tuple, cst.List)):
                for element in target.elements:
                    self._bind(element.value, cst.Name("None"))
            return
        method = self._frames.current
        info = method.owner
        factory = self._unplaced_factory(value)
        listed = factory is None and (factory := self._listed_factory(value)) is not None
        if factory is None:
            info.rebound.add(attr)
        elif method.name == "__init__" and attr not in info.candidates:
            info.candidates[attr] = _Candidate(target, not listed and maybe_zero_dim(*factory), listed)

    def _listed_factory(self, value: cst.BaseExpression):
        """``[torch.zeros(1)] * n`` / ``[torch.tensor(a) for a in anchors]`` / ``[f(...), f(...)]``
        of unplaced factories: (qualified, call) of the first, else None."""
        if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Multiply):
            value = value.left if isinstance(value.left, (cst.List, cst.Tuple)) else value.right
        if isinstance(value, cst.ListComp):
            return self._unplaced_factory(value.elt)
        if not isinstance(value, (cst.List, cst.Tuple)) or not value.elements:
            return None
        factories = [self._unplaced_factory(element.value) for element in value.elements]
        return factories[0] if all(factories) else None

    def _unplaced_factory(self, value: cst.BaseExpression):
        """(qualified, call) if ``value`` is a factory call, possibly followed by
        dtype/shape methods, without device=, also wrapped in ``Variable(...)`` (``t`` itself since torch 0.4:
        post-hoc, from recall batch 101's ``self.kld = Variable(torch.zeros(1))``); else None."""
        while isinstance(value, cst.Call):
            if isinstance(value.func, cst.Attribute) and value.func.attr.value in CHAIN_KEEPS:
                value = value.func.value
            elif value.args and value.args[0].keyword is None and self.names.qualify(value.func) in VARIABLES:
                value = value.args[0].value
            else:
                break
        if not isinstance(value, cst.Call):
            return None
        qualified = factory_name(self.names, value)
        if qualified is None or any(a.keyword and a.keyword.value == "device" for a in value.args):
            return None
        return qualified, value

    def visit_For(self, node: cst.For) -> None:
        """``for i in range(n)`` / ``for i, x in enumerate(xs)``: ``i`` is an integer."""
        method = self._frames.current
        counter = _loop_counter(node)
        if method is not None and counter is not None:
            self._counters.setdefault(id(method), set()).add(counter)

    # -- meetings -------------------------------------------------------
    def _log(self, meeting: Optional[Meeting]) -> None:
        """Keep a meeting made in a method other than ``__init__`` (where nothing has moved yet)."""
        method = self._frames.current
        if meeting is None or method is None or method.owner is None or method.name == "__init__":
            return
        method.owner.log.meetings.append(meeting)

    def _operands(self, *exprs) -> list:
        return [found for found in map(self._operand, exprs) if found is not None]

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        self._log(Meeting(self._operands(node.left, node.right)))

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self._log(Meeting(self._operands(node.left, *(c.comparator for c in node.comparisons))))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        target = self._operand(node.target)
        into = target.attr if isinstance(target, Operand) else None
        self._log(Meeting(self._operands(node.target, node.value), into))

    def visit_Call(self, node: cst.Call) -> None:
        method = self._frames.current
        if method is not None:
            self._log(call_meeting(node, self.names.qualify(node.func), self._operand))
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in _LIST_GROWERS and method.name != "__init__":
                grown = self._self_attr(func.value)  # ``self.cache.append(x.detach())``: its tensors vary
                if grown is not None and method.owner is not None:
                    method.owner.rebound.add(grown)

    def visit_Return(self, node: cst.Return) -> None:
        """A method returning an attribute (or a name holding one) gives it to its callers."""
        method = self._frames.current
        if node.value is None or method is None or method.owner is None:
            return
        returned = self._operand(node.value)
        if returned is not None and returned.attr is not None:
            method.owner.log.returns.setdefault(method.name, set()).add(returned.attr)


def _loop_counter(node: cst.For) -> Optional[str]:
    """The integer a loop counts with: ``i`` of ``for i in range(n)`` or ``for i, x in enumerate(xs)``."""
    if not (isinstance(node.iter, cst.Call) and isinstance(node.iter.func, cst.Name)):
        return None
    target, func = node.target, node.iter.func.value
    if func == "enumerate" and isinstance(target, cst.Tuple) and target.elements:
        target = target.elements[0].value
    elif func != "range":
        return None
    return target.value if isinstance(target, cst.Name) else None


# List methods that put other values in: the list no longer holds only the CPU tensors ``__init__`` made.
_LIST_GROWERS = frozenset({"append", "extend", "insert"})
