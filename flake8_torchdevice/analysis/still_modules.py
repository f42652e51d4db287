"""Module classes of this file that never move a tensor themselves.

A placed module of a class defined in the file may move what it is given in its own
code (``x = x.to(self.device)``, ``if self.use_cuda: h = h.cuda()``): a CPU argument is
then no mistake. A class whose code, and the code of the same-file classes and functions
it names, never names a move or a device cannot: a CPU tensor handed to it (its call, or a
method of its own such as ``vae.decode(z)``) meets its placed weights. Read once per class
from the ``ast`` of the whole file, so the verdict does not depend on what code the
engine's selection keeps for LibCST.
"""

from __future__ import annotations

import ast
from typing import Optional

from ..ast_helpers import ast_dotted_name
from .layers import layer_state

# Words that may move a tensor: ``.to(...)``, ``.type(torch.cuda.FloatTensor)``, ``.type_as(w)``, and any name
# speaking of a device (``self.device``, ``use_cuda``, ``to_device(x)``, ``gpu_ids``).
_MOVE_WORDS = frozenset({"to", "type", "type_as"})
_DEVICE_PARTS = ("device", "cuda", "gpu")
_MODULE_API = frozenset(dir(object)) | {"forward", "extra_repr", "reset_parameters"}


def moves_inputs(names, class_name: str) -> bool:
    """May a module of the module-level class ``class_name`` move what it is given?
    True unless the class is a ``torch.nn`` module whose code provably moves nothing."""
    cache = names.facts.setdefault("moves_inputs", {})
    if class_name not in cache:
        cache[class_name] = True  # a cycle (a class naming itself): assume it moves
        cache[class_name] = _class_moves(names, class_name)
    return cache[class_name]


def still_class(names, name: str) -> bool:
    """Is ``name`` a module-level ``torch.nn`` module class of this file whose code, and the code of
    the same-file classes and functions it names, never names a move or a device, and that wraps
    no module it is given? A module of it is built on the CPU and stays there until the code moves
    it."""
    cache = names.facts.setdefault("still_class", {})  # the flow asks at every construction, the selection once
    if name not in cache:
        node = names.definition(name)
        cache[name] = isinstance(node, ast.ClassDef) and not moves_inputs(names, name) \
            and not _wraps_given(names, node, set()) and _holds_weights(names, node, set())
    return cache[name]


def _same_file_bases(names, node: ast.ClassDef, seen: set):
    """The ``ast`` nodes of the same-file bases of ``node`` not in ``seen`` (class names)."""
    for base in names.local_bases(node.name):
        definition = names.definition(base)
        if isinstance(definition, ast.ClassDef) and base not in seen:
            yield definition


def _holds_weights(names, node: ast.ClassDef, seen: set) -> bool:
    """Does the class (or a same-file base, or a same-file class it builds) make weights: a
    ``torch.nn`` layer with state, a ``Parameter``, a buffer? A module without any (a loss, an
    activation) runs on whatever device its input is on."""
    seen.add(node.name)
    for sub in ast.walk(node):
        if not isinstance(sub, ast.Call):
            continue
        dotted = ast_dotted_name(sub.func)
        if dotted is None:
            continue
        if dotted.rpartition(".")[2] in ("register_buffer", "register_parameter"):
            return True
        if layer_state(names.resolve_dotted(dotted) or "") in ("module", "parameter"):
            return True
        built = names.definition(dotted)
        if isinstance(built, ast.ClassDef) and dotted not in seen and _holds_weights(names, built, seen):
            return True
    return any(_holds_weights(names, base, seen) for base in _same_file_bases(names, node, seen))


def _wraps_given(names, node: ast.ClassDef, seen: set) -> bool:
    """Does the class (or a same-file base) keep what its ``__init__`` is given in an attribute it
    calls (``self.model = model`` ... ``self.model(x)``)? That module may already be placed."""
    seen.add(node.name)
    stored: set = set()
    for init in node.body:
        if isinstance(init, ast.FunctionDef) and init.name == "__init__":
            given = {arg.arg for arg in init.args.args[1:] + init.args.kwonlyargs}
            given |= {arg.arg for arg in (init.args.vararg, init.args.kwarg) if arg is not None}
            stored = {
                target.attr for sub in ast.walk(init) if isinstance(sub, ast.Assign) and _holds_given(sub.value, given)
                for target in sub.targets if isinstance(target, ast.Attribute)
            }
    if any(isinstance(sub, ast.Call) and _self_attribute_root(sub.func) in stored for sub in ast.walk(node)):
        return True
    return any(_wraps_given(names, base, seen) for base in _same_file_bases(names, node, seen))


# Calls that keep the modules they are given as they are (on their device).
_KEEPING = frozenset({"ModuleList", "Sequential", "ModuleDict", "deepcopy", "copy", "list", "tuple"})


def _holds_given(value: ast.expr, given: set) -> bool:
    """``model`` itself, or a container of it (``nn.ModuleList(blocks)``, ``deepcopy(model)``); not a
    layer built from a number it is given (``nn.Linear(n, 2)``)."""
    if isinstance(value, ast.Name):
        return value.id in given
    if isinstance(value, ast.Call):
        func = value.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        args = [arg.value if isinstance(arg, ast.Starred) else arg for arg in value.args]
        return name in _KEEPING and any(isinstance(arg, ast.Name) and arg.id in given for arg in args)
    return False


def _self_attribute_root(func: ast.expr) -> Optional[str]:
    """``model`` of ``self.model(x)`` and of ``self.model.encode(x)``."""
    while isinstance(func, ast.Attribute):
        if isinstance(func.value, ast.Name) and func.value.id == "self":
            return func.attr
        func = func.value
    return None


def function_moves(names, function: str) -> bool:
    """Does the module-level function ``function`` of this file (``def flatten(x): return
    to_var(x.view(-1))``) name a move or a device in its code, or in the code of the same-file
    functions and classes it names? False for a name the file does not define as a function."""
    node = names.definition(function)
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    cache = names.facts.setdefault("function_moves", {})
    if function not in cache:
        cache[function] = _code_moves(names, node, {function})
    return cache[function]


def still_method(names, method: str) -> bool:
    """Is ``method`` a method of some still class of this file (``def decode(self, z)``),
    not an ``nn.Module`` or object API name? A placed receiver calling it runs that class's
    code on what it is given."""
    methods = names.facts.get("still_methods")
    if methods is None:
        methods = names.facts["still_methods"] = _still_methods(names)
    return method in methods


def _still_methods(names) -> frozenset:
    found: set = set()
    for name in _class_names(names):
        if moves_inputs(names, name):
            continue
        node = names.definition(name)
        found.update(
            stmt.name for stmt in node.body
            if isinstance(stmt, ast.FunctionDef) and not stmt.name.startswith("_") and stmt.name not in _MODULE_API
        )
    return frozenset(found)


def _class_names(names) -> list:
    return [name for name in names.local_class_names() if isinstance(names.definition(name), ast.ClassDef)]


def _class_moves(names, class_name: str) -> bool:
    node = names.definition(class_name)
    bases = names.local_bases(class_name)
    if not isinstance(node, ast.ClassDef) or not bases:
        return True
    for base in bases:
        if isinstance(names.definition(base), ast.ClassDef):
            if moves_inputs(names, base):
                return True
            continue
        qualified = names.resolve_dotted(base) or ""
        if not qualified.startswith("torch.nn."):  # another library's base may move in its own forward
            return True
    return _code_moves(names, node, {class_name})


def _code_moves(names, node: ast.AST, seen: set) -> bool:
    for sub in ast.walk(node):
        word = _word(sub)
        if word is None:
            continue
        if word in _MOVE_WORDS or any(part in word.lower() for part in _DEVICE_PARTS):
            return True
        if isinstance(sub, ast.Name) and sub.id not in seen:
            seen.add(sub.id)
            target = names.definition(sub.id)
            if isinstance(target, ast.ClassDef) and moves_inputs(names, sub.id):
                return True  # a submodule of a class that moves
            if isinstance(target, (ast.FunctionDef, ast.AsyncFunctionDef)) and _code_moves(names, target, seen):
                return True
    return False


def _word(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, (ast.keyword, ast.arg)):
        return node.arg
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return node.name
    return None
