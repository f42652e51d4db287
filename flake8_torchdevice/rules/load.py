"""TDV201: ``torch.load`` without ``map_location``."""

from __future__ import annotations

from typing import Iterable

import libcst as cst

from .base import Rule
from .triggers import call_offsets

TORCH_LOADS = frozenset({"torch.load", "torch.serialization.load"})


class TorchLoadWithoutMapLocation(Rule):
    CODE = "TDV201"
    NAME = "torch-load-without-map-location"
    SUMMARY = "`torch.load` without `map_location`"
    MESSAGE = (
        "torch.load() without map_location fails on a machine without the GPU the "
        'checkpoint was saved on; pass map_location="cpu" or map_location=device'
    )
    FIX = "safe"

    @classmethod
    def trigger_offsets(cls, source: str) -> Iterable[int]:
        if "torch" not in source:
            return ()
        return call_offsets(source, ("load",))

    def visit_Call(self, node: cst.Call) -> None:
        if self.names.qualify(node.func) in TORCH_LOADS and not has_map_location(node):
            self.report(node)


def has_map_location(call: cst.Call) -> bool:
    """True if ``call`` passes a non-None map_location, or may (``*a``/``**kw``)."""
    positional = 0
    for arg in call.args:
        if arg.star:  # *args or **kwargs may carry it: give the benefit of the doubt
            return True
        if arg.keyword is None:
            positional += 1
            if positional == 2:
                return not _is_none(arg.value)
        elif arg.keyword.value == "map_location":
            return not _is_none(arg.value)
    return False


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"
