"""Loaders that take ``map_location``: TDV201 (``torch.load``) and TDV202
(``torch.jit.load``, ``load_state_dict_from_url``) share the test for it,
the round-trip exemption and the fix, one home each."""

from __future__ import annotations

from typing import Optional

from .._lazy import cst
from ..fixes import edit
from .code import layout_free
from ..rule import Fix, is_none


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

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._saved: list[set[tuple]] = [set()]
        # Per scope, the module's first: (is it a class body, the files written by the
        # constructor of the class it is (a class) or is a method of (a function), or None).
        self._scopes: list[tuple[bool, Optional[set]]] = [(False, None)]

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._scopes.append((True, set()))

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._scopes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        in_class, built = self._scopes[-1]
        method_of = built if in_class else None  # a function nested in a method is no method
        self._saved.append(method_of if method_of is not None and node.name.value == "__init__" else set())
        self._scopes.append((False, method_of))

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._saved.pop()
        self._scopes.pop()

    def note_save(self, call: cst.Call, position: int) -> None:
        target = file_argument(call, position)
        if target:
            self._saved[-1].add(target)

    def saved_here(self, call: cst.Call) -> bool:
        """Is the file that ``call`` loads (first argument) one saved in this scope,
        or by the constructor of the object whose method this is?"""
        target = file_argument(call, 0)
        built = self._scopes[-1][1]
        return target in self._saved[-1] or (built is not None and target in built)
