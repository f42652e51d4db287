"""The written-out vocabulary of tensor attributes knows every public attribute of the installed torch's Tensor."""

import pytest

from flake8_torchdevice.analysis.tensor_attributes import TENSOR_ATTRIBUTES

torch = pytest.importorskip("torch")


def test_every_public_tensor_attribute_is_known():
    public = {name for name in dir(torch.Tensor) if not name.startswith("_")}
    assert public - TENSOR_ATTRIBUTES == set()
    assert {"to", "cuda", "shape", "device", "T", "grad"} <= TENSOR_ATTRIBUTES
