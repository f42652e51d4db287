"""One batched walk over a LibCST tree for every active rule.

LibCST's own ``visit`` rebuilds each node while walking and visits every
whitespace and comment node; rules never look at those. This walker reads
the dataclass fields directly, skips pure-syntax fields, and is iterative so
that deeply nested code cannot overflow the interpreter stack.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Iterable, Sequence

import libcst as cst

# Fields that only hold whitespace, comments, brackets or punctuation.
_SKIP = frozenset(
    """asynchronous colon comma comment default_indent default_newline dot
    empty_lines encoding equal first_colon footer has_trailing_newline header
    indent lbrace lbracket leading_lines leading_whitespace lines_after_decorators
    lpar newline operator posonly_ind rbrace rbracket relative rpar second_colon
    semicolon separator star trailing_comma trailing_whitespace""".split()
)
# Source order differs from dataclass order here: decorators come first.
_FIRST = ("decorators",)

Hook = Callable[[cst.CSTNode], object]


def _child_fields(node_type: type) -> tuple[str, ...]:
    names = [
        f.name
        for f in dataclasses.fields(node_type)
        if f.name not in _SKIP and not f.name.startswith("whitespace")
    ]
    first = [n for n in _FIRST if n in names]
    return tuple(first + [n for n in names if n not in first])


class BatchedWalker:
    """Dispatches ``visit_<Type>``/``leave_<Type>`` of many visitors in one walk."""

    def __init__(self, visitors: Sequence[object], pre_visit: Hook | None = None) -> None:
        self._visitors = visitors
        self._pre_visit = pre_visit
        self._plan: dict[type, tuple[tuple[str, ...], list, list]] = {}

    def _plan_for(self, node_type: type):
        plan = self._plan.get(node_type)
        if plan is None:
            name = node_type.__name__
            visits = [getattr(v, "visit_" + name) for v in self._visitors if hasattr(v, "visit_" + name)]
            leaves = [getattr(v, "leave_" + name) for v in self._visitors if hasattr(v, "leave_" + name)]
            plan = (_child_fields(node_type), visits, leaves)
            self._plan[node_type] = plan
        return plan

    def walk(self, root: cst.CSTNode) -> None:
        pre_visit = self._pre_visit
        # Stack items: (node, entered). A node is visited when first popped,
        # re-pushed as entered, and left after all its children.
        stack: list = [(root, False)]
        pop, push = stack.pop, stack.append
        while stack:
            node, entered = pop()
            fields, visits, leaves = self._plan_for(type(node))
            if entered:
                for leave in leaves:
                    leave(node)
                continue
            if pre_visit is not None:
                pre_visit(node)
            for visit in visits:
                visit(node)
            push((node, True))
            for child in reversed(list(_children(node, fields))):
                push((child, False))


def _children(node: cst.CSTNode, fields: Iterable[str]):
    for name in fields:
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            yield value
        elif isinstance(value, (tuple, list)):
            for item in value:
                if isinstance(item, cst.CSTNode):
                    yield item
