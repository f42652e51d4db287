"""Rule pages (docs/rules/TDVnnn.md), for ``torchdevice rule`` and SARIF help.

One function reads them, so that where pages come from can change in one
place. Installed, they are the data-only package ``flake8_torchdevice.rule_docs``
(pyproject.toml maps it to docs/rules/); in a source tree that is not
installed, docs/rules/ itself is read.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

_CODE = re.compile(r"TDV[0-9]{3}")
_SOURCE_TREE = Path(__file__).resolve().parent.parent


class UnknownRule(LookupError):
    """No page for this code; the message is one line."""


def rule_page(code: str) -> str:
    """The Markdown page of rule ``code``, e.g. ``rule_page("TDV201")``."""
    if not _CODE.fullmatch(code):
        raise UnknownRule(f"{code!r} is not a rule code (e.g. TDV201)")
    name = f"{code}.md"
    try:
        return resources.files("flake8_torchdevice.rule_docs").joinpath(name).read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError):
        pass
    page = _SOURCE_TREE / "docs" / "rules" / name
    if (_SOURCE_TREE / "pyproject.toml").is_file() and page.is_file():
        return page.read_text(encoding="utf-8")
    raise UnknownRule(f"no rule {code}")
