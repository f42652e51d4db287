"""flake8 glue only: everything else lives in the engine."""

from __future__ import annotations

import ast
from typing import Callable, Iterable, Iterator, Optional, Sequence

from . import __version__
from .engine import check_source
from .rules import ALL_RULES

# Opt-in codes (opinionated): off unless the user selects them.
OPT_IN = frozenset(rule.CODE for rule in ALL_RULES if not rule.DEFAULT_ENABLED)
# The shortest prefix that selects an opt-in code explicitly ("TDV40"): plain
# "TDV" or "TDV4" -- what users write to restore the plugin under an explicit
# ``select`` -- must not switch opinionated codes on (bugbear does the same).
EXPLICIT_PREFIX = 5


def explicitly_selected(code: str, selections: Iterable[Optional[Sequence[str]]]) -> bool:
    prefixes = {code[:i] for i in range(EXPLICIT_PREFIX, len(code) + 1)}
    return any(entry.strip() in prefixes for chosen in selections if chosen for entry in chosen)


def may_report(code: str, select: Optional[Sequence[str]], extend_select: Optional[Sequence[str]]) -> bool:
    """Could flake8 show ``code`` under these options? Under an explicit
    ``select``, only if some selected entry is a prefix of it; opt-in codes
    only when named (``explicitly_selected``). Rules that cannot be shown are
    not run: selection never changes a verdict, only what is computed."""
    if code in OPT_IN and not explicitly_selected(code, (select, extend_select)):
        return False
    if select is None:
        return True
    chosen = [entry.strip() for entry in [*select, *(extend_select or [])] if entry.strip()]
    return any(code.startswith(entry) for entry in chosen)


def _hidden_by_flake8(options) -> Callable[[str], bool]:
    """Would flake8 drop this code's findings in every file (``extend-ignore =
    TDV401``)? Then its rule is not run: what it found would be thrown away,
    so no output changes (per-file ignores only ever hide more). flake8's
    own decision engine answers; options it did not build answer "no"."""
    try:
        from flake8.style_guide import Decision, DecisionEngine

        engine = DecisionEngine(options)
    except (ImportError, AttributeError, TypeError):
        return lambda code: False
    return lambda code: engine.decision_for(code) is Decision.Ignored


class TorchDeviceChecker:
    name = "flake8-torchdevice"
    version = __version__
    _rules: tuple = tuple(rule for rule in ALL_RULES if rule.DEFAULT_ENABLED)

    def __init__(self, tree: ast.AST, lines: Sequence[str], filename: str = "") -> None:
        # Join ``lines``: flake8 may be reading stdin or an editor buffer, so
        # the file on disk (if any) is not what is being checked; ``filename``
        # is only its display name (is it a test?), never opened.
        self._tree = tree
        self._source = "".join(lines)
        self._filename = filename

    @classmethod
    def add_options(cls, option_manager) -> None:
        if OPT_IN:
            option_manager.extend_default_ignore(sorted(OPT_IN))

    @classmethod
    def parse_options(cls, options) -> None:
        select, extend = getattr(options, "select", None), getattr(options, "extend_select", None)
        hidden = _hidden_by_flake8(options)
        cls._rules = tuple(
            rule for rule in ALL_RULES if may_report(rule.CODE, select, extend) and not hidden(rule.CODE)
        )

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        tree = self._tree if isinstance(self._tree, ast.Module) else None
        if not self._rules:
            return
        for violation in check_source(self._source, tree, rules=self._rules, filename=self._filename).violations:
            yield violation.line, violation.col, violation.text(), type(self)
