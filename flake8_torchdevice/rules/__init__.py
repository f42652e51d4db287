"""The rule registry: every ``Rule`` subclass with a code in this package.

Add a rule by adding a module here, named by its code (``tdv201.py``);
nothing else needs editing (docs/architecture.md has the checklist).
"""

from __future__ import annotations

import importlib
import pkgutil

from ..rule import Rule, Violation


def _discover() -> tuple[type[Rule], ...]:
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")
    found = {}
    stack = list(Rule.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.CODE:
            if cls.CODE in found and found[cls.CODE] is not cls:
                raise RuntimeError(f"two rules share the code {cls.CODE}")
            found[cls.CODE] = cls
    return tuple(found[code] for code in sorted(found))


ALL_RULES: tuple[type[Rule], ...] = _discover()
RULES_BY_CODE = {rule.CODE: rule for rule in ALL_RULES}

__all__ = ["ALL_RULES", "RULES_BY_CODE", "Rule", "Violation"]
