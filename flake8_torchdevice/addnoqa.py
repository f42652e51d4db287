"""``torchdevice --add-noqa``: suppress today's findings so that only new ones report.

Each finding gets ``# noqa: TDVxxx`` where flake8 reads it: flake8 joins the physical
lines between two NL/NEWLINE tokens (a multi-line string, a backslash continuation)
and searches the joined text, so the comment goes at the end of the last line of the
finding's span, the one place a comment is always legal. An existing ``# noqa: X`` comment
there gets the code added (``# noqa: X,TDV201``); a blanket ``# noqa`` never comes of it.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections import defaultdict
from typing import Iterable

from .noqa import NOQA_INLINE, token_spans

_LINE_END = re.compile(r"[\r\n]*\Z")


def add_noqa(source: str, findings: Iterable[tuple[int, str]]) -> tuple[str, int]:
    """``source`` with a ``# noqa`` for every ``(line, code)``; and the number of lines changed.
    Raises ``tokenize.TokenError`` / ``SyntaxError`` for a file that does not tokenize."""
    lines = io.StringIO(source).readlines()  # "\n" only, as tokenize and flake8 split
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    ends = _span_ends(tokens, len(lines))
    wanted: dict[int, set[str]] = defaultdict(set)
    for line, code in findings:
        wanted[ends.get(line, line)].add(code)
    comments = {tok.start[0]: tok for tok in tokens if tok.type == tokenize.COMMENT}
    changed = 0
    for row, codes in wanted.items():
        if not 1 <= row <= len(lines):
            continue
        text = lines[row - 1]
        new = _with_codes(text, sorted(codes), comments.get(row))
        if new != text:
            lines[row - 1] = new
            changed += 1
    return "".join(lines), changed


def _span_ends(tokens: list, count: int) -> dict[int, int]:
    """Physical line -> the last line of its flake8 span (where a comment may go)."""
    ends: dict[int, int] = {}
    for low, high in token_spans(tokens, count):
        ends.update(dict.fromkeys(range(low, high + 1), high))
    return ends


def _with_codes(text: str, codes: list[str], comment) -> str:
    """``text`` (one physical line) with ``# noqa`` for ``codes``, merged into its own
    ``# noqa: X`` comment when it has one."""
    match = NOQA_INLINE.search(comment.string) if comment is not None else None
    if match is not None and match.group("codes"):
        present = {code for code in re.split(r"[,\s]+", match.group("codes")) if code}
        missing = [code for code in codes if code not in present]
        if not missing:
            return text
        # Insert after the last listed code (the group may end in separators).
        last = match.start("codes") + len(match.group("codes").rstrip(", \t"))
        at = comment.start[1] + last
        return text[:at] + "," + ",".join(missing) + text[at:]
    if match is not None:  # a blanket ``# noqa`` already silences everything
        return text
    body = _LINE_END.sub("", text)
    return f"{body}  # noqa: {','.join(codes)}{text[len(body):]}"
