"""The built wheel, installed into a fresh virtualenv, works as users run it:
``flake8 --select=TDV`` and ``torchdevice`` report a fixture's findings.

Slow: builds the wheel (pip, setuptools in an isolated build environment) and
installs it with its dependencies (flake8, libcst from the package index or
pip's cache; never torch, which the package does not ask for).
"""

from __future__ import annotations

import re
import sys
import zipfile

import pytest

from fixture_cases import FIXTURES, expected_of
from package_support import copy_source, fresh_venv, run

pytestmark = pytest.mark.slow

FIXTURE = FIXTURES / "TDV102" / "discarded_batch_move.py"
FINDING = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+):\d+: (?P<code>TDV\d+) ", re.M)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(bin directory of a fresh venv with the wheel installed, the wheel's path)."""
    root = tmp_path_factory.mktemp("wheel")
    source = copy_source(root / "source")
    built = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", root / "dist", source], cwd=root)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (root / "dist").glob("flake8_torchdevice-*.whl")
    bin_dir = fresh_venv(root / "venv")
    installed = run([bin_dir / "python", "-m", "pip", "install", wheel], cwd=root)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return bin_dir, wheel


def _project(tmp_path):
    (tmp_path / "train.py").write_text(FIXTURE.read_text(encoding="utf-8"), encoding="utf-8")
    return set(expected_of(FIXTURE.read_text(encoding="utf-8")))


def _found(output: str) -> set:
    return {(int(m["line"]), m["code"]) for m in FINDING.finditer(output)}


def test_the_wheel_holds_the_package_and_its_entry_points(installed):
    _, wheel = installed
    names = zipfile.ZipFile(wheel).namelist()
    assert "flake8_torchdevice/rules/__init__.py" in names
    assert not any(name.startswith(("tests/", "fixtures/")) for name in names)
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "TDV = flake8_torchdevice.plugin:TorchDeviceChecker" in text
    assert "torchdevice = flake8_torchdevice.cli:main" in text


def test_flake8_from_the_wheel_reports_the_fixture(installed, tmp_path):
    bin_dir, _ = installed
    expected = _project(tmp_path)
    result = run([bin_dir / "flake8", "--isolated", "--select=TDV", "train.py"], cwd=tmp_path)
    assert result.returncode == 1 and result.stderr == "", result.stderr
    assert expected and _found(result.stdout) == expected


def test_torchdevice_from_the_wheel_reports_the_fixture(installed, tmp_path):
    bin_dir, _ = installed
    expected = _project(tmp_path)
    result = run([bin_dir / "torchdevice", "--isolated", "train.py"], cwd=tmp_path)
    assert result.returncode == 1 and result.stderr == "", result.stderr
    assert _found(result.stdout) == expected


def test_the_wheel_brings_no_torch(installed, tmp_path):
    bin_dir, _ = installed
    result = run([bin_dir / "python", "-c", "import importlib.util as u; print(u.find_spec('torch') is None)"],
                 cwd=tmp_path)
    assert result.stdout.strip() == "True", result.stdout + result.stderr


def test_the_language_server_from_the_wheel_with_its_extra(installed, tmp_path):
    """``pip install 'flake8-torchdevice[lsp]'``: ``torchdevice server`` answers an editor."""
    from lsp_support import Client

    bin_dir, wheel = installed
    extra = run([bin_dir / "python", "-m", "pip", "install", f"{wheel}[lsp]"], cwd=tmp_path)
    assert extra.returncode == 0, extra.stdout + extra.stderr
    client = Client(tmp_path, command=[str(bin_dir / "torchdevice")])
    try:
        client.initialize(tmp_path)
        uri = client.open(tmp_path / "train.py", FIXTURE.read_text(encoding="utf-8"))
        lines = {(d["range"]["start"]["line"] + 1, d["code"]) for d in client.diagnostics(uri)}
        assert lines == _project(tmp_path)
        assert client.shutdown() == 0
    finally:
        client.process.kill()


def test_rule_pages_and_add_noqa_from_the_wheel(installed, tmp_path):
    bin_dir, _ = installed
    page = run([bin_dir / "torchdevice", "rule", "TDV201"], cwd=tmp_path)
    assert page.returncode == 0 and page.stdout.startswith("# TDV201"), page.stdout + page.stderr
    _project(tmp_path)
    added = run([bin_dir / "torchdevice", "--isolated", "--add-noqa", "train.py"], cwd=tmp_path)
    assert added.returncode == 0 and "added # noqa to" in added.stderr, added.stdout + added.stderr
    assert run([bin_dir / "torchdevice", "--isolated", "train.py"], cwd=tmp_path).returncode == 0
