"""docs/fake-cuda.md: its Python example runs and prints what its comments say; its
figures are the ones the suite and the benchmark produce."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "fake-cuda.md").read_text(encoding="utf-8")


def test_the_python_example_runs_and_prints_what_it_says(capsys):
    (block,) = re.findall(r"```python\n(.*?)```", PAGE, re.S)
    exec(compile(block, "fake-cuda.md", "exec"), {"__name__": "fake_cuda_doc"})
    printed = capsys.readouterr().out.splitlines()
    promised = [line.split("# ", 1)[1].strip() for line in block.splitlines() if line.strip().startswith("print(")]
    assert printed == promised


def test_the_page_counts_the_gpu_claims_there_are():
    sys.path.insert(0, str(ROOT / "tests"))
    from fixture_cases import all_cases
    from runtime import proofs

    claims = [p for p in proofs.collect(all_cases())[0] if p.gpus]
    one, two = sum(p.gpus == 1 for p in claims), sum(p.gpus == 2 for p in claims)
    assert f"({len(claims)}: {one} with one GPU, {two} with two)" in PAGE


@pytest.mark.slow
def test_the_overhead_benchmark_runs_and_prints_a_ratio_per_model():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "fakecuda_overhead.py"), "--rounds", "1",
                           "--steps", "2"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    ratios = re.findall(r"ratio (\d+\.\d+)x", done.stdout)
    assert len(ratios) == 3, done.stdout


def test_the_ci_recipe_runs_pytest_plainly_and_under_fake_cuda():
    yaml = pytest.importorskip("yaml")
    (block,) = re.findall(r"```yaml\n(.*?)```", PAGE, re.S)
    steps = yaml.safe_load(block)["jobs"]["tests"]["steps"]
    runs = [step["run"].split("#")[0].strip() for step in steps if "run" in step]
    assert "pytest" in runs and "pytest --fake-cuda" in runs
    assert any(run.startswith("pip install torch --index-url https://download.pytorch.org/whl/cpu") for run in runs)
    from flake8_torchdevice.fakecuda import pytest_plugin

    assert pytest_plugin.OPTION == "--fake-cuda"  # the option the recipe passes is the plugin's
