"""Where the words that rules declare in ``NEEDS`` occur in a source text.

This is the only text scan in the engine, and it knows nothing of any rule:
a word is an identifier, matched whole anywhere (code, strings, comments),
or, written with a leading dot, an attribute name (``.to``: a ``to`` that
follows a dot, across spaces, backslash continuations and comments), or,
written with a leading star, part of a word in any case (``*cpu``). A
trailing mark narrows a word to how it is used: ``device=`` a name given a
value other than ``None`` with one ``=`` (a keyword argument; an assignment
or default matches too), ``zeros(`` a name that is called or ends its line
(an alias ``z = torch.zeros`` is called later), ``cuda:`` a name a colon
follows, across a junction of joined literals (``"cuda:1"``), ``cuda"`` a name a
quote follows at once (the end of a string literal: ``"cuda"``, ``'cuda'``); a leading dot
and a trailing mark combine (``.cuda(``). It may over-match (a word in a comment costs a little parsing), never
under-match: that is what makes skipping code without the words safe. A
word split across joined string literals (``"cud" "a:1"`` is ``"cuda:1"``)
counts too, across blanks and line breaks (not across a comment).
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from typing import Iterable, Iterator, Optional

from .ast_helpers import ast_dotted_name

_WORD = re.compile(r"\w+")
# Where two string literals meet: a closing quote, blanks or a line break, an
# optional prefix, an opening quote.
JUNCTION = re.compile(r"""["'][ \t]*(?:\\?\n[ \t]*)?[rRuUfFbB]{0,2}["']""")


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
    for match in JUNCTION.finditer(source):
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
    word = word[1:] if word[:1] in ".*" else word
    return word[:-1] if word[-1:] in "=(:\"" else word


# A group word standing for the calls of the file's module-level module classes that build on
# the CPU and move nothing (``Net(``; ``still_modules.still_class``): which names those are only
# the file says (``Scan.group_words`` expands it).
LOCAL_CLASS_CALLS = "<module-level class>("
# The same for the constructors the file imports from its own project (``vgg16_bn(``;
# ``analysis/project_models.project_constructors``).
PROJECT_MODEL_CALLS = "<project model>("


def is_part(word: str) -> bool:
    """``*cpu``: any identifier (or word of a string) containing ``cpu``, in
    any case (``cpu_device``, ``CPU``): for a verdict that reads names."""
    return word.startswith("*")


def occurs(word: str, present: frozenset[str]) -> bool:
    """Is ``word`` among the identifiers ``present`` (see ``identifiers``)?"""
    if is_part(word):
        return word[1:].lower() in _lowered(present)
    return bare(word) in present


def _lowered(present: frozenset[str]) -> str:
    """All of ``present``, lower-cased, in one string (the last set's is kept)."""
    cached = _LOWERED[0]
    if cached[0] is not present:
        cached = (present, "\n".join(present).lower())
        _LOWERED[0] = cached
    return cached[1]


_LOWERED: list = [(None, "")]


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def offsets(source: str, word: str) -> Iterator[int]:
    """Start offsets of ``word`` (see the module doc for its forms)."""
    return iter(sorted(offset for offset, _ in offsets_of(source, [word])))


def offsets_of(source: str, wanted: Iterable[str]) -> list[tuple[int, str]]:
    """(offset, word) for each place one of ``wanted`` occurs: one scan of
    ``source`` per name, then each form's check where the name is."""
    by_name: dict[str, list[str]] = {}
    found = []
    for word in wanted:
        if is_part(word):
            found += [(offset, word) for offset in _part_offsets(source, word[1:])]
        else:
            by_name.setdefault(bare(word), []).append(word)
    if not by_name:
        return found
    for name, forms in by_name.items():
        for match in _scan(name).finditer(source):
            start, end = match.span()
            if start and _is_word_char(source[start - 1]):
                continue
            found += [(start, word) for word in forms if _form_holds(source, word, start, end)]
    # A word joined across literals is in a string: no attribute, keyword or
    # call; a colon after it (``"cu" "da:1"``) is not checked (over-match).
    for offset, joined in joined_words(source):
        found += [(offset, word) for word in by_name.get(joined, ()) if word[0] != "." and word[-1] not in "=("]
    return found


def _form_holds(source: str, word: str, start: int, end: int) -> bool:
    if word[0] == "." and not _after_dot(source, start):
        return False
    if word[-1] == "=":
        return _before_equals(source, end)
    if word[-1] == "(":
        return _before_call(source, end)
    if word[-1] == ":":
        return _before_colon(source, end)
    if word[-1] == '"':
        return source[end:end + 1] in ("'", '"')
    return True


def _before_colon(source: str, end: int) -> bool:
    """Does ``:`` follow ``end`` at once, or after the junction of two joined
    string literals (``"cuda" ":1"``)?"""
    while True:
        if source.startswith(":", end):
            return True
        junction = JUNCTION.match(source, end)
        if junction is None:
            return False
        end = junction.end()


@lru_cache(maxsize=1024)
def _scan(name: str) -> re.Pattern:
    # A literal first: the regex engine then jumps between candidates (one
    # alternation of all the names scans several times slower).
    return re.compile(re.escape(name) + r"(?!\w)")


def _part_offsets(source: str, part: str) -> Iterator[int]:
    yield from (match.start() for match in _scan_part(part).finditer(source))
    yield from (offset for offset, joined in joined_words(source) if part.lower() in joined.lower())


@lru_cache(maxsize=64)
def _scan_part(part: str) -> re.Pattern:
    return re.compile(re.escape(part), re.I)


def _skip_blanks(source: str, i: int, also: str = "") -> int:
    """The offset of the first character from ``i`` on that is not a blank,
    a backslash, a comment or one of ``also`` (``"\\n"`` to cross lines)."""
    size = len(source)
    while i < size:
        char = source[i]
        if char in " \t\\\r\f" or char in also:
            i += 1
        elif char == "#":
            newline = source.find("\n", i)
            i = size if newline < 0 else newline
        else:
            break
    return i


def _before_call(source: str, end: int) -> bool:
    """Is the name at ``end`` called (``(`` follows, across blanks, comments,
    line breaks and closing parentheses: ``(torch.zeros)(3)``), or does it end
    its line or statement, as an alias does (``z = torch.zeros``)?"""
    i = _skip_blanks(source, end, ")")
    return i >= len(source) or source[i] in "(\n;"


def _before_equals(source: str, end: int) -> bool:
    """Does a single ``=`` follow ``end``, across blanks, line breaks and
    comments (``f(device  # why`` newline ``= d)``), with a value other
    than ``None`` (the default that leaves something unset)?"""
    i = _skip_blanks(source, end, "\n")
    if not source.startswith("=", i) or source.startswith("==", i):
        return False
    value = source[i + 1:i + 40].lstrip()  # ``device=None`` gives nothing
    return not (value.startswith("None") and not _is_word_char(value[4:5] or " "))


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
    return all(any(occurs(word, words) for word in group) for group in groups)


# ``from pkg import a, b`` / ``from pkg import (\n a,\n b)`` / with backslash continuations
# (also around the dots of the path: ``from torch . cuda . amp import autocast``),
# at any depth, at a line's start or after ``;`` or ``:`` (``if x: from m import a``): what
# an imported-by-name check reads. It may over-match (a comment, a docstring), never under-match.
_FROM_IMPORT = re.compile(
    r"(?:^|[;:])(?:[ \t]|\\\n)*from[\s\\]+(?:\.(?:[ \t]|\\\n)*)*(?:\w+(?:(?:[ \t]|\\\n)*\.(?:[ \t]|\\\n)*\w+)*)?"
    r"[\s\\]+import\b"
    r"(?:[ \t]|\\\n)*(\([^)]*\)|[^\n\\]*(?:\\\n[^\n\\]*)*)",
    re.M,
)


def names_imported_from(source: str) -> frozenset[str]:
    """Every name a ``from ... import`` of ``source`` may bind under its own name (one scan):
    such a plain ``name`` can mean what ``pkg.name`` means."""
    return frozenset(name for match in _FROM_IMPORT.finditer(source) for name in _WORD.findall(match.group(1)))


def alias_words(tree: ast.Module, wanted: set[str]) -> set[str]:
    """Names bound, at module level, to a dotted name with a part in ``wanted``
    (``from torch import load as tl``, ``f = torch.load``, ``import torch.cuda
    as tc``), followed to a fixpoint: the bindings the shared name resolver
    (``names``) reads, so a call through an alias is found by its alias."""
    bindings = list(_bindings(tree))
    found: set[str] = set()
    todo = set(wanted)
    while todo:
        # An alias may share its target's name (``autocast = torch.cuda.amp.autocast``): the plain
        # name is then a word of its own, where the group only had the attribute (``.autocast``).
        new = {name for name, parts in bindings if parts & todo and name not in found}
        found |= new
        todo = new
    return found


def _bindings(tree: ast.Module) -> Iterator[tuple[str, frozenset[str]]]:
    from .names import ARRAY_PACKAGES, module_level_statements  # the resolver's own view of module code

    for stmt in module_level_statements(tree.body):
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    yield alias.asname, frozenset(alias.name.split("."))
        elif isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                if alias.asname:
                    yield alias.asname, frozenset([alias.name, *(stmt.module or "").split(".")])
                elif (stmt.module or "").partition(".")[0] in ARRAY_PACKAGES:
                    # ``from sklearn import metrics``: ``metrics.f1_score(`` is a ``sklearn`` word (TDV603)
                    yield alias.name, frozenset((stmt.module or "").split("."))
        elif isinstance(stmt, ast.Assign):
            dotted = _dotted_parts(stmt.value)
            if dotted:
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        yield target.id, dotted


def _dotted_parts(expr: ast.expr) -> Optional[frozenset[str]]:
    dotted = ast_dotted_name(expr)
    return frozenset(dotted.split(".")) if dotted else None


def assigned_call_lines(tree: ast.Module, source_lines: list[str]) -> frozenset[tuple[int, Optional[int]]]:
    """Where a word may name the innermost call of a value assigned to an attribute
    (``self.x = torch.zeros(3).long()``: ``zeros``), as (line, column where the name
    ends); the end of an aliasing value (``z = torch.zeros``), where a word may name what
    such a call uses, likewise; and the lines of imports, as (line, None): the whole line.
    ``Rule.ASSIGNED``'s necessary condition."""
    found: set[tuple[int, Optional[int]]] = set()
    wrappers = {"Variable"}  # ``Variable(torch.zeros(1))`` is the factory's tensor: its call counts too
    for node in _statements(tree.body):
        if isinstance(node, ast.ImportFrom):
            wrappers.update(alias.asname for alias in node.names if alias.name == "Variable" and alias.asname)
    for node in _statements(tree.body):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update((line, None) for line in range(node.lineno, node.end_lineno + 1))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if all(isinstance(t, ast.Name) for t in targets) and _dotted_parts(node.value) is not None:
                # ``z = torch.zeros``: the word that matters ends the value (``tensor = output``
                # binds no factory, whatever its target's name).
                found.add(_end_of(node.value, source_lines))
            elif any(isinstance(target, ast.Attribute) for target in targets):
                for value in _listed_values(node.value):
                    callee = _innermost_callee(value)
                    if callee is not None:
                        found.add(_end_of(callee, source_lines))
                    wrapped = _wrapped_value(value, callee, wrappers)
                    if wrapped is not None and (inner := _innermost_callee(wrapped)) is not None:
                        found.add(_end_of(inner, source_lines))
    return frozenset(found)


def displayed_attribute_lines(tree: ast.Module) -> frozenset[int]:
    """The lines of each assignment of a list, tuple or dict display, of a list or dict
    comprehension, or of an empty ``list()`` / ``dict()``, to an attribute (``self.layers = [nn.Linear(4, 4) for _
    in range(3)]``, ``self.heads = {}``), directly or through a plain name bound to one earlier in the file
    (``layers = []`` ... ``self.layers = layers``): ``Rule.DISPLAYED``'s necessary condition. One
    pass in source order; a name is not tied to its function, which only keeps more."""
    found: set[int] = set()
    displayed: set[str] = set()  # plain names bound to a display so far
    for node in _statements(tree.body):
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if isinstance(node.value, _DISPLAYS) or _empty_container(node.value):
            displayed.update(target.id for target in targets if isinstance(target, ast.Name))
        elif not (isinstance(node.value, ast.Name) and node.value.id in displayed):
            continue
        if any(isinstance(target, ast.Attribute) for target in targets):
            found.update(range(node.lineno, node.end_lineno + 1))
    return frozenset(found)


_DISPLAYS = (ast.List, ast.Tuple, ast.ListComp, ast.Dict, ast.DictComp)


def _empty_container(value: ast.expr) -> bool:
    """``list()`` / ``dict()``: an empty display by another spelling."""
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in ("list", "dict") \
        and not value.args and not value.keywords


def _statements(body: list) -> Iterator[ast.stmt]:
    """Every statement of ``body``, nested ones included; expressions are not entered
    (no assignment statement lives in one)."""
    todo = list(reversed(body))
    while todo:
        stmt = todo.pop()
        yield stmt
        for name in _BODIES:
            inner = getattr(stmt, name, None)
            if inner:
                todo.extend(reversed(inner))
        for handler in getattr(stmt, "handlers", ()) or getattr(stmt, "cases", ()):
            todo.extend(reversed(handler.body))


_BODIES = ("body", "orelse", "finalbody")


def _end_of(node: ast.expr, source_lines: list[str]) -> tuple[int, Optional[int]]:
    """(line, character column) where ``node`` ends; the whole line (None) where
    ``ast``'s byte columns are not character columns."""
    line = node.end_lineno
    text = source_lines[line - 1] if line <= len(source_lines) else ""
    return (line, node.end_col_offset) if text.isascii() else (line, None)


def _listed_values(value: ast.expr) -> list:
    """The value, or the elements of a list of values (``[f(1)] * n``, ``[f(a) for a in xs]``,
    ``[f(1), f(2)]``): a list attribute of factory tensors is state too."""
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):
        value = value.left if isinstance(value.left, (ast.List, ast.Tuple)) else value.right
    if isinstance(value, ast.ListComp):
        return [value.elt]
    if isinstance(value, (ast.List, ast.Tuple)):
        return list(value.elts)
    return [value]


def _wrapped_value(value: ast.expr, callee: Optional[ast.expr], wrappers: set) -> Optional[ast.expr]:
    """The first argument of ``Variable(...)`` (any alias the file imports, or ``x.Variable``), the innermost
    call of ``value``, else None."""
    name = callee.id if isinstance(callee, ast.Name) else callee.attr if isinstance(callee, ast.Attribute) else None
    if name not in wrappers:
        return None
    while isinstance(value, ast.Call) and value.func is not callee:
        value = value.func.value if isinstance(value.func, ast.Attribute) else None
    return value.args[0] if isinstance(value, ast.Call) and value.args else None


def _innermost_callee(value: ast.expr) -> Optional[ast.expr]:
    """``f(...).m(...).n(...)`` -> ``f``; None when ``value`` is no call."""
    callee = None
    while isinstance(value, ast.Call):
        callee = value.func
        if not isinstance(callee, ast.Attribute) or not isinstance(callee.value, ast.Call):
            break
        value = callee.value
    return callee
