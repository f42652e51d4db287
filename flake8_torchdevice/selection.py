"""Choose the few statements of a file that LibCST has to parse.

LibCST parsing costs ~14x ``ast.parse`` and most of a real file cannot match
any rule. Each rule names trigger offsets (cheap regex hits); we map them to
the enclosing top-level statement -- or, for a class, the enclosing method --
with the ``ast`` tree we already have, and parse only those lines
(``compact``), keeping their columns and a map back to their line numbers.
"""

from __future__ import annotations

import ast
import bisect
from dataclasses import dataclass
from typing import Iterable, Sequence

# How much context a trigger needs around it.
MEMBER = "member"  # the enclosing function; for methods, the method + class header
TOPLEVEL = "toplevel"  # the whole enclosing top-level statement (e.g. a class)
# As MEMBER, but a hit in plain module-level code (outside any def or class)
# is dropped: for rules that only report inside functions, it saves parsing
# all module-level code (e.g. torch's op tables full of factory calls).
FUNCTION = "function"
# As MEMBER, but a hit in module-level code keeps only its own statement: for
# rules that judge one expression and need no module-level data flow.
STATEMENT = "statement"
# Module-level statements longer than this are parsed only for a hit inside
# them: flow-sensitive rules want the assignments around a module-level hit,
# not giant literal tables (torch's 11,290-line ``op_db`` list took 290 MiB).
LARGE_STATEMENT_LINES = 200


def statement_start(stmt: ast.stmt) -> int:
    """First line of ``stmt``, its decorators included."""
    decorators = getattr(stmt, "decorator_list", None)
    return min([stmt.lineno] + [d.lineno for d in decorators]) if decorators else stmt.lineno


@dataclass
class _Span:
    start: int
    end: int  # inclusive
    module_level: bool  # plain module code (not a def or class)
    members: list  # for a class: see _members
    header_end: int  # for a class: last line before its first body statement
    defs: list  # for module-level code: (start, end) of defs/classes nested in if/try/with


class StatementIndex:
    """Line spans of top-level statements, and of the members of top-level classes."""

    def __init__(self, tree: ast.Module) -> None:
        self._body = tree.body
        self.spans: list[_Span] = []
        for stmt in tree.body:
            members: list = []
            header_end = stmt.lineno
            if isinstance(stmt, ast.ClassDef) and stmt.body:
                members = _members(stmt)
                header_end = max(stmt.lineno, members[0][0] - 1)
            self.spans.append(
                _Span(
                    start=statement_start(stmt),
                    end=stmt.end_lineno or stmt.lineno,
                    module_level=not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)),
                    members=members,
                    header_end=header_end,
                    defs=[] if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                    else list(_nested_defs(stmt)),
                )
            )
        self._starts = [s.start for s in self.spans]

    def _span_at(self, line: int):
        i = bisect.bisect_right(self._starts, line) - 1
        if i >= 0 and line <= self.spans[i].end:
            return self.spans[i]
        return None

    def chains_at(self, line: int) -> list[list[ast.stmt]]:
        """The statements enclosing ``line``, outermost first: one chain per
        innermost statement (``a = 1; x.to(d)`` has two)."""
        i = bisect.bisect_right(self._starts, line) - 1
        if i < 0 or line > self.spans[i].end:
            return []
        chains: list[list[ast.stmt]] = []
        _descend(self._body[i], line, [], chains)
        return chains

    def lines_to_keep(self, hits: Iterable[tuple[int, str]]) -> set[int]:
        """``hits`` are (line, scope) pairs; returns the 1-based lines to parse."""
        keep: set[int] = set()
        want_module_code = False
        for line, scope in hits:
            span = self._span_at(line)
            if span is None:
                continue
            if span.module_level:
                if scope == FUNCTION and _member_at(span.defs, line) is None:
                    continue
                want_module_code = want_module_code or scope != STATEMENT
                keep.update(range(span.start, span.end + 1))
                continue
            if scope != TOPLEVEL and span.members and _keep_member(keep, span.members, line):
                keep.update(range(span.start, span.header_end + 1))
                continue
            keep.update(range(span.start, span.end + 1))
        if want_module_code:
            # Module-level code is one scope: flow-sensitive rules need all of it.
            for span in self.spans:
                if span.module_level and span.end - span.start < LARGE_STATEMENT_LINES:
                    keep.update(range(span.start, span.end + 1))
        return keep


def _descend(stmt: ast.stmt, line: int, outer: list, chains: list) -> None:
    chain = outer + [stmt]
    found = len(chains)
    for body in _bodies(stmt):
        for child in body:
            if statement_start(child) <= line <= (child.end_lineno or child.lineno):
                _descend(child, line, chain, chains)
    if len(chains) == found:
        chains.append(chain)


def _bodies(stmt: ast.stmt) -> Iterable[list]:
    """The statement lists nested in ``stmt`` (``match`` cases and ``except``
    handlers included)."""
    for name in ("body", "orelse", "finalbody"):
        body = getattr(stmt, name, None)
        if body:
            yield body
    for holder in getattr(stmt, "handlers", ()) or getattr(stmt, "cases", ()):
        yield holder.body


def _nested_defs(stmt: ast.stmt) -> Iterable[tuple[int, int]]:
    """Spans of defs/classes inside module-level ``if``/``try``/``with``/loops/``match``."""
    for body in _bodies(stmt):
        for child in body:
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield (statement_start(child), child.end_lineno or child.lineno)
            else:
                yield from _nested_defs(child)


def _members(cls: ast.ClassDef) -> list:
    """(start, end, header_end, members) of each body statement; nested
    classes carry their own members, so a hit in a method of a class nested
    in a class (torch's 10k-line test classes) keeps that method only."""
    out = []
    for member in cls.body:
        nested = _members(member) if isinstance(member, ast.ClassDef) and member.body else []
        header_end = max(member.lineno, nested[0][0] - 1) if nested else 0
        out.append((statement_start(member), member.end_lineno or member.lineno, header_end, nested))
    return out


def _keep_member(keep: set, members: Sequence[tuple], line: int) -> bool:
    """Add the innermost member holding ``line`` (and nested class headers)."""
    for start, end, header_end, nested in members:
        if start <= line <= end:
            if nested and _keep_member(keep, nested, line):
                keep.update(range(start, header_end + 1))
            else:
                keep.update(range(start, end + 1))
            return True
    return False


def _member_at(members: Sequence[tuple[int, int]], line: int):
    for start, end in members:
        if start <= line <= end:
            return (start, end)
    return None


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
