"""Paths an object saved to earlier in its own life. A method that saves
(``torch.save(model.state_dict(), path)``) and keeps the path (``self.best = path``,
``self.best = self.train(...)`` where ``train`` returns the path it saved to, or
``self.files[key] = path``) gives the object a file only this process wrote: a later
``torch.load(self.best)`` reads it back on the machine that wrote it. An attribute
also bound to anything else (a constructor's argument, a config value) is not one.
TDV201 reads ``saved_attributes``; nothing here decides a finding alone."""

from __future__ import annotations

from typing import Callable, Iterator, Optional

from .._lazy import cst
from .checkpoints import file_argument
from .code import argument, is_self_attribute, layout_free, own_subtree, param_names, subtree
from ..rule import is_none


def saved_attributes(class_node: cst.ClassDef, is_save: Callable[[cst.Call], bool]) -> frozenset:
    """The names ``A`` of ``self.A`` that, in every binding anywhere in the class, hold
    nothing but a path one of its methods saved to (or an empty start: ``None``, ``{}``)."""
    methods = [node for node in class_node.body.body if isinstance(node, cst.FunctionDef)]
    facts = [(method, _MethodFacts(method, is_save)) for method in methods]
    # A method name every definition of which returns a path it saved to (``return best``).
    failing = {method.name.value for method, fact in facts if not fact.returns_saved()}
    returning = frozenset(method.name.value for method in methods) - failing
    good, bad, judged = set(), set(), set()
    for method, fact in facts:
        for target, value in _stores(own_subtree(method)):
            judged.add(id(target))
            if value is not None and _is_empty(value):
                continue
            saved = value is not None and fact.saved_value(value, returning)
            (good if saved else bad).add(_stored_attribute(target))
    for target, _value in _stores(subtree(class_node)):
        if id(target) not in judged:  # bound in a nested function or the class body: not read here
            bad.add(_stored_attribute(target))
    return frozenset(good - bad)


def object_path(expr: cst.BaseExpression, saved: frozenset) -> bool:
    """``self.best`` or ``self.files[key]`` with the attribute in ``saved``."""
    if isinstance(expr, cst.Subscript):
        expr = expr.value
    return is_self_attribute(expr) and expr.attr.value in saved


def passed_object_path(param: str, helper: cst.FunctionDef, enclosing: cst.FunctionDef, saved: frozenset) -> bool:
    """Does every call of ``helper``, a function nested in ``enclosing``, pass an object
    path (``object_path``) for its parameter ``param``? ``def infer_fn(model, path)``
    called as ``infer_fn(self.model, self.best)``."""
    names = param_names(helper.params)
    if param not in names:
        return False
    calls = [node for node in own_subtree(enclosing)
             if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == helper.name.value]
    given = [argument(call, names.index(param), param) for call in calls]
    return bool(calls) and all(arg is not None and object_path(arg.value, saved) for arg in given)


class _MethodFacts:
    """A method's saved paths (layout-free), its local names' bindings, and its returns."""

    def __init__(self, method: cst.FunctionDef, is_save: Callable[[cst.Call], bool]) -> None:
        nodes = list(own_subtree(method))
        saves = [node for node in nodes if isinstance(node, cst.Call) and is_save(node)]
        self.saved = {key for key in (file_argument(call, 1) for call in saves) if key is not None}
        self.bindings: dict[str, list] = {}
        for node in nodes:
            if isinstance(node, cst.Assign):
                for target in node.targets:
                    if isinstance(target.target, cst.Name):
                        self.bindings.setdefault(target.target.value, []).append(node.value)
        self.returns = [node.value for node in nodes if isinstance(node, cst.Return) and node.value is not None]

    def saved_value(self, value: cst.BaseExpression, returning: frozenset = frozenset(), names: bool = True) -> bool:
        """Is ``value`` a path this method saved to, a call of a method that returns one, or a
        local name bound to nothing else (``best = None`` ... ``best = path``)?"""
        if self.saved and layout_free(value) in self.saved:
            return True
        if isinstance(value, cst.Call) and is_self_attribute(value.func):
            return value.func.attr.value in returning
        if names and isinstance(value, cst.Name) and value.value in self.bindings:
            bound = [item for item in self.bindings[value.value] if not is_none(item)]
            return bool(bound) and all(self.saved_value(item, returning, names=False) for item in bound)
        return False

    def returns_saved(self) -> bool:
        return bool(self.returns) and all(self.saved_value(value) for value in self.returns)


def _stores(nodes) -> Iterator[tuple]:
    """(target, value) of each binding of ``self.A`` or ``self.A[key]``; an augmented one's value is None."""
    for node in nodes:
        if isinstance(node, cst.Assign):
            for target in node.targets:
                if _stored_attribute(target.target) is not None:
                    yield target.target, node.value
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign)) and _stored_attribute(node.target) is not None:
            yield node.target, node.value if isinstance(node, cst.AnnAssign) else None


def _stored_attribute(target: cst.BaseExpression) -> Optional[str]:
    if isinstance(target, cst.Subscript):
        target = target.value
    return target.attr.value if is_self_attribute(target) else None


def _is_empty(value: cst.BaseExpression) -> bool:
    """An attribute's start before anything is saved: ``None``, ``{}``, ``[]``, ``dict()``."""
    if is_none(value):
        return True
    if isinstance(value, (cst.Dict, cst.List)):
        return not value.elements
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in {"dict", "list"} \
        and not value.args
