"""Every fixture, through real flake8: exactly the ``# expect:`` lines are reported."""

from __future__ import annotations

import ast
import json
import re
from collections import defaultdict
from pathlib import Path

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


# -- a code's findings do not depend on which other codes are selected ----------
def _expected_for(code: str) -> dict:
    return {case.id: {line for line, c in case.expected if c == code} for case in CASES}


def _cases_of(code: str) -> list:
    """The fixtures a code is about: its directory (hard negatives included)
    and any other that expects it. That every other fixture gets none of its
    findings, alone or not, is ``test_selection``'s and ``reported``'s part."""
    return [case for case in CASES if case.path.parent.name == code or any(c == code for _, c in case.expected)]


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.CODE)
def test_each_code_selected_alone_through_the_plugin_finds_its_lines(rule):
    """The plugin under ``--select=CODE`` runs that rule alone (flake8 shows
    nothing else); its findings are exactly that code's ``# expect:`` lines."""
    import argparse

    from flake8_torchdevice.plugin import TorchDeviceChecker

    TorchDeviceChecker.parse_options(argparse.Namespace(select=[rule.CODE], extend_select=None))
    try:
        assert [r.CODE for r in TorchDeviceChecker._rules] == [rule.CODE]
        for case in _cases_of(rule.CODE):
            lines = case.path.read_text(encoding="utf-8").splitlines(keepends=True)
            checker = TorchDeviceChecker(ast.parse("".join(lines)), lines, str(case.path))
            found = {line for line, _, text, _ in checker.run() if text.startswith(rule.CODE)}
            assert found == _expected_for(rule.CODE)[case.id], case.id
    finally:
        TorchDeviceChecker.parse_options(argparse.Namespace(select=None, extend_select=None))


def test_one_code_alone_through_real_flake8_equals_its_share_of_all_codes(reported):
    result = run_flake8("--isolated", "--select=TDV102", "--jobs=1", str(FIXTURES))
    alone = {
        (str((FIXTURES.parent / m["path"]).resolve().relative_to(FIXTURES)), int(m["line"]))
        for m in map(LINE.match, result.stdout.splitlines())
    }
    share = {(path, line) for path, found in reported.items() for line, code in found if code == "TDV102"}
    assert alone == share and alone


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.CODE)
def test_each_code_selected_alone_through_the_cli_finds_its_lines(rule, tmp_path):
    from cli_support import run_cli

    paths = [str(case.path) for case in _cases_of(rule.CODE)]
    result = run_cli("--isolated", "--select", rule.CODE, "-j", "1", "--format", "json", *paths, cwd=tmp_path)
    assert result.code in (0, 1), result.err
    found: dict = defaultdict(set)
    for item in json.loads(result.out):
        assert item["code"] == rule.CODE
        found[str(Path(item["path"]).resolve().relative_to(FIXTURES))].add(item["line"])
    expected = {case: lines for case, lines in _expected_for(rule.CODE).items() if lines}
    assert dict(found) == expected
