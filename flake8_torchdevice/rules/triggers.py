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
        # ``name`` ending its line: candidates for ``alias = [x.]name``, whose
        # start is read backwards (a scan starting at "=" tries every "=").
        re.compile(rf"{escaped}[ \t]*(?:#[^\n]*)?$", re.M),
    )


def _equals_before(source: str, name_start: int) -> Optional[int]:
    """Index of the ``=`` in ``=\\s*(?:[\\w.]+\\.)?name`` ending at ``name_start``."""
    i = name_start
    if source[i - 1:i] == ".":
        j = i - 1
        while j > 0 and (source[j - 1] == "." or _is_word(source[j - 1])):
            j -= 1
        if j == i - 1:
            return None  # a dot with nothing before it
        i = j
    while i > 0 and source[i - 1].isspace():
        i -= 1
    return i - 1 if i > 0 and source[i - 1] == "=" else None


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
        as_scan, line_end = _alias_scans(name)
        found.update(match.group(1) for match in word_matches(as_scan, source))
        for match in line_end.finditer(source):
            equals = _equals_before(source, match.start())
            bound = _assigned_name(source, equals) if equals is not None else None
            if bound is not None:
                found.add(bound)
    return found


@lru_cache(maxsize=256)
def _call_finder(name: str) -> Pattern[str]:
    return re.compile(rf"{re.escape(name)}\s*\(")


def call_offsets(source: str, names: tuple[str, ...]) -> Iterable[int]:
    """Offsets of calls to any of ``names`` or to a local alias of one (one
    literal scan per name: an alternation would be ~10x slower)."""
    return _calls_of(source, set(names) | aliases(source, names))


def _calls_of(source: str, callees: Iterable[str]) -> list[int]:
    offsets: list[int] = []
    for name in sorted(callees):
        offsets.extend(match.start() for match in _call_finder(name).finditer(source))
    offsets.sort()
    return offsets


_FROM_TORCH_IMPORT = re.compile(r"from\s+torch[\w.]*\s+import\b")  # after a \b


def _imported_from_torch(source: str, name: str) -> bool:
    """Does some ``from torch[...] import`` statement name ``name``? Reads
    each statement to its end: parentheses, backslashes, comments."""
    word = re.compile(rf"\b{re.escape(name)}\b")
    for match in word_matches(_FROM_TORCH_IMPORT, source):
        start = match.end()
        parenthesised = source[start:start + 80].lstrip(" \t\\\n").startswith("(")
        while start <= len(source):
            end = source.find("\n", start)
            end = len(source) if end < 0 else end
            code = source[start:end].split("#", 1)[0]
            if word.search(code):
                return True
            if (")" in code) if parenthesised else not code.rstrip().endswith("\\"):
                break
            start = end + 1
    return False


def _def_before(source: str, offset: int) -> bool:
    """Is the word at ``offset`` the name in ``def name(`` or ``class name(``?"""
    i = offset
    while i > 0 and source[i - 1] in " \t":
        i -= 1
    for keyword in ("def", "class"):
        start = i - len(keyword)
        if start >= 0 and source[start:i] == keyword and (start == 0 or not _is_word(source[start - 1])):
            return True
    return False


def call_sites(source: str, names: tuple[str, ...]) -> list[int]:
    """``call_offsets`` less the names inside longer words (``_test_DataParallel(``)
    and the names being defined (``class DataParallel(``)."""
    return _sites(source, call_offsets(source, names))


def _sites(source: str, offsets: Iterable[int]) -> list[int]:
    return [
        offset
        for offset in offsets
        if not (offset and _is_word(source[offset - 1])) and not _def_before(source, offset)
    ]


def _receiver(source: str, offset: int) -> Optional[str]:
    """For ``a.b.name(`` at ``offset``: ``"b"``; ``""`` for a bare ``name(``;
    None when the name follows no plain name (``f().name(``, ``x[0].name(``):
    the resolver reads dotted names only."""
    i = offset
    while i > 0 and source[i - 1] in " \t\\\n":
        i -= 1
    if i == 0 or source[i - 1] != ".":
        return ""
    i -= 1
    while i > 0 and source[i - 1] in " \t\\\n":
        i -= 1
    end = i
    while i > 0 and _is_word(source[i - 1]):
        i -= 1
    return source[i:end] or None


def torch_call_offsets(source: str, name: str, modules: tuple[str, ...]) -> list[int]:
    """``call_offsets`` of ``name``, less the calls that cannot resolve to
    ``<module>.name`` for one of ``modules`` (their last dotted part):
    ``json.load(`` / ``self.load(`` (a receiver that is no such module nor
    bound to one), ``create_load(``, ``def load(``, and a bare ``load(`` that
    no ``from torch... import`` or assignment binds. Aliases are kept."""
    bound = aliases(source, (name,))
    module_names: Optional[set] = None
    bare_bound: Optional[bool] = None
    kept = []
    for offset in _sites(source, _calls_of(source, {name} | bound)):
        receiver = _receiver(source, offset)
        if receiver is None:
            continue
        if receiver == "":
            if not source.startswith(name, offset) or _is_word(source[offset + len(name):offset + len(name) + 1]):
                kept.append(offset)  # an alias: ``tl(`` after ``import load as tl``
                continue
            if bare_bound is None:
                bare_bound = name in bound or _imported_from_torch(source, name)
            if bare_bound:
                kept.append(offset)
            continue
        if module_names is None:
            module_names = _module_aliases(source, modules)
        if receiver in module_names:
            kept.append(offset)
    return kept


def _module_aliases(source: str, modules: tuple[str, ...]) -> set[str]:
    """``modules`` and every name bound to one (``import torch as th``,
    ``t = th``), followed to a fixpoint."""
    found, todo = set(modules), set(modules)
    while todo:
        new = aliases(source, sorted(todo)) - found
        found |= new
        todo = new
    return found


def in_comment(source: str, offset: int) -> bool:
    """True only if ``offset`` is surely not code: after a ``#`` on its line,
    so in a comment -- or, when the line lies inside a multi-line string, in
    that string's text. No rule reports in either.

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


def in_doctest(source: str, offset: int) -> bool:
    """True if ``offset`` is on a ``>>>`` line: a doctest in a docstring (no
    line of code starts with ``>>>``, not even a continuation line)."""
    start = source.rfind("\n", 0, offset) + 1
    while start < offset and source[start] in " \t":
        start += 1
    return source.startswith(">>>", start)
