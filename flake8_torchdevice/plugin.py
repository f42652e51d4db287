"""flake8 glue only: everything else lives in the engine."""

from __future__ import annotations

import ast
from typing import Iterator, Sequence

from . import __version__
from .engine import check_source
from .rules import ALL_RULES

# Opt-in codes (opinionated): off unless the user selects them.
DEFAULT_IGNORE = [rule.CODE for rule in ALL_RULES if not rule.DEFAULT_ENABLED]


class TorchDeviceChecker:
    name = "flake8-torchdevice"
    version = __version__

    def __init__(self, tree: ast.AST, lines: Sequence[str]) -> None:
        # Join ``lines``: flake8 may be reading stdin or an editor buffer, so
        # the file on disk (if any) is not what is being checked.
        self._tree = tree
        self._source = "".join(lines)

    @classmethod
    def add_options(cls, option_manager) -> None:
        if DEFAULT_IGNORE:
            option_manager.extend_default_ignore(DEFAULT_IGNORE)

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        tree = self._tree if isinstance(self._tree, ast.Module) else None
        for violation in check_source(self._source, tree).violations:
            yield violation.line, violation.col, violation.text(), type(self)
