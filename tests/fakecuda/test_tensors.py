"""Tensors under fake CUDA: where they say they are, and what fails when devices meet."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from flake8_torchdevice.fakecuda import fake_cuda

from .conftest import MISMATCH


def test_the_machine_says_it_has_the_gpus_asked_for():
    real = torch.cuda.is_available
    with fake_cuda(3):
        assert torch.cuda.is_available() and torch.cuda.device_count() == 3
        assert torch.cuda.current_device() == 0
        torch.cuda.set_device(2)
        assert torch.cuda.current_device() == 2
        assert torch.ones(1, device="cuda").device == torch.device("cuda", 2)
        with torch.cuda.device(1):
            assert torch.zeros(1).cuda().device == torch.device("cuda", 1)
        assert torch.cuda.current_device() == 2
    assert torch.cuda.is_available is real and not torch.cuda.is_available()


@pytest.mark.parametrize("device", ["cuda", "cuda:0", torch.device("cuda"), torch.device("cuda", 0), 0])
def test_every_spelling_of_a_cuda_device_places(device):
    with fake_cuda():
        made = torch.zeros(2, device=device)
        moved = torch.zeros(2).to(device)
        for tensor in (made, moved, torch.zeros(2).cuda(), torch.zeros(2).cuda(0)):
            assert tensor.device == torch.device("cuda", 0)
            assert tensor.is_cuda and not tensor.is_cpu and tensor.get_device() == 0


def test_moving_back_to_the_cpu_copies():
    with fake_cuda():
        placed = torch.arange(3.0, device="cuda")
        for back in (placed.cpu(), placed.to("cpu"), placed.to(torch.device("cpu"))):
            assert back.device == torch.device("cpu") and back is not placed
            assert back.numpy().tolist() == [0.0, 1.0, 2.0]
        assert placed.to("cuda") is placed and placed.cuda() is placed
        assert placed.to(torch.float64).device == torch.device("cuda", 0)


def test_devices_that_meet_fail_with_cudas_message():
    with fake_cuda():
        placed, cpu = torch.ones(3, device="cuda"), torch.ones(3)
        for meet in (lambda: placed + cpu, lambda: cpu * placed, lambda: placed == cpu,
                     lambda: torch.cat([placed, cpu]), lambda: torch.where(placed > 0, placed, cpu),
                     lambda: torch.nn.functional.mse_loss(placed, cpu)):
            with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
                meet()


def test_a_0_dim_cpu_tensor_and_a_scalar_may_meet_a_cuda_one_but_not_be_written_into():
    with fake_cuda():
        placed = torch.ones(3, device="cuda")
        assert (placed * torch.tensor(2.0) + 1).device == torch.device("cuda", 0)
        placed += torch.tensor(1.0)
        total = torch.zeros(())
        with pytest.raises(RuntimeError) as raised:
            total += placed.sum()
        assert MISMATCH in str(raised.value)
        with pytest.raises(RuntimeError):
            torch.zeros(3).add_(placed)


def test_two_gpus_do_not_meet_either():
    with fake_cuda(2):
        with pytest.raises(RuntimeError, match="found at least two devices, cuda:0 and cuda:1!"):
            torch.ones(2, device="cuda:0") + torch.ones(2, device="cuda:1")


@pytest.mark.parametrize("make", [
    lambda: torch.zeros(1, device="cuda:1"), lambda: torch.zeros(1).to("cuda:1"), lambda: torch.zeros(1).cuda(1),
    lambda: torch.cuda.set_device(1), lambda: torch.zeros(1).to(1),
])
def test_an_ordinal_past_the_last_gpu_is_an_invalid_device_ordinal(make):
    with fake_cuda(1):
        with pytest.raises(torch.AcceleratorError, match="CUDA error: invalid device ordinal"):
            make()
        assert torch.device("cuda:1").index == 1  # naming it alone is fine, as on CUDA


def test_numpy_of_a_cuda_tensor_fails_with_torchs_message():
    message = ("can't convert cuda:0 device type tensor to numpy. "
               "Use Tensor.cpu() to copy the tensor to host memory first.")
    with fake_cuda():
        placed = torch.ones(2, device="cuda")
        for convert in (placed.numpy, lambda: np.asarray(placed), lambda: np.array(placed.detach())):
            with pytest.raises(TypeError) as raised:
                convert()
            assert str(raised.value).startswith(message)
        assert np.asarray(placed.cpu()).tolist() == [1.0, 1.0]


def test_indices_may_be_on_the_cpu_but_not_index_a_cpu_tensor_from_cuda():
    with fake_cuda():
        placed, table = torch.arange(4.0, device="cuda"), torch.arange(4.0)
        assert placed[torch.tensor([1, 2])].device == torch.device("cuda", 0)
        with pytest.raises(RuntimeError, match=r"indices should be either on cpu or on the same device as the indexed"):
            table[torch.tensor([1, 2], device="cuda")]
        placed[torch.tensor([0])] = torch.tensor([9.0])  # a CPU value is copied across, as on CUDA
        assert placed.cpu()[0].item() == 9.0


def test_from_numpy_views_and_in_place_ops_keep_their_devices():
    with fake_cuda():
        host = torch.from_numpy(np.arange(6.0).reshape(2, 3))
        assert host.device == torch.device("cpu")
        placed = host.to("cuda")
        for view in (placed.view(-1), placed[0], placed.T, placed.unsqueeze(0), placed.detach(), placed.data):
            assert view.device == torch.device("cuda", 0)
        placed.mul_(2).add_(1)
        assert placed.device == torch.device("cuda", 0)
        assert host.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]  # .to("cuda") copied: the numpy array is intact
        with pytest.raises(RuntimeError):
            host.view(-1) + placed.view(-1)


def test_a_session_is_a_decorator_too():
    @fake_cuda(2)
    def count():
        return torch.cuda.device_count()

    assert count() == 2 and count() == 2
    assert not torch.cuda.is_available()


@pytest.mark.parametrize("count", [0, -1, 1.5, True, "2"])
def test_a_device_count_must_be_a_positive_integer(count):
    with pytest.raises(ValueError, match="device_count must be a positive integer"):
        fake_cuda(count)
