"""Our own code stays clean under pycodestyle and pyflakes, as ``tox -e lint`` checks it."""

from __future__ import annotations

import subprocess
import sys

from fixture_cases import ROOT

# ``--select`` drops flake8's default ignore list; restore it, so this checks what
# ``tox -e lint`` checks (W503 and W504 contradict each other, E226 etc. are off by default).
FLAKE8_DEFAULT_IGNORE = "E121,E123,E126,E226,E24,E704,W503,W504"


def test_package_and_tests_pass_flake8():
    command = [
        sys.executable, "-m", "flake8", "--max-line-length=120", "--extend-exclude=fixtures",
        "--select=E,W,F", f"--extend-ignore={FLAKE8_DEFAULT_IGNORE}", "flake8_torchdevice", "tests",
    ]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
