"""The engine: source text in, violations out. Shared by the flake8 plugin and
the standalone CLI so that no rule is implemented twice.

Pipeline per file, cheapest first:
1. the identifiers of the text: a rule none of whose ``NEEDS`` groups can be
   met is not run, and a file no rule can report in stops here (LibCST is
   never imported for it, see ``_lazy``);
2. the stdlib ``ast`` tree (free under flake8) gives the statement spans,
   module-level aliases and imports; ``selection`` keeps the units of code
   holding a needed word, with their context (guards, exits, class headers);
3. LibCST parses the kept lines alone -- once;
4. one batched walk runs every live rule;
5. positions are computed only if something was reported, and mapped back
   to the file's line numbers (``positions``).

Which codes are selected never changes a verdict: each rule's findings equal
those of the same rule run over the whole file (``full=True``), which the
equivalence tests check rule by rule.
"""

from __future__ import annotations

import ast
import bisect
import gc
import logging
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Optional, Sequence

from . import words
from ._lazy import cst
from .analysis.entry_helpers import entry_helpers
from .analysis.guards import context_words
from .analysis.self_calls import follows_self_calls
from .analysis.still_modules import still_class
from .analysis.project_models import may_build_project_models, project_constructor_words
from .names import name_binding_nodes, resolver_from_ast, scope_nodes, update_from_cst
from .rule import DEFINITION, FileContext, Report, Rule, Violation
from .rules import ALL_RULES
from .selection import (
    CONTEXT, Hit, StatementIndex, call_linked, call_partners, compact, init_readers, lines_to_keep,
    self_call_partners, statement_start, tops_to_walk,
)

LOG = logging.getLogger("flake8_torchdevice")

__all__ = ["Result", "FileContext", "check_source", "Violation"]


@dataclass
class Result:
    violations: list[Violation] = field(default_factory=list)
    # One line saying why the file could not be analysed, or None.
    error: Optional[str] = None
    # With ``keep_reports``: the report behind each violation, and the module
    # they were made on (what fixes edit).
    reports: list[Report] = field(default_factory=list)
    module: Optional[object] = None


def check_source(
    source: str,
    tree: Optional[ast.Module] = None,
    rules: Optional[Sequence[type[Rule]]] = None,
    strict: bool = False,
    filename: Optional[str] = None,
    full: bool = False,
    keep_reports: bool = False,
    parts: Optional["ParseCache"] = None,  # noqa: F821 - reparse.ParseCache, imported by its user
    cells: Optional[Sequence[int]] = None,
) -> Result:
    """Check one file: its violations, sorted, or the one-line reason it
    could not be checked (a syntax error is reported for every file).

    ``tree`` is the file's ``ast`` tree if the caller has it (flake8 does);
    ``rules`` defaults to every rule; ``filename`` (the display name) tells
    whether the file is a test; ``full`` parses and walks the whole file with
    every given rule, skipping no code and no rule for want of its words (the
    reference the selection and each rule's ``NEEDS`` are tested against, and
    what fixes use). ``parts`` (a ``reparse.ParseCache``) reuses the parse of each
    top-level statement seen before: for a process that checks one file again and again.
    ``cells`` (a notebook's joined cells: ``notebooks.VirtualModule.cells()``) gives each line's cell number, so
    that rules know which statement ends a cell (Jupyter displays its value).
    Never raises unless ``strict`` (used by our own tests).
    """
    try:
        with _gc_paused():
            chosen = ALL_RULES if rules is None else rules
            return _check(source, tree, chosen, filename, full, keep_reports, parts, cells)
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


def _check(source, tree, rules, filename, full, keep_reports, parts=None, cells=None) -> Result:
    source = _as_python_reads_it(source)
    if tree is None:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            return Result(error=_syntax_message(exc))
    present = words.identifiers(source)
    if may_build_project_models(present) and project_constructor_words(source):
        present = present | {words.bare(words.PROJECT_MODEL_CALLS)}  # a rule needing one may be live
    # The whole-file run is the reference that NEEDS claims are tested
    # against: it runs every rule, whatever words the file holds.
    live = list(rules) if full else [rule for rule in rules if words.present(rule.GROUPS, present)]
    if not live:
        return Result()
    lines = source.split("\n")  # \n only: Python does not break lines at form feeds or U+2028
    known: dict = {}
    walks = None  # every rule walks every parsed statement
    if full:
        keep = set(range(1, len(lines) + 1))
    else:
        index = StatementIndex(tree, lines)
        per_rule, context = _hits(source, tree, live, present, index)
        keep = lines_to_keep(index, [hit for hits in per_rule.values() for hit in hits] + context)
        if not keep:
            return Result()
        known = index.built_facts()  # the call graph the selection read: the flow reads the same
        # Each rule walks only the top-level statements its own hits keep: what it would see selected alone,
        # and the rest of those statements that other rules keep.
        walks = {rule: tops_to_walk(index, hits + context) for rule, hits in per_rule.items()}
    return _analyse(source, lines, tree, keep, live, filename, keep_reports, parts, known, present, cells, walks)


def _hits(source: str, tree: ast.Module, live: list, present: frozenset,
          index: StatementIndex) -> tuple[dict, list[Hit]]:
    """A hit for each line holding a word a live rule needs (or an alias of
    one), by rule, and one for each context word. For a rule whose groups must meet in one
    unit (``TOGETHER``), only lines of units that hold every group."""
    scan = _Scan(source, tree, present)
    per_rule = {rule: [Hit(line, scope) for line, scope in _rule_hits(scan, rule, index)] for rule in live}
    context = [Hit(line, CONTEXT) for word in context_words(present) for line in scan.lines_of(word)]
    return per_rule, context


class _Scan:
    """One file's word lines, each word scanned once however many rules
    want it (``.to(`` is wanted by most)."""

    def __init__(self, source: str, tree: ast.Module, present: frozenset) -> None:
        self.source, self.tree, self.present = source, tree, present
        self._lines: dict[str, list[int]] = {}
        self._aliases: dict[frozenset, set[str]] = {}
        self._breaks: Optional[list[int]] = None
        self._imported: Optional[frozenset[str]] = None
        self._assigned: Optional[frozenset] = None
        self._helpers: Optional[list[int]] = None
        self._displayed: Optional[frozenset[int]] = None
        self._names = None

    def lines_of(self, word: str) -> list[int]:
        """The line of each place ``word`` occurs (see ``words``)."""
        found = self._lines.get(word)
        if found is None:
            found = self._lines[word] = [self.line_at(offset) for offset, _ in words.offsets_of(self.source, [word])]
        return found

    def imported(self, name: str) -> bool:
        """``from ... import name`` somewhere in the file (the file scanned once)."""
        if self._imported is None:
            self._imported = words.names_imported_from(self.source)
        return name in self._imported

    def assigned_word_lines(self, group: set[str]) -> list[tuple[int, int]]:
        """(line, 0) for each word of ``group`` that may name the innermost call of a
        value assigned to an attribute (``Rule.ASSIGNED``)."""
        if self._assigned is None:
            self._assigned = words.assigned_call_lines(self.tree, self.source.split("\n"))
        wanted = self.group_words(group)
        found = []
        for offset, word in words.offsets_of(self.source, wanted):
            line = self.line_at(offset)
            start = offset - (self._breaks[line - 2] + 1 if line > 1 else 0)
            end = start + len(words.bare(word))
            if (line, end) in self._assigned or (line, None) in self._assigned:
                found.append((line, 0))
        return found

    @property
    def names(self):
        """A resolver of the file's module-level names and definitions, built once when asked."""
        if self._names is None:
            self._names = resolver_from_ast(self.tree, self.present)
        return self._names

    def entry_helper_lines(self) -> list[int]:
        """The ``def`` line of each helper a model's entry point hands its input to."""
        if self._helpers is None:
            self._helpers = [self.names.definition(name).lineno for name in entry_helpers(self.names)]
        return self._helpers

    def displayed_lines(self) -> frozenset[int]:
        """The lines of attribute assignments of a display (``Rule.DISPLAYED``)."""
        if self._displayed is None:
            self._displayed = words.displayed_attribute_lines(self.tree)
        return self._displayed

    def follows_self_calls(self, class_name: str) -> bool:
        return follows_self_calls(self.names, class_name)

    def line_at(self, offset: int) -> int:
        if self._breaks is None:
            self._breaks = [match.start() for match in _NEWLINE.finditer(self.source)]
        return bisect.bisect_left(self._breaks, offset) + 1

    def group_words(self, group: set[str]) -> set[str]:
        """The words of ``group`` present in the file, and the module-level
        aliases of its plain names."""
        wanted = {word for word in group if words.occurs(word, self.present)}
        if words.LOCAL_CLASS_CALLS in group:  # ``Net(``: a call of one of the file's CPU-built module classes
            wanted |= {name + "(" for name in self.names.local_class_names()
                       if name in self.present and still_class(self.names, name)}
        if words.PROJECT_MODEL_CALLS in group:  # ``vgg16_bn(``: a constructor imported from the project's own package
            wanted |= {name + "(" for name in project_constructor_words(self.source) if name in self.present}
        # ``from torch import load``: a plain ``load`` means ``torch.load`` (a ``.load`` word).
        # It keeps its ``(``: ``from torch import Tensor`` makes ``Tensor(`` a call, not every annotation.
        wanted |= {word[1:] for word in wanted if word.startswith(".") and self.imported(words.bare(word))}
        named = frozenset(words.bare(word) for word in wanted if not words.is_part(word))
        if named:
            if named not in self._aliases:
                self._aliases[named] = words.alias_words(self.tree, set(named))
            wanted |= self._aliases[named]
        return wanted


_NEWLINE = re.compile("\n")


def _rule_hits(scan: _Scan, rule, index: StatementIndex) -> list[tuple[int, str]]:
    groups = [set(group) for group in rule.GROUPS] + [set(rule.READS)]
    first = 1 if rule.ASSIGNED else 0  # ASSIGNED: the first group's words count only where assigned
    located = [(line, number) for number, group in enumerate(groups) if number >= first
               for word in scan.group_words(group) for line in scan.lines_of(word)]
    if rule.ASSIGNED:
        located += scan.assigned_word_lines(groups[0])
    if rule.ENTRY_HELPERS and located:
        located += [(line, len(rule.GROUPS) - 1) for line in scan.entry_helper_lines()]
    needed = set(range(len(rule.GROUPS)))
    if rule.DISPLAYED:  # one more group: its lines are the display assignments
        located += [(line, len(groups)) for line in scan.displayed_lines()]
        needed.add(len(groups))
    # A docstring's words are no code (no rule reports in one): ``>>> torch.load(f)`` in an
    # example must not make the rule read its READS all over the file.
    docstrings = index.docstring_lines
    located = [(line, number) for line, number in located if line not in docstrings]
    if not needed <= {number for _, number in located}:
        return []  # a group's words occur nowhere as the rule needs them: its READS are not read
    if not rule.TOGETHER:
        if rule.READS_SCOPE is None:
            return [(line, rule.SCOPE) for line, _ in located]
        # READS words inside a definition keep their statements (with the headers around them);
        # at module level they keep all module code, as any word does.
        reads = len(rule.GROUPS)
        return [(line, rule.READS_SCOPE if number == reads and _in_definition(index, line) else rule.SCOPE)
                for line, number in located]
    if rule.TOGETHER == DEFINITION:
        hits = _definition_hits(located, needed, rule.SCOPE, index)
        lines = [line for line, _ in hits]
        partners = self_call_partners(index, lines, scan.follows_self_calls) + init_readers(index, lines) \
            + call_partners(index, lines)
        return hits + [(line, rule.SCOPE) for line in partners]
    by_unit: dict = {}
    for line, number in located:
        by_unit.setdefault(index.unit_key(line, rule.SCOPE), set()).add(number)
    return [(line, rule.SCOPE) for line, number in located if needed <= by_unit[index.unit_key(line, rule.SCOPE)]]


def _definition_hits(located, needed: set, scope: str, index: StatementIndex) -> list[tuple[int, str]]:
    """``TOGETHER = DEFINITION``: the hits of each top-level definition whose
    words, with module-level code's, meet every group; and module-level code's
    hits when any definition (or module code alone) does, as its facts are
    read by them."""
    keyed = [(line, _top_key(index, line), number) for line, number in located]
    by_top: dict = {}
    for _, key, number in keyed:
        by_top.setdefault(key, set()).add(number)
    # An import makes no value: ``from torch import Tensor`` gives no definition the
    # factory it needs (a call through that name is a word in the definition itself).
    module_words = by_top.get(0, set())
    # The flow follows values between a function and those it calls or is called by (``flow/callers.py``):
    # a group of functions linked by calls meets the groups together (a caller's ``.cuda()`` placing what its
    # callee reads with ``numpy``).
    for key, found in _linked_words(index, by_top).items():
        by_top[key] = by_top[key] | found
    live = {key for key, found in by_top.items() if key != _IMPORT and needed <= found | module_words}
    if live:
        live |= {0, _IMPORT}
    hits = [(line, scope) for line, key, _ in keyed if key in live]
    if needed <= module_words:
        # Module code alone meets every group: a definition without a word of its own may still
        # report on the module's facts alone (``def show(): return model(sample)``), through a
        # name that module code uses where its words are (binds it, or moves it: ``model.to(device)``).
        named = _names_at(index, {line for line, key, _ in keyed if key == 0})
        hits += [(line, scope) for line in _definitions_reading(index, named)]
    return hits


def _linked_words(index: StatementIndex, by_top: dict) -> dict:
    """{key of a top-level function with hits: the groups the hits of the functions linked to it by calls meet}."""
    names = {top.node.name: id(top) for top in index.top
             if id(top) in by_top and isinstance(top.node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if len(names) < 2:
        return {}
    return {names[name]: set().union(*(by_top[names[other]] for other in group))
            for name, group in call_linked(index, set(names)).items()}


def _names_at(index: StatementIndex, lines: set) -> set:
    """The names in the module-level statements holding one of ``lines``, but imported modules
    and functions (``torch``, ``nn``): they hold no device fact."""
    names, imported = set(), set()
    for top in index.top:
        if isinstance(top.node, (ast.Import, ast.ImportFrom)):
            imported |= {(alias.asname or alias.name).partition(".")[0] for alias in top.node.names}
        elif not top.is_def and any(top.start <= line <= top.end for line in lines):
            names |= {n.id for n in ast.walk(top.node) if isinstance(n, ast.Name)}
    return names - imported


def _definitions_reading(index: StatementIndex, names: set) -> list[int]:
    """The first line of each top-level function and method of a top-level class that reads one of ``names``."""
    if not names:
        return []
    defs = []
    for top in index.top:
        if isinstance(top.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defs.append(top.node)
        elif isinstance(top.node, ast.ClassDef):
            defs += [m for m in top.node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
    spelled = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(names))) + r")\b")
    return [d.lineno for d in defs if _may_spell(spelled, index.lines[statement_start(d) - 1:d.end_lineno])
            and any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(d))]


def _may_spell(spelled: re.Pattern, lines: list) -> bool:
    """Can a definition of these lines read one of the names? Its text must spell one first: a regex over
    it spares the walk of every definition of a file of thousands (a 5 MB file's engine: 9.4 s to 5.0 s).
    Non-ASCII text may spell a name Python normalises (NFKC): only the walk answers there."""
    text = "\n".join(lines)
    return not text.isascii() or spelled.search(text) is not None


_IMPORT = -1  # the key of a module-level import statement's line


def _in_definition(index: StatementIndex, line: int) -> bool:
    top = index.top_at(line)
    return top is not None and top.is_def


def _top_key(index: StatementIndex, line: int) -> int:
    top = index.top_at(line)
    if top is None:
        return 0
    if top.is_def:
        return id(top)
    return _IMPORT if isinstance(top.node, (ast.Import, ast.ImportFrom)) else 0


def _analyse(source, lines, tree, keep, rules, filename, keep_reports, parts=None, known=None, present=None,
             cells=None, walks=None) -> Result:
    """Parse the kept lines with LibCST, walk them once with ``rules``, and
    place what they report on the file's lines."""
    from .walk import BatchedWalker  # LibCST's node classes: only now needed

    text, numbers = compact(lines, keep)
    starts = sorted({statement_start(stmt) for stmt in tree.body} & keep)
    try:
        if parts is None:
            module = cst.parse_module(text)
        else:
            line_of = {number: index for index, number in enumerate(numbers)}
            module = parts.parse(text, [line_of[start] for start in starts])
    except (cst.ParserSyntaxError, RecursionError, MemoryError, ValueError) as exc:
        return Result(error=f"LibCST cannot parse this file: {_first_line(exc)}")
    names = resolver_from_ast(tree, present)
    names.facts.update(known or {})
    context = FileContext(names, source, filename, is_test_file(filename, names), cells, starts)
    try:
        walker = BatchedWalker(
            [rule(context) for rule in rules],
            pre_visit=lambda node: update_from_cst(names, node),
            pre_visit_types=name_binding_nodes(),
            scope=(
                lambda node: names.enter_scope(isinstance(node, cst.ClassDef)),
                lambda _: names.leave_scope(),
                scope_nodes(),
            ),
        )
        walker.walk_module(module, context.enter_statement, _walkers_of(starts, rules, walks))
        if not context.reports:
            return Result()
        from .positions import file_positions  # LibCST's metadata: only for a file with a report

        placed = file_positions(module, context.reports, numbers, starts)
        if not keep_reports:
            return Result(violations=[violation for violation, _ in placed])
        return Result([violation for violation, _ in placed], reports=[r for _, r in placed], module=module)
    except RecursionError as exc:
        # LibCST's position pass (and any recursive helper) follows the tree's
        # depth: ~150 nested brackets exhaust the stack. An input limit, not a bug.
        return Result(error=_syntax_message(exc))


def _walkers_of(starts: list, rules, walks: Optional[dict]):
    """For each parsed top-level statement, the positions (in ``rules``) of the rules that walk it; None: all."""
    if walks is None:
        return None
    return [tuple(i for i, rule in enumerate(rules) if start in walks[rule]) for start in starts]


def is_test_file(filename: Optional[str], names) -> bool:
    """A test module: named like one (``test_*.py``, ``*_test.py``,
    ``conftest.py``, under a ``tests`` directory) or importing a test
    framework at module level."""
    if filename:
        parts = filename.replace("\\", "/").split("/")
        base = parts[-1]
        if base.startswith("test_") or base.endswith("_test.py") or base == "conftest.py":
            return True
        if any(part in ("test", "tests", "testing") for part in parts[:-1]):
            return True
    return names.imports_any(("pytest", "unittest"))


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
