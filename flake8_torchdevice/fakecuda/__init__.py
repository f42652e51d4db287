"""Fake CUDA: run PyTorch code on a CPU-only machine as if it had GPUs, so the device
mistakes that crash on a GPU crash here too, with torch's own CUDA messages.

``from flake8_torchdevice.fakecuda import fake_cuda``; ``pytest --fake-cuda``;
``python -m flake8_torchdevice.fakecuda script.py``. See docs/fake-cuda.md.

torch is imported only when a session is used: this package is also a pytest plugin,
loaded by every pytest run, and linting never needs torch.
"""

from __future__ import annotations

__all__ = ["fake_cuda"]


def __getattr__(name: str):
    if name == "fake_cuda":
        from ._session import fake_cuda

        return fake_cuda
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
