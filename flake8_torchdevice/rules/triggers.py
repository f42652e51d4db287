"""Cheap text triggers shared by rules.

A trigger only decides what the engine parses; the LibCST visitor decides
what is reported. So a trigger may over-match (costing a little time) but
must never under-match a case its rule reports.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable, Pattern


@lru_cache(maxsize=None)
def _alias_finder(names: tuple[str, ...]) -> Pattern[str]:
    alt = "|".join(map(re.escape, names))
    # ``from torch import load as tl`` / ``f = torch.load`` / ``f = load``
    return re.compile(rf"(?:\b(?:{alt})\s+as\s+(\w+))|(?:^[ \t]*(\w+)\s*=\s*(?:[\w.]+\.)?(?:{alt})[ \t]*(?:#.*)?$)", re.M)


@lru_cache(maxsize=256)
def _call_finder(names: tuple[str, ...]) -> Pattern[str]:
    return re.compile(r"(?:%s)\s*\(" % "|".join(map(re.escape, names)))


def call_offsets(source: str, names: tuple[str, ...]) -> Iterable[int]:
    """Offsets of calls to any of ``names`` or to a local alias of one."""
    aliases = {a or b for a, b in _alias_finder(names).findall(source)}
    finder = _call_finder(tuple(sorted(set(names) | aliases)))
    return [m.start() for m in finder.finditer(source)]
