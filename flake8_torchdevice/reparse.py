"""Parsing again only what changed, for a process that checks one file many times
(the language server): the kept text is parsed one top-level statement at a time,
each part's LibCST tree cached by its text, and the parts joined into one module whose
code is the text, character for character.

Joining is only done where it is exact: every part must parse alone and all parts must
agree on the conventions LibCST leaves implicit (the indentation unit of blocks, the
line ending, the encoding); otherwise the text is parsed whole, as the engine always does.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Sequence

from ._lazy import cst


class ParseCache:
    """Parsed parts by their text; the least recently used go first."""

    def __init__(self, size: int = 4096) -> None:
        self._parts: OrderedDict = OrderedDict()
        self._size = size

    def parse(self, text: str, starts: Sequence[int]) -> "cst.Module":
        """``text`` (lines joined by ``\\n``) parsed; ``starts``: the 0-based lines where
        top-level statements begin."""
        lines = text.split("\n")
        bounds = sorted({0, *(s for s in starts if 0 < s < len(lines))}) + [len(lines)]
        chunks = ["\n".join(lines[a:b]) + ("\n" if b < len(lines) else "") for a, b in zip(bounds, bounds[1:])]
        try:
            parts = [self._part(chunk) for chunk in chunks]
        except cst.ParserSyntaxError:
            return cst.parse_module(text)  # the whole text decides (and reports) alone
        return _join(parts) or cst.parse_module(text)

    def _part(self, chunk: str) -> "cst.Module":
        module = self._parts.pop(chunk, None)
        if module is None:
            module = cst.parse_module(chunk)
        self._parts[chunk] = module
        while len(self._parts) > self._size:
            self._parts.popitem(last=False)
        return module


def _join(parts: list) -> "cst.Module | None":
    """One module of the parts, or None where LibCST's implicit conventions differ."""
    first = parts[0]
    blocks = [p for p in parts if any(not isinstance(s, cst.SimpleStatementLine) for s in p.body)]
    if any(p.default_indent != blocks[0].default_indent for p in blocks) or any(
        p.default_newline != first.default_newline or p.encoding != first.encoding for p in parts
    ):
        return None
    body: list = []
    pending: list = []  # blank and comment lines between parts: the next statement's leading lines
    for index, part in enumerate(parts):
        lead = pending + (list(part.header) if index else [])
        statements = list(part.body)
        if statements:
            statements[0] = statements[0].with_changes(leading_lines=[*lead, *statements[0].leading_lines])
            pending = []
        else:
            pending = lead
        pending += list(part.footer)
        body += statements
    return cst.Module(
        body=body, header=first.header, footer=pending, encoding=first.encoding,
        default_indent=(blocks[0] if blocks else first).default_indent,
        default_newline=first.default_newline, has_trailing_newline=parts[-1].has_trailing_newline,
    )
