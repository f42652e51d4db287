from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def pytest_addoption(parser):
    parser.addoption(
        "--proof-table", metavar="PATH", default=None,
        help="after the runtime proofs, write this run's columns of the proof table into PATH "
        "(docs/gpu-proofs.md), keeping the columns other torch builds and machines filled",
    )


def run_flake8(*args: str, input: str | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """Run the real flake8 command (same interpreter), isolated from user config."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLAKE8")}
    return subprocess.run(
        [sys.executable, "-m", "flake8", *args],
        input=input,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


@pytest.fixture
def flake8():
    return run_flake8


# The modules that take the most CPU (docs/performance.md), collected first: ``--dist loadscope`` hands
# modules to the workers in collection order, and a long one handed out last ran alone on one core
# while the other idled (a pre-commit build, 41 s, ended CI's main suite). Their own order is kept.
HEAVY_FIRST = ("test_fix_safety.py", "test_selection.py", "runtime/test_proofs.py", "test_cli_precommit.py",
               "fakecuda/test_plugin.py", "test_hostile_inputs.py", "test_wheel.py", "test_corpus.py")


def pytest_collection_modifyitems(session, config, items):
    tests = Path(__file__).resolve().parent
    rank = {name: number for number, name in enumerate(HEAVY_FIRST)}

    def heavy(item) -> int:
        try:
            return rank.get(Path(item.path).resolve().relative_to(tests).as_posix(), len(rank))
        except ValueError:
            return len(rank)

    items.sort(key=heavy)  # stable: every module's tests, and the other modules, keep their order


# The runtime proofs' closing table is printed here, in the process that prints the run's summary: with
# pytest-xdist that is the controller, which collects no tests and so never loads tests/runtime/conftest.py.
@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    from runtime import closing

    closing.take_over(node)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    from runtime import closing

    closing.print_table(terminalreporter, config)
