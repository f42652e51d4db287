"""``pytest --fake-cuda``, the marker and fixture, ``python -m flake8_torchdevice.fakecuda``, and the
demonstration in examples/fake-cuda: a test that passes on the CPU and fails under fake CUDA."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow

TESTS = """\
    import pytest
    import torch


    def test_plain():
        print("plain sees", torch.cuda.device_count())


    @pytest.mark.fake_cuda(device_count=3)
    def test_marked():
        assert torch.cuda.device_count() == 3


    def test_fixture(fake_cuda):
        assert fake_cuda.device_count >= 1 and torch.cuda.is_available()
"""


def pytest_run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    # hypothesis's plugin loads with every pytest (~2 s here); these runs have no use for it
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-q", "-s", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "test_gpu.py").write_text(textwrap.dedent(TESTS), encoding="utf-8")
    return tmp_path


# Each run starts pytest and torch (~6 s): the forms argparse could read two ways. A bare
# --fake-cuda is the last case's; --fake-cuda=2 is argparse's own spelling of --fake-cuda 2.
@pytest.mark.parametrize("args, seen", [
    ((), "plain sees 0"), (("--fake-cuda", "2"), "plain sees 2"), (("--fake-cuda", "test_gpu.py"), "plain sees 1"),
])
def test_the_option_marker_and_fixture(project, args, seen):
    done = pytest_run(*args, cwd=project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert seen in done.stdout and "3 passed" in done.stdout


def test_a_bad_count_is_one_usage_error(project):
    done = pytest_run("--fake-cuda=0", cwd=project)
    assert done.returncode == 4
    assert "--fake-cuda: N must be a positive integer, not '0'" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_demo_passes_on_the_cpu_and_fails_under_fake_cuda_as_on_a_gpu():
    plain = pytest_run("examples/fake-cuda", cwd=ROOT)  # the README's command
    assert plain.returncode == 0 and "2 passed" in plain.stdout, plain.stdout
    fake = pytest_run("--fake-cuda", "examples/fake-cuda", cwd=ROOT)
    assert fake.returncode == 1 and "1 failed, 1 passed" in fake.stdout, fake.stdout
    assert "FAILED examples/fake-cuda/test_train.py::test_training_lowers_the_loss" in fake.stdout
    assert ("RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
            "cuda:0 and cpu!") in fake.stdout
    assert "train.py:31: loss = nn.functional.cross_entropy(logits, labels)" in fake.stdout


def fake_run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "flake8_torchdevice.fakecuda", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=cwd)


def test_the_runner_runs_a_script_with_its_arguments_and_a_module(tmp_path):
    (tmp_path / "show.py").write_text(
        "import sys, torch\nprint(sys.argv[1:], torch.cuda.device_count(), torch.ones(1).cuda().device)\n",
        encoding="utf-8")
    done = fake_run("--devices", "2", "show.py", "--lr", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['--lr', '1'] 2 cuda:0"
    done = fake_run("-m", "show", "x", cwd=tmp_path)
    assert done.stdout.strip() == "['x'] 1 cuda:0", done.stderr


@pytest.mark.parametrize("args, message", [
    (("missing.py",), "python -m flake8_torchdevice.fakecuda: no such file: missing.py"),
    (("--devices", "0", "x.py"), "--devices must be at least 1"),
    ((), "give a script to run, or -m MODULE"),
])
def test_bad_input_is_one_line(tmp_path, args, message):
    done = fake_run(*args, cwd=tmp_path)
    assert done.returncode == 2 and message in done.stderr
    assert "Traceback" not in done.stderr
