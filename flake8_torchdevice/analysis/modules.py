"""Is a class an ``nn.Module`` (or a torchmetrics ``Metric``)? From its bases,
under any alias, following classes of the same file to their bases. Is one of its
attributes a layer (``is_layer_attribute``)? And which method of which class a walk is in
(``MethodFrames``), for rules that read a class through its methods' ``self.<attr>``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from .._lazy import cst
from .layers import layer_state

MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
METRIC_BASES = frozenset({"torchmetrics.Metric", "torchmetrics.metric.Metric"})
LIGHTNING_ROOTS = frozenset({"lightning", "pytorch_lightning"})
# torch.nn names that are classes but not Modules.
NOT_MODULES = frozenset({"Parameter", "UninitializedParameter", "UninitializedBuffer", "Buffer"})
# Methods whose override means the class moves its own state (``.to()`` and
# ``.cuda()`` end in ``_apply``).
MOVING_OVERRIDES = frozenset({"_apply", "to", "cuda", "_to"})


def class_kind(names, node: "cst.ClassDef") -> Optional[str]:
    """"module", "metric" or None, from the bases of ``node``."""
    for base in node.bases:
        if base.keyword is not None:
            continue
        kind = _base_kind(names, base.value, set())
        if kind:
            return kind
    return None


def _base_kind(names, expr: "cst.BaseExpression", seen: set) -> Optional[str]:
    if isinstance(expr, cst.Subscript):  # Generic[...]-style bases
        expr = expr.value
    qualified = names.qualify(expr)
    if qualified:
        return kind_of_qualified(qualified)
    if isinstance(expr, cst.Name):
        return _local_kind(names, expr.value, seen)
    return None


def local_kind(names, name: str) -> Optional[str]:
    """"module", "metric" or None for the module-level class ``name`` of this file."""
    return _local_kind(names, name, set())


def _local_kind(names, name: str, seen: set) -> Optional[str]:
    """Kind of a class defined in this file, from its bases."""
    if name in seen:
        return None
    seen.add(name)
    for base in names.local_bases(name):
        qualified = names.resolve_dotted(base)
        kind = kind_of_qualified(qualified) if qualified else _local_kind(names, base, seen)
        if kind:
            return kind
    return None


def is_layer_attribute(names, class_name: Optional[str], attr: str) -> bool:
    """Is ``self.<attr>`` of the module-level class ``class_name`` a layer with state?
    Its ``__init__`` (or a base's of this file) binds it to a torch.nn layer that holds
    some (``layers.py``: ``nn.Embedding(...)``, ``nn.Embedding.from_pretrained(...)``, a
    container) or to a module class of this file."""
    callees = _init_callees(names, class_name, attr, set()) if class_name else None
    return bool(callees) and all(_is_stateful(names, callee) for callee in callees)


def _is_stateful(names, callee: str) -> bool:
    qualified = names.resolve_dotted(callee)
    if qualified is None:
        return _local_kind(names, callee, set()) == "module"
    head, _, last = qualified.rpartition(".")
    if last[:1].islower():  # a class's own constructor: nn.Embedding.from_pretrained(...)
        qualified = head
    return layer_state(qualified) == "module"


def _init_callees(names, class_name: str, attr: str, seen: set) -> Optional[tuple]:
    if class_name in seen:
        return None
    seen.add(class_name)
    callees = names.init_callees(class_name, attr)
    if callees is not None:
        return callees
    for base in names.local_bases(class_name):
        callees = _init_callees(names, base, attr, seen)
        if callees is not None:
            return callees
    return None


def kind_of_qualified(qualified: str) -> Optional[str]:
    if qualified in MODULE_BASES:
        return "module"
    if qualified.split(".", 1)[0] in LIGHTNING_ROOTS and qualified.endswith(".LightningModule"):
        return "module"  # an nn.Module whose forward gets inputs on its device too
    if qualified in METRIC_BASES:
        return "metric"
    head, _, last = qualified.rpartition(".")
    if not last[:1].isupper():
        return None
    if head.startswith("torch.nn") and last not in NOT_MODULES and "functional" not in head:
        return "module"
    if head.startswith("torchmetrics") and "utilities" not in head:
        return "metric"
    return None


@dataclass
class Method:
    """The function a walk is in: its name, the name its first parameter gives the
    instance, and the rule's own record of the class it belongs to (both ``None``
    outside any class)."""

    name: str
    self_name: Optional[str]
    owner: Any


class MethodFrames:
    """Which method of which class a LibCST walk is in.

    A rule calls ``enter_class(record)`` / ``leave_class()`` from its ``ClassDef``
    visitors and ``enter_function(node)`` / ``leave_function()`` from its
    ``FunctionDef`` visitors; ``record`` is the rule's record of the class, given
    back as ``Method.owner``. A function nested in a method keeps that method's
    ``self`` and class; with ``nested_is_method`` it also counts as the method itself
    (a closure defined in ``__init__`` is ``__init__``), otherwise it is named
    ``"<nested>"``. A function outside any class is ``"<function>"``, without ``self``.
    """

    def __init__(self, nested_is_method: bool) -> None:
        self._nested_is_method = nested_is_method
        self._classes: list = []
        self._frames: list[Optional[Method]] = []  # None marks a class body

    def enter_class(self, record: Any) -> None:
        self._classes.append(record)
        self._frames.append(None)

    def leave_class(self) -> Any:
        """The record given to the matching ``enter_class``."""
        self._frames.pop()
        return self._classes.pop()

    def enter_function(self, node: "cst.FunctionDef") -> Optional[Method]:
        """Enter ``node``; its frame if it is a method (defined in a class body)."""
        parent = self.current
        if self._frames and parent is None and self._classes:  # a method
            params = node.params.params or node.params.posonly_params
            self_name = params[0].name.value if params else None
            method = Method(node.name.value, self_name, self._classes[-1])
            self._frames.append(method)
            return method
        if parent is not None:  # nested function: same self, same class
            nested = parent if self._nested_is_method else Method("<nested>", parent.self_name, parent.owner)
            self._frames.append(nested)
        else:
            self._frames.append(Method("<function>", None, None))
        return None

    def leave_function(self) -> None:
        self._frames.pop()

    @property
    def current(self) -> Optional[Method]:
        """The innermost function's frame; ``None`` in a class body or at module level."""
        return self._frames[-1] if self._frames else None

    def self_attr(self, expr: "cst.BaseExpression") -> Optional[str]:
        """``attr`` if ``expr`` is ``<self>.attr`` in a method (or a function nested
        in one), ``<self>`` being the method's first parameter."""
        method = self.current
        if method is None or method.self_name is None or method.owner is None:
            return None
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
            if expr.value.value == method.self_name:
                return expr.attr.value
        return None
