"""Same-file helpers of a model's entry point: functions whose input is the model's input.

``def forward(self, x): x = pad(x, self.lcm)`` hands the forward's input to ``pad``, a
module-level function of the same file: inside ``pad``, ``x`` lives where the model lives,
as it does in ``forward`` itself. So does a module-level loss function, one that hands its
parameters (or values computed from them) to a ``torch.nn.functional`` loss
(``F.smooth_l1_loss(pred[mask], gt[mask])``): its inputs are a model's outputs and their
targets. TDV504 decides such helpers as it decides ``forward`` (and TDV502 leaves them), and
the engine's selection keeps them for it: both ask this module, which reads the ``ast`` of the
whole file once.
"""

from __future__ import annotations

import ast

from ..ast_helpers import ast_dotted_name, ast_parameters
from .modules import local_kind
from .vocabulary import FUNCTIONAL_LOSSES

# The entry points whose parameters are on the model's device, by class kind.
_ENTRIES = {"module": ("forward",), "metric": ("forward", "update")}


def entry_helpers(names) -> frozenset:
    """Names of the module-level functions that a ``forward`` (or a metric's ``update``) of
    a class of this file calls by plain name with one of its own parameters as an argument,
    and of the module-level loss functions."""
    found = names.facts.get("entry_helpers")
    if found is None:
        found = names.facts["entry_helpers"] = frozenset(_helpers(names)) | frozenset(_loss_functions(names))
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
    params = ast_parameters(method, skip_self=True)
    if method.args.vararg is not None:  # ``def forward(self, *inputs): return kron(*inputs)``
        params.add(method.args.vararg.arg)
    for sub in ast.walk(method):
        if not (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name)):
            continue
        if not isinstance(names.definition(sub.func.id), (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        given = [arg.value if isinstance(arg, ast.Starred) else arg for arg in sub.args]
        given += [keyword.value for keyword in sub.keywords]
        if any(isinstance(arg, ast.Name) and arg.id in params for arg in given):
            yield sub.func.id


# A call resolves to one of these only where the file spells its last name (``F.mse_loss``,
# ``from torch.nn.functional import mse_loss as L``).
_LOSS_WORDS = frozenset(name.rpartition(".")[2] for name in FUNCTIONAL_LOSSES)


def _loss_functions(names):
    if names.words is not None and names.words.isdisjoint(_LOSS_WORDS):
        return
    for name in names.local_function_names():
        function = names.definition(name)
        if _feeds_a_loss(names, function):
            yield name


def _feeds_a_loss(names, function) -> bool:
    """Is ``function`` a loss: does it hand one of its parameters, or a name computed from one,
    to a ``torch.nn.functional`` loss, and return what that loss computes? (A training step that
    calls ``backward()`` on it returns nothing: script code, TDV502's.)"""
    calls = [
        sub for sub in ast.walk(function)
        if isinstance(sub, ast.Call) and names.resolve_dotted(ast_dotted_name(sub.func) or "") in FUNCTIONAL_LOSSES
    ]
    if not calls:
        return False
    params = ast_parameters(function)
    derived = _derived_names(function, params)
    fed = [call for call in calls if any(_mentions(arg, derived) for arg in [*call.args, *call.keywords])]
    if not fed:
        return False
    losses = _derived_names(function, set(), fed)
    returns = [sub.value for sub in ast.walk(function) if isinstance(sub, ast.Return) and sub.value is not None]
    return any(_mentions(value, losses) or any(call in fed for call in ast.walk(value)) for value in returns)


def _derived_names(function, derived: set, sources: tuple = ()) -> set:
    """``derived`` and the names bound (anywhere in the function) to a value that mentions one of
    them or holds one of the ``sources`` calls, to a fixed point: ``depth1 = depth_est[i][mask]``
    is computed from ``depth_est``."""
    derived = set(derived)
    bindings = []
    for sub in ast.walk(function):
        if isinstance(sub, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and sub.value is not None:
            targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
            bindings.append((targets, sub.value))
        elif isinstance(sub, (ast.For, ast.comprehension)):
            bindings.append(([sub.target], sub.iter))
    grew = True
    while grew:
        grew = False
        for targets, value in bindings:
            if not _mentions(value, derived) and not any(sub in sources for sub in ast.walk(value)):
                continue
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name) and name.id not in derived:
                        derived.add(name.id)
                        grew = True
    return derived


def _mentions(node, names: set) -> bool:
    return any(isinstance(sub, ast.Name) and sub.id in names for sub in ast.walk(node))
