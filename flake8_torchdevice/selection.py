"""Choose the code of a file that LibCST has to parse, mechanically.

LibCST parsing costs ~14x ``ast.parse`` and most of a real file cannot hold
a finding. The only knowledge used here is what rules declare (``NEEDS``
words and ``SCOPE``) and what the shared analyses declare as context; no
rule's logic is repeated. Units of code, from the ``ast`` tree:

- a *member*: a top-level function, a member of a top-level class (nested
  classes recursively), or a module-level statement;
- a unit is kept when it holds a needed word (``words``) of a rule that can
  report in this file; for ``FUNCTION`` scope, a word in module-level code
  keeps all module-level code (it is one scope for data flow); for
  ``CLASS`` scope, a word in a class keeps the whole top-level class;
- context, always kept with them: the header and decorators of every
  enclosing class (a def's decorators are part of it), and every
  module-level and class-level statement holding a context word (guards,
  early exits, ``pytestmark``: see ``analysis.guards.CONTEXT_WORDS``).

``compact`` then joins the kept lines alone, keeping their columns and a
map back to their line numbers.
"""

from __future__ import annotations

import ast
import bisect
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from .rule import CLASS, STATEMENT

# Module-level statements longer than this are parsed only for a word inside
# them: flow-sensitive rules want the assignments around a module-level hit,
# not giant literal tables (torch's 11,290-line ``op_db`` list took 290 MiB).
LARGE_STATEMENT_LINES = 200
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def statement_start(stmt: ast.stmt) -> int:
    """First line of ``stmt``, its decorators included."""
    decorators = getattr(stmt, "decorator_list", None)
    return min([stmt.lineno] + [d.lineno for d in decorators]) if decorators else stmt.lineno


def _end(stmt: ast.stmt) -> int:
    return stmt.end_lineno or stmt.lineno


@dataclass
class _Member:
    start: int
    end: int  # inclusive
    header_end: int = 0  # a class: the last line before its first body statement
    is_def: bool = False
    members: list = field(default_factory=list)  # a class's body statements


def _member(stmt: ast.stmt) -> _Member:
    is_class = isinstance(stmt, ast.ClassDef) and bool(stmt.body)
    members = [_member(child) for child in stmt.body] if is_class else []
    header_end = max(stmt.lineno, members[0].start - 1) if members else 0
    return _Member(statement_start(stmt), _end(stmt), header_end, isinstance(stmt, _DEFS), members)


class StatementIndex:
    """Line spans of top-level statements and of the members of classes."""

    def __init__(self, tree: ast.Module) -> None:
        self.top = [_member(stmt) for stmt in tree.body]
        self._starts = [m.start for m in self.top]

    def top_at(self, line: int):
        i = bisect.bisect_right(self._starts, line) - 1
        if i >= 0 and line <= self.top[i].end:
            return self.top[i]
        return None

    def starts(self) -> list[int]:
        return list(self._starts)


@dataclass(frozen=True)
class Hit:
    line: int
    scope: str  # a rule's SCOPE, or CONTEXT for a context word
    rule: object = None


CONTEXT = "context"


def lines_to_keep(index: StatementIndex, hits: Iterable[Hit]) -> set[int]:
    """The 1-based lines to parse for ``hits`` (see the module doc)."""
    keep: set[int] = set()
    module_code = False
    context: list[tuple[_Member, int]] = []
    for hit in hits:
        top = index.top_at(hit.line)
        if top is None:
            continue
        if hit.scope == CONTEXT:
            context.append((top, hit.line))
        elif not top.is_def:
            module_code = module_code or hit.scope != STATEMENT
            _add(keep, top)
        elif hit.scope == CLASS or not top.members:
            _add(keep, top)
        else:
            _keep_member(keep, top, hit.line)
    if module_code:
        for top in index.top:
            if not top.is_def and top.end - top.start < LARGE_STATEMENT_LINES:
                _add(keep, top)
    for top, line in context:
        if not top.is_def:
            if top.end - top.start < LARGE_STATEMENT_LINES:
                _add(keep, top)
        elif top.members and top.start in keep:  # a class already kept: its class-level guards
            _keep_class_statement(keep, top, line)
    return keep


def _add(keep: set[int], member: _Member) -> None:
    keep.update(range(member.start, member.end + 1))


def _keep_member(keep: set[int], cls: _Member, line: int) -> None:
    """Keep the innermost member of ``cls`` holding ``line``, and the headers
    of the classes around it."""
    keep.update(range(cls.start, cls.header_end + 1))
    for member in cls.members:
        if member.start <= line <= member.end:
            if member.members:
                _keep_member(keep, member, line)
            else:
                _add(keep, member)
            return
    # A word in the header (a decorator, a base): a class needs a body to
    # parse, and its first member is one.
    first = cls.members[0]
    if first.members:
        _keep_member(keep, first, first.start)
    else:
        _add(keep, first)


def _keep_class_statement(keep: set[int], cls: _Member, line: int) -> None:
    """A context word in a kept class: keep the class-level statement (not a
    def) holding it."""
    for member in cls.members:
        if member.start <= line <= member.end:
            if member.members and member.start in keep:
                _keep_class_statement(keep, member, line)
            elif not member.is_def and member.end - member.start < LARGE_STATEMENT_LINES:
                _add(keep, member)
            return


def compact(lines: Sequence[str], keep: set[int]) -> tuple[str, list[int]]:
    """The kept lines alone, joined, and the original number of each line.

    What the engine parses: LibCST builds a node for every blank line, so
    parsing the blanked file costs ~2x parsing the kept lines alone (measured
    on the torch sources). Kept spans are whole statements (or a class header
    and whole members), so the text stays valid Python with the same columns;
    line ``i`` of the text is line ``numbers[i - 1]`` of the file.
    """
    numbers = sorted(keep)
    return "\n".join([lines[number - 1] for number in numbers]), numbers
