"""No tox env can resolve torch to anything but the pinned 2.13.0.

Reads tox's own resolved configuration (``tox config``), not tox.ini's text, so
inheritance between sections (the ``lint`` env once inherited ``extras = test``,
whose ``torch>=2.1`` made pip fetch a 5 GB CUDA build) is judged as tox sees it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from packaging.requirements import Requirement

from fixture_cases import ROOT

PINNED = "2.13.0"
ENVS = {"py310", "py311", "py312", "py313", "lint", "runtime"}
PYTHONS = ("3.10", "3.11", "3.12", "3.13")


def _tox_config() -> dict[str, dict[str, str]]:
    """env name -> {key: value} from ``tox config``, with multi-line values joined."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOX", "PIP_CONSTRAINT", "VIRTUAL_ENV"))}
    result = subprocess.run(
        [sys.executable, "-m", "tox", "config", "-c", str(ROOT / "tox.ini"), "-e", "ALL",
         "-k", "deps", "extras", "set_env", "base_python", "skip_install"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    sections: dict[str, dict[str, str]] = {}
    current = key = None
    for line in result.stdout.splitlines():
        if match := re.match(r"^\[testenv:(.+)\]$", line):
            current = sections.setdefault(match[1], {})
        elif match := re.match(r"^(\w+) = ?(.*)$", line):
            key = match[1]
            current[key] = match[2]
        elif line.startswith("  ") and key:
            current[key] += "\n" + line.strip()
    return sections


@pytest.fixture(scope="module")
def tox_envs():
    return _tox_config()


def _torch_lines(text: str) -> list[Requirement]:
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return [req for req in map(Requirement, filter(None, lines)) if req.name == "torch"]


def _admits(req: Requirement, python: str, version: str) -> bool:
    applies = req.marker is None or req.marker.evaluate({"python_version": python})
    return not applies or req.specifier.contains(version, prereleases=True)


def _extra_requirements(extra: str) -> list[Requirement]:
    from importlib.metadata import requires

    marker = f'extra == "{extra}"'
    found = []
    for text in requires("flake8-torchdevice") or []:
        req = Requirement(text)
        if req.marker is not None and marker in str(req.marker).replace("'", '"'):
            found.append(req)
    return found


def test_every_env_is_there(tox_envs):
    assert ENVS <= set(tox_envs)


def test_every_env_installs_under_the_torch_constraints(tox_envs):
    for name in tox_envs:  # every env tox knows, its packaging env (.pkg) included
        set_env = dict(line.split("=", 1) for line in tox_envs[name]["set_env"].splitlines() if "=" in line)
        assert "PIP_CONSTRAINT" in set_env, name
        constraints = _torch_lines(open(set_env["PIP_CONSTRAINT"], encoding="utf-8").read())
        for python in PYTHONS:
            # on 3.11 only 2.13.0 (any local build of it) passes; elsewhere no torch at all
            for version in ("2.1.0", "2.12.0", "2.14.1", "3.0.0"):
                assert not all(_admits(c, python, version) for c in constraints), (name, python, version)
            wanted = python == "3.11"
            assert all(_admits(c, python, PINNED) for c in constraints) is wanted, (name, python)
            assert all(_admits(c, python, PINNED + "+cpu") for c in constraints) is wanted, (name, python)


def test_torch_is_asked_for_only_pinned_and_only_on_311(tox_envs):
    for name in ENVS:
        config = tox_envs[name]
        for req in _torch_lines(config["deps"]):
            assert str(req.specifier) == f"=={PINNED}", (name, str(req))
            assert config["base_python"] in ("py311", "python3.11"), name
        for extra in filter(None, (e.strip() for e in config["extras"].split(","))):
            torch_reqs = [str(r) for r in _extra_requirements(extra) if r.name == "torch"]
            assert torch_reqs == [], (name, extra, torch_reqs)


def test_the_package_and_its_test_extra_never_ask_for_torch():
    from importlib.metadata import requires

    asked = [text for text in requires("flake8-torchdevice") or [] if Requirement(text).name == "torch"]
    assert asked == []
    assert _extra_requirements("test"), "the test extra is not visible in the installed metadata"


def test_constraints_stop_an_unpinned_torch_request():
    """What pip does with ``torch>=2.1`` under the constraints, on this Python."""
    constraints = ROOT / "constraints.txt"
    env = {k: v for k, v in os.environ.items() if k != "PIP_CONSTRAINT"}
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps",
         "-c", str(constraints), "torch>=2.1"],
        env=env, capture_output=True, text=True, timeout=180,
    )
    if sys.version_info[:2] == (3, 11):
        assert result.returncode == 0, result.stderr
        assert re.search(rf"Would install torch-{re.escape(PINNED)}(\+cpu)?\s*$", result.stdout, re.M), result.stdout
    else:
        assert result.returncode != 0 and "Would install" not in result.stdout
        assert "torch" in result.stderr
