"""Small readers of LibCST nodes that every rule uses: one home each."""

from __future__ import annotations

from functools import lru_cache
from typing import Optional

from .._lazy import cst


def code_of(node: "cst.CSTNode") -> str:
    """The source code of ``node`` alone."""
    return _empty_module().code_for_node(node)


@lru_cache(maxsize=1)
def _empty_module() -> "cst.Module":
    return cst.Module(body=[])  # built on first use: importing must not load LibCST


def argument(call: "cst.Call", position: Optional[int], keyword: str) -> Optional["cst.Arg"]:
    """The argument bound to a parameter that may be passed by ``position``
    (0-based; None: keyword-only) or by ``keyword``; None if absent. Starred
    arguments are not bound (see ``has_star``)."""
    index = 0
    for arg in call.args:
        if arg.star:
            continue
        if arg.keyword is None:
            if index == position:
                return arg
            index += 1
        elif arg.keyword.value == keyword:
            return arg
    return None


def has_star(call: "cst.Call") -> bool:
    """``*args`` or ``**kwargs`` among the arguments: they may carry anything."""
    return any(arg.star for arg in call.args)


def positional_count(call: "cst.Call") -> int:
    return sum(1 for arg in call.args if arg.keyword is None and not arg.star)


def string_value(node: "cst.CSTNode") -> Optional[str]:
    """The text of a plain string, of joined literals (``'multi' '_gpu'``),
    or the literal parts of an f-string; None for anything else."""
    if isinstance(node, cst.SimpleString):
        return node.raw_value
    if isinstance(node, cst.ConcatenatedString):
        left, right = string_value(node.left), string_value(node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, cst.FormattedString):
        return "".join(p.value for p in node.parts if isinstance(p, cst.FormattedStringText))
    return None


def last_name(expr: "cst.BaseExpression") -> Optional[str]:
    """``c`` for ``a.b.c`` and for ``c``; None for anything else."""
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    if isinstance(expr, cst.Name):
        return expr.value
    return None


def callee_name(call: "cst.Call") -> Optional[str]:
    """The last name of what ``call`` calls (``f`` in ``a.f(x)``), or None."""
    return last_name(call.func)
