"""Docs cannot drift from the rule classes: every code documented, every doc a code."""

from __future__ import annotations

import re

import pytest

from flake8_torchdevice import ruletable
from flake8_torchdevice.rules import ALL_RULES, RULES_BY_CODE
from fixture_cases import ROOT

DOCS = ROOT / "docs" / "rules"
SECTIONS = [
    "## What it does",
    "## Why is this bad?",
    "## Example",
    "## Use instead",
    "## Fix safety",
    "## When it does not report",
    "## The error torch raises",
]


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.CODE)
def test_rule_page_has_every_section_in_order(rule):
    text = ruletable.page(rule)
    assert text.startswith(f"# {rule.CODE}: {rule.NAME}\n")
    positions = [text.find(section) for section in SECTIONS]
    assert all(p >= 0 for p in positions), [s for s, p in zip(SECTIONS, positions) if p < 0]
    assert positions == sorted(positions)
    error_part = text[positions[-1]:]
    # A warning class counts where the page says how it becomes the error (``-W error``: TDV701, TDV702).
    assert re.search(r"\b\w+(Error|Exception|Warning)\b", error_part), "quote the exception torch raises"


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.CODE)
def test_rule_metadata_is_complete(rule):
    assert re.fullmatch(r"TDV\d{3}", rule.CODE)
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.NAME)
    assert rule.SUMMARY and rule.MESSAGE
    assert rule.FIX in {"safe", "unsafe", "none"}
    fix_section = ruletable.page(rule).split("## Fix safety", 1)[1]
    assert rule.FIX.capitalize() in fix_section or (rule.FIX == "none" and "No fix" in fix_section)


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.CODE)
def test_rule_page_is_generated_from_the_rule_docstring(rule):
    assert (DOCS / f"{rule.CODE}.md").read_text(encoding="utf-8") == ruletable.page(rule), (
        "run: python -m flake8_torchdevice.ruletable --write"
    )


def test_no_page_for_a_code_that_does_not_exist():
    pages = {path.stem for path in DOCS.glob("*.md")}
    assert pages == set(RULES_BY_CODE)


def test_readme_rule_table_is_generated_from_the_rules():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert ruletable.with_table(readme) == readme, "run: python -m flake8_torchdevice.ruletable --write"
    for rule in ALL_RULES:
        assert f"[{rule.CODE}](docs/rules/{rule.CODE}.md)" in readme
