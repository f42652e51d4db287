"""Modules, optimizers, amp, DataParallel and checkpoints under fake CUDA."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from flake8_torchdevice.fakecuda import fake_cuda

from .conftest import MISMATCH


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.register_buffer("seen", torch.zeros(()))
        self.correct = torch.zeros(())  # a plain attribute: .to() leaves it behind, as on CUDA

    def forward(self, x):
        self.seen += 1
        out = self.fc(x)
        self.correct += (out.argmax(1) == 0).sum()
        return out


def test_to_moves_parameters_and_buffers_and_leaves_plain_attributes_behind():
    with fake_cuda():
        model = Counter().to("cuda")
        assert {p.device for p in model.parameters()} == {torch.device("cuda", 0)}
        assert model.seen.device == torch.device("cuda", 0)
        assert model.correct.device == torch.device("cpu")
        with pytest.raises(RuntimeError) as raised:
            model(torch.ones(4, 3, device="cuda"))
        assert MISMATCH in str(raised.value)
        model.cpu()
        assert model.fc.weight.device == torch.device("cpu")


@pytest.mark.parametrize("move", [
    lambda m: m.to(device="cuda"), lambda m: m.to(device=torch.device("cuda", 0)), lambda m: m.to("cuda", torch.float),
    lambda m: m.to(device="cuda", dtype=torch.float64),
])
def test_to_with_a_device_keyword_moves_the_modules_tensors(move):
    # ``Module.to`` reads its arguments with ``_parse_to(device=...)``, which makes no tensor.
    with fake_cuda():
        model = move(Counter())
        assert {p.device for p in model.parameters()} == {torch.device("cuda", 0)}
        assert model.seen.device == torch.device("cuda", 0)


def test_a_cpu_input_to_a_placed_model_fails_and_a_training_step_runs():
    with fake_cuda():
        model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2)).cuda()
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            model(torch.ones(5, 3))
        optimizer = torch.optim.Adam(model.parameters())
        x, y = torch.randn(5, 3).cuda(), torch.tensor([0, 1, 0, 1, 1]).cuda()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        assert loss.device == torch.device("cuda", 0)
        assert all(p.grad.device == torch.device("cuda", 0) for p in model.parameters())
        assert optimizer.state[model[0].weight]["exp_avg"].device == torch.device("cuda", 0)


def test_embedding_indices_left_on_the_cpu_fail():
    with fake_cuda():
        encoder = nn.Embedding(10, 4)
        encoder.cuda()
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            encoder(torch.tensor([1, 2]))


def test_amp_streams_events_and_memory_statistics_are_harmless():
    with fake_cuda():
        model = nn.Linear(3, 1).cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler("cuda")
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        stream = torch.cuda.Stream()
        start.record()
        with torch.cuda.stream(stream), torch.autocast("cuda", dtype=torch.float16):
            loss = model(torch.ones(2, 3, device="cuda")).sum()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        end.record()
        torch.cuda.synchronize()
        assert start.elapsed_time(end) >= 0.0
        assert torch.cuda.memory_allocated() == 0 and torch.cuda.max_memory_allocated() == 0
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.empty_cache()
        assert "fake CUDA" in torch.cuda.get_device_name()


def test_dataparallel_on_two_gpus_fails_for_a_module_left_on_the_cpu():
    with fake_cuda(2):
        wrapped = nn.DataParallel(nn.Linear(3, 2))
        with pytest.raises(RuntimeError, match=r"module must have its parameters and buffers on device cuda:0 "
                                               r"\(device_ids\[0\]\) but found one of them on device: cpu"):
            wrapped(torch.ones(4, 3))
        placed = nn.DataParallel(nn.Linear(3, 2).to("cuda"))
        assert placed(torch.ones(4, 3)).device == torch.device("cuda", 0)


@pytest.mark.parametrize("device", [1, "cuda:1", torch.device("cuda", 3)])
def test_properties_of_a_gpu_the_machine_lacks_fail_as_torch_checks_them(device):
    """torch compares the index with the device count before it asks the driver."""
    with fake_cuda(1):
        assert torch.cuda.get_device_properties(0).total_memory > 0
        with pytest.raises(AssertionError, match="Invalid device id"):
            torch.cuda.get_device_properties(device)
        with pytest.raises(AssertionError, match="Invalid device id"):
            nn.DataParallel(nn.Linear(3, 2).to("cuda"), device_ids=[0, 1])


def test_dataparallel_on_one_gpu_moves_the_module_itself():
    with fake_cuda(1):
        wrapped = nn.DataParallel(nn.Linear(3, 2))
        assert wrapped.module.weight.device == torch.device("cuda", 0)
        assert wrapped(torch.ones(4, 3)).device == torch.device("cuda", 0)


def _tags_in(path) -> set:
    seen = set()
    torch.load(path, map_location=lambda storage, location: seen.add(location) or storage)
    return seen


def test_a_checkpoint_saved_from_fake_cuda_is_a_gpu_checkpoint(tmp_path):
    path = tmp_path / "model.pt"
    with fake_cuda():
        torch.save({"w": torch.arange(3.0, device="cuda"), "cpu": torch.ones(2)}, path)
        loaded = torch.load(path)
        assert loaded["w"].device == torch.device("cuda", 0) and loaded["cpu"].device == torch.device("cpu")
        assert torch.load(path, map_location="cpu")["w"].device == torch.device("cpu")
    assert _tags_in(path) == {"cuda:0", "cpu"}
    with fake_cuda(saved_on_missing_gpu=True):
        with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device but "
                                               r"torch.cuda.is_available\(\) is False"):
            torch.load(path)
        assert torch.load(path, map_location="cpu")["w"].tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device"):
        torch.load(path)  # outside the session, it is a GPU checkpoint on a CPU machine


def test_a_checkpoint_from_a_second_gpu_needs_that_gpu(tmp_path):
    path = tmp_path / "second.pt"
    with fake_cuda(2):
        torch.save(nn.Linear(2, 2).to("cuda:1").state_dict(), path)
    with fake_cuda(1):
        with pytest.raises(RuntimeError, match=r"on CUDA device 1 but torch.cuda.device_count\(\) is 1"):
            torch.load(path)
        state = torch.load(path, map_location={"cuda:1": "cuda:0"})
        assert state["weight"].device == torch.device("cuda", 0)


def test_torch_compile_refuses_cleanly_and_the_code_runs_eagerly():
    def double(x):
        return x * 2

    compiled_before = torch.compile(double)
    with fake_cuda():
        with pytest.warns(RuntimeWarning, match="torch.compile is not applied"):
            compiled = torch.compile(double)
        placed = torch.ones(2, device="cuda")
        assert compiled(placed).device == torch.device("cuda", 0)
        assert compiled_before(placed).tolist() == [2.0, 2.0]
        with pytest.warns(RuntimeWarning):
            decorated = torch.compile(mode="reduce-overhead")(double)
        assert decorated(placed).device == torch.device("cuda", 0)
