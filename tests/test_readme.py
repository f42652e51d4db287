"""The README's newcomer commands are the ones CI runs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the package's own dependency
    import tomli as tomllib

from cli_support import BAD
from fixture_cases import ROOT, all_cases
from flake8_torchdevice.rules import ALL_RULES

README = (ROOT / "README.md").read_text(encoding="utf-8")


def _shell_blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", README, flags=re.S)


def test_quick_start_has_the_two_commands_near_the_top():
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", quick, flags=re.S)
    assert len(blocks) == 2
    lint, test = (b.strip() for b in blocks)
    assert "pip install ." in lint and "flake8 --select=TDV fixtures/" in lint
    assert "pip install torch==2.13.0" in test and test.endswith("python -m pytest -n auto --dist loadscope")
    assert README.index("## Quick start") < README.index("## Rules")


def test_ci_runs_the_readme_test_command_verbatim():
    test_command = _shell_blocks()[1].strip()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command in ci.splitlines()
    assert "set -euo pipefail" in ci


def test_torch_is_pinned_before_the_test_extras():
    command = _shell_blocks()[1].strip()
    assert command.index("pip install torch==2.13.0") < command.index("'.[test]'")


def test_ci_installs_under_the_torch_constraints():
    """Every pip run of .ci/run (the other Pythons' installs too) sees constraints.txt."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    export = 'export PIP_CONSTRAINT="$PWD/constraints.txt"'
    assert export in ci.splitlines()
    assert ci.index(export) < min(ci.index("pip install"), ci.index(_shell_blocks()[1].strip()))


# -- every command of every ``sh`` block is run here or says where it is checked ---
# Commands not run by this module, each with the test that answers for it.
CHECKED_ELSEWHERE = {
    "python3 -m venv .venv && .venv/bin/pip install torch==2.13.0 && .venv/bin/pip install -e '.[test]' && "
    ".venv/bin/python -m pytest -n auto --dist loadscope":
        "CI runs it verbatim (test_ci_runs_the_readme_test_command_verbatim)",
    "python3 -m venv .venv && .venv/bin/pip install torch==2.13.0 && .venv/bin/pip install -e '.[test]' && "
    ".venv/bin/python -m pytest tests/runtime": "a CUDA machine's setup; CI runs the same tests/runtime",
    "python -m pytest": "this very run",
    "python -m pytest tests/runtime": "part of this very run",
    "python -m flake8_torchdevice.ruletable --write": "test_docs.py: the table it writes is current",
    "tox": "test_tox.py: its configuration; it runs this suite once per Python",
    "pip install .": "test_wheel.py: the wheel built from this source, installed in a fresh venv",
    "pytest --fake-cuda": "fakecuda/test_plugin.py: the option, bare and before a path",
    "pytest --fake-cuda=2": "fakecuda/test_plugin.py: the option with a count",
    "python -m flake8_torchdevice.fakecuda train.py": "fakecuda/test_plugin.py: the runner, a script and -m",
    "python -m pytest --fake-cuda examples/fake-cuda": "fakecuda/test_plugin.py: the demonstration, both ways",
    "pip install 'flake8-torchdevice[lsp]'": "test_wheel.py: the wheel installed with its lsp extra runs the server",
}
OPT_IN = {rule.CODE for rule in ALL_RULES if not rule.DEFAULT_ENABLED}
FINDING = re.compile(r"^(?P<path>[^:\n]+):(?P<line>\d+):\d+: (?P<code>TDV\d+) ", re.M)


def _commands() -> list[str]:
    """Each command line of each sh block, its trailing comment dropped."""
    lines = (line for block in _shell_blocks() for line in block.splitlines())
    return [re.sub(r"\s+#\s.*$", "", line).strip() for line in lines if line.strip()]


def _section(heading: str) -> str:
    return README.split(heading, 1)[1].split("\n## ", 1)[0]


def _blocks(heading: str, language: str = "sh") -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", _section(heading), flags=re.S)


def _run(command: str, cwd) -> subprocess.CompletedProcess:
    """``command`` in bash, with this interpreter's scripts (flake8, torchdevice) first on PATH."""
    bin_dir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLAKE8")}
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    return subprocess.run(["bash", "-eo", "pipefail", "-c", command], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def _found(output: str) -> set:
    return {(m["path"].removeprefix("./"), int(m["line"]), m["code"]) for m in FINDING.finditer(output)}


def _expected(codes_off: set) -> set:
    return {
        (str(case.path.relative_to(ROOT)), line, code)
        for case in all_cases()
        for line, code in case.expected
        if code not in codes_off
    }


@pytest.fixture
def project(tmp_path):
    """What the CLI block's commands name: src/, train.py, nb.ipynb."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "model.py").write_text("import os\n" + BAD, encoding="utf-8")  # F401 and TDV701
    (tmp_path / "train.py").write_text(BAD, encoding="utf-8")
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": [BAD]}
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "nb.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    return tmp_path


def test_every_command_is_run_here_or_checked_elsewhere():
    ran_here = set(_quick_start_lint()) | set(_flake8_commands()) | set(_cli_commands())
    unaccounted = [c for c in _commands() if c not in ran_here and c not in CHECKED_ELSEWHERE]
    assert unaccounted == []
    assert set(CHECKED_ELSEWHERE) <= set(_commands()), "a command listed here left the README"


def _quick_start_lint() -> list[str]:
    return [_blocks("## Quick start")[0].strip()]


def test_quick_start_lint_reports_the_expect_lines_of_the_default_rules():
    """Its flake8 step, run in the repository with this environment's plugin."""
    command = _quick_start_lint()[0].rsplit(" && ", 1)[1].removeprefix(".venv/bin/")
    default = _run(command, ROOT)
    assert default.returncode == 1, default.stderr
    assert OPT_IN and _found(default.stdout) == _expected(OPT_IN)
    named = _run(command.replace("--select=TDV ", "--select=TDV," + ",".join(sorted(OPT_IN)) + " "), ROOT)
    assert _found(named.stdout) == _expected(set())
    assert "e.g. `--select=TDV," + ",".join(sorted(OPT_IN)) + "`" in _section("## Quick start")


def _flake8_commands() -> list[str]:
    (block,) = _blocks("## Using it with flake8")
    return [c for c in (re.sub(r"\s+#\s.*$", "", line).strip() for line in block.splitlines()) if "flake8" in c]


def test_flake8_block_in_a_project(project):
    everything, only_tdv = _flake8_commands()
    result = _run(everything, project)
    codes = set(re.findall(r": ([A-Z]+\d+) ", result.stdout))
    assert {"F401", "TDV701"} <= codes, result.stdout  # TDV on by default, next to flake8's own
    result = _run(only_tdv, project)
    assert result.returncode == 1 and set(re.findall(r": ([A-Z]+\d+) ", result.stdout)) == {"TDV701"}, result.stdout


def _cli_commands() -> list[str]:
    block = _blocks("## Standalone CLI: `torchdevice`")[0]
    return [re.sub(r"\s+#\s.*$", "", line).strip() for line in block.splitlines() if line.strip()]


def test_cli_block_commands_are_valid_invocations(project):
    for command in _cli_commands():
        result = _run(command, project)
        assert result.returncode in (0, 1), (command, result.stderr)  # 2: a usage or I/O error
        assert "Traceback" not in result.stderr, (command, result.stderr)
        assert result.stdout or result.stderr, command  # each reports something on this project


def test_vscode_settings_keep_the_extensions_defaults_and_make_tdv_a_warning():
    (block,) = re.findall(r"```json\n(.*?)```", _section("## Using it with flake8"), flags=re.S)
    settings = json.loads(block)
    severity = settings["flake8.severity"]
    # the extension's default map (package.json of the VS Code flake8 extension)
    assert {k: severity[k] for k in "EFIW"} == {"E": "Error", "F": "Error", "I": "Information", "W": "Warning"}
    assert severity["TDV"] == "Warning"


def test_the_ci_recipe_uses_the_action_as_declared():
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    (block,) = [b for b in _blocks("### CI recipes", "yaml") if "upload-sarif" in b]
    steps = yaml.safe_load(block)["jobs"]["torchdevice"]["steps"]
    ours = next(step for step in steps if step.get("id") == "torchdevice")
    assert set(ours["with"]) <= set(action["inputs"])
    upload = next(step for step in steps if "upload-sarif" in step["uses"])
    output = re.fullmatch(r"\$\{\{ steps\.torchdevice\.outputs\.([\w-]+) \}\}", upload["with"]["sarif_file"])
    assert output and output[1] in action["outputs"]


def _python_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_every_python_block_of_the_readme_runs_and_prints_what_it_says(capsys):
    """Each ```python block runs as written; a ``# comment`` after a print of
    a literal is checked against what was printed."""
    blocks = _python_blocks()
    assert blocks, "the README has a Python API example"
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})
        printed = capsys.readouterr().out.splitlines()
        promised = [
            line.split("# ", 1)[1].strip()
            for line in block.splitlines()
            if line.startswith("print(") and "# [" in line
        ]
        for claim in promised:
            assert claim in printed, (claim, printed)


def test_the_api_example_fixes_only_the_unsilenced_finding():
    from flake8_torchdevice import check_source, fix_source

    source = 'import torch\ndevice = "cpu"\nstate = torch.load("ckpt.pt")\nold = torch.load("old.pt")  # noqa: TDV201\n'
    fixed = fix_source(source)
    assert fixed.splitlines()[2] == 'state = torch.load("ckpt.pt", map_location="cpu")'
    assert fixed.splitlines()[3] == source.splitlines()[3]
    assert fix_source(source, check_source(source)).count('map_location="cpu"') == 2  # what was asked


def _editor_commands() -> dict:
    """The command each editor snippet of the language-server section starts."""
    section = "## Language server: `torchdevice server`"
    vscode = json.loads(_blocks(section, "json")[0])
    helix = tomllib.loads(_blocks(section, "toml")[0])["language-server"]["torchdevice"]
    lua = re.search(r"cmd = \{ (.*?) \}", _blocks(section, "lua")[0]).group(1)
    elisp = re.search(r'\. \((.*?)\)\)\)', _blocks(section, "elisp")[0]).group(1)
    return {
        "vscode": [vscode["glspc.server.command"], *vscode["glspc.server.commandArguments"]],
        "helix": [helix["command"], *helix["args"]],
        "neovim": re.findall(r'"([^"]+)"', lua),
        "emacs": re.findall(r'"([^"]+)"', elisp),
    }


def test_every_editor_snippet_starts_the_language_server(tmp_path):
    pytest.importorskip("pygls")
    from lsp_support import Client

    commands = _editor_commands()
    assert set(commands) == {"vscode", "helix", "neovim", "emacs"}
    for editor, argv in commands.items():
        assert argv == ["torchdevice", "server"], editor
    client = Client(tmp_path, command=[str(Path(sys.executable).parent / "torchdevice")])  # + "server"
    assert "codeActionProvider" in client.initialize(tmp_path)["capabilities"]
    assert client.shutdown() == 0
