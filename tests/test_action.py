"""The GitHub Action (action.yml): its ``run:`` steps, run as a runner would run
them -- bash -eo pipefail, ``${{ }}`` expressions filled in, RUNNER_TEMP and
GITHUB_OUTPUT set -- in a temporary directory against fixture programs.

Slow: the first step builds a virtualenv and installs this package into it
from a copy of the source tree (the action's own checkout).
"""

from __future__ import annotations

import json
import re

import pytest
import yaml

from fixture_cases import FIXTURES, ROOT, expected_of
from flake8_torchdevice.rules import ALL_RULES
from package_support import clean_env, copy_source, run

pytestmark = pytest.mark.slow

ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
EXPRESSION = re.compile(r"\$\{\{\s*([\w.-]+)\s*\}\}")


def _fill(text: str, context: dict) -> str:
    """Replace each ``${{ name }}``; a name the test does not know fails it."""
    return EXPRESSION.sub(lambda m: context[m.group(1)], text)


def _run_action(workspace, action_path, runner_temp, inputs: dict) -> dict:
    """Run every step; return the outputs the steps wrote, by step id."""
    context = {"github.action_path": str(action_path)}
    for name, spec in ACTION["inputs"].items():
        context[f"inputs.{name}"] = inputs.get(name, spec.get("default", ""))
    outputs = {}
    for number, step in enumerate(ACTION["runs"]["steps"]):
        assert step["shell"] == "bash", step
        output_file = runner_temp / f"output-{number}"
        output_file.write_text("")
        env = clean_env(RUNNER_TEMP=str(runner_temp), GITHUB_OUTPUT=str(output_file))
        env.update({key: _fill(str(value), context) for key, value in step.get("env", {}).items()})
        result = run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", _fill(step["run"], context)],
                     cwd=workspace, env=env)
        assert result.returncode == 0, (step.get("name"), result.stdout, result.stderr)
        written = dict(line.split("=", 1) for line in output_file.read_text().splitlines() if "=" in line)
        if "id" in step:
            outputs[step["id"]] = written
            context.update({f"steps.{step['id']}.outputs.{k}": v for k, v in written.items()})
    outputs["action"] = {name: _fill(spec["value"], context) for name, spec in ACTION["outputs"].items()}
    return outputs


def _sarif_findings(path) -> set:
    log = json.loads(path.read_text(encoding="utf-8"))
    assert log["version"] == "2.1.0"
    found = set()
    for result in log["runs"][0]["results"]:
        location = result["locations"][0]["physicalLocation"]
        found.add((location["artifactLocation"]["uri"], location["region"]["startLine"], result["ruleId"]))
    return found


def test_inputs_and_outputs_are_declared():
    assert set(ACTION["inputs"]) == {"paths", "args", "sarif-file"}
    assert ACTION["runs"]["using"] == "composite"
    assert "sarif-file" in ACTION["outputs"]


def test_the_action_writes_a_sarif_log_of_the_findings(tmp_path):
    workspace, runner_temp = tmp_path / "workspace", tmp_path / "runner-temp"
    (workspace / "src").mkdir(parents=True)
    runner_temp.mkdir()
    checked = {
        "src/step.py": FIXTURES / "TDV701" / "training_step.py",  # a default-on code
        "train.py": FIXTURES / "TDV402" / "every_form.py",
    }
    for name, fixture in checked.items():
        (workspace / name).write_text(fixture.read_text(encoding="utf-8"), encoding="utf-8")
    # outside the given paths: must not be checked
    (workspace / "other.py").write_text("import torch\nscaler = torch.cuda.amp.GradScaler()\n", encoding="utf-8")

    (workspace / "out").mkdir()

    inputs = {"paths": "src train.py", "args": "--extend-select TDV402", "sarif-file": "out/td.sarif"}
    outputs = _run_action(workspace, copy_source(tmp_path / "action"), runner_temp, inputs)

    sarif = workspace / outputs["action"]["sarif-file"]
    assert outputs["action"]["sarif-file"] == "out/td.sarif" and sarif.is_file()
    selected = {rule.CODE for rule in ALL_RULES if rule.DEFAULT_ENABLED} | {"TDV402"}
    expected = {
        (name, line, code)
        for name, fixture in checked.items()
        for line, code in expected_of(fixture.read_text(encoding="utf-8"))
        if code in selected  # the fixture's other opt-in lines (TDV105) are not selected here
    }
    assert any(code == "TDV402" for _, _, code in expected)  # the opt-in code: args reached the command
    assert _sarif_findings(sarif) == expected
