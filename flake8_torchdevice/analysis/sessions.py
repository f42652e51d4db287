"""A notebook is one session on one machine: a file it saved in an earlier cell
and reads back later was written by the same process, with whatever devices it
had. TDV201 reads ``SessionFiles``; nothing here decides a finding alone."""

from __future__ import annotations

import posixpath
import re
from typing import Iterable, Optional

from .._lazy import cst
from ..selection import statement_start
from .code import last_name, string_value, subtree

# The extensions a checkpoint's name ends in: the words whose lines the verdict reads
# (a name bound to ``"09_model.pth"`` may sit on a line with no other word of the rule).
CHECKPOINT_WORDS = frozenset({"pth", "pt", "ckpt", "tar", "bin"})


def is_notebook(filename: Optional[str]) -> bool:
    return bool(filename) and filename.endswith(".ipynb")


# The first line of a cell of a notebook kept as a script: VS Code's and Spyder's ``# %%``, nbconvert's ``# In[3]:``.
_CELL_MARKER = re.compile(r"\s*#\s*(%%|In\[[\s\d]*\]:)")


def displayed(context, module, node, index: Optional[int]) -> bool:
    """Is the expression statement ``node`` the value a notebook cell ends with: the last part of top-level
    statement ``index`` of ``module``, a statement that ends a cell (``ends_a_cell``)? Jupyter shows it."""
    if module is None or index is None or not 0 <= index < len(module.body):
        return False
    line = module.body[index]
    last = isinstance(line, cst.SimpleStatementLine) and line.body[-1] is node
    return last and ends_a_cell(context, index)


def ends_a_cell(context, index: Optional[int]) -> bool:
    """Is top-level statement ``index`` (of ``module.body``) the last of a notebook cell, whose value Jupyter
    displays? In a notebook (``context.cells``), no later statement starts in its cell; in a ``.py`` file of
    ``# %%`` cells, a cell marker follows it before the next statement, or nothing does."""
    if index is None or not 0 <= index < len(context.starts):
        return False
    first = context.starts[index]
    body = [stmt for stmt in context.names.module_body if statement_start(stmt) >= first]
    if not body:
        return False
    own = [stmt for stmt in body if statement_start(stmt) == first]
    end = max(stmt.end_lineno or stmt.lineno for stmt in own)
    following = min((statement_start(stmt) for stmt in body if statement_start(stmt) > end), default=None)
    if context.cells is not None:
        cells = context.cells
        return following is None or not (0 < first <= len(cells) and 0 < following <= len(cells)) \
            or cells[first - 1] != cells[following - 1]
    lines = context.source.split("\n")
    markers = [number for number, line in enumerate(lines, start=1) if _CELL_MARKER.match(line)]
    return bool(markers) and (following is None or any(end < number < following for number in markers))


def _pattern(expr: cst.BaseExpression) -> Optional[re.Pattern]:
    """A file-name pattern for a literal (``"models/a.pth"``) or an f-string
    (``f"07_{name}_{epochs}_epochs.pth"``): its last path part, a field matching
    anything. Only a name with an extension in its literal tail is a file name."""
    if not isinstance(expr, cst.FormattedString):
        text = string_value(expr)
        base = posixpath.basename(text) if text else ""
        return re.compile(re.escape(base)) if "." in base.strip(".") else None
    parts = []
    for part in expr.parts:
        parts.append(re.escape(part.value) if isinstance(part, cst.FormattedStringText) else ".+")
    tail = expr.parts[-1] if expr.parts else None
    if not (isinstance(tail, cst.FormattedStringText) and "." in tail.value):
        return None
    return re.compile("".join(parts).rpartition("/")[2])


class SessionFiles:
    """Mixin for a ``Rule``: in a notebook, the file names its code passed to a
    save (``torch.save``, ``utils.save_model(..., model_name="a.pth")``), directly or
    through a name bound to a literal or an f-string. ``session_saved(path)`` asks
    whether a later load reads one of them back."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._session = is_notebook(self.context.filename)
        self._strings: dict[str, cst.BaseExpression] = {}  # name -> the literal or f-string bound to it
        self._session_files: list[re.Pattern] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        super_visit = getattr(super(), "visit_Assign", None)
        if super_visit is not None:
            super_visit(node)
        if self._session and isinstance(node.value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    self._strings[target.target.value] = node.value

    def note_session_save(self, call: cst.Call, is_save: bool) -> None:
        """Call for every call; ``is_save`` for ``torch.save`` under any alias."""
        if not self._session or not (is_save or "save" in (last_name(call.func) or "").lower()):
            return
        through = getattr(self, "opened_path", lambda expr: expr)  # RoundTrips': ``f`` of ``with open(p) as f``
        for arg in call.args:
            for expr in self._string_values(through(arg.value)):
                pattern = _pattern(expr)
                if pattern is not None:
                    self._session_files.append(pattern)

    def session_saved(self, path: Optional[cst.BaseExpression]) -> bool:
        """Does a notebook load ``path``, a file an earlier cell saved?"""
        if not self._session or path is None or not self._session_files:
            return False
        for expr in self._string_values(path):
            text = string_value(expr) if not isinstance(expr, cst.FormattedString) else None
            base = posixpath.basename(text) if text else None
            if base and any(pattern.fullmatch(base) for pattern in self._session_files):
                return True
        return False

    def _string_values(self, expr: cst.BaseExpression) -> Iterable[cst.BaseExpression]:
        for node in subtree(expr):
            if isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
                yield node
            elif isinstance(node, cst.Name) and node.value in self._strings:
                yield self._strings[node.value]
