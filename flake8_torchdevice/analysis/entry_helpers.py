"""Same-file helpers of a model's entry point: functions whose input is the model's input.

``def forward(self, x): x = pad(x, self.lcm)`` hands the forward's input to ``pad``, a
module-level function of the same file: inside ``pad``, ``x`` lives where the model lives,
as it does in ``forward`` itself. TDV504 decides such helpers as it decides ``forward``
(and TDV502 leaves them), and the engine's selection keeps them for it: both ask this
module, which reads the ``ast`` of the whole file once.
"""

from __future__ import annotations

import ast

from .modules import local_kind

# The entry points whose parameters are on the model's device, by class kind.
_ENTRIES = {"module": ("forward",), "metric": ("forward", "update")}


def entry_helpers(names) -> frozenset:
    """Names of the module-level functions that a ``forward`` (or a metric's ``update``) of
    a class of this file calls by plain name with one of its own parameters as an argument."""
    found = names.facts.get("entry_helpers")
    if found is None:
        found = names.facts["entry_helpers"] = frozenset(_helpers(names))
    return found


def _helpers(names):
    for class_name in names.local_class_names():
        node = names.definition(class_name)
        kind = local_kind(names, class_name) if isinstance(node, ast.ClassDef) else None
        if kind is None:
            continue
        for method in node.body:
            if isinstance(method, ast.FunctionDef) and method.name in _ENTRIES[kind]:
                yield from _called_with_inputs(names, method)


def _called_with_inputs(names, method: ast.FunctionDef):
    arguments = method.args
    params = {arg.arg for arg in arguments.posonlyargs + arguments.args[1:] + arguments.kwonlyargs}
    if arguments.vararg is not None:  # ``def forward(self, *inputs): return kron(*inputs)``
        params.add(arguments.vararg.arg)
    for sub in ast.walk(method):
        if not (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name)):
            continue
        if not isinstance(names.definition(sub.func.id), (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        given = [arg.value if isinstance(arg, ast.Starred) else arg for arg in sub.args]
        given += [keyword.value for keyword in sub.keywords]
        if any(isinstance(arg, ast.Name) and arg.id in params for arg in given):
            yield sub.func.id
