"""Common GPU-code idioms that must run under fake CUDA as they run on a GPU (a false
failure here would make users distrust every true one)."""

from __future__ import annotations

import torch

from flake8_torchdevice.fakecuda import fake_cuda

CUDA0 = torch.device("cuda", 0)


def test_a_cuda_generator_seeds_and_samples_on_the_gpu():
    before = torch.Generator()
    with fake_cuda():
        generator = torch.Generator(device="cuda").manual_seed(0)
        assert generator.device == CUDA0 and isinstance(generator, torch.Generator)
        assert isinstance(before, torch.Generator)
        first = torch.randn(3, generator=generator, device="cuda")
        again = torch.randn(3, generator=torch.Generator(device="cuda").manual_seed(0), device="cuda")
        assert first.device == CUDA0 and torch.equal(first.cpu(), again.cpu())
    assert torch.Generator is type(before)


def test_a_cuda_default_device_places_factories_and_modules():
    with fake_cuda():
        torch.set_default_device("cuda")
        try:
            assert torch.get_default_device() == CUDA0
            assert torch.zeros(2).device == CUDA0 and torch.nn.Linear(2, 2).weight.device == CUDA0
            assert torch.zeros(2, device="cpu").device == torch.device("cpu")
        finally:
            torch.set_default_device(None)
        assert torch.zeros(2).device == torch.device("cpu")
    assert torch.get_default_device() == torch.device("cpu")


def test_rng_state_nvtx_and_memory_fraction_calls_are_harmless():
    with fake_cuda(2):
        torch.cuda.set_rng_state(torch.cuda.get_rng_state())
        assert len(torch.cuda.get_rng_state_all()) == 2
        torch.cuda.nvtx.range_push("step")
        torch.cuda.nvtx.range_pop()
        with torch.cuda.nvtx.range("step"):
            pass
        torch.cuda.set_per_process_memory_fraction(0.5)
        assert torch.cuda.utilization() == 0


def test_legacy_cuda_tensor_types():
    with fake_cuda():
        made = torch.cuda.FloatTensor([1.0, 2.0])
        assert made.device == CUDA0 and made.dtype == torch.float32
        assert isinstance(made, torch.cuda.FloatTensor) and not isinstance(torch.ones(1), torch.cuda.FloatTensor)
        cast = torch.ones(2).type(torch.cuda.LongTensor)
        assert cast.device == CUDA0 and cast.dtype == torch.int64
        assert torch.ones(2).type("torch.cuda.HalfTensor").dtype == torch.float16
        assert made.type() == "torch.cuda.FloatTensor" and torch.ones(1).type() == "torch.FloatTensor"


def test_torchscript_runs_and_saves_without_a_false_failure(tmp_path):
    # TorchScript runs in C++, where no tensor says it is on CUDA: its results are not
    # followed (docs/fake-cuda.md says so), but scripting, running and saving work.
    with fake_cuda():
        scripted = torch.jit.script(torch.nn.Linear(2, 2).cuda())
        assert scripted(torch.ones(1, 2, device="cuda")).shape == (1, 2)
        torch.jit.save(scripted, str(tmp_path / "m.pt"))
        assert torch.jit.load(str(tmp_path / "m.pt"), map_location="cpu")(torch.ones(1, 2)).shape == (1, 2)
