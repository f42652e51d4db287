"""NumPy reads of what a caller hands: reported where the placed value is handed, not inside the helper.

``def imshow(img): plt.imshow(np.transpose(img, (1, 2, 0)))`` is right for the CPU images one cell
hands it and wrong for the CUDA images another cell hands it: the mistake, and its fix
(``imshow(images[idx].cpu())``), is at the call. So a top-level function's NumPy read of a tensor
that is placed only because a caller handed it is not the function's own finding (``own_numpys``);
each call that hands a placed tensor to such a parameter is (``numpy_params``). Both answers come
from walks of the function with its parameters unknown, one parameter placed at a time: the walk
that decides every other finding, never a second copy of it.

A parameter the function calls or uses as a module (``model(x)``, ``model.eval()``) is no tensor it
reads: the NumPy read of its output stays the function's finding. Nor is a read in a branch that
another parameter chooses (``if not pytorch: frames = np.asarray(x)``): whether it runs is the
caller's choice, which the call does not show here.
"""

from __future__ import annotations

from ..code import subtree
from ..._lazy import cst
from .values import PLACED, Value


def own_numpys(context, node, numpys: list, given: dict, walk) -> list:
    """The meetings of ``numpys`` (the walk of the top-level function ``node`` handed ``given``) that
    are not reported at the calls instead: those a walk without the parameters ``numpy_params``
    names finds too. ``walk(given)`` walks ``node`` handed nothing but ``given``."""
    sinks = numpy_params(context, node, [p for p, v in given.items() if v.kind == PLACED], walk)
    if not sinks:
        return numpys
    kept = {id(meet.node) for meet in walk({p: v for p, v in given.items() if p not in sinks}).flow.numpys}
    return [meet for meet in numpys if id(meet.node) in kept]


def numpy_params(context, node, params, walk) -> frozenset:
    """Those of ``params`` (parameter names of the top-level function ``node``) whose placed tensor
    alone makes the function read a placed tensor as a NumPy array, outside a branch another
    parameter chooses."""
    busy = context.__dict__.setdefault("_sink_busy", set())
    if id(node) in busy:
        return frozenset()  # functions handing each other placed values: the inner question has no answer
    busy.add(id(node))
    try:
        return _numpy_params(context, node, params, walk)
    finally:
        busy.discard(id(node))


def _numpy_params(context, node, params, walk) -> frozenset:
    cache = _cache(context, "_numpy_params")
    unknown = [param for param in params if (id(node), param) not in cache]
    if unknown:  # the function's body is read only for parameters not answered before
        callables = _callable_params(node)
        for param in unknown:
            cache[(id(node), param)] = param not in callables and _reads(context, node, param, walk)
    return frozenset(param for param in params if cache[(id(node), param)])


def _reads(context, node, param: str, walk) -> bool:
    bare = _bare_nodes(context, node, walk)
    chosen = _chosen_nodes(node, param)
    handed = walk({param: Value(PLACED, param, param=True)}).flow.numpys
    return any(id(meet.node) not in bare and id(meet.node) not in chosen for meet in handed)


def _bare_nodes(context, node, walk) -> set:
    cache = _cache(context, "_bare_numpys")
    if id(node) not in cache:
        cache[id(node)] = {id(meet.node) for meet in walk({}).flow.numpys}
    return cache[id(node)]


def _params(node) -> set:
    params = node.params
    return {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}


def _callable_params(node) -> set:
    """Parameters the function calls (``model(x)``) or calls a method of that a module has and a
    tensor has not (``model.eval()``)."""
    params = _params(node)
    found = set()
    for part in subtree(node.body):
        if not isinstance(part, cst.Call):
            continue
        func = part.func
        if isinstance(func, cst.Name) and func.value in params:
            found.add(func.value)
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in params \
                and func.attr.value in _MODULE_METHODS:
            found.add(func.value.value)
    return found


_MODULE_METHODS = frozenset("eval train parameters named_parameters modules children state_dict forward".split())


def _chosen_nodes(node, param: str) -> set:
    """The nodes in the arms of an ``if`` (statement or expression) whose test reads another parameter."""
    others = _params(node) - {param}
    chosen: set = set()
    for part in subtree(node.body):
        if isinstance(part, (cst.If, cst.IfExp)) and _reads_any(part.test, others):
            for arm in (part.body, part.orelse):
                if arm is not None:
                    chosen.update(id(inner) for inner in subtree(arm))
    return chosen


def _reads_any(test, names: set) -> bool:
    return any(isinstance(part, cst.Name) and part.value in names for part in subtree(test))


def _cache(context, name: str) -> dict:
    """A cache of answers, kept once the file's facts are whole: module code is walked before they
    are, and its questions are asked again with them (``analysis.start_file``)."""
    facts = context.__dict__.get("_flow_facts")
    return context.__dict__.setdefault(name, {}) if facts is not None and facts.ready else {}
