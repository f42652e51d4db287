"""The engine: source text in, violations out. Shared by the flake8 plugin and
the standalone CLI so that no rule is implemented twice.

Pipeline per file, cheapest first:
1. each rule's trigger (a text scan) over the raw text -- most files stop
   here, and LibCST is never imported for them (see ``_lazy``);
2. the stdlib ``ast`` tree (free under flake8) maps the hits to statements,
   lets each rule drop hits it surely cannot report (``wants_statement``)
   and seeds the import/alias map;
3. LibCST parses only the statements kept (the kept lines alone) -- once;
4. one batched walk runs every rule with hits left;
5. positions are computed only if something was reported, and mapped back
   to the file's line numbers (``positions``).
"""

from __future__ import annotations

import ast
import gc
import logging
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Iterator, Optional, Sequence

from ._lazy import cst
from .names import NameResolver, name_binding_nodes, resolver_from_ast, update_from_cst
from .rules import ALL_RULES
from .rules.base import Rule, Violation
from .selection import StatementIndex, compact, statement_start

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

    @property
    def statement(self) -> Optional[int]:
        """Index of the top-level statement being walked (see ``Rule.report``)."""
        return self._statement

    def report(self, rule: Rule, node: cst.CSTNode, message: str, statement: Optional[int] = None) -> None:
        self._reports.append((rule, node, message, self._statement if statement is None else statement))

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
    index = StatementIndex(tree)
    hits = _wanted_hits(source, triggered, index)
    keep = index.lines_to_keep((line, rule.SCOPE) for line, rule in hits)
    if not keep:
        return Result()
    live = {rule for _, rule in hits}
    return _analyse(source, tree, keep, [rule for rule in triggered if rule in live])


def _analyse(source: str, tree: ast.Module, keep: set[int], rules: list[type[Rule]]) -> Result:
    """Parse the kept lines with LibCST, walk them once with ``rules``, and
    place what they report on the file's lines."""
    from .positions import file_positions  # LibCST's metadata and node classes: only now needed
    from .walk import BatchedWalker

    # Split on \n only: str.splitlines also splits on form feeds and
    # U+2028, which Python's own tokenizer does not treat as line breaks.
    text, numbers = compact(source.split("\n"), keep)
    try:
        module = cst.parse_module(text)
    except (cst.ParserSyntaxError, RecursionError, MemoryError, ValueError) as exc:
        return Result(error=f"LibCST cannot parse this file: {_first_line(exc)}")
    context = FileContext(resolver_from_ast(tree), source)
    names = context.names
    try:
        walker = BatchedWalker(
            [rule(context) for rule in rules],
            pre_visit=lambda node: update_from_cst(names, node),
            pre_visit_types=name_binding_nodes(),
        )
        walker.walk_module(module, context._enter_statement)
        if not context._reports:
            return Result()
        starts = sorted({statement_start(stmt) for stmt in tree.body} & keep)
        return Result(violations=file_positions(module, context._reports, numbers, starts))
    except RecursionError as exc:
        # LibCST's position pass (and any recursive helper) follows the tree's
        # depth: ~150 nested brackets exhaust the stack. An input limit, not a bug.
        return Result(error=_syntax_message(exc))


def _wanted_hits(source: str, triggered: dict, index: StatementIndex) -> list[tuple[int, type[Rule]]]:
    """(line, rule) for every trigger offset that the rule wants once it sees
    the ``ast`` statements around it (``Rule.wants_statement``)."""
    pairs = sorted(((offset, rule) for rule, offsets in triggered.items() for offset in offsets), key=itemgetter(0))
    chains: dict[int, list] = {}
    hits = []
    line, previous = 1, 0
    for offset, rule in pairs:
        line += source.count("\n", previous, offset)  # newlines counted once
        previous = offset
        if rule.FILTERS_STATEMENTS:
            if line not in chains:
                chains[line] = index.chains_at(line)
            if chains[line] and not any(rule.wants_statement(chain, source) for chain in chains[line]):
                continue
        hits.append((line, rule))
    return hits


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
