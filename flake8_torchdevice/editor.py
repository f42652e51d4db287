"""What the language server says about one document, without any LSP library:
its findings (with the project's ``[tool.torchdevice]`` selection), positions in
UTF-16 code units as LSP counts them, and the edits of a fix or a ``# noqa``."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from . import config
from .engine import check_source
from .noqa import filter_noqa

_ERROR_LINE = re.compile(r"line (\d+)")


@dataclass(frozen=True)
class Finding:
    code: str
    message: str
    start: tuple[int, int]  # (line, character), 0-based, UTF-16 characters
    end: tuple[int, int]
    fixable: bool
    unsafe: bool  # its fix changes behaviour (offered, marked)
    violation: object  # the engine's violation, to fix exactly this one


class Settings:
    """The rules each file's ``pyproject.toml`` enables, read again when it changes."""

    def __init__(self) -> None:
        self._cache: dict = {}  # pyproject path -> (mtime, rules or ConfigError)

    def rules_for(self, path: Optional[str]):
        """The enabled rules for a document at ``path`` (None: an unsaved buffer)."""
        start = Path(path).parent if path else Path.cwd()
        pyproject = config.find_pyproject(start)
        mtime = _mtime(pyproject)
        cached = self._cache.get(pyproject)
        if cached is None or cached[0] != mtime:
            try:
                cached = (mtime, config.selected_rules(config.load(pyproject)))
            except config.ConfigError as exc:
                cached = (mtime, exc)
            self._cache[pyproject] = cached
        if isinstance(cached[1], config.ConfigError):
            raise cached[1]
        return cached[1]


def _mtime(path: Optional[Path]) -> Optional[int]:
    try:
        return os.stat(path).st_mtime_ns if path else None
    except OSError:
        return None


def lint(text: str, path: Optional[str], rules, parts=None) -> tuple[list[Finding], Optional[str]]:
    """The document's findings (``# noqa`` applied) and its syntax error, if any.
    ``parts``: a ``reparse.ParseCache`` kept between calls (an edit parses only what changed)."""
    from .fixes import can_fix

    name = os.path.basename(path) if path else "untitled.py"
    result = check_source(text, rules=list(rules), filename=path or name, parts=parts)
    lines = text.split("\n")
    findings = [
        Finding(v.code, v.message, utf16(lines, v.line - 1, v.col), utf16(lines, v.end_line - 1, v.end_col),
                can_fix(v.code, unsafe=True), not can_fix(v.code), v)
        for v in filter_noqa(text, result.violations)
    ]
    return findings, result.error


def error_line(message: str) -> int:
    """The 0-based line a syntax error names (``syntax error at line 3``), else 0."""
    match = _ERROR_LINE.search(message)
    return max(int(match.group(1)) - 1, 0) if match else 0


def utf16(lines: list[str], line: int, column: int) -> tuple[int, int]:
    """(line, code-point column) -> (line, UTF-16 column), clamped into the document."""
    line = min(max(line, 0), len(lines) - 1)
    prefix = lines[line][:max(column, 0)]
    return line, len(prefix.encode("utf-16-le")) // 2


def fixed_text(text: str, path: Optional[str], violations: list, unsafe: bool) -> str:
    from .fixes import fix_source_counted

    fixed, _ = fix_source_counted(text, violations, unsafe, path)
    return fixed


def with_noqa(text: str, line: int, code: str) -> str:
    """``text`` with ``# noqa: code`` where flake8 reads it for a finding on ``line`` (1-based)."""
    from .addnoqa import add_noqa

    return add_noqa(text, [(line, code)])[0]


def replacement(old: str, new: str) -> Optional[tuple[int, int, str]]:
    """The smallest whole-line edit from ``old`` to ``new``: (first line, end line
    (exclusive), new text of those lines), or None when nothing changed."""
    if old == new:
        return None
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end_a, end_b = len(a), len(b)
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a, end_b = end_a - 1, end_b - 1
    return start, end_a, "".join(b[start:end_b])
