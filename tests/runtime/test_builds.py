"""Claims that must hold on every kind of torch build, and on a GPU.

A CPU claim is judged on the CPU-only wheel here, and on a CUDA wheel with every GPU
hidden on a GPU workstation; the two word some mistakes differently. The messages
below were observed on each (facts.md; the CUDA build on an H100 machine with
``CUDA_VISIBLE_DEVICES=""``, torch 2.11.0+cu130).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from fixture_cases import FIXTURES, all_cases
from flake8_torchdevice.rules import ALL_RULES

from . import proofs, summary, table
from .proofs import Outcome

CASES = {case.id: case for case in all_cases()}
PROOFS, _ = proofs.collect(CASES.values())
TORCH_FILE = "/site-packages/torch/cuda/__init__.py"

# fixture -> (what the CPU-only build raised, what the CUDA build without a GPU raised)
BOTH_BUILDS = {
    "TDV105/events.py": (
        "RuntimeError: Tried to instantiate dummy base class Event",
        "RuntimeError: No CUDA GPUs are available",
    ),
    "TDV105/memory_stats.py": (
        "AttributeError: module 'torch._C' has no attribute '_cuda_resetPeakMemoryStats'",
        "RuntimeError: invalid argument to reset_peak_memory_stats",
    ),
    "TDV202/jit_load.py": (
        "NotImplementedError: Could not run 'aten::empty_strided' with arguments from the 'CUDA' backend.",
        "RuntimeError: No CUDA GPUs are available",
    ),
}


def _cpu_claim(fixture: str) -> proofs.Claim:
    (proof,) = [p for p in PROOFS if f"{p.rule}/{p.path.name}" == fixture and p.gpus == 0]
    return proof.claim


def _died_with(last_line: str) -> Outcome:
    stderr = f'Traceback (most recent call last):\n  File "{TORCH_FILE}", line 3, in f\n    raise X\n{last_line}\n'
    return Outcome(1, "", stderr, 0.1)


@pytest.mark.parametrize("fixture", sorted(BOTH_BUILDS))
@pytest.mark.parametrize("build", [0, 1], ids=["cpu-only-build", "cuda-build-no-gpu"])
def test_a_rewritten_claim_accepts_each_builds_message(fixture, build):
    message = BOTH_BUILDS[fixture][build]
    verdict = proofs.judge(_cpu_claim(fixture), _died_with(message), FIXTURES)
    assert verdict.passed, f"{fixture}: {verdict.detail}"


@pytest.mark.parametrize("fixture", sorted(BOTH_BUILDS))
def test_a_rewritten_claim_still_refuses_other_failures(fixture):
    other = "RuntimeError: Expected all tensors to be on the same device"
    assert not proofs.judge(_cpu_claim(fixture), _died_with(other), FIXTURES).passed


# On a CUDA build with no GPU visible, torch's lazy CUDA initialisation (which
# Tensor.cuda() calls through torch.cuda._lazy_init) raises this instead of the
# CPU-only build's "Torch not compiled with CUDA enabled".
AS_ON_A_CUDA_BUILD = textwrap.dedent("""\
    import torch.cuda

    def _lazy_init():
        raise RuntimeError("No CUDA GPUs are available")

    torch.cuda._lazy_init = _lazy_init
""")


def test_guarded_calls_run_when_cuda_init_fails_as_on_a_cuda_build(tmp_path):
    """Not a proof (proofs patch nothing): the hard-negative program must not depend
    on which build says "no CUDA" (it once expected only the AssertionError)."""
    pytest.importorskip("torch")
    (tmp_path / "sitecustomize.py").write_text(AS_ON_A_CUDA_BUILD, encoding="utf-8")
    program = FIXTURES / "TDV101" / "guarded_calls.py"
    env = proofs.program_env(0, FIXTURES, str(tmp_path))
    env["PYTHONPATH"] = f"{tmp_path}:{env['PYTHONPATH']}"
    done = subprocess.run([sys.executable, str(program)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    probe = subprocess.run([sys.executable, "-c", "import torch; torch.ones(1).cuda()"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
    assert "RuntimeError: No CUDA GPUs are available" in probe.stderr  # the emulation is in force


@pytest.mark.parametrize("rule", [rule.CODE for rule in ALL_RULES])
def test_every_rule_has_a_one_gpu_claim(rule):
    assert any(p.rule == rule and p.gpus == 1 for p in PROOFS), (
        f"{rule}: add a '# proof-gpu 1: ...' claim (the flagged program's CUDA failure, or its twin running)"
    )


# -- docs/gpu-proofs.md ----------------------------------------------------

PAGE = FIXTURES.parent / "docs" / "gpu-proofs.md"


def _page(tmp_path):
    page = tmp_path / "gpu-proofs.md"
    text = PAGE.read_text(encoding="utf-8")
    page.write_text(text, encoding="utf-8")
    return page


def _rows(rule_cells: dict) -> list[tuple]:
    return [(rule, *cells) for rule, cells in sorted(rule_cells.items())]


def _run(date: str) -> dict:
    return {"date": date, "machine": "m", "torch": "t", "python": "p"}


def test_a_run_writes_only_its_own_columns(tmp_path):
    page = _page(tmp_path)
    cpu = _rows({"TDV101": ("cpu ok", "x", "skipped", "fake ok"), "TDV102": ("cpu ok 2", "x", "skipped", "fake 2")})
    columns = table.filled_columns(summary.CPU_ONLY, gpu_results=False, fake_results=True)
    table.update(page, cpu, columns, _run("2001-01-01"))
    gpu = _rows({"TDV101": ("x", "cuda ok", "gpu ok", "y"), "TDV102": ("x", "cuda ok 2", "gpu ok 2", "y")})
    table.update(page, gpu, table.filled_columns(summary.CUDA_BUILD, gpu_results=True), _run("2002-02-02"))
    rows = {row[0]: row for row in table._rows(page.read_text(encoding="utf-8"), table.START, table.END)}
    assert rows["TDV101"] == ["TDV101", "cpu ok", "cuda ok", "gpu ok", "fake ok"]
    assert rows["TDV102"] == ["TDV102", "cpu ok 2", "cuda ok 2", "gpu ok 2", "fake 2"]
    runs = table._rows(page.read_text(encoding="utf-8"), table.RUNS_START, table.RUNS_END)
    assert [row[:2] for row in runs] == [
        ["CPU-only build", "2001-01-01"], ["CUDA build, no GPU visible", "2002-02-02"], ["GPU", "2002-02-02"],
        ["GPU claims under fake CUDA", "2001-01-01"],
    ]


def test_a_cuda_build_without_gpus_keeps_the_gpu_column(tmp_path):
    page = _page(tmp_path)
    table.update(page, _rows({"TDV101": ("a", "b", "gpu ok", "f")}), [1, 2, 3, 4], _run("2001-01-01"))
    table.update(page, _rows({"TDV101": ("x", "b2", "skipped: needs 1 GPU", "f")}),
                 table.filled_columns(summary.CUDA_BUILD, gpu_results=False), _run("2002-02-02"))
    (row,) = [r for r in table._rows(page.read_text(encoding="utf-8"), table.START, table.END) if r[0] == "TDV101"]
    assert row == ["TDV101", "a", "b2", "gpu ok", "f"]


def test_the_page_has_a_row_per_rule_and_says_how_it_was_made():
    text = PAGE.read_text(encoding="utf-8")
    rows = table._rows(text, table.START, table.END)
    assert [row[0] for row in rows] == sorted(rule.CODE for rule in ALL_RULES)
    assert "--proof-table=docs/gpu-proofs.md" in text
    assert all(row[1].startswith("passed") for row in rows), "the CPU-only column is filled by a run here"
    claims = [p for p in proofs.collect(all_cases())[0] if p.gpus]
    declared = {p.rule for p in claims}
    # A rule whose every GPU claim says fake CUDA cannot reproduce it shows why, and nothing else.
    unfakeable = declared - {p.rule for p in claims if not p.claim.no_fake}
    for row in rows:  # and the GPU claims under fake CUDA, by the same run
        if row[0] in unfakeable:
            assert row[4].startswith("skipped: fake CUDA cannot") and "passed" not in row[4], row
        else:
            assert row[4].startswith("passed") if row[0] in declared else row[4] == "none written", row
