"""Fake CUDA where code is less polite: nested modes and sessions, threads and DataLoader
workers, and the note that names the user's line and rule."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils.data import DataLoader, TensorDataset

from flake8_torchdevice.fakecuda import fake_cuda

from .conftest import MISMATCH


class Counting(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls += 1
        return func(*args, **(kwargs or {}))


def test_a_users_mode_inside_a_session_sees_every_call_and_devices_still_hold():
    with fake_cuda(), Counting() as counting:
        placed = torch.ones(2, device="cuda")
        assert (placed * 2).device == torch.device("cuda", 0)
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            placed + torch.ones(2)
    assert counting.calls >= 3


def test_a_default_device_context_inside_a_session_places_factories():
    with fake_cuda(), torch.device("cuda"):
        assert torch.zeros(2).device == torch.device("cuda", 0)
        assert torch.nn.Linear(2, 2).weight.device == torch.device("cuda", 0)


def test_a_session_inside_a_session_and_both_undone():
    with fake_cuda(1):
        with fake_cuda(2):
            assert torch.cuda.device_count() == 2
            assert torch.ones(1, device="cuda:1").device == torch.device("cuda", 1)
        assert torch.cuda.device_count() == 1
        with pytest.raises(torch.AcceleratorError):
            torch.ones(1, device="cuda:1")
    assert not torch.cuda.is_available()


def test_a_thread_started_in_a_session_runs_under_it():
    results = {}

    def work():
        try:
            placed = torch.ones(2).cuda()
            results["device"] = placed.device
            placed + torch.ones(2)
        except RuntimeError as error:
            results["error"] = str(error)

    with fake_cuda():
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
    assert results["device"] == torch.device("cuda", 0)
    assert MISMATCH in results["error"]


@pytest.mark.slow
@pytest.mark.parametrize("workers", [0, 2])
def test_dataloader_batches_arrive_on_the_cpu_and_move(workers):
    data = TensorDataset(torch.arange(8.0).view(4, 2), torch.tensor([0, 1, 0, 1]))
    with fake_cuda():
        model = torch.nn.Linear(2, 2).cuda()
        loader = DataLoader(data, batch_size=2, num_workers=workers, pin_memory=True)
        for features, labels in loader:
            assert features.device == torch.device("cpu")
            logits = model(features.cuda(non_blocking=True))
            with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
                torch.nn.functional.cross_entropy(logits, labels)
            torch.nn.functional.cross_entropy(logits, labels.cuda())


def _run(tmp_path, source: str) -> subprocess.CompletedProcess:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(source), encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "flake8_torchdevice.fakecuda", str(script)],
                          capture_output=True, text=True, timeout=180, cwd=tmp_path)


PREDICT = """\
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = torch.nn.Linear(3, 2).to(device)


    def predict(batch):
        return model(batch.to(device)).softmax(-1).detach().numpy()


    print(predict(torch.ones(4, 3)))
"""


@pytest.mark.slow
def test_the_failure_names_the_users_line_and_the_rule_that_reports_it(tmp_path):
    done = _run(tmp_path, PREDICT)
    assert done.returncode == 1
    assert "TypeError: can't convert cuda:0 device type tensor to numpy" in done.stderr
    assert f"fake CUDA: {tmp_path / 'script.py'}:8: return model(batch.to(device)).softmax(-1).detach().numpy()" \
        in done.stderr
    assert "flake8-torchdevice reports this line as TDV603 (docs/rules/TDV603.md)" in done.stderr


@pytest.mark.slow
def test_where_the_linter_is_silent_the_note_names_the_page_of_the_kind(tmp_path):
    done = _run(tmp_path, """\
        import torch
        pair = [torch.ones(2).cuda(), torch.ones(2)]
        total = pair[0] + pair[1]
    """)
    assert done.returncode == 1 and MISMATCH in done.stderr
    assert ":3: total = pair[0] + pair[1]" in done.stderr
    assert "the mistake is explained by TDV601 (docs/rules/TDV601.md)" in done.stderr
