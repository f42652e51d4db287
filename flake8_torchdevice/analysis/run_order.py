"""Files a script reads back in the run that wrote them (TDV201's evidence).

``train()`` saves the best model to ``encoder_file``; the module code then calls ``test()``, which loads
``encoder_file``: the file the run has just written, on the machine it runs on. A round trip across
functions of one script, read from the run order of its module code: a function called from module code
only, each call after module code has called a function that saves to the same path (directly or through
the functions it calls), reads back that run's file; so does a load in module code itself after such a call.
Only paths built from module names count (``encoder_file``, ``os.path.join(args.work_dir, "model.pt")``,
also through ``with open(path, "rb") as f``): a function's own locals and parameters may name anything, but for a
parameter its body never rebinds, given a module name by module code's call (``trainer(model, config)`` saving to
``config["save_path"]``), which reads as that name, and for a local bound once, to a string literal, which reads as
that string (``save_dir = "../models/"`` ... ``f"{save_dir}{dataset}.pth"`` is ``f"../models/{dataset}.pth"``).

Read from the ``ast`` once per file, so the answer does not depend on what code the engine's selection parses.
Keys are ``ast.dump`` of the path expression: layout and quotes do not matter.
"""

from __future__ import annotations

import ast
import copy
from typing import Optional

from ..ast_helpers import AST_DEFINITIONS, ast_parameters
from .checkpoints import TORCH_LOADS as LOADS, TORCH_SAVES as SAVES
from .scripts import called_names


def read_back_in_run(names) -> dict:
    """{module-level function name, or "" for module code: the path keys it reads back in the run that wrote them}."""
    found = names.facts.get("read_back_in_run")
    if found is None:
        found = names.facts["read_back_in_run"] = _read_back(names)
    return found


def path_key(source: str) -> Optional[str]:
    """The key of a path expression given as source (a CST node's code), or None where it does not parse."""
    try:
        return _dump(ast.parse(f"(\n{source}\n)", mode="eval").body)
    except (SyntaxError, ValueError):
        return None


def _dump(path: ast.expr) -> str:
    """``ast.dump`` of ``path`` with each f-string's literal pieces joined (``f"{'a/'}{x}"`` is ``f"a/{x}"``)."""
    for node in ast.walk(path):
        if isinstance(node, ast.JoinedStr):
            node.values = _joined(node.values)
    return ast.dump(path)


def _joined(values: list) -> list:
    pieces: list = []
    for value in values:
        if isinstance(value, ast.FormattedValue) and value.conversion == -1 and value.format_spec is None \
                and isinstance(value.value, ast.Constant) and isinstance(value.value.value, str):
            value = ast.Constant(value.value.value)
        if isinstance(value, ast.Constant) and pieces and isinstance(pieces[-1], ast.Constant):
            pieces[-1] = ast.Constant(pieces[-1].value + value.value)
        else:
            pieces.append(value)
    return pieces


def _read_back(names) -> dict:
    """Walks module code only, and a function's body only where module code calls it (a file of 100,000 functions
    costs no more than its module code)."""
    at_calls, module_loads = _run(names, names.module_body)
    result = {"": {key for key, after in module_loads.items() if after}}
    reads = {}
    for name, states in at_calls.items():
        keys = set.intersection(*states)
        function = _function(names, name)
        read = _io_keys(function, names, LOADS, 0) & keys if keys else set()
        # An entry point module code runs (``main()``): its own body is run order too, a load after its call
        # of a function that saved the file (``train_model(...)`` then ``torch.load("best_model.pth")``;
        # post-hoc, from the held-out ``save-then-load-same-process`` labels)
        _, own_loads = _run(names, function.body)
        read |= {key for key, after in own_loads.items() if after}
        if read:
            reads[name] = read
    if reads:  # every function's body is walked only where some file is read back
        called_by_functions = set().union(*(_called(node, names) for node in _functions(names)))
        result.update((name, read) for name, read in reads.items() if name not in called_by_functions)
    return result


def _run(names, body: list) -> tuple[dict, dict]:
    """Module code in source order: for each function it calls, the path keys written before each call; for each
    path key it loads itself, whether every such load comes after a call that wrote it. A write counts only for what
    can run after it in the same run: not for the other branch of an ``if`` it sits in (``if not os.path.exists(f):
    train(f)`` / ``else: torch.load(f)`` reads a file an earlier run wrote)."""
    written: dict[tuple, set] = {}
    state: dict[str, list] = {}  # path key -> the branches (``_arms``) of each write of it
    at_calls: dict[str, list] = {}
    module_loads: dict[str, bool] = {}
    handles: dict = {}
    for node, arms in _module_code_events(body):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            _note_handles(node, handles)
            continue
        before = {key for key, writes in state.items() if any(_compatible(arms, other) for other in writes)}
        callee = node.func.id if isinstance(node.func, ast.Name) else None
        if callee is not None and _function(names, callee) is not None:
            at_calls.setdefault(callee, []).append(before)
            given = _bound_names(node, names)
            if (callee, given) not in written:  # what it saves, reading the names this call passes
                written[callee, given] = _writes(callee, names, given)
            for key in written[callee, given]:
                state.setdefault(key, []).append(arms)
        elif _qualified(node, names) in LOADS:
            key = _key(node, 0, handles, set())
            if key is not None:
                module_loads[key] = module_loads.get(key, True) and key in before
    return at_calls, module_loads


def _compatible(arms: tuple, other: tuple) -> bool:
    """Can code in branches ``arms`` run in the same run as code in ``other``: no ``if`` taken both ways?"""
    taken = dict(arms)
    return all(taken.get(branch, arm) == arm for branch, arm in other)


def _function(names, name: str):
    node = names.definition(name)
    return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def _functions(names) -> list:
    return [node for name in names.local_function_names() if (node := _function(names, name)) is not None]


def _writes(name: str, names, given: frozenset = frozenset()) -> set:
    """The path keys a function saves to, itself or through the functions it calls; ``given`` (``_bound_names`` of
    the call) reads its own parameters, not its callees'."""
    seen, pending, keys = set(), [name], set()
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        node = _function(names, current)
        keys |= _io_keys(node, names, SAVES, 1, dict(given) if current == name else None)
        pending.extend(_called(node, names))
    return keys


def _io_keys(function: ast.AST, names, wanted: frozenset, position: int, given: Optional[dict] = None) -> set:
    """The path keys ``function`` hands to the ``wanted`` calls; ``given`` maps parameters the body never rebinds to
    the module names a call passes (``trainer(..., config)`` saving to ``config["save_path"]``)."""
    bound, declared = _body_names(function)
    given = {param: name for param, name in (given or {}).items() if param not in bound}
    params = ast_parameters(function, starred=True)
    constants = {name: text for name, text in _string_constants(function).items()
                 if name not in declared and name not in params}
    local = (params | bound) - declared - set(given) - set(constants)
    # Each ``with open(path) as f`` in source order: a call reads ``f`` as the last one opened at or before it
    # (``model.pt`` then ``optimizer.pt``, both as ``f``, each saved inside its own block).
    opened = sorted(((node.lineno, name, path) for node in ast.walk(function)
                     if isinstance(node, (ast.With, ast.AsyncWith)) for name, path in _handles(node)),
                    key=lambda item: item[0])  # by line only: two items of one line may not compare
    keys = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and _qualified(node, names) in wanted:
            handles = {name: path for line, name, path in opened if line <= node.lineno}
            key = _key(node, position, handles, local, given, constants)
            if key is not None:
                keys.add(key)
    return keys


def _bound_names(call: ast.Call, names) -> frozenset:
    """(parameter, name) for each parameter of the called function of this file that module code's ``call`` passes a
    plain name to."""
    if any(isinstance(arg, ast.Starred) for arg in call.args):
        return frozenset()
    function = _function(names, call.func.id)
    params = [arg.arg for arg in function.args.posonlyargs + function.args.args]
    given = {param: arg.id for param, arg in zip(params, call.args) if isinstance(arg, ast.Name)}
    given.update({k.arg: k.value.id for k in call.keywords if k.arg is not None and isinstance(k.value, ast.Name)})
    return frozenset(given.items())


def _body_names(function: ast.AST) -> tuple[set, set]:
    """The names a function's body binds (its parameters not counted), and those it declares ``global``: a
    function's locals are its parameters and the first, but the second."""
    bound: set = set()
    declared: set = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.Global):
            declared.update(node.names)
    return bound, declared


def path_argument(call: ast.Call, position: int) -> Optional[ast.expr]:
    """The file argument of a save or load call: positional ``position`` (starred ones skipped) or ``f=``."""
    args = [arg for arg in call.args if not isinstance(arg, ast.Starred)]
    return args[position] if len(args) > position else next((k.value for k in call.keywords if k.arg == "f"), None)


def _key(call: ast.Call, position: int, handles: dict, local: set, given: Optional[dict] = None,
         constants: Optional[dict] = None) -> Optional[str]:
    path = path_argument(call, position)
    path = _opened(path) or (handles.get(path.id, path) if isinstance(path, ast.Name) else path)
    if path is None or any(isinstance(n, ast.Name) and n.id in local for n in ast.walk(path)):
        return None  # a function's own names may name anything
    return _dump(_renamed(path, given or {}, constants or {}))


def _renamed(path: ast.expr, given: dict, constants: dict) -> ast.expr:
    """A copy of ``path`` with each parameter in ``given`` read as the module name the call passed, and each
    local string constant as its string."""
    path = copy.deepcopy(path)
    for node in ast.walk(path):
        for field, value in ast.iter_fields(node):
            if isinstance(value, ast.Name) and value.id in constants:
                setattr(node, field, ast.Constant(constants[value.id]))
            elif isinstance(value, list):
                value[:] = [ast.Constant(constants[item.id]) if isinstance(item, ast.Name) and item.id in constants
                            else item for item in value]
        if isinstance(node, ast.Name) and node.id in given:
            node.id = given[node.id]
    if isinstance(path, ast.Name) and path.id in constants:
        return ast.Constant(constants[path.id])
    return path


def _string_constants(function: ast.AST) -> dict:
    """{name: text} for each name the function binds exactly once, with ``name = "text"``."""
    stores: dict[str, int] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            stores[node.id] = stores.get(node.id, 0) + 1
    constants = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str) \
                and stores.get(node.targets[0].id) == 1:
            constants[node.targets[0].id] = node.value.value
    return constants


def _opened(expr) -> Optional[ast.expr]:
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "open" and expr.args:
        return expr.args[0]
    return None


def _note_handles(node, handles: dict) -> None:
    """``with open(path, "rb") as f``: ``f`` reads ``path``."""
    handles.update(_handles(node))


def _handles(node) -> list:
    """The (name, path) pairs of a ``with`` statement's ``open(path) as name`` items."""
    pairs = []
    for item in node.items:
        opened = _opened(item.context_expr)
        if opened is not None and isinstance(item.optional_vars, ast.Name):
            pairs.append((item.optional_vars.id, opened))
    return pairs


def _called(function: ast.AST, names) -> set:
    return {name for name in called_names(function) if _function(names, name) is not None}


def _qualified(call: ast.Call, names) -> Optional[str]:
    return names.qualify_ast(call.func)


def _module_code_events(body: list) -> list:
    """(node, arms) for the calls and ``with`` statements of module code (not in definitions), in source order;
    ``arms`` are the (``if``, branch) pairs the node sits in, conditional expressions included."""
    events = []
    pending = [(stmt, ()) for stmt in body if not isinstance(stmt, AST_DEFINITIONS)]
    while pending:
        node, arms = pending.pop()
        if isinstance(node, ast.Call) or isinstance(node, (ast.With, ast.AsyncWith)):
            events.append((node, arms))
        if isinstance(node, (ast.If, ast.IfExp)):
            body_nodes = node.body if isinstance(node.body, list) else [node.body]
            else_nodes = node.orelse if isinstance(node.orelse, list) else [node.orelse]
            pending.append((node.test, arms))
            pending.extend((child, arms + ((id(node), True),)) for child in body_nodes)
            pending.extend((child, arms + ((id(node), False),)) for child in else_nodes)
            continue
        pending.extend((child, arms) for child in ast.iter_child_nodes(node) if not isinstance(child, AST_DEFINITIONS))
    return sorted(events, key=lambda event: (event[0].lineno, event[0].col_offset))
