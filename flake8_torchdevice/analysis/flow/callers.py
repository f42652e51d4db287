"""Facts that cross from one top-level function to another it calls by name.

``main()`` places a model and calls ``train(model, data)``: ``train``'s ``model`` is placed on a GPU
machine, as it is when module code makes the call (``FileFacts.note_calls``). Followed: the edges of
``analysis.function_calls.function_call_graph`` (a function that moves something, calling another
with an argument); the engine's selection keeps every function such edges link to a kept one
(``selection.call_partners``), so these facts never depend on what it kept.
"""

from __future__ import annotations

import re

from ..function_calls import MODULE, callers_of, function_call_graph, helper_call_graph, sole_calls
from .facts import placed_arguments
from .values import CPU, PLACED, TUPLE, Value

# A parameter that chooses where things go (``device``, ``use_cuda``, ``gpu_id``): the caller's choice.
_DEVICE_WORD = re.compile(r"(?i)device|cuda|gpu|^dev$")


def given_by_callers(context, node, flow_of) -> tuple:
    """{param: Value} for each parameter of the top-level function ``node`` that another top-level
    function calls it with a placed value, and whether a caller was left out because it is being
    walked itself (functions that call each other)."""
    facts = context._flow_facts
    name = node.name.value
    given: dict = {}
    partial = False
    for caller_name in callers_of(_graph(context), name):
        caller = facts.functions.get(caller_name)
        if caller is None or caller is node:
            continue
        if id(caller) in context.__dict__.get("_flow_busy", ()):
            partial = True
            continue
        for called, args in flow_of(context, caller).calls:
            if called == name:
                for param, value in placed_arguments(node.params, args, cpu=sole_call(context, name, args)).items():
                    given.setdefault(param, value)
    return given, partial


def sole_call(context, name: str, args: list) -> bool:
    """Does this call, handing a CPU value among its arguments, run the top-level function ``name``
    alone (``function_calls.sole_calls``)? Then the CPU values it hands are the function's too
    (``main()`` building ``criterion = nn.BCEWithLogitsLoss(pos_weight=weight)`` on the CPU and
    calling ``train(model, data, criterion)`` with a placed model and data, once)."""
    if not any(value is not None and value.kind == CPU for _, value in args):
        return False  # the file is read only where a CPU value is handed
    facts = context.names.facts
    if "sole_calls" not in facts:
        facts["sole_calls"] = sole_calls(context.names.module_body)
    return name in facts["sole_calls"]


def _param_names(analysis, name: str) -> list:
    node = analysis.context._flow_facts.functions.get(name)
    return [param.name.value for param in node.params.params + node.params.kwonly_params] if node is not None else []


def _graph(context, key: str = "function_calls", build=function_call_graph) -> dict:
    """The file's call graph ``build`` makes, once per file (the selection may have built it: ``built_facts``)."""
    graphs = context.names.facts
    if key not in graphs:
        graphs[key] = build(context.names.module_body, context.source.split("\n"))
    return graphs[key]


def _helper_graph(context) -> dict:
    return _graph(context, "helper_calls", helper_call_graph)


def placed_helper_result(analysis, name: str):
    """What ``name(...)``, a call of a top-level function of this file that moves something, gives the
    walk that calls it: a placed value when every ``return`` of the function's own walk is placed by
    the function itself, whatever it is handed (``def build_model(): return Net().to(device)``;
    ``model = build_model()`` is placed). A result computed from what it is handed is
    ``call_kinds.helper_result``'s."""
    if any(_DEVICE_WORD.search(param) for param in _param_names(analysis, name)):
        return None  # ``def grid(flow, use_cuda=False)``: where it places is its caller's choice
    return _result(analysis, name, _placed, _helper_graph(analysis.context))


def tuple_result(analysis, name: str):
    """The same for a helper whose every ``return`` is a tuple of one length (``return grid, mask``): a
    TUPLE whose parts are placed (or CPU) where every return's part at that position is, unknown
    elsewhere (``age_map, mask = make_age_map(image)``, the map moved to the device, the mask a NumPy
    array). Read only where the call is unpacked into as many names."""
    if any(_DEVICE_WORD.search(param) for param in _param_names(analysis, name)):
        return None
    return _result(analysis, name, _tuple, _helper_graph(analysis.context), parts=True)


def _tuple(returns: list, name: str):
    if not returns or any(parts is None for parts in returns) or len({len(parts) for parts in returns}) != 1:
        return None
    merged = [_placed(list(column), name) or _cpu(list(column), name) for column in zip(*returns)]
    if not any(merged):
        return None
    value = Value(TUPLE, f"{name}(...)")
    value.parts = merged
    return value


def _placed(returns: list, name: str):
    # Not one computed from a parameter, nor a callable's answer that may be no tensor (``model(x)`` of a parameter).
    if not returns or not all(value is not None and value.kind == PLACED and not value.param and not value.guessed
                              for value in returns):
        return None
    return returns[0].derived(label=f"{name}(...)")


def _cpu(returns: list, name: str):
    if not returns or not all(value is not None and value.kind == CPU for value in returns):
        return None
    return returns[0].derived(label=f"{name}(...)", zero=all(v.zero for v in returns))


def cpu_result(analysis, name: str):
    """What ``name(...)``, a call of a top-level function of this file, gives the walk ``analysis`` of
    another top-level function, or of module code, that calls it (an edge of the graph: the caller
    moves something, and hands it an argument): a CPU value when every ``return`` of the function's
    own walk is one, whatever it is handed (``def load_image(path): return TF.to_tensor(...)``)."""
    return _result(analysis, name, _cpu, _graph(analysis.context))


def _result(analysis, name: str, answer, graph: dict, parts: bool = False):
    """``answer(returns, name)`` for the returns (with ``parts``: each return's tuple parts) of the walk of
    the top-level function ``name`` that ``analysis``'s function or module code calls (an edge of
    ``_graph``), handed nothing; the walk's returns are kept per file, for every answer."""
    context = analysis.context
    facts = context._flow_facts
    function = facts.functions.get(name)
    module = analysis.index is not None  # module code: ``x = load_input(path)`` in a script or a notebook
    caller = MODULE if module else analysis.scope if analysis.top_level else None
    if function is None or caller is None or name not in graph.get(caller, ()):
        return None
    if analysis.default_device:
        return None  # module code set a default device: the function's factories follow it
    # Module code is walked before the file's facts are whole: its answers are not kept for later walks.
    cache = context.__dict__.setdefault("_helper_returns", {}) if facts.ready else {}
    key = id(function)
    if key not in cache:
        busy = context.__dict__.setdefault("_flow_busy", set())
        if key in busy:
            # Asked while that function is walked (its walk reads what this caller hands it): this walk
            # of the caller is not the final one, and is asked again (``flow_of``).
            analysis.partial = True
            return None
        busy.add(key)
        try:
            walk = analysis.walk_with(context, function, {}, handed=False)  # whatever it is handed
        finally:
            busy.discard(key)
        if walk.partial:  # a helper it calls was busy (helpers calling each other): not kept
            return answer(walk.flow.return_parts if parts else walk.flow.returns, name)
        cache[key] = walk.flow
    flow = cache[key]
    return answer(flow.return_parts if parts else flow.returns, name)
