"""The README's rule table, generated from the rule classes so it cannot drift.

Regenerate with ``python -m flake8_torchdevice.ruletable --write``.
"""

from __future__ import annotations

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


def with_table(readme: str) -> str:
    head, _, rest = readme.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n{table()}\n{END}{tail}"


def main(argv: list[str]) -> int:
    path = Path(argv[1]) if len(argv) > 1 and not argv[1].startswith("-") else Path("README.md")
    text = path.read_text(encoding="utf-8")
    updated = with_table(text)
    if "--write" in argv:
        path.write_text(updated, encoding="utf-8")
        return 0
    print(table())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
