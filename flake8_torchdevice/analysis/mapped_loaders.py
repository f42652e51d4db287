"""Same-file helpers that load a file they are given with a ``map_location``: TDV201 reads a
load in a ``try`` whose handler calls one with the same path as a mapped fallback
(``try: torch.load(path)`` / ``except Exception: partial_load_model(model, path)``)."""

from __future__ import annotations

import ast

from ..ast_helpers import ast_dotted_name

_FACT = "mapped_loaders"


def mapped_parameters(names, function: str, loads: frozenset) -> frozenset:
    """The positions of the parameters that the module-level function ``function`` loads
    with ``torch.load(param, map_location=...)`` (not ``None``); empty if it is no such
    function. Computed once per function and file (``names.facts``)."""
    cache = names.facts.setdefault(_FACT, {})
    if function not in cache:
        cache[function] = _mapped(names, names.definition(function), loads)
    return cache[function]


def _mapped(names, node, loads: frozenset) -> frozenset:
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return frozenset()
    positional = [arg.arg for arg in node.args.posonlyargs + node.args.args]
    found = set()
    for call in ast.walk(node):
        if not isinstance(call, ast.Call) or not call.args or not isinstance(call.args[0], ast.Name):
            continue
        dotted = ast_dotted_name(call.func)
        if dotted is None or names.resolve_dotted(dotted) not in loads or not _maps(call):
            continue
        if call.args[0].id in positional:
            found.add(positional.index(call.args[0].id))
    return frozenset(found)


def _maps(call: ast.Call) -> bool:
    """``map_location`` given and not ``None``, by keyword or as the second positional argument."""
    for keyword in call.keywords:
        if keyword.arg == "map_location":
            return not (isinstance(keyword.value, ast.Constant) and keyword.value.value is None)
    return len(call.args) > 1 and not (isinstance(call.args[1], ast.Constant) and call.args[1].value is None)
