"""``benchmarks/run.py`` loaded as a module (it is a script, not a package)."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from fixture_cases import ROOT


def bench_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tdv_bench_run", ROOT / "benchmarks" / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
