"""Is a class an ``nn.Module`` (or a torchmetrics ``Metric``)? From its bases,
under any alias, following classes of the same file to their bases."""

from __future__ import annotations

from typing import Optional

from .._lazy import cst

MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
METRIC_BASES = frozenset({"torchmetrics.Metric", "torchmetrics.metric.Metric"})
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


def kind_of_qualified(qualified: str) -> Optional[str]:
    if qualified in MODULE_BASES:
        return "module"
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
