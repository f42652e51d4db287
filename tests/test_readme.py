"""The README's newcomer commands are the ones CI runs."""

from __future__ import annotations

import re

from fixture_cases import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def _shell_blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", README, flags=re.S)


def test_quick_start_has_the_two_commands_near_the_top():
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", quick, flags=re.S)
    assert len(blocks) == 2
    lint, test = (b.strip() for b in blocks)
    assert "pip install ." in lint and "flake8 --select=TDV fixtures/" in lint
    assert "pip install torch==2.13.0" in test and test.endswith("python -m pytest")
    assert README.index("## Quick start") < README.index("## Rules")


def test_ci_runs_the_readme_test_command_verbatim():
    test_command = _shell_blocks()[1].strip()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command in ci.splitlines()
    assert "set -euo pipefail" in ci


def test_torch_is_pinned_before_the_test_extras():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert ci.index("torch==2.13.0") < ci.index("'.[test]'")
