"""Jupyter notebooks: the code cells as one virtual module.

The cells are joined in order (imports in cell 1 resolve names in cell 5),
and every line remembers its (cell, line). IPython syntax is masked, keeping
line numbers: a line magic, shell escape or help query (``%time f()``,
``!pip install``, ``x = !ls``, ``obj?``) becomes ``pass`` at the same indent, and the lines its backslashes
continue (``!python train.py \\`` then ``--epochs 5``) blank lines;
a cell whose first line is a cell magic is skipped unless the magic runs the
cell's Python (``%%time``, ``%%capture``, ...). Code cells are numbered from 1,
markdown and raw cells not counted: nbqa's numbering, so that ``nbqa flake8``
and ``torchdevice`` name the same cell for the same finding.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

_MAGIC = re.compile(r"^(\s*)(?:[%!?]|\w+\s*=\s*[%!]|[\w.]+\?{1,2}\s*$)")
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})


class NotebookError(Exception):
    """Not a notebook we can read; the message is one line."""


@dataclass
class VirtualModule:
    source: str
    places: list = field(default_factory=list)  # virtual line (1-based) -> (cell, line)

    def place(self, line: int) -> tuple[int, int]:
        if 1 <= line <= len(self.places):
            return self.places[line - 1]
        return self.places[-1] if self.places else (1, line)

    def cells(self) -> tuple[int, ...]:
        """The cell number of each line (``engine.check_source``'s ``cells``)."""
        return tuple(cell for cell, _ in self.places)


def cell_sources(text: str, name: str) -> list[tuple[int, str]]:
    """(cell number, source) for each code cell, numbered among code cells."""
    try:
        data = json.loads(text)
        cells = data["cells"] if isinstance(data, dict) else None
        if not isinstance(cells, list):
            raise NotebookError(f"{name}: not a Jupyter notebook (no cell list)")
        code = [cell for cell in cells if cell.get("cell_type") == "code"]
        found = []
        for number, cell in enumerate(code, start=1):
            source = cell.get("source", "")
            found.append((number, "".join(source) if isinstance(source, list) else str(source)))
        return found
    except (ValueError, KeyError, AttributeError, TypeError) as exc:
        raise NotebookError(f"{name}: not a readable notebook: {str(exc).splitlines()[0]}") from None


def mask(cell: str) -> list[str]:
    lines = cell.split("\n")
    first = lines[0].strip() if lines else ""
    if first.startswith("%%"):
        if first[2:].split(" ", 1)[0] not in PYTHON_CELL_MAGICS:
            return [""] * len(lines)
        lines[0] = ""
    masked, continued = [], False
    for line in lines:
        # IPython joins a magic or shell escape with the lines its backslashes continue (``!pip install \``).
        masked.append("" if continued else _mask_line(line))
        continued = (continued or masked[-1] != line) and line.rstrip().endswith("\\")
    return masked


def _mask_line(line: str) -> str:
    match = _MAGIC.match(line)
    if match is None or line.lstrip().startswith("#"):
        return line
    return match.group(1) + "pass"


def without_broken_cells(cells: list[tuple[int, str]]) -> tuple[list, list]:
    """(the cells that parse on their own, ``broken_cells``): what the reader checks where the joined cells do not
    parse, so that one broken cell does not hide the findings of all the rest."""
    broken = broken_cells(cells)
    numbers = {number for number, _, _ in broken}
    return [cell for cell in cells if cell[0] not in numbers], broken


def broken_cells(cells: list[tuple[int, str]]) -> list[tuple[int, int, str]]:
    """(cell, line, message) of each cell that does not parse on its own."""
    import ast  # only for a notebook whose joined cells do not parse

    found = []
    for cell in cells:
        module = join([cell])
        try:
            ast.parse(module.source)
        except (SyntaxError, ValueError) as exc:
            number, line = module.place(getattr(exc, "lineno", None) or 1)
            found.append((number, line, getattr(exc, "msg", str(exc))))
    return found


def virtual_module(text: str, name: str) -> VirtualModule:
    return join(cell_sources(text, name))


def join(cells: list[tuple[int, str]]) -> VirtualModule:
    """One module of these (number, source) cells, lines mapped back."""
    lines: list[str] = []
    places: list[tuple[int, int]] = []
    for number, source in cells:
        masked = mask(source)
        if masked and masked[-1] == "":
            masked.pop()  # the cell's own trailing newline
        for index, line in enumerate(masked, start=1):
            lines.append(line)
            places.append((number, index))
    return VirtualModule("\n".join(lines) + "\n" if lines else "", places)


def file_lines(text: str) -> dict[tuple[int, int], int]:
    """(cell, line) -> the line of the .ipynb file that holds it, for reports
    that point into the file itself (SARIF regions, GitHub annotations).

    Source lines are JSON strings, one per line in nbformat's layout; a cell
    whose source is one string maps all its lines to that string's line.
    """
    try:
        places: dict[tuple[int, int], int] = {}
        for number, pieces in enumerate(code_source_pieces(text), start=1):
            line = 1
            for start, _, piece in pieces:
                file_line = text.count("\n", 0, start) + 1
                spanned = piece.count("\n") + (not piece.endswith("\n"))  # lines it starts or holds
                for offset in range(spanned):
                    places.setdefault((number, line + offset), file_line)
                line += piece.count("\n")
        return places
    except (ValueError, IndexError, KeyError):
        return {}  # not nbformat's shape: reports keep the cell and line only


_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")


def code_source_pieces(text: str) -> list[list[tuple[int, int, str]]]:
    """For each code cell, its source pieces as (start, end, string): where
    each JSON string of its ``source`` lies in ``text``."""
    cells = next(span for key, span in _members(text, _ws(text, 0)) if key == "cells")
    found = []
    for start, _ in _items(text, cells[0]):
        members = dict(_members(text, start))
        kind, _ = _DECODER.raw_decode(text, members["cell_type"][0])
        if kind != "code":
            continue
        source = members.get("source")
        if source is None:
            found.append([])
        elif text[source[0]] == "[":
            found.append([(s, e, _DECODER.raw_decode(text, s)[0]) for s, e in _items(text, source[0])])
        else:
            found.append([(source[0], source[1], _DECODER.raw_decode(text, source[0])[0])])
    return found


def _ws(text: str, index: int) -> int:
    return _SPACE.match(text, index).end()


def _members(text: str, index: int):
    """(key, (value start, value end)) of the JSON object at ``index``."""
    if text[index] != "{":
        raise ValueError("not an object")
    index = _ws(text, index + 1)
    while text[index] != "}":
        key, index = json.decoder.scanstring(text, index + 1)
        index = _ws(text, _ws(text, index) + 1)  # past the colon
        _, end = _DECODER.raw_decode(text, index)
        yield key, (index, end)
        index = _ws(text, end)
        if text[index] == ",":
            index = _ws(text, index + 1)


def _items(text: str, index: int):
    """(start, end) of each value of the JSON array at ``index``."""
    if text[index] != "[":
        raise ValueError("not an array")
    index = _ws(text, index + 1)
    while text[index] != "]":
        _, end = _DECODER.raw_decode(text, index)
        yield index, end
        index = _ws(text, end)
        if text[index] == ",":
            index = _ws(text, index + 1)
