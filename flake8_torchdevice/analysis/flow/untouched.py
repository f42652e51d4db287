"""Module-level layers that no code of the file moves: their CPU weights cross into the functions.

A layer module code builds (``model = nn.Linear(4, 2)``, ``net = Net()`` of a class that never moves)
holds its weights on the CPU until some code moves it, and any function may be that code
(``model.cuda()`` in ``setup()``), or may be handed it (``train(model)``). Where the whole file
binds the name once and otherwise only calls it (``model(x)``) or its methods that leave it where
it is (``model.eval()``, ``model.parameters()``, ``model.load_state_dict(state)``), no code moves
it: a function that feeds it a placed tensor meets CPU weights (the loop of
weiaicunzai/pytorch-cifar100's ``train()`` moving its images with ``.cuda()`` for a network module
code built and never moved). Read from the ``ast`` of the whole file, so the verdict does not depend
on which units the engine parses.
"""

from __future__ import annotations

import ast
from collections import Counter

from ...ast_helpers import ast_dotted_name, ast_self_attribute
from ..still_modules import still_method
from .words import DATA_PARALLEL, LOOKING_BUILTINS, LOOKING_METHODS

# Methods of a module that neither move it nor hand it elsewhere.
STILL_METHODS = frozenset({
    "eval", "train", "forward", "parameters", "named_parameters", "buffers", "named_buffers", "modules",
    "named_modules", "children", "named_children", "state_dict", "load_state_dict", "zero_grad", "requires_grad_",
})


def untouched(names, candidates: set) -> set:
    """Those of ``candidates`` (module-level names bound to a CPU layer) that the file binds once and
    otherwise only calls, directly or through ``STILL_METHODS``."""
    if not candidates:
        return set()
    still: set = set()  # ids of the Name nodes of those calls
    uses: list = []
    for statement in names.module_body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and node.id in candidates:
                uses.append(node)
            elif isinstance(node, ast.Call):
                still.update(id(name) for name in _still_callee(node.func))
                if isinstance(node.func, ast.Name) and node.func.id in LOOKING_BUILTINS or \
                        isinstance(node.func, ast.Attribute) and node.func.attr in LOOKING_METHODS:
                    still.update(id(arg) for arg in node.args if isinstance(arg, ast.Name))
            elif isinstance(node, ast.Assign):
                still.update(_rewrapped(names, node))
            elif isinstance(node, ast.If):
                still.update(_alternatives(node, candidates))
    return _bound_once_and_still(uses, still, lambda use: use.id)


def _alternatives(node: ast.If, candidates: set) -> list:
    """``if n_gpu > 1: model = nn.DataParallel(Net())`` / ``else: model = Net()``: the ids of the second and later
    bindings of a name each arm of an ``if`` chain binds at most once, at the arm's top level (one binding runs)."""
    arms = _arms(node)
    inside = Counter(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    found = []
    for name in candidates:
        stores = [[target for stmt in arm if isinstance(stmt, ast.Assign) for target in stmt.targets
                   if isinstance(target, ast.Name) and target.id == name] for arm in arms]
        if all(len(arm) <= 1 for arm in stores) and inside[name] == sum(map(len, stores)) > 1:
            found.extend(id(arm[0]) for arm in [arm for arm in stores if arm][1:])
    return found


def _arms(node: ast.If) -> list:
    """The bodies of an ``if`` / ``elif`` / ``else`` chain."""
    arms = [node.body]
    while len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
        node = node.orelse[0]
        arms.append(node.body)
    return arms + [node.orelse] if node.orelse else arms


def _rewrapped(names, node: ast.Assign) -> list:
    """``model = nn.DataParallel(model)``: the ids of both of its ``model`` names. The wrapper holds the module
    where it is, under the same name (the flow keeps its CPU weights: ``statements.small``)."""
    value = node.value
    if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name) or not isinstance(value, ast.Call):
        return []
    inner = value.args[0] if value.args else None
    if not (isinstance(inner, ast.Name) and inner.id == node.targets[0].id):
        return []
    return [id(node.targets[0]), id(inner)] if names.qualify_ast(value.func) in DATA_PARALLEL else []


def _still_callee(func: ast.expr, kind: type = ast.Name, names=None) -> list:
    """The module name (or ``kind`` node: an attribute) a call leaves where it is: ``model`` of
    ``model(x)`` or ``model.eval()``; with ``names``, also of a method of a still class of the file
    (``self.net.distribution(obs)``, ``still_modules.still_method``)."""
    if isinstance(func, ast.Attribute) and isinstance(func.value, kind) and (
        func.attr in STILL_METHODS or names is not None and still_method(names, func.attr)
    ):
        return [func.value]
    if isinstance(func, kind):
        return [func]
    return []


_PLAIN_BASES = frozenset({"object", "ABC", "abc.ABC", "Generic", "typing.Generic"})


def untouched_attributes(names, cls_name: str, candidates: set) -> set:
    """Those of ``candidates`` (``self.x`` names the setup methods of the top-level class ``cls_name``
    bind to a CPU layer) that stay on the CPU: the class is no module (``_plain_class``), and the whole
    file binds ``.x`` once and otherwise only calls it, directly or through ``STILL_METHODS``
    (``self.net(obs)``, ``self.net.eval()``, ``Adam(self.net.parameters())``), whatever the receiver."""
    tree = names.definition(cls_name)
    if not candidates or not isinstance(tree, ast.ClassDef) or not _plain_class(names, tree, set()):
        return set()
    attributes = {name.partition(".")[2] for name in candidates}
    still: set = set()  # ids of the Attribute nodes of those calls
    uses: list = []
    for statement in names.module_body:
        other = isinstance(statement, ast.ClassDef) and statement is not tree  # its ``self.x`` is another object's
        for node in ast.walk(statement):
            if isinstance(node, ast.Attribute) and node.attr in attributes and not (other and ast_self_attribute(node)):
                uses.append(node)
            elif isinstance(node, ast.Call):
                still.update(id(part) for part in _still_callee(node.func, ast.Attribute, names))
    return {"self." + name for name in _bound_once_and_still(uses, still, lambda use: use.attr)}


def _bound_once_and_still(uses: list, still: set, name_of) -> set:
    """The names (``name_of(use)``) of ``uses`` stored exactly once and otherwise used only by the calls
    whose nodes' ids are ``still``. A candidate without a use is not bound once: left out."""
    bindings: dict = {}
    touched = set()
    for use in uses:
        if isinstance(use.ctx, ast.Store):
            if id(use) not in still:  # a rewrap, or another arm's binding of one ``if`` chain, binds no new module
                bindings[name_of(use)] = bindings.get(name_of(use), 0) + 1
        elif id(use) not in still:
            touched.add(name_of(use))
    return {name for name, count in bindings.items() if count == 1 and name not in touched}


def _plain_class(names, node: ast.ClassDef, seen: set) -> bool:
    """A class no code can move as a module: it defines no ``forward`` / ``__call__``, and each base is
    ``object``-like or a plain class of this file."""
    seen.add(node.name)
    if any(isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) and member.name in ("forward", "__call__")
           for member in node.body):
        return False
    for base in node.bases:
        dotted = ast_dotted_name(base.value if isinstance(base, ast.Subscript) else base)
        if dotted is None:
            return False
        if dotted in _PLAIN_BASES:
            continue
        definition = names.definition(dotted)
        if not isinstance(definition, ast.ClassDef) or dotted in seen or not _plain_class(names, definition, seen):
            return False  # an imported base may be a module (``MiniGPTBase``, held out: two false findings)
    return True
