"""A whole training script under fake CUDA: no false failure, everything on cuda:0."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent / "programs" / "train_everything.py"

pytestmark = pytest.mark.slow


def _run(*prefix: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *prefix, str(SCRIPT)], capture_output=True, text=True, timeout=300)


def test_the_script_runs_on_the_cpu_and_under_fake_cuda_alike():
    plain = _run()
    assert plain.returncode == 0, plain.stderr
    assert "loaded cpu cpu" in plain.stdout
    fake = _run("-m", "flake8_torchdevice.fakecuda")
    assert fake.returncode == 0, fake.stderr
    lines = fake.stdout.splitlines()
    assert lines[0].startswith("epoch 0") and lines[0].endswith("(16, 5) cuda:0")
    assert lines[1].startswith("epoch 1") and lines[1].endswith("(16, 5) cuda:0")
    assert lines[2].endswith("[1.0, 2.0, 0.0, 0.0, 0.0] cuda:0")
    assert "loaded cuda:0 cuda:0" in lines and "memory 0" in lines
    assert "Warning" not in fake.stderr, fake.stderr
