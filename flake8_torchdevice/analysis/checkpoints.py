"""Loaders that take ``map_location``: TDV201 (``torch.load``) and TDV202
(``torch.jit.load``, ``load_state_dict_from_url``) share the test for it,
the round-trip exemption and the fix, one home each."""

from __future__ import annotations

import re
from typing import Optional

from .._lazy import cst
from ..fixes import edit
from .code import argument, layout_free, subtree
from .guards import else_blocks
from ..rule import Fix, is_none

TORCH_LOADS = frozenset({"torch.load", "torch.serialization.load"})
TORCH_SAVES = frozenset({"torch.save", "torch.serialization.save"})


def file_argument(call: cst.Call, position: int, keyword: str = "f") -> Optional[tuple]:
    """The file argument (``f``) of a save or load call, as a layout-free key:
    the same expression (``path``, ``os.path.join(tmp, "x")``) names the same
    file within one scope."""
    for index, arg in enumerate(call.args):
        if (arg.keyword is None and not arg.star and index == position) or (
            arg.keyword is not None and arg.keyword.value == keyword
        ):
            return layout_free(arg.value)
    return None


def file_template(call: cst.Call, position: int, keyword: str = "f") -> Optional[tuple]:
    """The file argument with the variable parts of its name left out, or None where it has
    none: ``"{}.pkl".format(epoch)`` and ``"{}.pkl".format(best_epoch)``, ``f"ckpt_{step}.pt"``
    and ``f"ckpt_{best}.pt"``, ``"%d.pt" % i`` name one family of files."""
    for index, arg in enumerate(call.args):
        if (arg.keyword is None and not arg.star and index == position) or (
            arg.keyword is not None and arg.keyword.value == keyword
        ):
            holes = _holes(arg.value)
            return layout_free(arg.value, holes) if holes else None
    return None


def _holes(expr: cst.BaseExpression) -> set:
    """Ids of the variable parts of a file name: a template's ``.format`` arguments, an
    f-string's expressions, the right side of ``"..." % x``."""
    holes = set()
    for node in subtree(expr):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "format" \
                and isinstance(node.func.value, (cst.SimpleString, cst.ConcatenatedString)):
            holes.update(id(arg) for arg in node.args)
        elif isinstance(node, cst.FormattedStringExpression):
            holes.add(id(node.expression))
        elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo) \
                and isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString)):
            holes.add(id(node.right))
    return holes


def has_map_location(call: cst.Call, position: int = 1) -> bool:
    """True if ``call`` passes a non-None map_location (keyword, or the
    0-based positional ``position``), or may (``*a``/``**kw``)."""
    positional = 0
    for arg in call.args:
        if arg.star:  # *args or **kwargs may carry it: give the benefit of the doubt
            return True
        if arg.keyword is None:
            if positional == position:
                return not is_none(arg.value)
            positional += 1
        elif arg.keyword.value == "map_location":
            return not is_none(arg.value)
    return False


def cpu_map_location(call: cst.Call, position: int = 1) -> Optional[Fix]:
    """``map_location="cpu"`` added, or an explicit ``None`` replaced; no fix
    for a call without arguments (it fails anyway)."""
    return Fix(lambda updated: _with_cpu(updated, position)) if call.args else None


def _with_cpu(call: cst.Call, position: int) -> cst.Call:
    args = list(call.args)
    positional = [i for i, arg in enumerate(args) if arg.keyword is None]
    given = [i for i, arg in enumerate(args) if arg.keyword is not None and arg.keyword.value == "map_location"]
    index = given[0] if given else positional[position] if len(positional) > position else None
    cpu = cst.SimpleString(edit.CPU)
    if index is not None:  # map_location=None, by keyword or position
        args[index] = args[index].with_changes(value=cpu)
        return call.with_changes(args=args)
    return edit.add_argument(call, edit.keyword("map_location", cpu))


class RoundTrips:
    """Mixin for a ``Rule``: files written earlier in the same scope. Loading
    them back in the same process (a round trip, common in tests) cannot
    meet a missing device. A file a constructor writes is one every method of
    its object reads back in that process (``torch.save(model.state_dict(),
    "init.pt")`` in ``__init__``, the load in ``reset()``): the object exists
    only after it was written. A subclass defining these hooks calls ``super()``."""

    ROUND_TRIP_SAVES: frozenset = frozenset()  # the rule's save calls (qualified names)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._saved: list[set[tuple]] = [set()]
        # Per scope, the module's first: (is it a class body, the files written by the
        # constructor of the class it is (a class) or is a method of (a function), or None).
        self._scopes: list[tuple[bool, Optional[set]]] = [(False, None)]
        self._handles: list[dict] = [{}]  # per scope: a ``with open(path) as f`` name -> ``path``
        # An existence test's ``if`` -> the statements of its scope that run after it, as
        # (block, first index) pairs, innermost first: read only for such an ``if``.
        self._later: dict[int, tuple] = {}

    def visit_Module(self, node: cst.Module) -> None:
        parent = getattr(super(), "visit_Module", None)
        if parent is not None:
            parent(node)
        _note_later(node.body, (), self._later)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._scopes.append((True, set()))

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._scopes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if isinstance(node.body, cst.IndentedBlock):
            _note_later(node.body.body, (), self._later)
        in_class, built = self._scopes[-1]
        method_of = built if in_class else None  # a function nested in a method is no method
        self._saved.append(method_of if method_of is not None and node.name.value == "__init__" else set())
        self._scopes.append((False, method_of))
        self._handles.append({})

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._saved.pop()
        self._scopes.pop()
        self._handles.pop()

    def visit_If(self, node: cst.If) -> None:
        """A cache: ``if os.path.exists(p): x = torch.load(p)`` with ``else: ...;
        torch.save(x, p)`` reads back what this code writes on a miss, on the machine that
        made it. Its file counts as saved here for the whole ``if``, and after it."""
        parent = getattr(super(), "visit_If", None)
        if parent is not None:
            parent(node)
        path = _existence_checked(node.test)
        if path is None:
            return
        key = layout_free(path)
        # The cache may be written after the test, later in its scope (``if exists(p): return
        # torch.load(p)`` ... ``torch.save(x, p)``), not only in its ``else``.
        later = [statement for body, start in self._later.get(id(node), ()) for statement in body[start:]]
        parts = list(subtree(node)) + [part for statement in later for part in subtree(statement)]
        handles = {**self._handles[-1], **_handles_in(parts)}  # ``with open(p, "wb") as f: torch.save(x, f)``
        calls = [part for part in parts if isinstance(part, cst.Call)]
        saves = [call for call in calls
                 if self.names.qualify(call.func) in self.ROUND_TRIP_SAVES and _file_of(call, 1, handles) == key]
        if saves and not _caches_weights(node, key, saves, calls, handles):
            self._saved[-1].add(key)

    def visit_With(self, node: cst.With) -> None:
        """``with open(path, "wb") as f: torch.save(model, f)``: ``f`` names ``path``'s file."""
        parent = getattr(super(), "visit_With", None)
        if parent is not None:
            parent(node)
        self._handles[-1].update(_handles_in([node]))

    def opened_path(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        """A save's or load's file argument read through a file object: ``open(path, "rb")``
        inline, or a name a ``with open(path) as f`` bound, is ``path``; anything else, itself."""
        return _through_file_object(expr, self._handles[-1])

    def file_key(self, call: cst.Call, position: int) -> Optional[tuple]:
        """``file_argument`` through file objects (``opened_path``)."""
        return _file_of(call, position, self._handles[-1])

    def note_save(self, call: cst.Call, position: int) -> None:
        for target in (self.file_key(call, position), file_template(call, position)):
            if target:
                self._saved[-1].add(target)

    def saved_here(self, call: cst.Call) -> bool:
        """Is the file that ``call`` loads (first argument) one saved in this scope,
        or by the constructor of the object whose method this is? A name made from the same
        template as a saved one (``"{}.pkl".format(best_epoch)`` after saving
        ``"{}.pkl".format(epoch)``) is one of the files this run wrote."""
        built = self._scopes[-1][1]
        for target in (self.file_key(call, 0), file_template(call, 0)):
            if target and (target in self._saved[-1] or (built is not None and target in built)):
                return True
        return False


def _note_later(body, after: tuple, later: dict) -> None:
    """For each existence test's ``if`` in ``body`` (nested blocks included, not nested
    scopes): the statements that run after it in its scope, as (block, first index) pairs:
    those after it in its block, then ``after``, those after the enclosing statements. Kept
    as pairs, not copied lists, so that a long block costs in proportion to its length."""
    for index, statement in enumerate(body):
        rest = ((body, index + 1),) + after
        if isinstance(statement, cst.If) and _existence_checked(statement.test) is not None:
            later[id(statement)] = rest
        for block in _blocks_of(statement):
            _note_later(block.body, rest, later)


def _blocks_of(statement) -> list:
    """The indented blocks of a compound statement that belong to its scope."""
    if isinstance(statement, (cst.FunctionDef, cst.ClassDef)) or not hasattr(statement, "body"):
        return []
    blocks = [statement.body, *else_blocks(getattr(statement, "orelse", None))]
    blocks += [handler.body for handler in getattr(statement, "handlers", ())]
    final = getattr(statement, "finalbody", None)
    if final is not None:
        blocks.append(final.body)
    return [block for block in blocks if isinstance(block, cst.IndentedBlock)]


# A model's weights: what a cache of data does not hold. A model trained on a miss and saved
# from the GPU is another run's checkpoint on the next machine.
_WEIGHTS = re.compile(r"state_dict|model|net|module|encoder|decoder|generator|discriminator", re.I)


def _caches_weights(node: cst.If, key: str, saves: list, calls: list, handles: dict) -> bool:
    """Does this cache hold a model's weights? What it saves speaks of them
    (``torch.save(model.state_dict(), p)``), it loads them into a module (``load_state_dict``),
    or the name the load is bound to does (``net = torch.load(p)``). A model handed to the code
    that computes the cached data (``latents = encode(net, loader)``) is no weight in the file."""
    saved = [part for save in saves if save.args for part in subtree(save.args[0].value)]
    if any(_holds_weights(part) for part in saved):
        return True
    if any(isinstance(call.func, cst.Attribute) and call.func.attr.value == "load_state_dict" for call in calls):
        return True
    loads = {id(call) for call in calls if call not in saves and _file_of(call, 0, handles) == key}
    for part in subtree(node.body):
        if isinstance(part, cst.Assign) and any(id(inner) in loads for inner in subtree(part.value)):
            if any(_holds_weights(name) for target in part.targets for name in subtree(target.target)):
                return True
    return False


def _holds_weights(node: cst.CSTNode) -> bool:
    """``model.load_state_dict(...)``, ``torch.save(net.state_dict(), p)``, ``best_unet``: a
    name or attribute that speaks of a model's weights."""
    if isinstance(node, cst.Name):
        return bool(_WEIGHTS.search(node.value))
    return isinstance(node, cst.Attribute) and bool(_WEIGHTS.search(node.attr.value))


def _existence_checked(test: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """The path an ``if`` test checks exists: ``os.path.exists(p)``, ``osp.isfile(p)``,
    ``exists(p)``, ``p.exists()``, ``p.is_file()``, also as one operand of ``and``
    (``if cache and os.path.isfile(cache):``: the body still runs only when the file exists)."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _existence_checked(test.left) or _existence_checked(test.right)
    if not isinstance(test, cst.Call):
        return None
    func = test.func
    last = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
    if last in ("exists", "isfile") and len(test.args) == 1 and test.args[0].keyword is None:
        return test.args[0].value
    if isinstance(func, cst.Attribute) and last in ("exists", "is_file") and not test.args:
        return func.value
    return None


def _handles_in(parts) -> dict:
    """``{f: path}`` for each ``with open(path) as f`` among ``parts``."""
    handles = {}
    for part in parts:
        for item in part.items if isinstance(part, cst.With) else ():
            opened = _opened(item.item)
            if opened is not None and item.asname is not None and isinstance(item.asname.name, cst.Name):
                handles[item.asname.name.value] = opened
    return handles


def _through_file_object(expr: cst.BaseExpression, handles: dict) -> cst.BaseExpression:
    """``path`` for ``open(path, ...)`` inline or a name ``handles`` maps to it; else ``expr``."""
    opened = _opened(expr)
    if opened is not None:
        return opened
    return handles.get(expr.value, expr) if isinstance(expr, cst.Name) else expr


def _file_of(call: cst.Call, position: int, handles: dict) -> Optional[tuple]:
    """``file_argument`` read through a file object (``_through_file_object``)."""
    arg = argument(call, position, "f")
    return layout_free(_through_file_object(arg.value, handles)) if arg is not None else None


def _opened(expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """The path of ``open(path, ...)`` (the builtin, by its plain name), or None."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "open" and expr.args \
            and expr.args[0].keyword is None and not expr.args[0].star:
        return expr.args[0].value
    return None
