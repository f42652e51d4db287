"""Apply the fixes that rules build when they report (``rule.Fix``).

A rule's visitor decides and builds the replacement; nothing here decides
again. This module only chooses which reports to apply (the violations the
caller asks for, the safety levels allowed), applies them to the whole file
parsed once with LibCST, and checks the result still parses. A fix whose
target holds another's gets the target with the inner fix applied, so fixes
compose in one pass and a second run finds nothing to do.

Public API:
    fix_source(source, violations=None, unsafe=False, filename=None) -> str
    fix_source_counted(source, violations=None, unsafe=False, filename=None) -> (str, applied)

``violations`` says what to fix: ``None`` means every finding not silenced
by ``# noqa`` (the one way noqa applies); a ``Result`` from
``engine.check_source`` or a list of its violations restricts the fixes to
those (the CLI passes what survived its selection and noqa filtering).
"""

from __future__ import annotations

import ast
from typing import Optional

__all__ = ["can_fix", "fix_source", "fix_source_counted"]


def can_fix(code: str, unsafe: bool = False) -> bool:
    """True if ``code``'s rule has a fix at a safety level that is allowed."""
    from ..rules import RULES_BY_CODE  # rules import fixes.edit: no import at load time

    rule = RULES_BY_CODE.get(code)
    return rule is not None and (rule.FIX == "safe" or (unsafe and rule.FIX == "unsafe"))


def fix_source(source: str, violations=None, unsafe: bool = False, filename: Optional[str] = None) -> str:
    """``source`` with the allowed fixes applied (see the module doc)."""
    return fix_source_counted(source, violations, unsafe, filename)[0]


def fix_source_counted(
    source: str, violations=None, unsafe: bool = False, filename: Optional[str] = None
) -> tuple[str, int]:
    """(fixed source, number of fixes applied). The source comes back
    unchanged, count 0, if nothing applies or a result would not parse.
    ``filename`` (the display name) tells the rules whether it is a test file,
    as it does when checking."""
    newline, text = _split_newline(source)
    if text is None:
        return source, 0  # mixed or lone-CR line endings: not rewritten
    wanted = _wanted(violations, unsafe)
    if wanted is not None and not wanted:
        return source, 0
    fixed, applied = _fix_once(text, wanted, unsafe, filename)
    if not applied:
        return source, 0
    return (fixed.replace("\n", "\r\n") if newline == "\r\n" else fixed), applied


def _wanted(violations, unsafe: bool) -> Optional[set]:
    """(code, line, col) keys to fix, or None for "every unsilenced finding"."""
    if violations is None:
        return None
    found = getattr(violations, "violations", violations)  # a Result, or violations
    return {(v.code, v.line, v.col) for v in found if can_fix(v.code, unsafe)}


def _fix_once(text: str, wanted: Optional[set], unsafe: bool, filename: Optional[str]) -> tuple[str, int]:
    from ..engine import check_source
    from ..noqa import filter_noqa
    from ..rules import RULES_BY_CODE

    codes = {key[0] for key in wanted} if wanted is not None else {c for c in RULES_BY_CODE if can_fix(c, unsafe)}
    rules = [RULES_BY_CODE[code] for code in sorted(codes)]
    result = check_source(text, rules=rules, full=True, keep_reports=True, filename=filename)
    if result.error or not result.violations:
        return text, 0
    allowed = set(filter_noqa(text, result.violations)) if wanted is None else None
    chosen = {}
    for violation, report in zip(result.violations, result.reports):
        if report.fix is None or not can_fix(violation.code, unsafe):
            continue
        if (wanted is not None and (violation.code, violation.line, violation.col) not in wanted) or (
            allowed is not None and violation not in allowed
        ):
            continue
        target = report.fix.target or report.node
        chosen.setdefault(id(target), report.fix.replacement)
    if not chosen:
        return text, 0
    fixed, applied = _apply(result.module, chosen)
    if fixed == text or not _parses(fixed):
        return text, 0  # a fix that breaks the file is never written
    return fixed, applied


def _apply(module, chosen: dict) -> tuple[str, int]:
    from .._lazy import cst

    class _Replace(cst.CSTTransformer):
        def __init__(self) -> None:
            super().__init__()
            self.applied = 0

        def on_leave(self, original, updated):
            replacement = chosen.get(id(original))
            if replacement is None:
                return updated
            self.applied += 1
            # A callable gets the target with any fix inside it already applied.
            return replacement(updated) if callable(replacement) else replacement

    replacer = _Replace()
    return module.visit(replacer).code, replacer.applied


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _split_newline(source: str) -> tuple[str, Optional[str]]:
    """The file's line ending and its text with ``\\n`` endings (BOM kept
    aside by the caller's decoding); None text for mixed endings."""
    if "\r" not in source:
        return "\n", source
    crlf = source.count("\r\n")
    if crlf == source.count("\r") == source.count("\n"):
        return "\r\n", source.replace("\r\n", "\n")
    return "\n", None
