"""Everything derived from the rule classes, so it cannot drift: the README's
rule table and each rule's page ``docs/rules/TDVnnn.md`` (its class docstring,
under a title). Regenerate both with ``python -m flake8_torchdevice.ruletable
--write``; the tests fail when either is stale.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

from .rules import ALL_RULES

START, END = "<!-- rules:start -->", "<!-- rules:end -->"


def table() -> str:
    rows = [
        "| Code | Name | What it flags | Default | Fix |",
        "| --- | --- | --- | --- | --- |",
    ]
    for rule in ALL_RULES:
        default = "on" if rule.DEFAULT_ENABLED else "off (opt-in)"
        rows.append(
            f"| [{rule.CODE}](docs/rules/{rule.CODE}.md) | `{rule.NAME}` | {rule.SUMMARY} | {default} | {rule.FIX} |"
        )
    return "\n".join(rows)


def page(rule) -> str:
    """The rule's page: a title, then its class docstring (in Ruff's shape)."""
    body = inspect.cleandoc(rule.__doc__ or "")
    default = "on by default" if rule.DEFAULT_ENABLED else "off by default (opt-in)"
    return f"# {rule.CODE}: {rule.NAME}\n\n*{rule.SUMMARY}* -- {default}; fix: {rule.FIX}.\n\n{body}\n"


def page_for(code: str) -> str:
    from .rules import RULES_BY_CODE

    return page(RULES_BY_CODE[code])


def write_pages(docs: Path) -> None:
    docs.mkdir(parents=True, exist_ok=True)
    for rule in ALL_RULES:
        (docs / f"{rule.CODE}.md").write_text(page(rule), encoding="utf-8")


def between(text: str, start: str, end: str, block: str) -> str:
    """``text`` with what lies between the markers ``start`` and ``end`` replaced by ``block``."""
    head, _, rest = text.partition(start)
    _, _, tail = rest.partition(end)
    return f"{head}{start}\n{block}\n{end}{tail}"


def with_table(readme: str) -> str:
    return between(readme, START, END, table())


def main(argv: list[str]) -> int:
    path = Path(argv[1]) if len(argv) > 1 and not argv[1].startswith("-") else Path("README.md")
    text = path.read_text(encoding="utf-8")
    updated = with_table(text)
    if "--write" in argv:
        path.write_text(updated, encoding="utf-8")
        write_pages(path.parent / "docs" / "rules")
        return 0
    print(table())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
