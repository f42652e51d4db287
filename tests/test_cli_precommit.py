"""Both pre-commit hooks (``flake8-torchdevice`` and ``torchdevice``) through
``pre-commit try-repo`` and through a config (``pre-commit run``), against a
temporary git repository.

Slow (pre-commit builds a virtualenv and installs this package from a copy of
the source tree, pulling flake8 and libcst from PyPI), but CI runs it: try-repo
once (it builds a fresh environment every call), the rest through configs that
share one cached environment.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from types import SimpleNamespace

import pytest
import yaml

from cli_support import BAD, GOOD
from fixture_cases import ROOT
from package_support import clean_env, copy_source

pytestmark = pytest.mark.slow


def _git(*args, cwd):
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false", *args],
        cwd=cwd, check=True, capture_output=True,
    )


def _hook_repo(path):
    """A committed copy of the package: try-repo ignores untracked files."""
    copy_source(path)
    _git("init", "-q", ".", cwd=path)
    _git("add", "-A", cwd=path)
    _git("commit", "-q", "-m", "hooks", cwd=path)


def _pre_commit(*args, cwd, home):
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args, "--all-files", "--verbose"],
        cwd=cwd, env=clean_env(PRE_COMMIT_HOME=str(home)), capture_output=True, text=True, timeout=540,
    )


def _try_repo(repo, cwd, home):
    return _pre_commit("try-repo", str(repo), cwd=cwd, home=home)


def _status(output: str, hook: str) -> str:
    """``flake8-torchdevice.....Failed`` -> ``Failed``."""
    match = re.search(rf"^{re.escape(hook)}\.+\s*(Passed|Failed|\(no files to check\)Skipped)$", output, re.M)
    assert match, f"hook {hook} not in output:\n{output}"
    return match.group(1)


@pytest.fixture(scope="module")
def hooks(tmp_path_factory):
    """One committed hook repository and one pre-commit cache for the module: ``pre-commit
    run`` installs the hooks' environment once (~11 s) and reuses it, keyed by repo and rev."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path_factory.mktemp("precommit")
    repo = root / "hooks"
    _hook_repo(repo)
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True).stdout
    return SimpleNamespace(repo=repo, sha=sha.strip(), home=root / "cache")


def _config(hooks, entry: dict) -> str:
    """A pre-commit config whose one repo entry is ``entry`` pointed at the hook repository."""
    entry.update(repo=str(hooks.repo), rev=hooks.sha)
    return yaml.safe_dump({"repos": [entry]})


def test_both_hooks_through_try_repo_then_a_config(hooks, tmp_path):
    """try-repo (a fresh environment each call, so once); then both hooks from a config."""
    target = tmp_path / "project"
    target.mkdir()
    (target / "bad.py").write_text(BAD, encoding="utf-8")
    (target / "good.py").write_text(GOOD, encoding="utf-8")
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                           "source": ["import torch\n", "!nvidia-smi\n", "w = torch.cuda.amp.GradScaler()"]}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (target / "nb.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    _git("init", "-q", ".", cwd=target)
    _git("add", "-A", cwd=target)

    failing = _try_repo(hooks.repo, target, tmp_path / "cache")
    output = failing.stdout + failing.stderr
    assert failing.returncode == 1, output
    assert "Traceback" not in output
    assert _status(output, "flake8-torchdevice") == _status(output, "torchdevice") == "Failed"
    assert output.count("bad.py:2:10: TDV701") == 2  # once per hook
    assert output.count("nb.ipynb:cell_1:3:5: TDV701") == 1  # only the standalone hook reads notebooks
    assert "good.py" not in output

    (target / "bad.py").write_text(GOOD, encoding="utf-8")
    (target / "nb.ipynb").unlink()
    both = {"hooks": [{"id": "flake8-torchdevice"}, {"id": "torchdevice"}]}
    (target / ".pre-commit-config.yaml").write_text(_config(hooks, both), encoding="utf-8")
    _git("add", "-A", cwd=target)
    passing = _pre_commit("run", cwd=target, home=hooks.home)
    output = passing.stdout + passing.stderr
    assert passing.returncode == 0, output
    assert _status(output, "flake8-torchdevice") == _status(output, "torchdevice") == "Passed"

    # a file that does not parse fails both hooks, each saying where (flake8's
    # hook once selected TDV only, which drops E999, and passed it)
    (target / "broken.py").write_text("import torch\ndef f(:\n    torch.load(p)\n", encoding="utf-8")
    _git("add", "-A", cwd=target)
    broken = _pre_commit("run", cwd=target, home=hooks.home)
    output = broken.stdout + broken.stderr
    assert broken.returncode == 1, output
    assert _status(output, "flake8-torchdevice") == _status(output, "torchdevice") == "Failed"
    assert re.search(r"^broken\.py:2:\d+: E999 SyntaxError", output, re.M), output
    assert "torchdevice: broken.py: syntax error at line 2" in output


def _readme_hook_config() -> dict:
    """The README's config for this repository's hooks (the block naming ``id: torchdevice``)."""
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("### pre-commit", 1)[1]
    blocks = re.findall(r"```yaml\n(.*?)```", section.split("\n### ", 1)[0], flags=re.S)
    ours = [block for block in blocks if "id: torchdevice" in block]
    assert len(ours) == 1, blocks
    return yaml.safe_load(ours[0])


def test_the_readme_config_with_a_clone_path_and_a_commit_sha(hooks, tmp_path):
    """``repo:`` a local clone, ``rev:`` a commit SHA, as the README says, through ``pre-commit run``."""
    config = _readme_hook_config()
    (entry,) = config["repos"]
    assert re.fullmatch(r"[0-9a-f]{40}", str(entry["rev"])), "the README's rev: should look like a commit SHA"
    target = tmp_path / "project"
    target.mkdir()
    (target / ".pre-commit-config.yaml").write_text(_config(hooks, entry), encoding="utf-8")
    (target / "bad.py").write_text(BAD, encoding="utf-8")
    _git("init", "-q", ".", cwd=target)
    _git("add", "-A", cwd=target)
    result = _pre_commit("run", cwd=target, home=hooks.home)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert _status(output, "torchdevice") == "Failed"
    assert "bad.py:2:10: TDV701" in output
