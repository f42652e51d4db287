"""Helpers for the tests that install this package the way users do: a copy of
the source tree (so builds never write into the work tree), a fresh virtualenv."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from fixture_cases import ROOT

# What a build and the hooks need (with docs/rules, shipped in the package);
# tests, fixtures and the other docs stay behind.
SOURCE_FILES = ["pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "action.yml"]
INSTALL_TIMEOUT = 300


def copy_source(dest: Path) -> Path:
    dest.mkdir(parents=True)
    for name in SOURCE_FILES:
        shutil.copy(ROOT / name, dest / name)
    shutil.copytree(ROOT / "flake8_torchdevice", dest / "flake8_torchdevice",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copytree(ROOT / "docs" / "rules", dest / "docs" / "rules")  # shipped in the package
    return dest


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without what points at our own virtualenv or config."""
    dropped = ("PRE_COMMIT", "FLAKE8", "VIRTUAL_ENV", "PYTHONPATH")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    env.update(extra)
    return env


def fresh_venv(path: Path) -> Path:
    """A new virtualenv of the running interpreter; returns its bin directory."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, capture_output=True, timeout=120)
    return path / "bin"


def run(args, cwd: Path, env: dict | None = None, timeout: float = INSTALL_TIMEOUT) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], cwd=cwd, env=env or clean_env(),
                          capture_output=True, text=True, timeout=timeout)
