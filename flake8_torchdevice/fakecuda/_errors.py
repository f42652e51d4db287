"""torch's own CUDA messages, raised where fake CUDA sees the mistake, each with a note
naming the user's line and the rule page that explains it."""

from __future__ import annotations

import torch

from ._report import explain

NUMPY = "can't convert {device} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."
ORDINAL = (
    "CUDA error: invalid device ordinal\n"
    "GPU device may be out of range, do you have enough GPUs?\n"
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."
)


def devices_differ(first, second) -> RuntimeError:
    message = f"Expected all tensors to be on the same device, but found at least two devices, {first} and {second}!"
    return explain(RuntimeError(message), "TDV601")


def index_elsewhere(indexed) -> RuntimeError:
    message = f"indices should be either on cpu or on the same device as the indexed tensor ({indexed})"
    return explain(RuntimeError(message), "TDV601")


def numpy_of(device) -> TypeError:
    return explain(TypeError(NUMPY.format(device=device)), "TDV603")


def invalid_ordinal() -> Exception:
    return explain(torch.AcceleratorError(ORDINAL), "TDV401")


def not_a_cuda_device() -> RuntimeError:
    return explain(RuntimeError("Invalid device, must be cuda device"), "TDV104")
