"""Re-spellings of a program that Python reads as the same program.

Each one changes layout only -- spaces around dots, backslash continuations,
comments between tokens, line breaks inside brackets, string literals split
into joined parts or quoted the other way -- so the ``ast`` is the same and so
must be every rule's verdict. ``respellings(source)`` yields (name, text) for
those that apply and keep the ``ast`` unchanged (checked, not assumed).
"""

from __future__ import annotations

import ast
import io
import tokenize
from typing import Callable, Iterator

Edit = tuple[int, str]  # (offset in the source, text inserted there)


def _tokens(source: str) -> list[tokenize.TokenInfo]:
    return list(tokenize.generate_tokens(io.StringIO(source).readline))


def _offsets(source: str) -> list[int]:
    starts, total = [0], 0
    for line in io.StringIO(source).readlines():  # the lines tokenize counts
        total += len(line)
        starts.append(total)
    return starts


def _apply(source: str, edits: list[tuple[int, int, str]]) -> str:
    """``edits``: (start, end, replacement), non-overlapping."""
    out, last = [], 0
    for start, end, text in sorted(edits):
        out.append(source[last:start])
        out.append(text)
        last = end
    out.append(source[last:])
    return "".join(out)


def _attribute_dots(tokens) -> Iterator[tuple[int, tokenize.TokenInfo]]:
    """Index and token of each ``.`` that reads an attribute (``a.b``, ``f().b``)."""
    for i in range(1, len(tokens) - 1):
        token = tokens[i]
        if token.type == tokenize.OP and token.string == ".":
            before, after = tokens[i - 1], tokens[i + 1]
            if after.type == tokenize.NAME and (before.type == tokenize.NAME or before.string in ")]"):
                yield i, token


def _depths(tokens) -> list[int]:
    depth, out = 0, []
    for token in tokens:
        if token.type == tokenize.OP and token.string in "([{":
            depth += 1
        elif token.type == tokenize.OP and token.string in ")]}":
            depth -= 1
        out.append(depth)
    return out


def spaced_dots(source: str, tokens, starts) -> list:
    return [
        (starts[t.start[0] - 1] + t.start[1], starts[t.end[0] - 1] + t.end[1], " . ")
        for _, t in _attribute_dots(tokens)
    ]


def backslash_dots(source: str, tokens, starts) -> list:
    """``x \\`` newline ``.to(d)``: a continuation before each attribute dot."""
    edits = []
    for _, t in _attribute_dots(tokens):
        at = starts[t.start[0] - 1] + t.start[1]
        edits.append((at, at, " \\\n" + " " * (t.start[1] + 4)))
    return edits


def broken_dots(source: str, tokens, starts) -> list:
    """``(torch`` newline ``.load(p))``: a line break and a comment before each
    attribute dot inside brackets."""
    depths = _depths(tokens)
    edits = []
    for i, t in _attribute_dots(tokens):
        if depths[i] > 0:
            at = starts[t.start[0] - 1] + t.start[1]
            edits.append((at, at, "  # respelled\n" + " " * (t.start[1] + 4)))
    return edits


def commented_arguments(source: str, tokens, starts) -> list:
    """A comment and a line break after each ``(`` and ``,`` inside brackets."""
    depths = _depths(tokens)
    edits = []
    for i, t in enumerate(tokens):
        if t.type == tokenize.OP and t.string in "(," and depths[i] > 0 and i + 1 < len(tokens):
            if tokens[i + 1].type in (tokenize.NL, tokenize.COMMENT):
                continue
            at = starts[t.end[0] - 1] + t.end[1]
            edits.append((at, at, "  # respelled\n" + " " * (t.start[1] + 1)))
    return edits


def joined_strings(source: str, tokens, starts) -> list:
    """Plain one-line literals without escapes, in turn: ``"cuda:1"`` -> ``"cu" "da:1"``, the next
    one -> ``'cuda:1'`` (the other quote, where the text holds none), and so on: one file then
    spells the same string both ways, as real code does (``'/'`` here, ``"/"`` there)."""
    edits = []
    for t in tokens:
        if t.type != tokenize.STRING or t.start[0] != t.end[0]:
            continue
        text = t.string
        quote = text[-1]
        if text[0] != quote or text[:3] == quote * 3 or "\\" in text or len(text) < 4:
            continue  # prefixed (f, b, r), triple-quoted, escaped or too short
        start = starts[t.start[0] - 1] + t.start[1]
        other = "'" if quote == '"' else '"'
        if len(edits) % 2 and other not in text:
            edits.append((start, start + len(text), other + text[1:-1] + other))
            continue
        middle = (len(text) - 2) // 2 + 1
        split = text[:middle] + quote + " " + quote + text[middle:]
        edits.append((start, start + len(text), split))
    return edits


RESPELLINGS: dict[str, Callable] = {
    "spaced dots": spaced_dots,
    "backslash dots": backslash_dots,
    "broken dots": broken_dots,
    "commented arguments": commented_arguments,
    "joined or requoted strings": joined_strings,
}


def respellings(source: str) -> Iterator[tuple[str, str]]:
    """(name, re-spelled text) for each re-spelling that changes the text
    and keeps the ``ast``."""
    try:
        tokens = _tokens(source)
        reference = ast.dump(ast.parse(source))
    except (SyntaxError, tokenize.TokenError):  # IndentationError is a SyntaxError
        return
    starts = _offsets(source)
    for name, respell in RESPELLINGS.items():
        edits = respell(source, tokens, starts)
        if not edits:
            continue
        text = _apply(source, edits)
        try:
            same = ast.dump(ast.parse(text)) == reference
        except SyntaxError:
            same = False
        if same:
            yield name, text
