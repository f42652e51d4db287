"""Output formats: text (flake8-style), json, sarif (2.1.0), github annotations.

Columns are printed 1-based everywhere (flake8, SARIF and GitHub all count
from 1); the engine's columns are 0-based.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence
from urllib.parse import quote

from . import __version__
from .rules import ALL_RULES, RULES_BY_CODE
from .ruledocs import UnknownRule, rule_page
from .runner import Finding

FORMATS = ("text", "json", "sarif", "github")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
# SARIF wants an absolute URI; the project has no site yet, its PyPI page is stable.
INFORMATION_URI = "https://pypi.org/project/flake8-torchdevice/"


@dataclass(frozen=True)
class Notice:
    """A file that could not be checked (unreadable, undecodable, syntax error)."""

    message: str  # the whole line, as on stderr: "path: why"
    path: Optional[str] = None  # None when it names no file that exists


def render(fmt: str, findings: Sequence[Finding], notices: Sequence[Notice] = (), failed: bool = False) -> str:
    """``notices`` appear in SARIF and GitHub output (text and JSON leave them to
    stderr); ``failed``: some file could not even be read."""
    if fmt == "sarif":
        return sarif(findings, notices, failed)
    if fmt == "github":
        return github(findings, notices)
    return {"text": text, "json": as_json}[fmt](findings)


def _where(f: Finding) -> str:
    # nbqa's form: no space, so that path:line:col problem matchers still match
    return f"{f.path}:cell_{f.cell}" if f.cell is not None else f.path


def text(findings: Sequence[Finding]) -> str:
    return "".join(f"{_where(f)}:{f.line}:{f.col + 1}: {f.code} {f.message}\n" for f in findings)


def statistics(findings: Sequence[Finding]) -> str:
    """flake8's --statistics: count, code, and the rule's name, by code."""
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.code] = counts.get(f.code, 0) + 1
    return "".join(f"{counts[code]:<5} {code} {RULES_BY_CODE[code].NAME}\n" for code in sorted(counts))


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


def github(findings: Sequence[Finding], notices: Sequence[Notice] = ()) -> str:
    lines = []
    for f in findings:
        props = f"file={_escape_property(f.path)}"
        message = f.message
        if f.cell is None:
            props += f",line={f.line},col={f.col + 1},endLine={f.end_line},endColumn={f.end_col + 1}"
        else:  # the notebook's own line, if known; the cell's position in the text
            props += f",line={f.file_line}" if f.file_line else ""
            message = f"cell {f.cell}, line {f.line}, col {f.col + 1}: {message}"
        props += f",title={_escape_property(f.code)}"
        lines.append(f"::warning {props}::{_escape_data(message)}\n")
    for notice in notices:
        props = f"file={_escape_property(notice.path)}," if notice.path else ""
        lines.append(f"::error {props}title=torchdevice::{_escape_data(notice.message)}\n")
    return "".join(lines)


def _uri(path: str) -> str:
    """A percent-encoded URI reference: relative to the working directory
    (%SRCROOT%) when inside it, else an absolute file: URI. One encoder for
    both, so that a space, %, : or newline in a name cannot change its meaning."""
    absolute = Path(os.path.abspath(path))
    try:
        return _encode(absolute.relative_to(Path.cwd()).as_posix())
    except ValueError:
        return "file://" + _encode(_rooted(absolute.as_posix()))


def _rooted(posix: str) -> str:
    return posix if posix.startswith("/") else "/" + posix  # C:/x -> /C:/x


def _encode(posix: str) -> str:
    # Only unreserved characters and "/" stay: a ":" in a relative reference's
    # first segment would read as a scheme. A drive letter's colon is kept.
    drive, rest = (posix[:3], posix[3:]) if posix[:1] == "/" and posix[2:3] == ":" else ("", posix)
    return drive + quote(rest, safe="/")


def _artifact(path: str) -> dict:
    uri = _uri(path)
    return {"uri": uri} if uri.startswith("file:") else {"uri": uri, "uriBaseId": "%SRCROOT%"}


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
            "markdown": _help_markdown(rule, fix),
        },
        "defaultConfiguration": {"level": "warning", "enabled": rule.DEFAULT_ENABLED},
        "properties": {"fix": rule.FIX, "tags": ["pytorch", "device"]},
    }


def _help_markdown(rule, fix: str) -> str:
    """The rule's page itself: what code scanning shows under "Show more"."""
    try:
        return rule_page(rule.CODE)
    except UnknownRule:  # a rule without a page yet: its summary still helps
        return f"{rule.SUMMARY}.\n\n{rule.MESSAGE.rstrip('.')}.\n\nThis rule has {fix}."


def _result(f: Finding, index: dict) -> dict:
    location: dict = {"artifactLocation": _artifact(f.path)}
    message = f.message
    if f.cell is None:
        location["region"] = {
            "startLine": f.line,
            "startColumn": f.col + 1,
            "endLine": f.end_line,
            "endColumn": f.end_col + 1,
        }
    else:  # the line of the .ipynb file holding the cell's line (no columns: JSON escapes)
        location["region"] = {"startLine": f.file_line or 1}
        message = f"cell {f.cell}, line {f.line}, col {f.col + 1}: {message}"
    return {
        "ruleId": f.code,
        "ruleIndex": index[f.code],
        "level": "warning",
        "message": {"text": message},
        "locations": [{"physicalLocation": location}],
    }


def _notification(notice: Notice) -> dict:
    item: dict = {"level": "error", "message": {"text": notice.message}}
    if notice.path:
        item["locations"] = [{"physicalLocation": {"artifactLocation": _artifact(notice.path)}}]
    return item


def sarif(findings: Sequence[Finding], notices: Sequence[Notice] = (), failed: bool = False) -> str:
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
                        "informationUri": INFORMATION_URI,
                        "rules": [_rule_descriptor(rule) for rule in ALL_RULES],
                    }
                },
                "invocations": [{
                    "executionSuccessful": not failed,
                    "toolExecutionNotifications": [_notification(n) for n in notices],
                }],
                "originalUriBaseIds": {"%SRCROOT%": {"uri": "file://" + _encode(_rooted(Path.cwd().as_posix())) + "/"}},
                "results": [_result(f, index) for f in findings],
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"
