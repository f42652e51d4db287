"""The engine: source text in, violations out. Shared by the flake8 plugin and
the standalone CLI so that no rule is implemented twice.

Pipeline per file, cheapest first:
1. each rule's ``TRIGGER`` regex over the raw text -- most files stop here;
2. the stdlib ``ast`` tree (free under flake8) maps the hits to statements
   and seeds the import/alias map;
3. LibCST parses only those statements (the kept lines alone) -- once;
4. one batched walk runs every triggered rule;
5. positions are computed only if something was reported, and mapped back
   to the file's line numbers.
"""

from __future__ import annotations

import ast
import bisect
import gc
import logging
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Optional, Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

try:  # internal, but stable since LibCST 0.3; see _compute_positions
    from libcst.metadata.position_provider import PositionProvidingCodegenState
except ImportError:  # pragma: no cover
    PositionProvidingCodegenState = None

from .names import NAME_BINDING_NODES, NameResolver, resolver_from_ast, update_from_cst
from .rules import ALL_RULES
from .rules.base import Rule, Violation
from .selection import StatementIndex, compact
from .walk import BatchedWalker

LOG = logging.getLogger("flake8_torchdevice")

__all__ = ["Result", "FileContext", "check_source", "Violation"]


@dataclass
class Result:
    violations: list[Violation] = field(default_factory=list)
    # One line saying why the file could not be analysed, or None.
    error: Optional[str] = None


class FileContext:
    """What a rule may know about the file being checked."""

    def __init__(self, names: NameResolver, source: str) -> None:
        self.names = names
        self.source = source
        self._reports: list[tuple[Rule, cst.CSTNode, str, Optional[int]]] = []
        self._statement: Optional[int] = None  # index in module.body being walked

    def report(self, rule: Rule, node: cst.CSTNode, message: str) -> None:
        self._reports.append((rule, node, message, self._statement))

    def _enter_statement(self, index: int) -> None:
        self._statement = index


def check_source(
    source: str,
    tree: Optional[ast.Module] = None,
    rules: Optional[Sequence[type[Rule]]] = None,
    strict: bool = False,
) -> Result:
    """Check one file. Never raises unless ``strict`` (used by our own tests)."""
    try:
        with _gc_paused():
            return _check(source, tree, ALL_RULES if rules is None else rules)
    except Exception as exc:  # noqa: BLE001 - a linter must not crash its host
        if strict:
            raise
        LOG.warning("flake8-torchdevice internal error: %r", exc)
        return Result(error=f"internal error: {type(exc).__name__}: {exc}")


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for one file.

    LibCST allocates a few hundred thousand objects for a large file, and each
    allocation burst makes the collector traverse the growing live heap: the
    time per line grew 1.4x from 1k- to 20k-line files with it, 1.25x without
    (measured). CST nodes hold no reference cycles, so reference counting
    frees them; the host's collector setting is restored, never forced on.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _check(source: str, tree: Optional[ast.Module], rules: Sequence[type[Rule]]) -> Result:
    source = _as_python_reads_it(source)
    triggered = {rule: list(rule.trigger_offsets(source)) for rule in rules}
    triggered = {rule: offsets for rule, offsets in triggered.items() if offsets}
    if not triggered:
        return Result()
    if tree is None:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            return Result(error=_syntax_message(exc))
    # Split on \n only: str.splitlines also splits on form feeds and
    # U+2028, which Python's own tokenizer does not treat as line breaks.
    lines = source.split("\n")
    keep = StatementIndex(tree).lines_to_keep(_hits(source, triggered))
    if not keep:
        return Result()
    text, numbers = compact(lines, keep)
    try:
        module = cst.parse_module(text)
    except (cst.ParserSyntaxError, RecursionError, MemoryError, ValueError) as exc:
        return Result(error=f"LibCST cannot parse this file: {_first_line(exc)}")
    context = FileContext(resolver_from_ast(tree), source)
    instances = [rule(context) for rule in triggered]
    names = context.names
    try:
        walker = BatchedWalker(
            instances, pre_visit=lambda node: update_from_cst(names, node), pre_visit_types=NAME_BINDING_NODES
        )
        walker.walk_module(module, context._enter_statement)
        if not context._reports:
            return Result()
        starts = sorted({_statement_start(stmt) for stmt in tree.body} & keep)
        return Result(violations=_positions(module, context._reports, numbers, starts))
    except RecursionError as exc:
        # LibCST's position pass (and any recursive helper) follows the tree's
        # depth: ~150 nested brackets exhaust the stack. An input limit, not a bug.
        return Result(error=_syntax_message(exc))


def _hits(source: str, triggered: dict) -> Iterable[tuple[int, str]]:
    """(line, scope) for every trigger offset, counting newlines once."""
    pairs = sorted((offset, rule.SCOPE) for rule, offsets in triggered.items() for offset in offsets)
    line, previous = 1, 0
    for offset, scope in pairs:
        line += source.count("\n", previous, offset)
        previous = offset
        yield line, scope


def _positions(module: cst.Module, reports, numbers: list[int], starts: list[int]) -> list[Violation]:
    """Violations at file positions: line ``i`` of ``module`` is line ``numbers[i - 1]``.

    Code generation (how LibCST computes positions) costs more than the
    parse, so only the top-level statements holding a report are generated,
    each on its own; ``starts`` (from the ``ast`` tree: the first line of each
    kept top-level statement) says where each one begins.
    """
    last = len(numbers)
    found = {}
    per_statement: dict = {}
    whole = len(starts) != len(module.body)  # defensive: then generate the whole module
    for rule, node, message, index in reports:
        # Most reports are made while their statement is walked; one made
        # later (e.g. in leave_Module) is looked up in the other statements.
        for candidate in [-1] if whole else _statement_order(index, len(module.body)):
            if candidate not in per_statement:
                per_statement[candidate] = _statement_positions(module, candidate, numbers, starts)
            offset, positions = per_statement[candidate]
            if node in positions:
                break
        where = positions[node]
        start, end = where.start.line + offset, where.end.line + offset
        line, end_line = numbers[min(start, last) - 1], numbers[min(end, last) - 1]
        key = (line, where.start.column, rule.CODE)
        found.setdefault(key, Violation(rule.CODE, line, where.start.column, message, end_line, where.end.column))
    return [found[key] for key in sorted(found)]


def _as_python_reads_it(source: str) -> str:
    """Drop a leading BOM and make CRLF and lone CR plain LF, as Python's
    tokenizer does: ``ast`` counts a lone CR as a line break, the engine's
    line split counts LF only, so without this the kept lines are the wrong
    ones. Line numbers match Python's and LibCST's; no column moves."""
    if source.startswith("\ufeff"):
        source = source[1:]
    if "\r" in source:
        source = source.replace("\r\n", "\n").replace("\r", "\n")
    return source


def _statement_order(index: Optional[int], count: int) -> list[int]:
    rest = [i for i in range(count) if i != index]
    return rest if index is None else [index] + rest


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


def _statement_start(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", None)
    return min([stmt.lineno] + [d.lineno for d in decorators]) if decorators else stmt.lineno


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


def _syntax_message(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        where = f" at line {exc.lineno}" if exc.lineno else ""  # NUL bytes: no line
        return f"syntax error{where}: {exc.msg}"
    if isinstance(exc, RecursionError):
        return "file is nested too deeply to analyse"
    return f"cannot parse: {_first_line(exc)}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
