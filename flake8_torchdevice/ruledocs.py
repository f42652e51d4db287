"""Rule pages, for ``torchdevice rule`` and SARIF help: generated from the
rule classes (``ruletable.page``), the same text as docs/rules/TDVnnn.md, so an
installed package needs no data files to show them."""

from __future__ import annotations

import re

_CODE = re.compile(r"TDV[0-9]{3}")


class UnknownRule(LookupError):
    """No page for this code; the message is one line."""


def rule_page(code: str) -> str:
    """The Markdown page of rule ``code``, e.g. ``rule_page("TDV201")``."""
    from .rules import RULES_BY_CODE
    from .ruletable import page

    if not _CODE.fullmatch(code):
        raise UnknownRule(f"{code!r} is not a rule code (e.g. TDV201)")
    rule = RULES_BY_CODE.get(code)
    if rule is None:
        raise UnknownRule(f"no rule {code}")
    return page(rule)
