"""Files a scope loads as a data loader's data (TDV201's evidence).

``icons = torch.load("icon_4x.pt")``, then ``DataLoader(torch.cat((icons, more)), ...)`` or
``TensorDataset(x_train, y_train)``: the file holds a dataset, which a ``DataLoader`` serves from host memory
(its workers cannot share CUDA tensors, and pinning copies from the CPU), so it was written from CPU tensors. A
load counts where its result, under the name it is bound to in the same scope, reaches the data argument of a
``DataLoader`` or of a dataset class (a name ending in ``Dataset``), directly or through names bound from it by
``torch.cat`` / ``torch.stack``, a subscript or a method call (``x[:n]``, ``x.float()``).

Read from the ``ast`` once per file; keys are ``run_order``'s path keys.
"""

from __future__ import annotations

import ast

from ..ast_helpers import AST_DEFINITIONS, ast_dotted_name
from .checkpoints import TORCH_LOADS
from .run_order import path_argument, path_key

_DATASETS = ("Dataset", "DataSet")
_JOINS = frozenset({"torch.cat", "torch.concat", "torch.concatenate", "torch.stack", "torch.vstack", "torch.hstack"})


def loaded_as_data(names) -> frozenset:
    """The path keys of the loads some scope of this file hands to a data loader."""
    found = names.facts.get("loaded_as_data")
    if found is None:
        found = names.facts["loaded_as_data"] = frozenset(_keys(names))
    return found


def _keys(names) -> set:
    if names.words is not None and not any(word == "DataLoader" or word.endswith(_DATASETS) for word in names.words):
        return set()  # no scope calls a data loader or a dataset class: nothing is fed to one
    scopes = [names.module_body]  # ``_statements`` leaves its definitions out
    scopes += [node.body for stmt in names.module_body for node in ast.walk(stmt)
               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    keys: set = set()
    for body in scopes:
        keys |= _scope_keys(body, names)
    return keys


def _statements(body: list):
    """A scope's statements and the blocks nested in them, not nested definitions."""
    pending = list(reversed(body))
    while pending:
        stmt = pending.pop()
        if isinstance(stmt, AST_DEFINITIONS):
            continue
        yield stmt
        for field in ("body", "orelse", "finalbody", "handlers"):
            pending.extend(reversed(getattr(stmt, field, []) or []))


_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)


def _own_nodes(stmt: ast.stmt):
    """The nodes of ``stmt`` itself: all of a simple statement, the header of a compound one (its nested
    statements come on their own)."""
    if not isinstance(stmt, _COMPOUND):
        return ast.walk(stmt)
    heads = [getattr(stmt, name, None) for name in ("test", "iter", "target")]
    heads += [item.context_expr for item in getattr(stmt, "items", ())]
    return [node for head in heads if head is not None for node in ast.walk(head)]


def _scope_keys(body: list, names) -> set:
    loaded: dict[str, set] = {}  # a name -> the path keys whose data it holds
    fed: set = set()
    for stmt in _statements(body):
        for node in _own_nodes(stmt):
            if isinstance(node, ast.Call) and _feeds_loader(node):
                for arg in [*node.args, *(k.value for k in node.keywords)]:
                    fed |= _held(arg, loaded, names)
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            keys = _held(stmt.value, loaded, names)
            if keys:
                loaded[stmt.targets[0].id] = keys
            else:
                loaded.pop(stmt.targets[0].id, None)  # rebound to something else
    return fed


def _feeds_loader(call: ast.Call) -> bool:
    """``DataLoader(...)``, ``TensorDataset(...)``, a dataset class of the project (``IconDataset(x)``)."""
    dotted = ast_dotted_name(call.func)
    last = dotted.rpartition(".")[2] if dotted else ""
    return last[:1].isupper() and (last == "DataLoader" or last.endswith(_DATASETS))


def _load_keys(call: ast.Call) -> set:
    """A ``torch.load(path)`` call's path key."""
    path = path_argument(call, 0)
    key = path_key(ast.unparse(path)) if path is not None else None
    return {key} if key is not None else set()


def _held(value: ast.expr, loaded: dict, names) -> set:
    """The path keys whose data ``value`` carries: a name bound from a load, a subscript or method call of one,
    a tuple or list of them, and a join (``torch.cat``) of those."""
    if isinstance(value, ast.Name):
        return loaded.get(value.id, set())
    if isinstance(value, ast.Subscript):
        return _held(value.value, loaded, names)
    if isinstance(value, (ast.Tuple, ast.List)):
        return set().union(*(_held(e, loaded, names) for e in value.elts)) if value.elts else set()
    if isinstance(value, ast.Call):
        qualified = names.qualify_ast(value.func)
        if qualified in TORCH_LOADS:
            return _load_keys(value)  # ``x = torch.load(p)``, ``TensorDataset(torch.load("x.pt"), ...)``
        if qualified in _JOINS and value.args:
            return _held(value.args[0], loaded, names)
        if isinstance(value.func, ast.Attribute) and not value.args:
            return _held(value.func.value, loaded, names)  # ``x.float()``, ``x.long()``
    return set()


def writes_files(names) -> bool:
    """Does the file call ``torch.save`` or a save helper anywhere (``np.save``, ``self.save``, ``fs.torch_save``,
    ``save_checkpoint``)? A dataset reading per-sample files in such a file may be reading what it wrote, from any
    device. Read from the ``ast`` once per file."""
    found = names.facts.get("writes_files")
    if found is None:
        calls = (node for stmt in names.module_body for node in ast.walk(stmt) if isinstance(node, ast.Call))
        found = names.facts["writes_files"] = any(_saves(ast_dotted_name(call.func) or "") for call in calls)
    return found


def names_a_save(last: str) -> bool:
    """``save`` or a ``*_save`` helper (``np.save``, ``self.save``, ``fs.torch_save``), by a call's last name."""
    return last == "save" or last.endswith("_save")


def _saves(dotted: str) -> bool:
    last = dotted.rpartition(".")[2]
    return names_a_save(last) or last.startswith("save_")
