"""Which methods of a class call which others as ``self.<name>(...)``.

The device flow reads what methods of one top-level class hand each other and return
(``flow/methods.py``), and the engine's selection keeps such linked methods together
(``selection.self_call_partners``): both read this one graph. It is read from each method's
source text (a regular expression over its lines, ~10x cheaper than walking its ``ast``): a
``self.m(`` in a comment or a string links two methods too, which only keeps a method more
and lets the flow look for calls that are not there.
"""

from __future__ import annotations

import ast
import re

# ``self.m(`` followed by an argument: a call without one hands no value and, given none,
# its result is not followed either (``flow/methods.py``), so it links nothing.
# Between tokens: spaces, a line continuation, a comment that ends a line inside brackets.
_GAP = r"(?:\s|\\\r?\n|#[^\n]*\n)*"
_SELF_CALL = re.compile(rf"\bself{_GAP}\.{_GAP}(\w+){_GAP}\({_GAP}[^)\s\\#]")
# Only a method that moves something itself (``.to(`` / ``.cuda(``) links to the methods it calls:
# the placed values a trainer's ``fit`` hands its helpers start there. The flow follows the same
# edges (``flow/methods.py``), so the selection keeps exactly what it reads.
_MOVE = re.compile(rf"\.{_GAP}(?:to|cuda){_GAP}\(")


def self_call_graph(node: ast.ClassDef, lines: list) -> dict:
    """{method name: the names of the other methods of the class it calls as ``self.<name>(...)``
    with an argument, if it moves something itself}; ``lines`` are the file's lines."""
    methods = [m for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
    names = {m.name for m in methods}
    graph: dict = {}
    for method in methods:
        text = "\n".join(lines[method.lineno - 1:method.end_lineno])
        moves = _MOVE.search(text) is not None
        graph[method.name] = frozenset(set(_SELF_CALL.findall(text)) & names - {method.name}) if moves else frozenset()
    return graph


def follows_self_calls(names, class_name: str) -> bool:
    """Are what the methods of the top-level class ``class_name`` hand each other followed?
    Not in a ``torch.nn`` module: its methods take inputs on the module's device and pass them
    on (``self._conv_forward(input, self.weight)``), which proves nothing new and would keep
    most of every module for the flow rules. A trainer, a loss object or a Lightning module is."""
    return isinstance(names.definition(class_name), ast.ClassDef) and not _torch_module(names, class_name, set())


def _torch_module(names, name: str, seen: set) -> bool:
    seen.add(name)
    for base in names.local_bases(name):
        qualified = names.resolve_dotted(base)
        if qualified is not None:
            if qualified.startswith("torch.nn."):
                return True
        elif base not in seen and isinstance(names.definition(base), ast.ClassDef) and _torch_module(names, base, seen):
            return True
    return False
