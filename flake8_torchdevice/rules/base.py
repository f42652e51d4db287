"""The rule base class.

A rule is one small class, in the spirit of Fixit 2: metadata that feeds the
docs, the README table and SARIF; a cheap ``TRIGGER`` regex that decides which
statements the engine parses at all; and LibCST ``visit_<Node>`` /
``leave_<Node>`` methods that the engine calls during one shared walk.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, ClassVar, Iterable, Optional, Pattern, Sequence

from .._lazy import cst

from ..selection import MEMBER

if TYPE_CHECKING:
    from ..engine import FileContext


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


class Rule:
    """Base class: subclass, set the metadata, write ``visit_*`` methods."""

    CODE: ClassVar[str] = ""
    NAME: ClassVar[str] = ""  # kebab-case, e.g. "torch-load-without-map-location"
    SUMMARY: ClassVar[str] = ""  # one line: what is flagged (README, SARIF)
    MESSAGE: ClassVar[str] = ""  # default report text, names the fix
    DEFAULT_ENABLED: ClassVar[bool] = True  # False: opt-in via extend-select
    FIX: ClassVar[str] = "none"  # "safe", "unsafe" or "none" (see the rule doc)
    # Regex over the raw source; a rule is skipped for a file without a hit.
    TRIGGER: ClassVar[Optional[Pattern[str]]] = None
    SCOPE: ClassVar[str] = MEMBER  # context the engine keeps around each hit
    FILTERS_STATEMENTS: ClassVar[bool] = False  # set for subclasses that override wants_statement

    def __init__(self, context: "FileContext") -> None:
        self.context = context
        self.names = context.names

    # -- selection ----------------------------------------------------
    @classmethod
    def trigger_offsets(cls, source: str) -> Iterable[int]:
        """Character offsets of the places that may need this rule.

        Override for rules whose interest depends on the whole file (e.g. a
        rule that only applies when two patterns meet in one module).
        """
        if cls.TRIGGER is None:
            return ()
        return (m.start() for m in cls.TRIGGER.finditer(source))

    @classmethod
    def wants_statement(cls, chain: Sequence[ast.stmt], source: str) -> bool:
        """Second, finer step of the selection: may the rule report anything
        for a trigger hit whose line lies in ``chain`` (the ``ast`` statements
        around it, outermost first) of ``source``? Return False only when
        surely not: the rule is then not run there. Override where a
        statement's shape rules a finding out cheaply (a function without
        inputs, a docstring, a multi-GPU test)."""
        return True

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        # The engine computes the chains only for rules that look at them.
        cls.FILTERS_STATEMENTS = cls.wants_statement.__func__ is not Rule.wants_statement.__func__

    # -- reporting ----------------------------------------------------
    def report(self, node: cst.CSTNode, message: Optional[str] = None, statement: Optional[int] = None) -> None:
        """Report ``node``. A rule that reports after the walk has moved on
        (in ``leave_Module``) passes the ``context.statement`` it saw the node
        in: positions are computed for that statement alone."""
        self.context.report(self, node, message or self.MESSAGE, statement)


def is_none(expr: cst.BaseExpression) -> bool:
    """The literal ``None`` (``map_location=None``, ``device_ids=None``)."""
    return isinstance(expr, cst.Name) and expr.value == "None"


def code_of(node: cst.CSTNode) -> str:
    """The source code of ``node`` alone."""
    return _empty_module().code_for_node(node)


@lru_cache(maxsize=1)
def _empty_module() -> cst.Module:
    return cst.Module(body=[])  # built on first use: importing must not load LibCST


def compile_trigger(pattern: str) -> Pattern[str]:
    return re.compile(pattern)
