"""Which top-level functions of a file call which others by name, handing them an argument.

``main()`` builds a placed model and calls ``train(model, loader, criterion)``: on a GPU machine
``train``'s ``model`` is placed, as when module code makes that call (``flow/facts.py``). The
device flow reads what such a caller hands a function (``flow/callers.py``) and the engine's
selection keeps the linked functions together (``selection.call_partners``): both read this one
graph, built from each function's source text as ``self_calls.self_call_graph`` is (a call in a
comment or a string links two functions too, which only keeps a function more).
"""

from __future__ import annotations

import ast
import re
from collections import Counter

from ..ast_helpers import ast_dotted_name
from .self_calls import _GAP, _MOVE

# ``name(`` followed by an argument, not an attribute's call (``self.train(x)``, ``np.save(a)``); the
# argument is looked at, not taken, so ``print(summarize(model))`` finds both calls.
_CALL = re.compile(rf"(?<![\w.])(\w+){_GAP}\((?={_GAP}[^)\s\\#])")
# ``name(`` with or without an argument: a call of a helper that moves something (what it returns may be placed).
_ANY_CALL = re.compile(rf"(?<![\w.])(\w+){_GAP}\(")
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# The graph's node for module code (every top-level statement that is no definition): no function's name.
MODULE = ""


def function_call_graph(body: list, lines: list) -> dict:
    """{top-level function name: the names of the other top-level functions it calls with an
    argument, if it moves something itself (``.to(`` / ``.cuda(``)}, of a module's ``ast`` ``body``, and
    the same for module code under ``MODULE``; ``lines`` are the file's lines.
    A name defined twice at the top level links nothing: which definition runs is not read."""
    return _graph(body, lines, helpers=False)


def helper_call_graph(body: list, lines: list) -> dict:
    """{top-level function name (``MODULE``: module code): the top-level functions it calls, with or
    without an argument, that move something themselves}: what such a helper returns may be placed
    (``model = build_model()`` of ``def build_model(): return Net().to(device)``; ``flow/callers.py``)."""
    return _graph(body, lines, helpers=True)


def _graph(body: list, lines: list, helpers: bool) -> dict:
    functions = [s for s in body if isinstance(s, _FUNCTIONS)]
    counts = Counter(function.name for function in functions)
    names = {name for name, count in counts.items() if count == 1}
    texts = {function.name: _text(lines, [function]) for function in functions if function.name in names}
    texts[MODULE] = _text(lines, [s for s in body if not isinstance(s, (*_FUNCTIONS, ast.ClassDef))])
    if not helpers:
        builds = _builder(body)
        return {name: _called(text, names, builds) - {name} for name, text in texts.items()}
    movers = {name for name, text in texts.items() if name != MODULE and _MOVE.search(text)}
    return {name: frozenset(set(_ANY_CALL.findall(text)) & movers) - {name} for name, text in texts.items()}


def _text(lines: list, statements: list) -> str:
    return "\n".join("\n".join(lines[s.lineno - 1:s.end_lineno]) for s in statements)


def _called(text: str, names: set, builds: "re.Pattern") -> frozenset:
    """Which of ``names`` the code ``text`` calls with an argument, if it moves something itself or builds a
    module (``net = Net()`` handed to ``train(net, loader)``, which moves the batches: the CPU model meets them)."""
    if _MOVE.search(text) or builds.search(text):
        return frozenset(set(_CALL.findall(text)) & names)
    return frozenset()


def _builder(body: list) -> "re.Pattern":
    """A pattern for a call that builds a module: of a top-level class of this file whose base says ``Module``
    (``Net(``), or of a layer of ``nn`` (``nn.Linear(``)."""
    classes = [s.name for s in body if isinstance(s, ast.ClassDef)
               and any((ast_dotted_name(base) or "").endswith("Module") for base in s.bases)]
    words = "|".join(sorted(classes))
    own = rf"(?<![\w.])(?:{words}){_GAP}\(" if words else None
    layer = rf"(?<![\w.])nn\.[A-Z]\w*{_GAP}\("
    return re.compile(f"{own}|{layer}" if own else layer)


def callers_of(graph: dict, name: str) -> list:
    """The functions of ``graph`` that call ``name``."""
    return [caller for caller, called in graph.items() if name in called]


def sole_calls(body: list) -> frozenset:
    """The top-level functions of a module's ``body`` whose name the file reads exactly once, as the
    callee of a call: that one call runs them, so what it hands them, a CPU value included, is all
    they are given (two calls may hand one a CPU tensor and the other a placed one)."""
    functions = Counter(s.name for s in body if isinstance(s, _FUNCTIONS))
    reads: Counter = Counter()
    called: Counter = Counter()
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Name) and node.id in functions:
            reads[node.id] += 1  # a call's callee, an argument (a callback), a rebinding
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions:
            called[node.func.id] += 1
    return frozenset(name for name, count in functions.items() if count == 1 and reads[name] == 1 == called[name])
