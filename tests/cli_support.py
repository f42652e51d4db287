"""Helpers for the CLI tests: run ``torchdevice`` in-process or as a process."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from flake8_torchdevice import cli

_BIN = Path(sys.executable).parent / "torchdevice"
SCRIPT = [str(_BIN)] if _BIN.exists() else [sys.executable, "-m", "flake8_torchdevice.cli"]

# A finding of a default-on rule with a safe fix (TDV701, reported at 2:10);
# GOOD is exactly what ``--fix`` makes of BAD.
BAD = 'import torch\nscaler = torch.cuda.amp.GradScaler()\n'
GOOD = 'import torch\nscaler = torch.amp.GradScaler("cuda")\n'


@dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def err_lines(self) -> list[str]:
        return self.err.splitlines()


def run_cli(*args: str, cwd: Path, stdin: bytes = b"", isolated: bool = True) -> Run:
    """In-process (fast): the real ``main`` with real files, stdin and cwd."""
    old_cwd = os.getcwd()
    old = sys.stdin, sys.stdout, sys.stderr
    out, err = io.StringIO(), io.StringIO()
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    sys.stdout, sys.stderr = out, err
    try:
        os.chdir(cwd)
        code = cli.main(["--isolated", *args] if isolated else list(args))
    finally:
        os.chdir(old_cwd)
        sys.stdin, sys.stdout, sys.stderr = old
    return Run(code, out.getvalue(), err.getvalue())


def run_process(*args: str, cwd: Path, stdin: bytes = b"", timeout: float = 60) -> subprocess.CompletedProcess:
    """The installed console script, as a user (or pre-commit) runs it."""
    return subprocess.run(
        [*SCRIPT, *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        timeout=timeout,
    )
