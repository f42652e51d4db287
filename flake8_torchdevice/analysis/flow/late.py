"""Attributes a class binds outside ``__init__`` and its setup methods.

A trainer places its network in ``fit()`` (``self.network = Net().to(self.device)``), a
pix2pix-style model its batch in ``set_input()`` (``self.real_A = data["A"].to(self.device)``).
Where every binding of such an attribute in the class moves a value to a device (or is a
``None`` placeholder), the attribute is placed whenever it exists: the class's other methods
read it so (``flow/analysis.py`` walks each binding method to check that the move is one).
Read from the class's ``ast``, every method, whatever the selection kept.
"""

from __future__ import annotations

import ast

from ...ast_helpers import SETUP_METHODS, ast_self_attribute

_MOVES = frozenset({"to", "cuda"})


def late_candidates(names, cls_name: str) -> dict:
    """{attribute: frozenset of the methods that bind it} for each attribute of the top-level
    class ``cls_name`` bound only outside its setup methods (there at most to ``None``), each
    binding's value calling ``.to(...)`` / ``.cuda(...)``, never moved in place or deleted."""
    tree = names.definition(cls_name)
    if not isinstance(tree, ast.ClassDef):
        return {}
    binders: dict = {}
    refused: set = set()
    for method in tree.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        setup = method.name in SETUP_METHODS
        for node in ast.walk(method):
            for attr, value in _bindings(node):
                if _is_none(value):
                    continue  # a placeholder, anywhere
                if setup or not _moves(value):
                    refused.add(attr)
                else:
                    binders.setdefault(attr, set()).add(method.name)
            refused.update(_touched(node))
    return {attr: frozenset(found) for attr, found in binders.items() if attr not in refused}


def _bindings(node: ast.AST) -> list:
    """(attribute, value) for each ``self.x`` a statement binds; value None where it is no plain value."""
    if isinstance(node, ast.Assign):
        found = []
        for target in node.targets:
            if ast_self_attribute(target):
                found.append((target.attr, node.value))
            elif isinstance(target, (ast.Tuple, ast.List)):
                found += [(part.attr, None) for part in ast.walk(target) if ast_self_attribute(part)]
        return found
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)) and ast_self_attribute(node.target):
        return [(node.target.attr, node.value if isinstance(node, ast.AnnAssign) else None)]
    if isinstance(node, (ast.For, ast.comprehension, ast.withitem)):
        target = node.optional_vars if isinstance(node, ast.withitem) else node.target
        return [(part.attr, None) for part in ast.walk(target) if ast_self_attribute(part)] if target else []
    return []


def _touched(node: ast.AST) -> list:
    """Attributes a statement moves to the CPU in place (``self.model.cpu()``) or deletes."""
    if isinstance(node, ast.Delete):
        return [part.attr for target in node.targets for part in ast.walk(target) if ast_self_attribute(part)]
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        if isinstance(func, ast.Attribute) and ast_self_attribute(func.value) and (
            func.attr == "cpu" or func.attr == "to" and "cpu" in ast.dump(node.value).lower()
        ):
            return [func.value.attr]
    return []


def _is_none(value) -> bool:
    return isinstance(value, ast.Constant) and value.value is None


def _moves(value) -> bool:
    return value is not None and any(
        isinstance(part, ast.Call) and isinstance(part.func, ast.Attribute) and part.func.attr in _MOVES
        for part in ast.walk(value)
    )
