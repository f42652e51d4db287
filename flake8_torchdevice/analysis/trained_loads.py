"""Loads a function runs after it has trained a model (TDV201's evidence).

``for epoch in range(n): ... loss.backward() ...`` (an early stopper saving the best model on the way), then
``model.load_state_dict(torch.load(best_path))``; ``trainer.fit()`` then ``torch.load(glob(...)[0])``: the file a
load reads after training, in the same function and the same run, is that run's best or last model, written on
the machine that reads it back. Training is a statement that runs unconditionally at its place in the block: a
loop whose body calls ``.backward()``, an optimizer's ``.step()`` or a training routine, or a call of a training routine
(``train(...)``, ``train_model(...)``, ``trainer.fit()``, ``trainer.train()``), also inside ``with`` and ``try``;
an ``if`` that may train is none (``if args.train: train()`` then a load: in an evaluation run the file is another
run's). A load counts when it follows such a statement in its block or in a block around it, inside the function,
and its path is not named for another run's file (``args.resume``, ``opt.pretrained``, ``init_weights``); so do
the loads of a function that every call in this file makes after training (``test()`` at the end of ``train()``).

Read from the ``ast`` once per file; keys are (the innermost function's name, or "" for module code, the path
argument's key as ``run_order.path_key`` gives it).
"""

from __future__ import annotations

import ast
import re

from ..ast_helpers import (
    AST_DEFINITIONS, ast_dotted_name, ast_nodes_outside_definitions, ast_own_nodes, ast_parameters,
)
from .checkpoints import TORCH_LOADS
from .run_order import path_argument, path_key

# ``train(...)``, ``train_model(...)``, ``train_one_epoch``, ``model_train``, ``fit``; not ``train_test_split``,
# ``train_loader(...)`` nor ``is_train()``.
_TRAINING = re.compile(
    r"^(fit|train|training|run_training|(?!is_)\w+_train|train_(model|models|net|network|loop|step|steps|and_\w+)"
    r"|train_\w*epochs?)$")
# Who runs a training when asked to ``fit`` (scikit-learn's ``scaler.fit(x)`` does not).
_FITTER = re.compile(r"(?i)trainer|model|net|learner|engine|runner")
# A file named as another run's (``args.resume``, ``opt.pretrained``), even where read after training.
_ANOTHER_RUNS = re.compile(r"(?i)resume|pretrain|restore|teacher|init")
_OPTIMIZER = re.compile(r"(?i)optim|^opt(_\w+)?$")


def loaded_after_training(names) -> frozenset:
    """The (function name, path key) of every load that some function of this file runs after training."""
    found = names.facts.get("loaded_after_training")
    if found is None:
        found = names.facts["loaded_after_training"] = frozenset(_keys(names))
    return found


def _keys(names) -> set:
    if names.words is not None and not any(
            word in ("backward", "step") or _TRAINING.match(word) for word in names.words):
        return set()  # nothing in the file trains
    walk = _Walk(names)
    walk.block(names.module_body, "", False)
    keys = walk.keys - walk.before
    # A function that every call of this file makes after training (``test()`` at the end of ``train()``)
    # loads after training too.
    for name, afters in walk.calls.items():
        if all(afters) and name in walk.functions:
            # Not a path the caller hands in (``restore(path)``): that may name any file.
            given = {path_key(param) for param in ast_parameters(walk.functions[name])}
            body = list(ast_nodes_outside_definitions(walk.functions[name].body))
            keys |= {(name, key) for key in _load_keys(body, names) - given}
    return keys


class _Walk:
    def __init__(self, names) -> None:
        self.names = names
        self.keys: set = set()  # (function, path key) loaded after training ...
        self.before: set = set()  # ... and before it
        self.calls: dict = {}  # a called name -> whether each call of it runs after training
        self.functions: dict = {}  # a function's name -> its definition (the last one)

    def block(self, body: list, function: str, trained: bool) -> bool:
        """Walks one block in order; answers whether it trained by its end."""
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[stmt.name] = stmt
                self.block(stmt.body, stmt.name, False)
                continue
            if isinstance(stmt, AST_DEFINITIONS):  # a class: its methods
                self.block(stmt.body, function, False)
                continue
            self.note(list(ast_own_nodes(stmt)), function, trained)  # nested statements come on their own
            nested = False
            if isinstance(stmt, (ast.With, ast.AsyncWith, ast.Try)):
                # A ``with`` or ``try`` body runs in order with its block; a handler may not run.
                nested = self.block(stmt.body, function, trained)
                for handler in getattr(stmt, "handlers", []):
                    self.block(handler.body, function, trained)
                for field in ("orelse", "finalbody"):
                    self.block(getattr(stmt, field, []), function, trained or nested)
            else:
                for field in ("body", "orelse"):
                    self.block(getattr(stmt, field, None) or [], function, trained)
            trained = trained or nested or _trains(stmt)
        return trained

    def note(self, nodes: list, function: str, trained: bool) -> None:
        """Records the loads and calls among ``nodes``, a statement's own."""
        # A path also loaded before training (a resume; a handle name reused, ``f``) may be another run's.
        (self.keys if trained else self.before).update((function, key) for key in _load_keys(nodes, self.names))
        for node in nodes:
            if isinstance(node, ast.Call):
                called = (ast_dotted_name(node.func) or "").rpartition(".")[2]
                if called:
                    self.calls.setdefault(called, []).append(trained)


def _load_keys(nodes: list, names) -> set:
    """The path keys of the loads among ``nodes``."""
    keys = set()
    for node in nodes:
        if isinstance(node, ast.Call) and names.qualify_ast(node.func) in TORCH_LOADS:
            path = path_argument(node, 0)
            text = ast.unparse(path) if path is not None else ""
            key = path_key(text) if text and not _ANOTHER_RUNS.search(text) else None
            if key is not None:
                keys.add(key)
    return keys


def _trains(stmt: ast.stmt) -> bool:
    if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
        nodes = ast_nodes_outside_definitions([stmt])
        return any(isinstance(node, ast.Call) and _training_step(node) for node in nodes)
    if isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign)) and stmt.value is not None:
        return isinstance(stmt.value, ast.Call) and _training_call(stmt.value)
    return False


def _training_step(call: ast.Call) -> bool:
    """``loss.backward()``, ``optimizer.step()``, or a training routine's call, inside a loop."""
    if isinstance(call.func, ast.Attribute) and call.func.attr == "backward":
        return True
    if isinstance(call.func, ast.Attribute) and call.func.attr == "step":
        receiver = ast_dotted_name(call.func.value) or ""
        return bool(_OPTIMIZER.search(receiver.rpartition(".")[2]))
    return _training_call(call)


def _training_call(call: ast.Call) -> bool:
    dotted = ast_dotted_name(call.func) or ""
    owner, _, last = dotted.rpartition(".")
    owner = owner.rpartition(".")[2]
    if not _TRAINING.match(last):
        return False
    if last == "fit":
        return not owner or bool(_FITTER.search(owner))
    if last == "train" and owner and "train" not in owner.lower():
        # ``model.train()`` / ``model.train(False)`` only set a mode; ``trainer.train()``, ``train.train(...)`` and
        # ``agent.train(loader, epochs)`` (arguments that are no mode) run the training.
        modes = [a for a in call.args if isinstance(a, ast.Constant)] + [k for k in call.keywords if k.arg == "mode"]
        return bool(call.args or call.keywords) and not modes
    return True
