"""Fake CUDA runs in this process: torch is needed, and each test gets a fresh session."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")  # absent on the Pythons without a local torch wheel

from flake8_torchdevice.fakecuda import fake_cuda  # noqa: E402


@pytest.fixture
def gpus():
    """Enter a session with N pretended GPUs: ``with gpus(2): ...``."""
    return fake_cuda


MISMATCH = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
