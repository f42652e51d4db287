"""Output formats: text (flake8-style), json, sarif (2.1.0), github annotations.

Columns are printed 1-based everywhere (flake8, SARIF and GitHub all count
from 1); the engine's columns are 0-based.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Sequence

from . import __version__
from .rules import ALL_RULES, RULES_BY_CODE
from .runner import Finding

FORMATS = ("text", "json", "sarif", "github")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def render(fmt: str, findings: Sequence[Finding]) -> str:
    return {"text": text, "json": as_json, "sarif": sarif, "github": github}[fmt](findings)


def _where(f: Finding) -> str:
    # nbqa's form: no space, so that path:line:col problem matchers still match
    return f"{f.path}:cell_{f.cell}" if f.cell is not None else f.path


def text(findings: Sequence[Finding]) -> str:
    return "".join(f"{_where(f)}:{f.line}:{f.col + 1}: {f.code} {f.message}\n" for f in findings)


def as_json(findings: Sequence[Finding]) -> str:
    items = [
        {
            "path": f.path,
            "cell": f.cell,
            "line": f.line,
            "column": f.col + 1,
            "end_line": f.end_line,
            "end_column": f.end_col + 1,
            "code": f.code,
            "name": RULES_BY_CODE[f.code].NAME,
            "message": f.message,
            "fixable": f.fixable,
        }
        for f in findings
    ]
    return json.dumps(items, indent=2) + "\n"


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


def github(findings: Sequence[Finding]) -> str:
    lines = []
    for f in findings:
        props = f"file={_escape_property(f.path)}"
        message = f.message
        if f.cell is None:
            props += f",line={f.line},col={f.col + 1},endLine={f.end_line},endColumn={f.end_col + 1}"
        else:  # a line of a notebook's JSON file would point at the wrong place
            message = f"cell {f.cell}, line {f.line}, col {f.col + 1}: {message}"
        props += f",title={_escape_property(f.code)}"
        lines.append(f"::warning {props}::{_escape_data(message)}\n")
    return "".join(lines)


def _uri(path: str) -> str:
    """A path relative to the working directory (%SRCROOT%) when inside it."""
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return absolute.as_uri()


def _rule_descriptor(rule) -> dict:
    fix = {"safe": "a safe automatic fix (--fix)", "unsafe": "an unsafe fix (--fix --unsafe-fixes)",
           "none": "no automatic fix"}[rule.FIX]
    return {
        "id": rule.CODE,
        "name": rule.NAME,
        "shortDescription": {"text": rule.SUMMARY.replace("`", "")},
        "fullDescription": {"text": rule.MESSAGE},
        "help": {
            "text": f"{rule.MESSAGE.rstrip('.')}. This rule has {fix}. See docs/rules/{rule.CODE}.md.",
            "markdown": f"{rule.SUMMARY}.\n\n{rule.MESSAGE.rstrip('.')}.\n\nThis rule has {fix}.",
        },
        "defaultConfiguration": {"level": "warning", "enabled": rule.DEFAULT_ENABLED},
        "properties": {"fix": rule.FIX, "tags": ["pytorch", "device"]},
    }


def _result(f: Finding, index: dict) -> dict:
    uri = _uri(f.path)
    artifact = {"uri": uri} if uri.startswith("file:") else {"uri": uri, "uriBaseId": "%SRCROOT%"}
    location: dict = {"artifactLocation": artifact}
    message = f.message
    if f.cell is None:
        location["region"] = {
            "startLine": f.line,
            "startColumn": f.col + 1,
            "endLine": f.end_line,
            "endColumn": f.end_col + 1,
        }
    else:
        message = f"cell {f.cell}, line {f.line}, col {f.col + 1}: {message}"
    return {
        "ruleId": f.code,
        "ruleIndex": index[f.code],
        "level": "warning",
        "message": {"text": message},
        "locations": [{"physicalLocation": location}],
    }


def sarif(findings: Sequence[Finding]) -> str:
    index = {rule.CODE: i for i, rule in enumerate(ALL_RULES)}
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "torchdevice",
                        "fullName": "flake8-torchdevice",
                        "version": __version__,
                        "rules": [_rule_descriptor(rule) for rule in ALL_RULES],
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().as_uri() + "/"}},
                "results": [_result(f, index) for f in findings],
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"
