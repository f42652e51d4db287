"""The engine: source text in, violations out. Shared by the flake8 plugin and
the standalone CLI so that no rule is implemented twice.

Pipeline per file, cheapest first:
1. each rule's ``TRIGGER`` regex over the raw text -- most files stop here;
2. the stdlib ``ast`` tree (free under flake8) maps the hits to statements
   and seeds the import/alias map;
3. LibCST parses only those statements (other lines blanked) -- once;
4. one batched walk runs every triggered rule;
5. positions are computed only if something was reported.
"""

from __future__ import annotations

import ast
import logging
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from .names import NameResolver, resolver_from_ast, update_from_cst
from .rules import ALL_RULES
from .rules.base import Rule, Violation
from .selection import StatementIndex, blank_except
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
        self._reports: list[tuple[Rule, cst.CSTNode, str]] = []

    def report(self, rule: Rule, node: cst.CSTNode, message: str) -> None:
        self._reports.append((rule, node, message))


def check_source(
    source: str,
    tree: Optional[ast.Module] = None,
    rules: Optional[Sequence[type[Rule]]] = None,
    strict: bool = False,
) -> Result:
    """Check one file. Never raises unless ``strict`` (used by our own tests)."""
    try:
        return _check(source, tree, ALL_RULES if rules is None else rules)
    except Exception as exc:  # noqa: BLE001 - a linter must not crash its host
        if strict:
            raise
        LOG.warning("flake8-torchdevice internal error: %r", exc)
        return Result(error=f"internal error: {type(exc).__name__}: {exc}")


def _check(source: str, tree: Optional[ast.Module], rules: Sequence[type[Rule]]) -> Result:
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
    try:
        module = cst.parse_module(blank_except(lines, keep))
    except (cst.ParserSyntaxError, RecursionError, MemoryError, ValueError) as exc:
        return Result(error=f"LibCST cannot parse this file: {_first_line(exc)}")
    context = FileContext(resolver_from_ast(tree), source)
    instances = [rule(context) for rule in triggered]
    names = context.names
    BatchedWalker(instances, pre_visit=lambda node: update_from_cst(names, node)).walk(module)
    return Result(violations=_positions(module, context._reports))


def _hits(source: str, triggered: dict) -> Iterable[tuple[int, str]]:
    """(line, scope) for every trigger offset, counting newlines once."""
    pairs = sorted((offset, rule.SCOPE) for rule, offsets in triggered.items() for offset in offsets)
    line, previous = 1, 0
    for offset, scope in pairs:
        line += source.count("\n", previous, offset)
        previous = offset
        yield line, scope


def _positions(module: cst.Module, reports) -> list[Violation]:
    if not reports:
        return []
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    found = {}
    for rule, node, message in reports:
        where = positions[node]
        key = (where.start.line, where.start.column, rule.CODE)
        found.setdefault(
            key,
            Violation(rule.CODE, where.start.line, where.start.column, message, where.end.line, where.end.column),
        )
    return [found[key] for key in sorted(found)]


def _syntax_message(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        return f"syntax error at line {exc.lineno}: {exc.msg}"
    if isinstance(exc, RecursionError):
        return "file is nested too deeply to analyse"
    return f"cannot parse: {_first_line(exc)}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__

