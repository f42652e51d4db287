"""Where the words that rules declare in ``NEEDS`` occur in a source text.

This is the only text scan in the engine, and it knows nothing of any rule:
a word is an identifier, matched whole anywhere (code, strings, comments),
or, written with a leading dot, an attribute name (``.to``: a ``to`` that
follows a dot, across spaces, backslash continuations and comments). It
may over-match (a word in a comment costs a little parsing), never
under-match: that is what makes skipping code without the words safe. A
word split across joined string literals (``"cud" "a:1"`` is ``"cuda:1"``)
counts too, across blanks and line breaks (not across a comment).
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from typing import Iterable, Iterator, Optional

_WORD = re.compile(r"\w+")
# Where two string literals meet: a closing quote, blanks or a line break, an
# optional prefix, an opening quote.
_JUNCTION = re.compile(r"""["'][ \t]*(?:\\?\n[ \t]*)?[rRuUfFbB]{0,2}["']""")


def identifiers(source: str) -> frozenset[str]:
    """Every identifier-like word of ``source`` (one C-level scan), and the
    words that joined string literals spell across their parts."""
    found = {word for word in set(_WORD.findall(source)) if not word[0].isdigit()}
    found.update(word for _, word in joined_words(source))
    return frozenset(found)


def joined_words(source: str) -> list[tuple[int, str]]:
    """(offset, word) for each word spelled across joined literals (the last
    source's answer is kept: the engine asks once per word)."""
    cached = _JOINED[0]
    if cached[0] is not source:
        cached = (source, _joined_words(source))
        _JOINED[0] = cached  # one assignment: safe when threads share it
    return cached[1]


_JOINED: list = [(None, [])]


def _joined_words(source: str) -> list[tuple[int, str]]:
    out = []
    previous_end, start, word = -1, 0, ""
    for match in _JUNCTION.finditer(source):
        before, after = match.start(), match.end()
        if not (before and _is_word_char(source[before - 1]) and after < len(source) and _is_word_char(source[after])):
            continue
        head = before
        while head and _is_word_char(source[head - 1]):
            head -= 1
        tail = after
        while tail < len(source) and _is_word_char(source[tail]):
            tail += 1
        if before == previous_end:  # a chain: "c" "u" "da"
            word += source[after:tail]
        else:
            if word:
                out.append((start, word))
            start, word = head, source[head:before] + source[after:tail]
        previous_end = tail
    if word:
        out.append((start, word))
    return [(offset, word) for offset, word in out if word[:1].isalpha() or word[:1] == "_"]


def bare(word: str) -> str:
    return word[1:] if word.startswith(".") else word


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


@lru_cache(maxsize=1024)
def _scan(word: str) -> re.Pattern:
    # A literal first: the regex engine then jumps between candidates.
    return re.compile(re.escape(word) + r"(?!\w)")


def offsets(source: str, word: str) -> Iterator[int]:
    """Start offsets of ``word`` (see the module doc for the two kinds)."""
    attribute = word.startswith(".")
    name = bare(word)
    for match in _scan(name).finditer(source):
        start = match.start()
        if start and _is_word_char(source[start - 1]):
            continue
        if attribute and not _after_dot(source, start):
            continue
        yield start
    if not attribute:  # strings hold no attributes
        yield from (offset for offset, joined in joined_words(source) if joined == name)


def _after_dot(source: str, start: int) -> bool:
    """Does a dot come before ``start``, across blanks and line breaks?

    A comment may stand between the dot and the name inside brackets; a line
    break crossed with a ``#`` on the line before counts as a maybe."""
    i = start
    crossed = False
    while i > 0 and source[i - 1] in " \t\\\n\r\f":
        crossed = crossed or source[i - 1] == "\n"
        i -= 1
    if i > 0 and source[i - 1] == ".":
        return True
    if crossed:
        line_start = source.rfind("\n", 0, i) + 1
        return "#" in source[line_start:i]
    return False


def present(groups: Iterable[frozenset[str]], words: frozenset[str]) -> bool:
    """True if every group has a word among ``words`` (bare identifiers)."""
    return all(any(bare(word) in words for word in group) for group in groups)


def alias_words(tree: ast.Module, wanted: set[str]) -> set[str]:
    """Names bound, at module level, to a dotted name with a part in ``wanted``
    (``from torch import load as tl``, ``f = torch.load``, ``import torch.cuda
    as tc``), followed to a fixpoint: the bindings the shared name resolver
    (``names``) reads, so a call through an alias is found by its alias."""
    bindings = list(_bindings(tree))
    found: set[str] = set()
    todo = set(wanted)
    while todo:
        new = {name for name, parts in bindings if parts & todo and name not in found and name not in wanted}
        found |= new
        todo = new
    return found


def _bindings(tree: ast.Module) -> Iterator[tuple[str, frozenset[str]]]:
    from .names import module_level_statements  # the resolver's own view of module code

    for stmt in module_level_statements(tree.body):
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    yield alias.asname, frozenset(alias.name.split("."))
        elif isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                if alias.asname:
                    yield alias.asname, frozenset([alias.name, *(stmt.module or "").split(".")])
        elif isinstance(stmt, ast.Assign):
            dotted = _dotted_parts(stmt.value)
            if dotted:
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        yield target.id, dotted


def _dotted_parts(expr: ast.expr) -> Optional[frozenset[str]]:
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    parts.append(expr.id)
    return frozenset(parts)
