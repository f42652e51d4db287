"""Readers of ``ast`` nodes that need nothing but the standard library: the word pre-selection
(``words.py``) uses them before anything imports LibCST, and ``names.py`` re-exports them."""

from __future__ import annotations

import ast
from typing import Iterable, Iterator, Optional


def ast_dotted_name(expr: ast.expr) -> Optional[str]:
    """``a.b.c`` of an ``ast`` chain of plain names, else None."""
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    parts.append(expr.id)
    return ".".join(reversed(parts))


def ast_self_attribute(node: ast.AST) -> bool:
    """``self.<attr>`` in an ``ast`` tree (a method's first parameter spelled ``self``)."""
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def ast_parameters(function: ast.AST, *, skip_self: bool = False, starred: bool = False) -> set:
    """The names of a ``def``'s parameters: positional and keyword-only, the first positional left out for a method's
    ``self`` (``skip_self``), ``*args`` and ``**kwargs`` added where ``starred``."""
    arguments = function.args
    positional = arguments.posonlyargs + arguments.args
    found = {arg.arg for arg in positional[1 if skip_self else 0:] + arguments.kwonlyargs}
    if starred:
        found |= {arg.arg for arg in (arguments.vararg, arguments.kwarg) if arg is not None}
    return found


AST_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def ast_nodes_outside_definitions(nodes: Iterable[ast.AST]) -> Iterator[ast.AST]:
    """``nodes`` and everything under them, except what a function, class or lambda defined there holds (the
    definition node itself is yielded): the code that runs where ``nodes`` run. A stack, not recursion."""
    stack = list(nodes)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, AST_DEFINITIONS):
            stack.extend(ast.iter_child_nodes(node))


def ast_own_nodes(stmt: ast.stmt) -> Iterator[ast.AST]:
    """The nodes of this statement, not of the statements it holds (a compound statement's header: an ``if``'s
    test, a loop's target and iterable, a ``with``'s items): walkers that visit nested statements on their own
    read each node once."""
    pending = [stmt]
    while pending:
        node = pending.pop()
        yield node
        pending.extend(child for child in ast.iter_child_nodes(node) if not isinstance(child, ast.stmt))


# The methods whose ``self.x = ...`` bindings a class's other methods see: ``__init__``, then a setup or build step
# the class runs before use (issue 22: "in ``__init__`` (or a ``setup``/``build`` method)"). The flow reads their
# bindings (``analysis/flow/facts.py``); the selection keeps the methods that read them (``selection.init_readers``).
SETUP_METHODS = ("__init__", "setup", "_setup", "build", "_build")
