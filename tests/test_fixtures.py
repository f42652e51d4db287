"""Every fixture, through real flake8: exactly the ``# expect:`` lines are reported."""

from __future__ import annotations

import re
from collections import defaultdict

import pytest

from conftest import run_flake8
from fixture_cases import FIXTURES, all_cases
from flake8_torchdevice.rules import ALL_RULES

CASES = all_cases()
LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>TDV\d{3}) ")


@pytest.fixture(scope="module")
def reported():
    """One flake8 run over all fixtures (all codes, opt-in ones included)."""
    opt_in = [rule.CODE for rule in ALL_RULES if not rule.DEFAULT_ENABLED]
    select = ",".join(["TDV", *opt_in])
    result = run_flake8("--isolated", f"--select={select}", "--jobs=1", str(FIXTURES))
    assert result.returncode in (0, 1), result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    found = defaultdict(set)
    for line in result.stdout.splitlines():
        match = LINE.match(line)
        assert match, f"unexpected flake8 output: {line!r}"
        rel = str((FIXTURES.parent / match["path"]).resolve().relative_to(FIXTURES))
        found[rel].add((int(match["line"]), match["code"]))
    return found


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_fixture_reports_exactly_the_expected_lines(case, reported):
    assert reported.get(case.id, set()) == set(case.expected)


def test_every_rule_has_positive_and_negative_fixtures():
    by_code = defaultdict(list)
    for case in CASES:
        by_code[case.path.parent.name].append(case)
    for rule in ALL_RULES:
        cases = by_code.get(rule.CODE, [])
        assert any((line, rule.CODE) in c.expected for c in cases for line, _ in c.expected), rule.CODE
        assert any(not any(code == rule.CODE for _, code in c.expected) for c in cases), (
            f"{rule.CODE} has no hard-negative fixture"
        )


def test_fixture_directories_name_real_rules():
    codes = {rule.CODE for rule in ALL_RULES}
    for case in CASES:
        assert case.path.parent.name in codes, case.id
