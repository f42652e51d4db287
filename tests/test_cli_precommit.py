"""Both pre-commit hooks (``flake8-torchdevice`` and ``torchdevice``) through
``pre-commit try-repo`` against a temporary git repository.

Slow (pre-commit builds a virtualenv and installs this package from a copy of
the source tree, pulling flake8 and libcst from PyPI), but CI runs it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from cli_support import BAD, GOOD
from fixture_cases import ROOT

pytestmark = pytest.mark.slow

SOURCE_FILES = ["pyproject.toml", "README.md", ".pre-commit-hooks.yaml"]


def _git(*args, cwd):
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false", *args],
        cwd=cwd, check=True, capture_output=True,
    )


def _hook_repo(path):
    """A committed copy of the package: try-repo ignores untracked files."""
    path.mkdir()
    for name in SOURCE_FILES:
        shutil.copy(ROOT / name, path / name)
    shutil.copytree(ROOT / "flake8_torchdevice", path / "flake8_torchdevice",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copytree(ROOT / "docs" / "rules", path / "docs" / "rules")  # shipped in the package
    _git("init", "-q", ".", cwd=path)
    _git("add", "-A", cwd=path)
    _git("commit", "-q", "-m", "hooks", cwd=path)


def _try_repo(repo, cwd, home):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRE_COMMIT", "FLAKE8", "VIRTUAL_ENV"))}
    env["PRE_COMMIT_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(repo), "--all-files", "--verbose"],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=540,
    )


def _status(output: str, hook: str) -> str:
    """``flake8-torchdevice.....Failed`` -> ``Failed``."""
    match = re.search(rf"^{re.escape(hook)}\.+\s*(Passed|Failed|\(no files to check\)Skipped)$", output, re.M)
    assert match, f"hook {hook} not in output:\n{output}"
    return match.group(1)


def test_both_hooks_through_try_repo(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo, target = tmp_path / "hooks", tmp_path / "project"
    _hook_repo(repo)
    target.mkdir()
    (target / "bad.py").write_text(BAD, encoding="utf-8")
    (target / "good.py").write_text(GOOD, encoding="utf-8")
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                           "source": ["import torch\n", "!nvidia-smi\n", "w = torch.load('w.pt')"]}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (target / "nb.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    _git("init", "-q", ".", cwd=target)
    _git("add", "-A", cwd=target)

    failing = _try_repo(repo, target, tmp_path / "cache")
    output = failing.stdout + failing.stderr
    assert failing.returncode == 1, output
    assert "Traceback" not in output
    assert _status(output, "flake8-torchdevice") == _status(output, "torchdevice") == "Failed"
    assert output.count("bad.py:2:9: TDV201") == 2  # once per hook
    assert output.count("nb.ipynb:cell_1:3:5: TDV201") == 1  # only the standalone hook reads notebooks
    assert "good.py" not in output

    (target / "bad.py").write_text(GOOD, encoding="utf-8")
    (target / "nb.ipynb").unlink()
    _git("add", "-A", cwd=target)
    passing = _try_repo(repo, target, tmp_path / "cache")
    output = passing.stdout + passing.stderr
    assert passing.returncode == 0, output
    assert _status(output, "flake8-torchdevice") == _status(output, "torchdevice") == "Passed"
