"""Autofixes: one small LibCST codemod per code, located by position.

A fix is found by the violation's span (line/col to end line/col), which is
the same on the full LibCST parse of the file as on the pruned copy the
engine parsed (blanking other lines moves nothing). Each fixer module in this
package defines ``CODE`` and ``fix(node, context, where)``; it is offered
every node whose span (``where``, a LibCST CodeRange) equals the violation's,
innermost first, and returns a replacement node or None (not this node, or
not safe here).

Public API (also used by the fix-safety tests):
    fix_source(source, violations, unsafe=False) -> str
    fix_source_counted(source, violations, unsafe=False) -> (str, applied)
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from dataclasses import dataclass
from types import ModuleType
from typing import Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from ..names import NameResolver, resolver_from_ast
from ..rules import RULES_BY_CODE
from ..rules.base import Violation

__all__ = ["FIXERS", "FixContext", "can_fix", "fix_source", "fix_source_counted"]


def _discover() -> dict[str, ModuleType]:
    found = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if getattr(module, "CODE", None) in RULES_BY_CODE:
            found[module.CODE] = module
    return found


FIXERS = _discover()


def can_fix(code: str, unsafe: bool = False) -> bool:
    """True if ``code`` has a fixer and its rule's FIX level is allowed."""
    rule = RULES_BY_CODE.get(code)
    if rule is None or code not in FIXERS:
        return False
    return rule.FIX == "safe" or (unsafe and rule.FIX == "unsafe")


@dataclass
class FixContext:
    """What a fixer may look at: the whole (unpruned) file."""

    module: cst.Module
    tree: ast.Module
    names: NameResolver
    source: str

    def in_function(self, line: int) -> bool:
        """True if ``line`` is inside a def body (run later, not at import)."""
        return any(
            node.body[0].lineno <= line <= (node.end_lineno or node.lineno)
            for node in ast.walk(self.tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        )


class _Applier(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, targets: dict, context: FixContext) -> None:
        super().__init__()
        self.targets = targets
        self.context = context
        self.applied = 0

    def on_leave(self, original_node, updated_node):
        position = self.get_metadata(PositionProvider, original_node, None)
        if position is None:
            return updated_node
        key = (position.start.line, position.start.column, position.end.line, position.end.column)
        pending = self.targets.get(key)
        while pending:
            for item in pending:
                replacement = FIXERS[item].fix(updated_node, self.context, position)
                if replacement is not None:
                    updated_node = replacement
                    pending.remove(item)
                    self.applied += 1
                    break
            else:
                break
        return updated_node


def fix_source_counted(source: str, violations: Sequence[Violation], unsafe: bool = False) -> tuple[str, int]:
    """Apply the allowed fixes for ``violations``; returns (new source, count).

    Returns the source unchanged (count 0) if nothing applies or if the
    result would not be valid Python.
    """
    targets: dict = {}
    for v in violations:
        if can_fix(v.code, unsafe) and v.end_line:
            targets.setdefault((v.line, v.col, v.end_line, v.end_col), []).append(v.code)
    if not targets:
        return source, 0
    try:
        tree = ast.parse(source)
        module = cst.parse_module(source)
    except (SyntaxError, ValueError, cst.ParserSyntaxError, RecursionError):
        return source, 0
    context = FixContext(module, tree, resolver_from_ast(tree), source)
    applier = _Applier(targets, context)
    fixed = MetadataWrapper(module, unsafe_skip_copy=True).visit(applier).code
    if applier.applied == 0 or fixed == source:
        return source, 0
    try:
        ast.parse(fixed)
    except (SyntaxError, ValueError, RecursionError):
        return source, 0  # a fixer bug must never break the user's file
    return fixed, applier.applied


def fix_source(source: str, violations: Sequence[Violation], unsafe: bool = False) -> str:
    return fix_source_counted(source, violations, unsafe)[0]
