"""Positions of reported nodes, mapped back to the file's lines.

LibCST computes positions by generating code, which costs more than the
parse itself; so only the top-level statements that hold a report are
generated, each on its own. Imported by the engine only once something is
reported (LibCST's metadata modules load with it).
"""

from __future__ import annotations

import bisect
from typing import Iterator, Optional

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

try:  # internal, but stable since LibCST 0.3; see _compute_positions
    from libcst.metadata.position_provider import PositionProvidingCodegenState
except ImportError:  # pragma: no cover
    PositionProvidingCodegenState = None

from .rule import Report, Violation


def file_positions(
    module: cst.Module, reports: list[Report], numbers: list[int], starts: list[int]
) -> list[tuple[Violation, Report]]:
    """Violations at file positions: line ``i`` of ``module`` is line ``numbers[i - 1]``.

    Code generation (how LibCST computes positions) costs more than the
    parse, so only the top-level statements holding a report are generated,
    each on its own; ``starts`` (from the ``ast`` tree: the first line of each
    kept top-level statement) says where each one begins. One violation per
    (line, column, code), each with the report it came from.
    """
    last = len(numbers)
    found: dict = {}
    per_statement: dict = {}
    whole = len(starts) != len(module.body)  # defensive: then generate the whole module
    for report in reports:
        node = report.node
        # Most reports are made while their statement is walked; one made
        # later (e.g. in leave_Module) is looked up in the other statements.
        for candidate in [-1] if whole else _statement_order(report.statement, len(module.body)):
            if candidate not in per_statement:
                per_statement[candidate] = _statement_positions(module, candidate, numbers, starts)
            offset, positions = per_statement[candidate]
            if node in positions:
                break
        where = positions[node]
        start, end = where.start.line + offset, where.end.line + offset
        line, end_line = numbers[min(start, last) - 1], numbers[min(end, last) - 1]
        key = (line, where.start.column, report.rule.CODE)
        violation = Violation(report.rule.CODE, line, where.start.column, report.message, end_line, where.end.column)
        found.setdefault(key, (violation, report))
    return [found[key] for key in sorted(found)]


def _statement_order(index: Optional[int], count: int) -> Iterator[int]:
    """``index`` first, then the others (lazily: nearly every report is
    found in its own statement)."""
    if index is not None:
        yield index
    yield from (i for i in range(count) if i != index)


def _statement_positions(module: cst.Module, index: int, numbers: list[int], starts: list[int]):
    """(line offset, positions) for ``module.body[index]`` generated alone;
    index -1: the whole module."""
    if index < 0:
        return 0, _compute_positions(module)
    statement = module.body[index]
    alone = module.with_changes(body=[statement], header=(), footer=())
    # Line 1 of ``alone`` is the first of the statement's leading (blank or
    # comment) lines, one line each, just above its first line.
    first = bisect.bisect_left(numbers, starts[index]) + 1 - len(statement.leading_lines)
    return first - 1, _compute_positions(alone)


def _compute_positions(module: cst.Module):
    """PositionProvider's result without MetadataWrapper's extra visit of the
    whole tree: that visit cost as much as the code generation itself
    (measured). Falls back to the public API if LibCST's internals change."""
    try:
        provider = PositionProvider()
        state = PositionProvidingCodegenState(
            default_indent=module.default_indent, default_newline=module.default_newline, provider=provider
        )
        module._codegen(state)
        return provider._computed
    except (AttributeError, TypeError):  # pragma: no cover - other LibCST versions
        return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
