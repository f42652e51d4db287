"""Top-level functions of a file whose every result is computed from their tensor arguments.

``def reduce_mean(out, gt): return torch.abs(out - gt).mean()`` answers on the device of
what it is given: called with placed tensors, its result is placed. Such a helper is
recognised from its ``ast`` (read once per file, so the verdict does not depend on what
code the engine's selection keeps for LibCST): every ``return`` is an expression built
from its parameters (ones the body never rebinds) with arithmetic, indexing, torch
functions and tensor methods that keep a tensor where it is; nothing that takes it off
the device (``.cpu()``, ``.item()``, ``.tolist()``, ``.numpy()``, ``float(...)``) and no
other call. A function that may fall off its end, or returns anything else, gives nothing.

The other way round, a function whose every ``return`` is a host value (a number, a NumPy
function's result, ``loss.item()``, ``float(...)``) answers on the host whatever it is given:
``def estimate_loss(split, model): ... return np.mean(losses)`` is no loss on the device.
"""

from __future__ import annotations

import ast
from typing import Optional

from ..ast_helpers import ast_nodes_outside_definitions, ast_parameters
from .flow.words import KEEPING_METHODS

# Tensor methods, and torch functions of the same names, whose result stays on their tensors' device.
KEEPING = KEEPING_METHODS | frozenset("log1p rsqrt clamp_min clamp_max where".split())


def keeps_device(names, function: str) -> Optional[list]:
    """For the module-level function ``function`` of this file: one set of parameter names per
    ``return`` (the parameters its value is computed from), or None when some result is not
    computed from its parameters alone (see the module's docstring)."""
    cache = names.facts.setdefault("keeps_device", {})
    if function not in cache:
        cache[function] = _returns(names, names.definition(function))
    return cache[function]


def parameters_given(node: ast.FunctionDef, positional: int, keywords: list) -> Optional[list]:
    """The names of the parameters a call with ``positional`` positional arguments and
    ``keywords`` fills, in the order of the call's arguments; None if it does not fit."""
    ordered = [arg.arg for arg in node.args.posonlyargs + node.args.args]
    if positional > len(ordered):
        return None
    return ordered[:positional] + list(keywords)


def _returns(names, node) -> Optional[list]:
    if not isinstance(node, ast.FunctionDef) or not node.body or not isinstance(node.body[-1], ast.Return):
        return None
    params = ast_parameters(node)
    # A parameter the body rebinds (``img = img.cpu()``) no longer holds what the caller gave.
    params -= {sub.id for sub in _own_nodes(node) if isinstance(sub, ast.Name) and not isinstance(sub.ctx, ast.Load)}
    found = []
    for sub in _own_nodes(node):
        if isinstance(sub, (ast.Yield, ast.YieldFrom)):
            return None
        if isinstance(sub, ast.Return):
            used = _computed_from(names, sub.value, params) if sub.value is not None else None
            if not used:
                return None
            found.append(used)
    return found


def _own_nodes(node: ast.FunctionDef):
    """The nodes of ``node``'s body, not those of functions or classes defined in it."""
    return ast_nodes_outside_definitions(node.body)


def _computed_from(names, expr, params: set) -> Optional[set]:
    """The parameters a tensor expression is computed from, keeping their device; None if it
    is not such an expression."""
    if isinstance(expr, ast.Name):
        return {expr.id} if expr.id in params else None
    if isinstance(expr, ast.UnaryOp):
        return _computed_from(names, expr.operand, params)
    if isinstance(expr, ast.BinOp):
        left, right = (_computed_from(names, side, params) for side in (expr.left, expr.right))
        if left is None and right is None or not _plain(expr.left, left) or not _plain(expr.right, right):
            return None
        return (left or set()) | (right or set())
    if isinstance(expr, ast.Subscript):
        return _computed_from(names, expr.value, params)
    if isinstance(expr, ast.Call):
        return _call_from(names, expr, params)
    return None


def _plain(side, used: Optional[set]) -> bool:
    """Beside a tensor in arithmetic: another such tensor, or a number."""
    return used is not None or isinstance(side, ast.Constant) and isinstance(side.value, (int, float))


def _call_from(names, call: ast.Call, params: set) -> Optional[set]:
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    if func.attr in KEEPING:
        receiver = _computed_from(names, func.value, params)
        if receiver is not None:
            return receiver
    qualified = names.qualify_ast(func)
    if qualified is None:
        return None
    head, _, last = qualified.rpartition(".")
    if head not in ("torch", "torch.nn.functional") or head == "torch" and last not in KEEPING:
        return None
    used: set = set()
    for arg in call.args:
        part = _computed_from(names, arg, params)
        if part is not None:
            used |= part
        elif not isinstance(arg, ast.Constant):
            return None  # another tensor of unknown place, or anything else
    return used or None


# Builtins whose result is a Python value, never a tensor (not ``sum``/``min``/``max``/``abs``, which keep tensors).
_HOST_BUILTINS = frozenset({"float", "int", "bool", "round", "len", "str"})
# Tensor methods whose result is a Python or NumPy value.
_HOST_METHODS = frozenset({"item", "tolist", "numpy"})


def returns_host_values(names, function: str) -> bool:
    """Is every ``return`` of the module-level function ``function`` of this file a host value (see the
    module's docstring)? False for a generator or anything not known to be one."""
    cache = names.facts.setdefault("returns_host_values", {})
    if function not in cache:
        cache[function] = False  # a function reached again while it is read (recursion) is no host value
        node = names.definition(function)
        cache[function] = isinstance(node, ast.FunctionDef) and _all_host_returns(names, node)
    return cache[function]


def _all_host_returns(names, node: ast.FunctionDef) -> bool:
    returns = []
    for sub in _own_nodes(node):
        if isinstance(sub, (ast.Yield, ast.YieldFrom)):
            return False
        if isinstance(sub, ast.Return):
            returns.append(sub.value)
    return bool(returns) and all(value is not None and _is_host(names, value, node) for value in returns)


def _is_host(names, expr, function: Optional[ast.FunctionDef] = None, depth: int = 0) -> bool:
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, (int, float, str))
    if isinstance(expr, ast.Name) and function is not None and depth < 3:
        # ``metric = calc_batch_metric(output, target)`` ... ``return loss.item(), metric``: a local bound once,
        # to a host value (post-hoc, from v139's first read)
        bound = _bound_once(function, expr.id)
        return bound is not None and _is_host(names, bound, function, depth + 1)
    if isinstance(expr, (ast.Tuple, ast.List)):
        return all(_is_host(names, element, function, depth) for element in expr.elts)
    if isinstance(expr, ast.UnaryOp):
        return _is_host(names, expr.operand, function, depth)
    if isinstance(expr, ast.BinOp):
        return _is_host(names, expr.left, function, depth) and _is_host(names, expr.right, function, depth)
    if not isinstance(expr, ast.Call):
        return False
    if isinstance(expr.func, ast.Name) and expr.func.id in _HOST_BUILTINS and names.definition(expr.func.id) is None:
        return True
    if isinstance(expr.func, ast.Name) and isinstance(names.definition(expr.func.id), ast.FunctionDef):
        return returns_host_values(names, expr.func.id)  # a function of this file that answers on the host
    if isinstance(expr.func, ast.Attribute) and expr.func.attr in _HOST_METHODS and not expr.args:
        return True
    qualified = names.qualify_ast(expr.func)
    return qualified is not None and qualified.startswith("numpy.")


def _bound_once(function: ast.FunctionDef, name: str) -> Optional[ast.expr]:
    """The value a local of ``function`` (no parameter) is bound to by its one binding, a plain assignment; None
    if it is bound otherwise (a loop target, an augmented assignment, twice) or not at all."""
    if name in ast_parameters(function):
        return None
    stores, assigned = 0, []
    for sub in _own_nodes(function):
        if isinstance(sub, ast.Name) and sub.id == name and not isinstance(sub.ctx, ast.Load):
            stores += 1
        elif isinstance(sub, ast.Assign) and len(sub.targets) == 1 and isinstance(sub.targets[0], ast.Name) \
                and sub.targets[0].id == name:
            assigned.append(sub.value)
    return assigned[0] if stores == 1 and len(assigned) == 1 else None
