"""Cheap text triggers shared by rules.

A trigger only decides what the engine parses; the LibCST visitor decides
what is reported. So a trigger may over-match (costing a little time) but
must never under-match a case its rule reports.
"""

from __future__ import annotations

import re
from functools import lru_cache, wraps
from typing import Callable, Iterable, Iterator, Optional, Pattern, TypeVar

# Speed (measured on the torch sources, see docs/performance.md): Python's
# regex engine jumps straight to a pattern's literal prefix, but tries every
# character of the file for a pattern that starts with ``\b``, ``^``, a class
# or an alternation -- 10x to 50x slower. So the scans below start with one
# literal each, and check word boundaries and line starts in Python.

T = TypeVar("T")


def per_source(func: Callable[[str], T]) -> Callable[[str], T]:
    """Remember ``func(source)`` for the last source: the engine runs every
    rule's trigger on one source string in a row, and some rules share a scan."""
    box: list = [(None, None)]

    @wraps(func)
    def cached(source: str) -> T:
        entry = box[0]
        if entry[0] is not source:
            entry = (source, func(source))
            box[0] = entry  # one assignment: safe if threads share the cache
        return entry[1]

    return cached


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def word_matches(pattern: Pattern[str], source: str, pos: int = 0) -> Iterator[re.Match]:
    """``finditer`` of ``\b`` + ``pattern`` (which must start with a word
    character), without giving the regex engine a leading ``\b``."""
    search = pattern.search
    match = search(source, pos)
    while match is not None:
        start = match.start()
        if start == 0 or not _is_word(source[start - 1]):
            yield match
            match = search(source, max(match.end(), start + 1))
        else:  # a later match may start inside this one
            match = search(source, start + 1)


@lru_cache(maxsize=None)
def _alias_finder(names: tuple[str, ...]) -> Pattern[str]:
    """The reference (slow) form of ``aliases``; kept for tests and old callers."""
    alt = "|".join(map(re.escape, names))
    # ``from torch import load as tl`` / ``f = torch.load`` / ``f = load``
    return re.compile(
        rf"(?:\b(?:{alt})\s+as\s+(\w+))|(?:^[ \t]*(\w+)\s*=\s*(?:[\w.]+\.)?(?:{alt})[ \t]*(?:#.*)?$)", re.M
    )


@lru_cache(maxsize=256)
def _alias_scans(name: str) -> tuple[Pattern[str], Pattern[str]]:
    escaped = re.escape(name)
    return (
        re.compile(rf"{escaped}\s+as\s+(\w+)"),  # ... import name as alias (after a \b)
        re.compile(rf"=\s*(?:[\w.]+\.)?{escaped}[ \t]*(?:#.*)?$", re.M),  # = [x.]name at a line end
    )


def _assigned_name(source: str, equals: int) -> Optional[str]:
    """The ``alias`` of ``^[ \\t]*(alias)\\s*=`` ending at ``equals``, read backwards."""
    end = equals
    while end > 0 and source[end - 1].isspace():
        end -= 1
    start = end
    while start > 0 and _is_word(source[start - 1]):
        start -= 1
    if start == end:
        return None
    indent = start
    while indent > 0 and source[indent - 1] in " \t":
        indent -= 1
    return source[start:end] if indent == 0 or source[indent - 1] == "\n" else None


def aliases(source: str, names: Iterable[str]) -> set[str]:
    """Local names bound to one of ``names`` by ``import ... as`` or by an
    assignment (``f = torch.load``); a superset of what ``_alias_finder`` finds."""
    found: set[str] = set()
    for name in names:
        as_scan, assignment = _alias_scans(name)
        found.update(match.group(1) for match in word_matches(as_scan, source))
        for match in assignment.finditer(source):
            bound = _assigned_name(source, match.start())
            if bound is not None:
                found.add(bound)
    return found


@lru_cache(maxsize=256)
def _call_finder(name: str) -> Pattern[str]:
    return re.compile(rf"{re.escape(name)}\s*\(")


def call_offsets(source: str, names: tuple[str, ...]) -> Iterable[int]:
    """Offsets of calls to any of ``names`` or to a local alias of one (one
    literal scan per name: an alternation would be ~10x slower)."""
    offsets: list[int] = []
    for name in sorted(set(names) | aliases(source, names)):
        offsets.extend(match.start() for match in _call_finder(name).finditer(source))
    offsets.sort()
    return offsets


def in_comment(source: str, offset: int) -> bool:
    """True only if ``offset`` is surely inside a ``#`` comment.

    Unsure means False (the trigger may over-match, never under-match): a
    line with a triple quote may close a multi-line string before the hit, a
    line after a backslash may start inside a string.
    """
    start = source.rfind("\n", 0, offset) + 1
    if source.endswith("\\", 0, max(start - 1, 0)) or source.endswith("\\\r", 0, max(start - 1, 0)):
        return False
    end = source.find("\n", offset)
    line = source[start:(len(source) if end < 0 else end)]
    if '"""' in line or "'''" in line:
        return False
    quote, escaped = None, False
    for char in source[start:offset]:
        if quote is not None:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#":
            return True
    return False
