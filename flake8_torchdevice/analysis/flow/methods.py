"""Facts that cross between methods of one class: ``self.m(...)`` calls.

``fit`` computes ``distances = self.pdist(model(X))`` and hands them to
``self.batch_hard(y, distances)``: on a GPU machine ``pdist`` returns a placed tensor (every
``return`` of its walk, given a placed ``fX``, is placed), and ``batch_hard``'s ``distances``
is placed (a sibling method calls it with a placed value, as module code calling a top-level
function does). Followed: the edges of ``analysis.self_calls.self_call_graph`` (a method that
moves something, calling another with an argument) in a top-level class that is no
``torch.nn`` module; the engine's selection keeps every method such edges link to a kept one
(``selection.self_call_partners``), so these facts never depend on what it kept. Each return
summary is one more walk of the callee, cached per call shape.
"""

from __future__ import annotations

from typing import Optional

from ..._lazy import cst
from ..self_calls import follows_self_calls, self_call_graph
from .facts import placed_arguments
from .values import PLACED, Value


def method_of(cls: "cst.ClassDef", name: str) -> Optional["cst.FunctionDef"]:
    """The method ``name`` defined in ``cls``'s own body (the last one), or None."""
    found = None
    for member in cls.body.body:
        if isinstance(member, cst.FunctionDef) and member.name.value == name:
            found = member
    return found


def given_by_siblings(context, node: "cst.FunctionDef", cls: "cst.ClassDef", flow_of) -> tuple:
    """{param: Value} for each parameter of the method ``node`` that another method of ``cls``
    calls it with a placed value (``self.batch_hard(y, distances)``), and whether a caller was
    left out because it is being walked itself (methods that call each other)."""
    name = node.name.value
    given: dict = {}
    partial = False
    for caller in _callers(context, cls, name):
        if caller is node:
            continue
        if _busy(context, caller):
            partial = True
            continue
        for called, args in flow_of(context, caller).method_calls:
            if called == name:
                for param, value in placed_arguments(node.params, args, first=1).items():  # after ``self``
                    given.setdefault(param, value)
    return given, partial


def returned_by(context, cls: "cst.ClassDef", name: str, call: "cst.Call", args: list, analysis) -> Optional[Value]:
    """What ``self.<name>(...)`` gives the walk ``analysis``: placed when every ``return`` of the
    method, walked with the placed values this call hands it, is placed; else unknown."""
    linked = name in _graph(context, cls).get(analysis.scope, ())  # the caller moves something: an edge
    method = method_of(cls, name) if linked else None
    if method is None:
        return None
    if _busy(context, method):
        analysis.partial = True  # asked while that method is walked: this walk is not the final one
        return None
    given = placed_arguments(method.params, list(zip(call.args, args)), first=1)
    if not given:
        return None
    cache = context.__dict__.setdefault("_method_returns", {})
    key = (id(method), tuple(sorted(given)))
    placed = cache.get(key)
    if placed is None:
        busy = context.__dict__.setdefault("_flow_busy", set())
        busy.add(id(method))
        try:
            walk = analysis.walk_with(context, method, given)
        finally:
            busy.discard(id(method))
        returns = walk.flow.returns
        placed = bool(returns) and all(v is not None and v.kind == PLACED for v in returns)
        if walk.partial:
            analysis.partial = True
        else:
            cache[key] = placed
    return Value(PLACED, f"self.{name}(...)") if placed else None


def _callers(context, cls: "cst.ClassDef", name: str) -> list:
    """The methods of the top-level class ``cls`` whose code calls ``self.<name>(...)`` (an edge of
    the graph the selection keeps linked methods by); none for a class it does not follow."""
    graph = _graph(context, cls)
    callers = [caller for caller, called in graph.items() if name in called]
    return [method for method in map(lambda caller: method_of(cls, caller), callers) if method is not None]


def _graph(context, cls: "cst.ClassDef") -> dict:
    """``analysis.self_calls.self_call_graph`` of ``cls``, once per file; empty where not followed."""
    if not follows(context, cls):
        return {}
    graphs = context.names.facts.setdefault("self_calls", {})
    if cls.name.value not in graphs:
        graphs[cls.name.value] = self_call_graph(context.names.definition(cls.name.value), context.source.split("\n"))
    return graphs[cls.name.value]


def follows(context, cls: "cst.ClassDef") -> bool:
    """Are ``self.m(...)`` calls followed in ``cls``: a top-level class of this file that is no
    ``torch.nn`` module (``analysis.self_calls.follows_self_calls``, which the selection asks too)?"""
    return id(cls) in context._flow_facts.top_classes and follows_self_calls(context.names, cls.name.value)


def _busy(context, node) -> bool:
    return id(node) in context.__dict__.get("_flow_busy", ())
