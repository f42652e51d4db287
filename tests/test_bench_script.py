"""benchmarks/run.py's ``--without``: the rows that price some default rules."""

from __future__ import annotations

import sys
from pathlib import Path

from bench_support import bench_module

from flake8_torchdevice.rules import ALL_RULES


def test_without_runs_our_tools_with_the_other_default_codes_selected(tmp_path):
    bench = bench_module()
    env = Path(sys.prefix)  # this venv has the package, its console scripts and flake8
    if not (env / "bin" / "torchdevice").exists():
        raise AssertionError(f"no torchdevice script in {env}: install the package first")
    listing = tmp_path / "files.txt"
    table = bench.commands({"tdv": env, "flake8": env}, [Path("a.py")], listing, [], ["TDV601", "TDV603"])
    others = [rule.CODE for rule in ALL_RULES if rule.DEFAULT_ENABLED and rule.CODE not in ("TDV601", "TDV603")]
    standalone = table["torchdevice -j1 w/o"]
    assert standalone[standalone.index("--select") + 1].split(",") == others
    assert standalone[-1] == "a.py"
    plugin = table["flake8 -j1 + TDV w/o"]
    assert f"--select=E,F,W,C90,{','.join(others)}" in plugin
    # flake8's own default ignores stay: only our rules differ between the two runs
    ignore = next(arg for arg in plugin if arg.startswith("--extend-ignore="))
    assert {"W503", "W504", "E704"} <= set(ignore.partition("=")[2].split(","))
    assert [arg for arg in plugin if not arg.startswith(("--select", "--extend-ignore"))] == table["flake8 -j1 + TDV"]


def test_without_nothing_adds_no_rows(tmp_path):
    bench = bench_module()
    table = bench.commands({"tdv": Path(sys.prefix), "flake8": Path(sys.prefix)}, [Path("a.py")], tmp_path / "f", [])
    assert not [name for name in table if "w/o" in name]
