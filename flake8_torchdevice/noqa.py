"""``# noqa`` handling for the standalone CLI, with flake8's exact semantics.

- flake8's own regex: ``# noqa`` is case-insensitive, the codes after it are
  matched case-sensitively (``# noqa: tdv201`` silences nothing);
  ``# noqa:TDV`` (no digits) does not parse as a code list, so it is a
  blanket ``# noqa``; ``# noqa: TDV2`` silences every TDV2xx code.
- A line that starts with ``# flake8: noqa`` skips the whole file.
- The comment is searched on the reported physical line, except that a
  token spanning several lines (a triple-quoted string) makes those lines
  one: flake8 maps every line of such a span to their joined text.
"""

from __future__ import annotations

import io
import re
import tokenize
from typing import Iterable, Iterator, Sequence, TypeVar

# Copied from flake8.defaults.NOQA_INLINE_REGEXP (flake8 7.x) so that the
# CLI and the plugin agree without importing flake8 internals.
NOQA_INLINE = re.compile(
    r"# noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?",
    re.IGNORECASE,
)
_SPLIT = re.compile(r"[,\s]")
# flake8.defaults.NOQA_FILE: a line *starting* with it skips the whole file.
NOQA_FILE = re.compile(r"\s*# flake8[:=]\s*noqa", re.IGNORECASE)

V = TypeVar("V")


def is_suppressed(code: str, line_text: str) -> bool:
    match = NOQA_INLINE.search(line_text)
    if match is None:
        return False
    codes_text = match.group("codes")
    if codes_text is None:
        return True
    codes = tuple(item.strip() for item in _SPLIT.split(codes_text) if item.strip())
    return code in codes or code.startswith(codes)


def line_mapping(source: str) -> dict[int, str]:
    """Line number -> the text flake8 searches for ``noqa`` on that line."""
    # StringIO splits on "\n" only, as tokenize and flake8 do (str.splitlines
    # would also split on form feeds and U+2028 and shift every later line).
    lines = io.StringIO(source).readlines()
    mapping: dict[int, str] = {}
    try:
        spans = list(token_spans(tokenize.generate_tokens(io.StringIO(source).readline), len(lines)))
    except (tokenize.TokenError, SyntaxError):
        return {number: text for number, text in enumerate(lines, start=1)}
    for low, high in spans:
        mapping.update(dict.fromkeys(range(low, high + 1), "".join(lines[low - 1:high])))
    for number, text in enumerate(lines, start=1):
        mapping.setdefault(number, text)
    return mapping


def token_spans(tokens: Iterable[tokenize.TokenInfo], count: int) -> Iterator[tuple[int, int]]:
    """(first, last) physical line of each span flake8 reads as one: the lines between
    two NL/NEWLINE ``tokens`` of a ``count``-line text (a multi-line string, a backslash
    continuation)."""
    low, high = count + 2, -1
    for tok in tokens:
        if tok.type in (tokenize.ENDMARKER, tokenize.DEDENT):
            continue
        low, high = min(low, tok.start[0]), max(high, tok.end[0])
        if tok.type in (tokenize.NL, tokenize.NEWLINE):
            yield low, high
            low, high = count + 2, -1


def filter_noqa(source: str, violations: Sequence[V], line_of=lambda v: v.line) -> list[V]:
    """Drop the violations that a ``# noqa`` comment silences."""
    if not violations or "noqa" not in source.lower():
        return list(violations)
    if file_is_ignored(source):
        return []
    mapping = line_mapping(source)
    return [v for v in violations if not is_suppressed(v.code, mapping.get(line_of(v), ""))]


def file_is_ignored(source: str) -> bool:
    return any(NOQA_FILE.match(line) for line in source.split("\n"))
