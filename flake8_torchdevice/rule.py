"""The contract between rules and the engine: ``Rule``, ``FileContext``, ``Violation``.

A rule is one small class, in the spirit of Fixit 2: metadata (which feeds the
README table, the rule page, SARIF and the option handling), the words its
findings cannot do without (``NEEDS``, the only thing the engine's selection
may use), the context its verdict depends on (``SCOPE``), and LibCST
``visit_<Node>`` / ``leave_<Node>`` methods run in one shared walk. The
verdict lives in those methods alone; a fix is built there too and handed
over with the report (``Fix``), so that no fixer decides a second time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, ClassVar, FrozenSet, Optional, Sequence, Tuple, Union

from ._lazy import cst

if TYPE_CHECKING:
    from .names import NameResolver

# What context a rule's verdict on a node depends on (besides the module
# context every rule gets: imports, module-level guards and exits, the
# headers and decorators of the enclosing definitions).
STATEMENT = "statement"  # the statement itself, inside its enclosing function
FUNCTION = "function"  # the enclosing function body; at module level, all module code
CLASS = "class"  # the whole enclosing top-level class (other methods count)
DEFINITION = "definition"  # a TOGETHER value: see ``Rule.TOGETHER``


@dataclass(frozen=True)
class Violation:
    code: str
    line: int  # 1-based
    col: int  # 0-based, as flake8 expects from a plugin
    message: str  # without the code
    end_line: int = 0
    end_col: int = 0

    def text(self) -> str:
        return f"{self.code} {self.message}"


@dataclass(frozen=True)
class Fix:
    """Replace ``target`` (the reported node unless given) by ``replacement``:
    a node, or a function of the target as other fixes inside it left it
    (so that nested fixes compose)."""

    replacement: Union["cst.CSTNode", Callable[["cst.CSTNode"], "cst.CSTNode"]]
    target: Optional["cst.CSTNode"] = None


@dataclass
class Report:
    rule: type
    node: "cst.CSTNode"
    message: str
    statement: Optional[int]  # index in module.body of the statement holding ``node``
    fix: Optional[Fix] = None


class FileContext:
    """What a rule may know about the file being checked."""

    def __init__(self, names: "NameResolver", source: str, filename: Optional[str] = None, is_test: bool = False,
                 cells: Optional[Sequence[int]] = None, starts: Sequence[int] = ()):
        self.names = names
        self.source = source
        self.filename = filename
        self.is_test = is_test  # a test module: by its name, or it imports pytest/unittest
        self.reports: list[Report] = []
        self.statement: Optional[int] = None  # index in module.body being walked
        # A notebook's cell number for each line of its joined cells (None: not a notebook), and the
        # first line of each top-level statement the engine parsed, in ``module.body``'s order.
        self.cells = cells
        self.starts = starts

    def enter_statement(self, index: int) -> None:
        self.statement = index


def _groups(needs) -> Tuple[FrozenSet[str], ...]:
    """``{"a", "b"}`` is one group (any of them); ``[{"a"}, {"b", "c"}]`` are
    groups that must all be met."""
    if not needs:
        return ()
    if isinstance(needs, str):
        raise TypeError("NEEDS is a set of words or a list of sets, not a string")
    items = list(needs)
    if all(isinstance(item, str) for item in items):
        return (frozenset(items),)
    return tuple(frozenset(group) for group in items)


class Rule:
    """Base class: subclass, set the metadata, write ``visit_*`` methods.

    ``NEEDS`` is a claim the equivalence tests hold the rule to: every finding
    lies in a function (or module-level statement) that contains a word of
    each group, or a local alias of one (``tl`` after ``from torch import
    load as tl``). A word is an identifier as written anywhere in the code or
    its strings (``load``); a leading dot means an attribute name only
    (``.to``), a leading star part of a word in any case (``*cpu``). The engine skips files and code without them,
    nothing else.
    """

    CODE: ClassVar[str] = ""
    NAME: ClassVar[str] = ""  # kebab-case, e.g. "torch-load-without-map-location"
    SUMMARY: ClassVar[str] = ""  # one line: what is flagged (README, SARIF)
    MESSAGE: ClassVar[str] = ""  # default report text, names the fix
    DEFAULT_ENABLED: ClassVar[bool] = True  # False: opt-in via extend-select
    FIX: ClassVar[str] = "none"  # "safe", "unsafe" or "none" (see the rule doc)
    NEEDS: ClassVar = ()
    # Words of code the verdict also reads, anywhere in the file, when NEEDS
    # is met (``torch.set_default_device`` for TDV301): kept like NEEDS words.
    READS: ClassVar[FrozenSet[str]] = frozenset()
    SCOPE: ClassVar[str] = FUNCTION
    # The scope a READS word keeps inside a definition, when it is narrower than SCOPE: a rule
    # whose READS are facts of single statements (a ``no_cuda`` flag, a ``torch.save`` of
    # ``.cpu()`` values) sets STATEMENT. None: SCOPE, as for NEEDS words.
    READS_SCOPE: ClassVar[Optional[str]] = None
    # True when every finding's own unit (function, method or module-level
    # statement) holds a word of each NEEDS group, not only the file: then
    # only units holding all of them are parsed for the rule. DEFINITION when
    # the groups meet in the finding's top-level definition (its function, or
    # its whole top-level class) together with module-level code: a verdict
    # that reads module-level facts and a class's ``__init__`` (where module code
    # alone meets every group, every function and method is parsed: one may report
    # on module facts alone).
    TOGETHER: ClassVar[Union[bool, str]] = False
    # True when every finding is a value assigned to an attribute (``x.attr = word(...)``,
    # possibly followed by method calls, ``torch.zeros(3).long()``) whose innermost call is
    # named by a word of the first NEEDS group: only those lines count as that group's
    # words (``nn.Parameter(torch.zeros(3))`` is no such value).
    ASSIGNED: ClassVar[bool] = False
    # True when the ``def`` line of a same-file helper that a model's entry point hands its input
    # to (``analysis/entry_helpers.py``) counts as a word of the last NEEDS group: the helper is
    # decided as the entry point is.
    ENTRY_HELPERS: ClassVar[bool] = False
    # True when every finding is a list, tuple or dict display or comprehension assigned to an
    # attribute (``self.layers = [...]``, or ``self.heads = {}`` filled later): a unit (SCOPE's)
    # must hold such an assignment too, as one more group that TOGETHER counts.
    DISPLAYED: ClassVar[bool] = False
    GROUPS: ClassVar[Tuple[FrozenSet[str], ...]] = ()  # NEEDS, normalised

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls.GROUPS = _groups(cls.NEEDS)
        if cls.CODE and not cls.GROUPS:
            raise TypeError(f"{cls.CODE}: a rule must declare the words it NEEDS")

    def __init__(self, context: FileContext) -> None:
        self.context = context
        self.names = context.names

    def report(
        self,
        node: "cst.CSTNode",
        message: Optional[str] = None,
        fix: Optional[Fix] = None,
        statement: Optional[int] = None,
    ) -> None:
        """Report ``node``. A rule that reports after the walk has moved on
        (in ``leave_Module``) passes the ``context.statement`` it saw the node
        in: positions are computed for that statement alone."""
        where = self.context.statement if statement is None else statement
        self.context.reports.append(Report(type(self), node, message or self.MESSAGE, where, fix))


def is_none(expr: "cst.BaseExpression") -> bool:
    """The literal ``None`` (``map_location=None``, ``device_ids=None``)."""
    return isinstance(expr, cst.Name) and expr.value == "None"
