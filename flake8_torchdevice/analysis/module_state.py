"""The tensors a module keeps as its own state, and the methods that run before it is moved.

``self.register_buffer("theta", t)`` and ``self.w = nn.Parameter(t)`` in ``__init__`` make
tensors that ``module.to(device)`` moves with the module; a tensor another method makes
without ``device=`` stays on the CPU and meets them on two devices (a rotary embedding's
``torch.arange(n) * self.theta`` when the cache is rebuilt for a longer input). A method that
only ``__init__`` calls runs while the module is still on the CPU, before anyone moves it.
Both are read from the class's ``ast`` once per file (``names.facts``).
"""

from __future__ import annotations

import ast

from .layers import layer_state
from .modules import is_layer_attribute
from .vocabulary import FACTORY_NAMES

_REGISTERS = ("register_buffer", "register_parameter")


def state_attributes(names, class_name: str) -> frozenset:
    """Attributes of the module-level class ``class_name`` (or a same-file base) that its
    ``__init__`` registers as a buffer or binds to an ``nn.Parameter``, and binds to nothing else."""
    return _per_class(names, "module_state", class_name, lambda: _state_of(names, class_name, set()))


def _state_of(names, class_name: str, seen: set) -> set:
    node = names.definition(class_name)
    if class_name in seen or not isinstance(node, ast.ClassDef):
        return set()
    seen.add(class_name)
    state: set = set()
    for base in names.local_bases(class_name):
        state |= _state_of(names, base, seen)
    init = _method(node, "__init__")
    if init is None or not init.args.args:
        return state
    me = init.args.args[0].arg
    other: set = set()
    for sub in ast.walk(init):
        if isinstance(sub, ast.Call) and _registers(sub, me):
            state.add(sub.args[0].value)
        elif isinstance(sub, ast.Assign):
            for target in sub.targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == me:
                    (state if _is_parameter(names, sub.value) else other).add(target.attr)
    return state - other


def _registers(call: ast.Call, me: str) -> bool:
    """``self.register_buffer("name", value)`` with a literal name and a value that is not None."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in _REGISTERS and isinstance(func.value, ast.Name)
            and func.value.id == me and len(call.args) >= 2):
        return False
    name, value = call.args[0], call.args[1]
    return isinstance(name, ast.Constant) and isinstance(name.value, str) and not (
        isinstance(value, ast.Constant) and value.value is None)


def _is_parameter(names, value: ast.expr) -> bool:
    if not isinstance(value, ast.Call):
        return False
    qualified = names.qualify_ast(value.func)
    return qualified is not None and layer_state(qualified) == "parameter"


def init_only_methods(names, class_name: str) -> frozenset:
    """Methods of ``class_name`` that only its ``__init__`` calls (``self._build(n)``): they run
    before the module can have been moved. A method nothing in the class calls is public API."""
    return _per_class(names, "init_only_methods", class_name, lambda: _init_only(names.definition(class_name)))


def _init_only(node) -> set:
    if not isinstance(node, ast.ClassDef):
        return set()
    methods = [m for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
    callers: dict = {}  # method name -> the methods that name it through ``self``
    for method in methods:
        for sub in ast.walk(method):
            if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self":
                callers.setdefault(sub.attr, set()).add(method.name)
    return {m.name for m in methods if callers.get(m.name) == {"__init__"}}


def state_methods(names, class_name: str) -> frozenset:
    """The methods whose factories may meet the module's state: in a class that registers state or builds
    layers, those (but ``__init__`` and the helpers only it calls) that call a factory by name. The rest
    cannot report, so TDV504 does not walk them."""
    return _per_class(names, "state_methods", class_name, lambda: _state_methods(names, class_name))


def _state_methods(names, class_name: str) -> set:
    node = names.definition(class_name)
    if not isinstance(node, ast.ClassDef):
        return set()
    if not state_attributes(names, class_name) and not _builds_layers(names, class_name, node):
        return set()
    skip = init_only_methods(names, class_name) | {"__init__"}
    return {m.name for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
            and m.name not in skip and _calls_factory(m)}


def _builds_layers(names, class_name: str, node: ast.ClassDef) -> bool:
    if names.local_bases(class_name):
        return True  # a same-file base may build them
    init = _method(node, "__init__")
    if init is None:
        return False
    attrs = {t.attr for sub in ast.walk(init) if isinstance(sub, ast.Assign)
             for t in sub.targets if isinstance(t, ast.Attribute)}
    return any(is_layer_attribute(names, class_name, attr) for attr in attrs)


def _calls_factory(method) -> bool:
    for sub in ast.walk(method):
        if isinstance(sub, ast.Call):
            func = sub.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if name in FACTORY_NAMES:
                return True
    return False


def _per_class(names, key: str, class_name: str, compute) -> frozenset:
    """``compute()``'s answer for ``class_name``, computed once per file (``names.facts[key]``)."""
    facts = names.facts.setdefault(key, {})
    found = facts.get(class_name)
    if found is None:
        found = facts[class_name] = frozenset(compute())
    return found


def _method(node: ast.ClassDef, name: str):
    for stmt in node.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
            return stmt
    return None
