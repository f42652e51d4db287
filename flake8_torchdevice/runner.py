"""Lint (and optionally fix) one file; run many in parallel, in stable order.

Everything a worker returns is plain data, so files can be checked in worker
processes; output is assembled by the caller in the input order.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import logging
import os
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Optional, Sequence

from . import cache, files, notebooks, pool
from .engine import check_source
from .noqa import filter_noqa
from .rules import RULES_BY_CODE

# The engine logs internal errors for flake8's sake; the CLI reports them
# itself, as one line, so the log record must not reach stderr as well.
logging.getLogger("flake8_torchdevice").addHandler(logging.NullHandler())

# Below this many files a process pool costs more than it saves.
PARALLEL_THRESHOLD = 8


@dataclass(frozen=True)
class Options:
    codes: tuple[str, ...]  # enabled rule codes
    fix: bool = False
    diff: bool = False
    unsafe_fixes: bool = False
    add_noqa: bool = False
    cache_dir: Optional[str] = None  # where results are kept (cache.py); None: no cache
    cache_salt: str = ""  # cache.salt() of this run: the linter's code and the selection

    @property
    def caching(self) -> bool:
        """Whether this run may read and keep results: a pure lint, with a cache."""
        return bool(self.cache_dir) and not (self.fix or self.diff or self.add_noqa)


@dataclass(frozen=True)
class Finding:
    path: str
    code: str
    line: int  # 1-based; within the cell for notebooks
    col: int  # 0-based
    end_line: int
    end_col: int
    message: str
    cell: Optional[int] = None
    fixable: bool = False
    file_line: Optional[int] = None  # notebooks: the .ipynb line holding the cell's line


@dataclass
class Outcome:
    path: str
    findings: list = field(default_factory=list)
    problems: list = field(default_factory=list)  # e.g. syntax errors (counted as findings)
    io_error: Optional[str] = None  # the file could not be read or written (exit 2)
    fixed: int = 0
    diff: str = ""
    output: Optional[str] = None  # the (fixed) text, for stdin with --fix
    noqa_added: int = 0  # lines given a ``# noqa`` by --add-noqa


def lint_path(path: str, display: str, options: Options, data: Optional[bytes] = None) -> Outcome:
    """Never raises: every failure becomes part of the Outcome."""
    outcome = Outcome(display)
    try:
        if data is None:
            data = files.read_bytes(path, display)
        digest = cache.key(options.cache_salt, display, data) if options.caching and path != "-" else None
        if digest and _restore(outcome, cache.load(options.cache_dir, digest)):
            return outcome
        if display.endswith(".ipynb"):
            _lint_notebook(path, data, outcome, options)
        else:
            _lint_python(path, data, outcome, options)
        if digest:
            cache.store(options.cache_dir, digest, _stored(outcome))
    except (files.ReadError, notebooks.NotebookError) as exc:
        outcome.io_error = str(exc)
    except OSError as exc:
        outcome.io_error = f"{display}: {exc.strerror or exc}"
    except Exception as exc:  # noqa: BLE001 - one bad file must not stop the run
        outcome.problems.append(f"{display}: internal error: {type(exc).__name__}: {one_line(str(exc))}")
    return outcome


def _stored(outcome: Outcome) -> dict:
    return {"findings": [dataclasses.asdict(f) for f in outcome.findings], "problems": list(outcome.problems)}


def _restore(outcome: Outcome, stored: Optional[dict]) -> bool:
    """Fill ``outcome`` from a cache entry; False (a miss) for one that does not decode."""
    if stored is None:
        return False
    try:
        findings = [Finding(**{**item, "path": outcome.path}) for item in stored["findings"]]
        problems = [str(problem) for problem in stored["problems"]]
    except (KeyError, TypeError):
        return False
    outcome.findings, outcome.problems = findings, problems
    return True


def one_line(message: str, limit: int = 300) -> str:
    """An exception's text can be huge (a KeyError holding a syntax tree)."""
    first = message.strip().split("\n", 1)[0]
    return first if len(first) <= limit else first[: limit - 3] + "..."


def _violations(source: str, options: Options, outcome: Outcome, tree=None, cells=None):
    rules = [RULES_BY_CODE[code] for code in options.codes]
    result = check_source(source, tree, rules=rules, filename=outcome.path, cells=cells)  # a test file by its name too
    if result.error:
        outcome.problems.append(f"{outcome.path}: {one_line(result.error)}")
    return filter_noqa(source, result.violations)


def _lint_python(path: str, data: bytes, outcome: Outcome, options: Options) -> None:
    source = files.decode(data, outcome.path)
    violations = _violations(source.text, options, outcome)
    if (options.fix or options.diff) and violations:
        from .fixes import fix_source_counted  # loads LibCST: only for files with findings

        fixed_text, count = fix_source_counted(source.text, violations, options.unsafe_fixes, outcome.path)
        if count and options.diff:
            outcome.diff = _unified_diff(source.text, fixed_text, outcome.path)
            outcome.fixed = count
        elif count and _write(path, files.SourceFile(fixed_text, source.encoding), outcome):
            source = files.SourceFile(fixed_text, source.encoding)
            outcome.fixed = count
            outcome.problems.clear()
            violations = _violations(fixed_text, options, outcome)
    if options.add_noqa and violations:
        violations = _add_noqa(path, source, violations, outcome, options)
    if options.fix and path == "-":
        outcome.output = source.text
    outcome.findings = [_finding(outcome.path, v, None, v.line, options) for v in violations]


def _add_noqa(path: str, source: files.SourceFile, violations: list, outcome: Outcome, options: Options) -> list:
    """Write ``# noqa`` for each finding; what is still reported afterwards (nothing,
    unless the file could not be written)."""
    from .addnoqa import add_noqa

    text, changed = add_noqa(source.text, [(v.line, v.code) for v in violations])
    if not changed or not _write(path, files.SourceFile(text, source.encoding), outcome):
        return violations
    outcome.noqa_added = changed
    return _violations(text, options, outcome)


def _write(path: str, source: files.SourceFile, outcome: Outcome) -> bool:
    """False, with the reason in ``outcome``, for a file --fix may not write:
    its findings are then reported as they are."""
    if path == "-":
        return True
    try:
        files.write_atomic(path, source, outcome.path)
    except files.WriteError as exc:
        outcome.io_error = str(exc)
        return False
    return True


def _lint_notebook(path: str, data: bytes, outcome: Outcome, options: Options) -> None:
    if options.add_noqa:  # a cell's comment is a cell edit: not done, its findings are reported
        options = dataclasses.replace(options, add_noqa=False)
    source = files.decode(data, outcome.path)
    if (options.fix or options.diff) and _fix_notebook(path, source, outcome, options):
        options = dataclasses.replace(options, fix=False, diff=False)  # report what is left
    _check_notebook(source.text, outcome, options)


def _fix_notebook(path: str, source: files.SourceFile, outcome: Outcome, options: Options) -> bool:
    """Fix the code cells; True when ``source.text`` now holds the fixed notebook."""
    from .nbfix import NotFixed, fix_notebook

    probe = Outcome(outcome.path)
    found = _check_notebook(source.text, probe, dataclasses.replace(options, fix=False, diff=False))
    if found is None or not found[2]:
        return False
    try:
        fixed, count = fix_notebook(source.text, *found, options.unsafe_fixes)
    except NotFixed as exc:
        outcome.problems.append(f"{outcome.path}: not fixed: {exc}")
        return False
    if not count:
        return False
    if options.diff:
        outcome.diff, outcome.fixed = _unified_diff(source.text, fixed, outcome.path), count
        return False
    if not _write(path, files.SourceFile(fixed, source.encoding), outcome):
        return False
    source.text, outcome.fixed = fixed, count
    if path == "-":
        outcome.output = fixed
    return True


def _check_notebook(text: str, outcome: Outcome, options: Options):
    """Report the findings; (module, cells, violations) for the fixer, or None."""
    cells = notebooks.cell_sources(text, outcome.path)
    module = notebooks.join(cells)
    try:
        tree = ast.parse(module.source)
    except (SyntaxError, ValueError):
        # Check the rest without the cells that do not parse, so that one
        # broken cell does not hide the findings of all the others.
        cells, broken = notebooks.without_broken_cells(cells)
        for number, line, message in broken:
            outcome.problems.append(f"{outcome.path}:cell_{number}: syntax error at line {line}: {message}")
        module = notebooks.join(cells)
        try:
            tree = ast.parse(module.source)
        except (SyntaxError, ValueError) as exc:  # cells that only fail together
            _syntax_problem(outcome, module, exc)
            return None
    in_file = notebooks.file_lines(text)
    violations = _violations(module.source, options, outcome, tree, module.cells())
    for v in violations:
        cell, line = module.place(v.line)
        finding = _finding(outcome.path, v, cell, line, options)
        outcome.findings.append(dataclasses.replace(finding, file_line=in_file.get((cell, line))))
    return module, cells, violations


def _syntax_problem(outcome: Outcome, module: notebooks.VirtualModule, exc: Exception) -> None:
    cell, line = module.place(getattr(exc, "lineno", None) or 1)
    message = getattr(exc, "msg", str(exc))
    outcome.problems.append(f"{outcome.path}:cell_{cell}: syntax error at line {line}: {message}")


def _finding(path: str, v, cell: Optional[int], line: int, options: Options) -> Finding:
    from .fixes import can_fix  # loads LibCST, as the finding already did

    end_line = line + (v.end_line - v.line) if v.end_line else line
    fixable = can_fix(v.code, options.unsafe_fixes)
    return Finding(path, v.code, line, v.col, end_line, v.end_col, v.message, cell, fixable)


def _unified_diff(old: str, new: str, name: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{name}", f"b/{name}"
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _work(item: tuple[str, Options]) -> Outcome:
    path, options = item
    return lint_path(path, display_name(path), options)


def display_name(path: str) -> str:
    return os.path.normpath(path)


def lint_paths(paths: Sequence[str], options: Options, jobs: int) -> list[Outcome]:
    """Outcomes in the order of ``paths`` whatever the number of workers."""
    items = [(path, options) for path in paths]
    if jobs > 1 and len(items) >= PARALLEL_THRESHOLD:
        try:
            chunksize = max(1, len(items) // (jobs * 4))
            return pool.ordered_map(_work, items, min(jobs, len(items)), chunksize)
        except (OSError, ImportError, NotImplementedError, BrokenProcessPool):
            pass  # no working multiprocessing here (e.g. no /dev/shm): run serially
    return pool.serial_map(_work, items)
