"""Torch tensor factories, shared by TDV501 and TDV502.

A factory creates a new tensor on the default device (the CPU) unless it is
given ``device=``. ``*_like`` factories and ``Tensor.new_*`` methods inherit
the device of their input and are deliberately absent.

The text helpers here serve the triggers: they find factory calls cheaply,
and decide from the call's text whether it passes ``device`` or is moved at
once. The visitors apply the very same text test (``call_is_placed``) to the
code of the call they see, so a trigger never drops a call that its rule
would report.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable, Optional

from .._lazy import cst

from .triggers import per_source, word_matches

# torch.<name>(...) creates a CPU tensor without device=.
FACTORY_NAMES = frozenset(
    """zeros ones empty full tensor as_tensor asarray arange range linspace logspace
    eye rand randn randint randperm from_numpy empty_strided scalar_tensor
    tril_indices triu_indices frombuffer Tensor FloatTensor DoubleTensor HalfTensor
    BFloat16Tensor LongTensor IntTensor ShortTensor CharTensor ByteTensor BoolTensor""".split()
)
QUALIFIED_FACTORIES = frozenset(f"torch.{name}" for name in FACTORY_NAMES)
# These copy their data argument, and keep its device when it is a tensor.
DATA_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor", "torch.asarray"})
# Methods that move a tensor (or leave no tensor) right after it is made.
MOVED_OR_CONVERTED = frozenset({"to", "type_as", "cuda", "item", "tolist"})

_NAME_ALT = "|".join(sorted(FACTORY_NAMES, key=len, reverse=True))
# Every scan below starts with one literal: Python's regex engine tries each
# character of the file for a leading \b, ^ or alternation, ~10-50x slower
# (see triggers.py). Word boundaries and line starts are checked afterwards.
_IMPORT_TORCH_AS = re.compile(r"import\s+torch\s+as\s+(\w+)")  # after \b
_TORCH_LINE_END = re.compile(r"torch[ \t]*$", re.M)  # candidates for ...
_TORCH_ASSIGN = re.compile(r"[ \t]*(\w+)\s*=\s*torch[ \t]*$", re.M)  # ... th = torch
_FROM_TORCH = re.compile(r"from\s+torch\s+import\s+(\([^)]*\)|[^\n]*)")  # after \b
_IMPORTED = re.compile(r"\b(\w+)(?:\s+as\s+(\w+))?")
_FACTORY_LINE_END = re.compile(rf"=\s*(?:\w+\.)?(?:{_NAME_ALT})[ \t]*$", re.M)  # candidates for ...
_FACTORY_ALIAS = re.compile(rf"[ \t]*(\w+)\s*=\s*(?:\w+\.)?({_NAME_ALT})[ \t]*$", re.M)  # ... z = torch.zeros
_OUT_KEYWORD = re.compile(r"\bout\s*=")
_AFTER_CALL = re.compile(r"\s*\.\s*(\w+)\s*\(")
_PAREN_TOKENS = re.compile(r"""[()#'"]""")
_STRING_OR_COMMENT = re.compile(r"""[#'"]""")
_STRING_START = re.compile(r"""('''|\"\"\"|'|")""")
_DOTTED = re.compile(r"[\w.]")


def _line_matches(candidates: re.Pattern, full: re.Pattern, source: str) -> Iterable[re.Match]:
    """``full`` (a whole-line pattern, less its ``^``) matched from the start
    of each line where ``candidates`` (its literal-first tail) matches."""
    for match in candidates.finditer(source):
        found = full.match(source, source.rfind("\n", 0, match.start()) + 1)
        if found is not None:
            yield found


class FactorySpelling:
    """How the factories may be spelled in one source file (text only)."""

    def __init__(self, source: str) -> None:
        self.modules = {"torch"} | {m.group(1) for m in word_matches(_IMPORT_TORCH_AS, source)}
        self.modules.update(m.group(1) for m in _line_matches(_TORCH_LINE_END, _TORCH_ASSIGN, source))
        # Bare names: ``from torch import zeros`` / ``... import zeros as z``.
        self.bare: set[str] = set()
        for imported in word_matches(_FROM_TORCH, source):
            for name, alias in _IMPORTED.findall(imported.group(1).split("#", 1)[0]):
                if name in FACTORY_NAMES:
                    self.bare.add(alias or name)
        for match in _line_matches(_FACTORY_LINE_END, _FACTORY_ALIAS, source):
            self.bare.add(match.group(1))

    def is_factory_text(self, source: str, name_start: int, name: str) -> bool:
        """Is ``name`` at ``name_start`` spelled as a torch factory?"""
        if source[name_start - 1:name_start] != ".":
            return name in self.bare
        prefix = re.search(r"([\w.]+)\.\s*$", source[max(0, name_start - 80):name_start])
        return prefix is not None and prefix.group(1) in self.modules

    def calls(self, source: str) -> Iterable[re.Match]:
        """Regex matches (group 1: the name) of every spelled factory call, in
        source order: ``<module>.<factory>(`` (the match starts at the module,
        on the name's line) and ``<bare name>(``. One literal-first scan per
        spelling: an alternation of all factory names is ~10x slower."""
        found = {}
        for module in self.modules:
            for match in _dotted_call(module).finditer(source):
                start = match.start()
                if start == 0 or not _DOTTED.match(source, start - 1):  # the whole dotted prefix
                    found.setdefault(match.start(1), match)
        for name in self.bare:
            for match in word_matches(_bare_call(name), source):
                if self.is_factory_text(source, match.start(1), name):
                    found.setdefault(match.start(1), match)
        return [found[start] for start in sorted(found)]


@per_source  # TDV501 and TDV502 share it
def spelled_factory_calls(source: str) -> tuple[FactorySpelling, list[re.Match]]:
    """The file's factory spelling and every call it spells (see ``calls``)."""
    spelling = FactorySpelling(source)
    return spelling, spelling.calls(source)


@lru_cache(maxsize=64)
def _dotted_call(module: str) -> re.Pattern:
    return re.compile(rf"{re.escape(module)}\.({_NAME_ALT})\s*\(")


@lru_cache(maxsize=256)
def _bare_call(name: str) -> re.Pattern:
    return re.compile(rf"({re.escape(name)})\s*\(")


def closing_paren(text: str, open_index: int) -> Optional[int]:
    """Index of the ``)`` matching the ``(`` at ``open_index``, skipping
    strings and comments; None if the text ends first."""
    depth, i = 0, open_index
    while True:
        match = _PAREN_TOKENS.search(text, i)
        if match is None:
            return None
        ch, i = match.group(), match.start()
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
        elif ch == "#":
            newline = text.find("\n", i)
            if newline < 0:
                return None
            i = newline
        else:
            quote = _STRING_START.match(text, i).group()
            end = _string_end(text, i + len(quote), quote)
            if end is None:
                return None
            i = end - 1
        i += 1


def _string_end(text: str, i: int, quote: str) -> Optional[int]:
    while True:
        j = text.find(quote, i)
        if j < 0:
            return None
        backslashes = 0
        while text[j - 1 - backslashes] == "\\":
            backslashes += 1
        if backslashes % 2 == 0:
            return j + len(quote)
        i = j + 1


def outside_strings(source: str, offsets: list[int]) -> list[int]:
    """The sorted ``offsets`` that lie in code, not in a string or comment.

    Docstring examples (``>>> preds = tensor([...])``) are most of the factory
    calls in a library like torchmetrics; no rule reports inside a string, so
    the trigger drops them instead of having their function parsed."""
    if not offsets:
        return offsets
    kept, i, k = [], 0, 0
    while k < len(offsets):
        match = _STRING_OR_COMMENT.search(source, i) if i < len(source) else None
        start = match.start() if match is not None else len(source)
        while k < len(offsets) and offsets[k] < start:
            kept.append(offsets[k])
            k += 1
        if match is None:
            break
        if match.group() == "#":
            end = source.find("\n", start)
            end = len(source) if end < 0 else end
        else:
            quote = _STRING_START.match(source, start).group()
            end = _string_end(source, start + len(quote), quote) or len(source)
        while k < len(offsets) and offsets[k] < end:
            k += 1  # inside the string or comment
        i = end
    return kept


def call_is_placed(text: str, open_index: int) -> bool:
    """True if the call whose ``(`` is at ``open_index`` mentions a device
    (``device=``, or ``**kwargs`` that may carry it), or is moved/converted
    at once (``.to(``, ``.type_as(``, ``.cuda(``, ``.item(``, ``.tolist(``).
    Unknown (unbalanced text) counts as placed: the rule stays silent."""
    close = closing_paren(text, open_index)
    if close is None:
        return True
    args = text[open_index:close]
    if "device" in args or "**" in args or _OUT_KEYWORD.search(args):
        return True  # out= decides the device too
    after = _AFTER_CALL.match(text, close + 1)
    return after is not None and after.group(1) in MOVED_OR_CONVERTED


def factory_name(names, call: cst.Call) -> Optional[str]:
    """``torch.zeros`` etc. if ``call`` is a torch factory call, else None."""
    func = call.func
    while isinstance(func, cst.Attribute):
        func = func.value
    if not isinstance(func, cst.Name):
        return None  # torch.zeros(3).float: the resolver would read it as torch.zeros.float
    qualified = names.qualify(call.func)
    return qualified if qualified in QUALIFIED_FACTORIES else None


def is_zero_dim(qualified: str, call: cst.Call) -> bool:
    """A factory call that surely makes a 0-dim tensor: ``torch.tensor(1.0)``,
    ``torch.zeros(())``, ``torch.full((), v)``, ``torch.scalar_tensor(v)``."""
    if qualified == "torch.scalar_tensor":
        return True
    if not call.args or call.args[0].keyword is not None:
        return False
    first = call.args[0].value
    if qualified in DATA_FACTORIES:
        return _is_scalar_literal(first)
    if qualified in {"torch.zeros", "torch.ones", "torch.empty", "torch.full", "torch.rand", "torch.randn"}:
        return isinstance(first, (cst.Tuple, cst.List)) and not first.elements
    return False


def maybe_zero_dim(qualified: str, call: cst.Call) -> bool:
    """0-dim, or data whose shape we cannot see (``torch.tensor(scale)``,
    ``torch.tensor(cfg.WEIGHT)``): precision first, both count as 0-dim."""
    if qualified in DATA_FACTORIES and call.args and call.args[0].keyword is None:
        data = call.args[0].value
        return not isinstance(data, (cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp))
    return is_zero_dim(qualified, call)


def _is_scalar_literal(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.Name):
        return expr.value in {"True", "False"}
    if isinstance(expr, cst.UnaryOperation):
        return _is_scalar_literal(expr.expression)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name):
        return expr.func.value in {"float", "int", "bool"}  # float("inf")
    return False
