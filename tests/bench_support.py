"""The scripts of ``benchmarks/`` loaded as modules (they are scripts, not a package)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from fixture_cases import ROOT


def script_module(name: str) -> ModuleType:
    """``benchmarks/<name>.py``, registered under ``tdv_<name>`` (dataclasses look their module up)."""
    spec = importlib.util.spec_from_file_location(f"tdv_{name}", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def bench_module() -> ModuleType:
    return script_module("run")


def git(*args: str, cwd: Path) -> str:
    """Run git in ``cwd`` (a throw-away repository: a mirror in a test) and return its output."""
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout.strip()
