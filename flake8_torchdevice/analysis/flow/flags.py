"""Attributes ``__init__`` places under a flag that the class's methods test again.

``if self.layer_gpu == 3: self.layer3 = conv.to(cuda)`` / ``else: self.layer3 = conv`` in
``__init__``, then ``if self.layer_gpu == 3: ...`` / ``else: out = self.layer3(x)`` in ``forward``:
both tests read the same attributes, which nothing else rebinds, so each branch of the method
runs where the same branch of ``__init__`` ran. The merge after ``__init__``'s ``if`` says
"placed" for both paths; on the method's path where ``__init__`` left the attribute unplaced,
it is not believed placed (it is unknown there: this only ever removes what the flow believes).
"""

from __future__ import annotations

import ast
from functools import lru_cache
from typing import Optional

from ..._lazy import cst
from ...ast_helpers import ast_self_attribute
from ..code import layout_free, subtree
from .facts import SELF
from .values import MOVED, PLACED

_PLACED = (PLACED, MOVED)


def flag_key(test, stable: frozenset) -> Optional[tuple]:
    """``test``'s layout-free form when it reads only literals and ``self.<a>`` for ``a`` in
    ``stable`` (compared, negated, combined), else None."""
    if not stable:
        return None
    nodes = list(subtree(test))
    in_attributes = set()
    for node in nodes:
        if isinstance(node, cst.Attribute):
            if not (isinstance(node.value, cst.Name) and node.value.value == "self" and node.attr.value in stable):
                return None
            in_attributes.update((id(node.value), id(node.attr)))
    for node in nodes:
        if isinstance(node, cst.Name):
            if id(node) not in in_attributes and node.value not in ("True", "False", "None"):
                return None
        elif not isinstance(node, _flag_parts()):
            return None
    return layout_free(test)


@lru_cache(maxsize=1)
def _flag_parts() -> tuple:
    """The node types a flag test may hold besides names (built on first use: LibCST is imported lazily)."""
    return (
        cst.Attribute, cst.Comparison, cst.ComparisonTarget, cst.BooleanOperation, cst.UnaryOperation, cst.Not,
        cst.And, cst.Or, cst.Equal, cst.NotEqual, cst.Is, cst.IsNot, cst.In, cst.NotIn, cst.LessThan,
        cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual, cst.Integer, cst.Float, cst.SimpleString,
        cst.Dot, cst.LeftParen, cst.RightParen,
    )


def stable_attributes(names, cls: "cst.ClassDef") -> frozenset:
    """The attributes of the module-level class ``cls`` that its code binds exactly once, in
    ``__init__`` (read from the class's ``ast``, whatever the selection kept)."""
    tree = names.definition(cls.name.value)
    if not isinstance(tree, ast.ClassDef):
        return frozenset()
    where: dict = {}
    for method in tree.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(method):
            if ast_self_attribute(node) and isinstance(node.ctx, (ast.Store, ast.Del)):
                where.setdefault(node.attr, []).append(method.name)
    return frozenset(attr for attr, methods in where.items() if methods == ["__init__"])


def branch_fact(body: dict, other: dict, merged: dict) -> Optional[tuple]:
    """What one ``if`` of ``__init__`` says of its paths: (attributes placed after it that its
    body left unplaced, those its ``else`` left unplaced, the values placed after it)."""
    placed = {key: value for key, value in merged.items()
              if key.startswith(SELF) and value is not None and getattr(value, "kind", None) in _PLACED}
    off_body = frozenset(key for key in placed if getattr(body.get(key), "kind", None) not in _PLACED)
    off_else = frozenset(key for key in placed if getattr(other.get(key), "kind", None) not in _PLACED)
    if not off_body and not off_else:
        return None
    return off_body, off_else, placed


def lasting(branches: dict, env: dict) -> dict:
    """The branch facts whose placed values are still what ``__init__`` ends with (a later
    binding of the attribute makes its ``if`` say nothing of it)."""
    kept = {}
    for key, (off_body, off_else, placed) in branches.items():
        alive = {name for name, value in placed.items() if env.get(name) is value}
        if alive:
            kept[key] = (off_body & alive, off_else & alive)
    return kept


# -- the walk's side (``statements.Statements.if_``) ------------------------------------------
def note_flag(walk, test, body: dict, other: dict, merged: dict) -> None:
    """In ``__init__``: remember what an ``if`` on a flag left placed on one path only."""
    if walk.scope != "__init__" or walk.cls is None:
        return
    key = flag_key(test, _stable(walk))
    fact = branch_fact(body, other, merged) if key is not None else None
    if fact is not None:
        walk.flow.branches[key] = fact


def flag_paths(walk, test) -> Optional[tuple]:
    """In another method of the class: (attributes ``__init__`` left unplaced where ``test`` is
    true, those it left unplaced where it is false), when ``__init__`` tested the same flag."""
    if walk.cls is None or walk.scope == "__init__":
        return None
    facts = walk.context.__dict__.get("_flow_facts")
    branches = facts.branches_by_class.get(id(walk.cls)) if facts is not None else None
    if not branches:
        return None
    key = flag_key(test, _stable(walk))
    return branches.get(key) if key is not None else None


def unplace(env: dict, keys: frozenset, facts: dict) -> None:
    """Forget each of ``keys`` on this path where it still holds ``__init__``'s fact."""
    for key in keys:
        if key in env and env[key] is facts.get(key):
            del env[key]


def _stable(walk) -> frozenset:
    facts = walk.context._flow_facts
    found = facts.stable_by_class.get(id(walk.cls))
    if found is None:
        found = facts.stable_by_class[id(walk.cls)] = stable_attributes(walk.names, walk.cls)
    return found
