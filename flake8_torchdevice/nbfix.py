"""Fixing the code cells of a notebook, and nothing else of its file.

The fixes run on the cells' virtual module (as the checks do); each changed
line goes back to its cell, and only the JSON strings of ``source`` that
changed are rewritten in the file's text: outputs, metadata, key order,
indentation and the escaping of every other string stay byte for byte.
"""

from __future__ import annotations

import json
import re

from . import notebooks

_PIECES = re.compile(r"[^\n]*\n|[^\n]+$")


class NotFixed(Exception):
    """A fix that cannot be mapped back safely; the message is one line."""


def fix_notebook(text: str, module: notebooks.VirtualModule, cells: list, violations, unsafe: bool) -> tuple[str, int]:
    """(the notebook's new text, fixes applied)."""
    from .fixes import fix_source_counted  # loads LibCST

    fixed, count = fix_source_counted(module.source, violations, unsafe)
    if not count:
        return text, 0
    old, new = module.source.split("\n"), fixed.split("\n")
    if len(old) != len(new):
        raise NotFixed("a fix would change the number of lines of a cell")
    sources = dict(cells)
    changes: dict[int, dict[int, str]] = {}
    for index, (before, after) in enumerate(zip(old, new)):
        if before != after:
            cell, line = module.places[index]
            if sources[cell].split("\n")[line - 1] != before:  # an IPython line we masked
                raise NotFixed(f"a fix would change IPython syntax in cell_{cell}")
            changes.setdefault(cell, {})[line] = after
    return _rewrite(text, sources, changes), count


def _rewrite(text: str, sources: dict, changes: dict) -> str:
    edits = []  # (start, end, replacement) in the file's text
    pieces_of = notebooks.code_source_pieces(text)
    for cell, lines in changes.items():
        source = sources[cell].split("\n")
        for line, after in lines.items():
            source[line - 1] = after
        pieces = pieces_of[cell - 1]
        new_pieces = _PIECES.findall("\n".join(source)) if len(pieces) > 1 else ["\n".join(source)]
        if len(new_pieces) != len(pieces):
            raise NotFixed(f"cell_{cell} does not keep one source line per JSON string")
        edits += [(start, end, json.dumps(piece, ensure_ascii=False))
                  for (start, end, old), piece in zip(pieces, new_pieces) if old != piece]
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text
