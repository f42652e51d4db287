"""Facts that cross scopes: what a file's module code and ``__init__`` methods prove.

A function reads the module's names: a model placed at module level (or in the
``if __name__ == "__main__":`` block that calls the functions) is placed inside
them. A method reads ``self.x`` as ``__init__`` left it, and then a ``setup`` /
``build`` method (``SETUP_METHODS``): ``self.model = Net().to(device)`` is placed in
``predict``; so is an attribute every binding of which, in any method, places it
(``flow/late.py``). Both summaries are computed once per file, from the module's walk and
one walk of each class's ``__init__`` and setup methods, and only
kinds that say where a value lives cross: placed, moved, CPU, devices and losses
from module code; placed, moved and CPU from ``__init__``.
A name the function binds itself (a parameter, an assignment) shadows the fact
from the point it is bound, as the walk is in source order.
"""

from __future__ import annotations

import ast
import re
from typing import Optional

from ..._lazy import cst
from ...ast_helpers import SETUP_METHODS, ast_dotted_name, ast_self_attribute
from ..code import code_of
from .values import CPU, DEVICE, LOSS, MOVED, PLACED, Value

# Kinds that say where a value lives (a SIBLING, an INPUT or an OBJECT belongs
# to the scope that made it).
_CROSSING = frozenset((CPU, PLACED, MOVED, DEVICE, LOSS))
# From ``__init__``, only what a word the flow rules need proves (``.to(``, a
# factory, ``device=``): the engine parses the ``__init__`` of a class whose
# methods it parses only when it holds one, and a fact must not depend on that.
_CROSSING_ATTRIBUTES = frozenset((CPU, PLACED, MOVED))

SELF = "self."


class FileFacts:
    """Per file: the module's facts, the class of each method, each class's facts."""

    def __init__(self, module: "cst.Module") -> None:
        self.globals: dict = {}
        self.classes: dict = {}  # id(method) -> its ClassDef
        self.by_class: dict = {}  # id(ClassDef) -> {"self.x": Value}
        self.late_by_class: dict = {}  # id(ClassDef) -> {"self.x": (Value, binding methods)} (flow/late.py)
        # id(ClassDef) -> {flag test: (attributes unplaced on its true path, on its false path)} (flow/flags.py)
        self.branches_by_class: dict = {}
        self.stable_by_class: dict = {}  # id(ClassDef) -> ``flags.stable_attributes``
        # The module's code sets a default device (``torch.set_default_tensor_type(
        # "torch.cuda.FloatTensor")`` under ``if args.cuda:``): its functions' factories follow it.
        self.default_device = False
        self.nccl = False  # the file starts an NCCL group: collectives need CUDA tensors
        # Top-level functions, and the parameters module code calls them with a placed value
        # (``evaluate(model, test_loader)`` after ``model = Net().to(device)``): name -> {param: Value}.
        self.functions = {s.name.value: s for s in module.body if isinstance(s, cst.FunctionDef)}
        self.top_classes = {id(s) for s in module.body if isinstance(s, cst.ClassDef)}  # flow/methods.py
        self.placed_params: dict = {}
        # Names module code binds with ``from data import train_loader``: objects another module built
        # (flow/loops.py: a loader of them is no loader of CPU batches this file shows).
        self.imported_objects = frozenset(
            name for s in module.body if isinstance(s, cst.SimpleStatementLine)
            for part in s.body if isinstance(part, cst.ImportFrom) for name in imported_names(part)
        )
        self.foreign_params: dict = {}  # top-level function -> its parameters module code gives such a loader
        self.shown_params: dict = {}  # ... and those it gives a loader it builds with torch's ``DataLoader``
        self.ready = False  # set once module code's walk has given the facts above (``start_file``)
        self._collect(module.body)

    def note_calls(self, calls: list, sole) -> None:
        """The module's calls of its own functions: a parameter given a placed value there is
        placed in the function (on a GPU machine that call runs); one given a CPU value is on the
        CPU there when ``sole(name, args)`` says that call is the function's only one
        (``flow/callers.sole_call``)."""
        for name, args in calls:
            function = self.functions.get(name)
            if function is None:
                continue
            found = self.placed_params.setdefault(name, {})
            for param, value in placed_arguments(function.params, args, cpu=sole(name, args)).items():
                found.setdefault(param, value)

    def note_foreign_calls(self, calls: list) -> None:
        """The module's calls of its own functions with a loader another module built
        (``train(EPOCHS, train_loader)``): that parameter holds it (``foreign_params``)."""
        self._note_loader_params(calls, self.foreign_params)

    def note_shown_calls(self, calls: list) -> None:
        """The module's calls of its own functions with a loader module code builds with torch's
        ``DataLoader`` (``train_loop(train_dataloader, model)``): that parameter holds it (``shown_params``)."""
        self._note_loader_params(calls, self.shown_params)

    def _note_loader_params(self, calls: list, into: dict) -> None:
        for name, args in calls:
            function = self.functions.get(name)
            if function is not None:
                found = into.setdefault(name, set())
                found.update(param_for(function.params, arg, index) for index, arg in args)
                found.discard(None)

    def shown_given(self, function: "cst.FunctionDef") -> set:
        """The parameters of the top-level ``function`` module code calls it with a loader it builds."""
        name = function.name.value
        return set(self.shown_params.get(name, ())) if self.functions.get(name) is function else set()

    def foreign_given(self, function: "cst.FunctionDef") -> set:
        """The parameters of ``function`` that hold a loader another module built: one defaulting to it
        (``def train(loader=train_loader)`` after ``from data import train_loader``), or, for a top-level
        function, one module code calls it with (``train(EPOCHS, train_loader)``)."""
        params = function.params
        found = {
            param.name.value for param in (*params.posonly_params, *params.params, *params.kwonly_params)
            if isinstance(param.default, cst.Name) and param.default.value in self.imported_objects
        }
        if self.functions.get(function.name.value) is function:
            found.update(self.foreign_params.get(function.name.value, ()))
        return found

    def given_to(self, function: "cst.FunctionDef") -> dict:
        """The placed values module code calls ``function`` with, by parameter (top-level functions only)."""
        name = function.name.value
        return self.placed_params.get(name, {}) if self.functions.get(name) is function else {}

    def _collect(self, body) -> None:
        for statement in body:
            if isinstance(statement, cst.ClassDef) and isinstance(statement.body, cst.IndentedBlock):
                for member in statement.body.body:
                    if isinstance(member, cst.FunctionDef):
                        self.classes[id(member)] = statement
                self._collect(statement.body.body)

    def setup_methods(self, cls: "cst.ClassDef") -> list:
        """``__init__`` first, then the class's setup or build methods in its order (``SETUP_METHODS``)."""
        found = [member for member in cls.body.body
                 if isinstance(member, cst.FunctionDef) and member.name.value in SETUP_METHODS]
        return sorted(found, key=lambda member: member.name.value != "__init__")


def imported_names(node) -> list:
    """The names an ``import`` / ``from ... import`` statement binds (none for ``*``)."""
    if isinstance(node.names, cst.ImportStar):
        return []
    out = []
    for alias in node.names:
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            out.append(alias.asname.name.value)
        else:
            out.append(code_of(alias.name).partition(".")[0])
    return out


def placed_arguments(params: "cst.Parameters", args: list, first: int = 0, cpu: bool = False) -> dict:
    """{parameter: Value} for each ``(Arg, Value)`` of a call that hands a placed value (and, with
    ``cpu``, a CPU one), by the parameter it binds; ``first`` positional parameters are bound already
    (a method's ``self``)."""
    kinds = (PLACED, MOVED, CPU) if cpu else (PLACED, MOVED)
    placed: dict = {}
    for index, (arg, value) in enumerate(args):
        param = param_for(params, arg, index + first)
        # With ``cpu``, a CPU device too: ``fit(model, loader, device)`` of ``device = "cpu"`` moves nothing off it.
        cpu_device = cpu and value is not None and value.kind == DEVICE and value.zero
        if param is not None and value is not None and (value.kind in kinds or cpu_device):
            placed.setdefault(param, value.derived(label=param))
    return placed


def param_for(params: "cst.Parameters", arg: "cst.Arg", index: int) -> Optional[str]:
    """The parameter that the ``index``-th argument of a call binds (positional arguments
    come first, so ``index`` is a positional one's position); None for ``*args``."""
    positional = [p.name.value for p in (*params.posonly_params, *params.params)]
    if arg.star:
        return None
    if arg.keyword is None:
        return positional[index] if index < len(positional) else None
    keyword = arg.keyword.value
    return keyword if keyword in positional or keyword in {p.name.value for p in params.kwonly_params} else None


def key_of(expr) -> Optional[str]:
    """The name the walk keeps a value under: ``x``, or ``self.x`` for an
    attribute of ``self`` (so methods see what ``__init__`` bound)."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        return SELF + expr.attr.value
    return None


def crossing(env: dict, prefix: str = "", still: frozenset = frozenset()) -> dict:
    """The facts of ``env`` another scope may read: only kinds that say where
    a value lives, labelled by their name, no longer tied to the parameters
    of the scope that made them. A layer follows its owner's (or any code's) ``.to()``:
    built on the CPU says nothing elsewhere, unless its name is in ``still``
    (``flow/untouched.py``: no code of the file moves it)."""
    facts = {}
    kinds = _CROSSING_ATTRIBUTES if prefix else _CROSSING
    for name, value in env.items():
        if name.startswith(prefix) and isinstance(value, Value) and value.kind in kinds and value.loop is None \
                and (not value.layer or name in still):
            fact = value.derived(label=name)
            fact.param = False
            facts[name] = fact
    return facts


def numpy_rebound(names, cls: "cst.ClassDef") -> frozenset:
    """``self.rot = np.repeat(...)`` in any method of the module-level class ``cls``: that attribute holds a NumPy
    array there, so what ``__init__`` placed it on says nothing in the class's other methods. Read from the class's
    ``ast`` (every method, whatever the selection kept)."""
    tree = names.definition(cls.name.value)
    if not isinstance(tree, ast.ClassDef):
        return frozenset()
    rebound = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        if not (names.resolve_dotted(ast_dotted_name(node.value.func) or "") or "").startswith("numpy."):
            continue
        rebound.update(SELF + target.attr for target in node.targets if ast_self_attribute(target))
    return frozenset(rebound)


_GLOBAL = re.compile(r"^[ \t]*global[ \t]+(\w+(?:[ \t]*,[ \t]*\w+)*)", re.M)


def declared_global(source: str) -> set:
    """The names some function declares ``global`` (``global base_image``): it may rebind them, so
    what module code bound them to says nothing in the others. Read from the text, whatever units
    the engine parses."""
    return {name.strip() for match in _GLOBAL.finditer(source) for name in match.group(1).split(",")}
