"""fixtures/_support.py on its own: the "GPU-saved" checkpoint is what a GPU machine writes."""

from __future__ import annotations

import importlib.util
import math
import os

import pickle

import pytest

from fixture_cases import FIXTURES

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def support():
    spec = importlib.util.spec_from_file_location("_support_under_test", FIXTURES / "_support.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def checkpoint(support, tmp_path, monkeypatch):
    """Make a checkpoint of awkward values (NaN payloads, -0.0, bfloat16, bool); delete it after."""
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))  # mkstemp's file lands in tmp_path
    values = {
        "f32": torch.tensor([1.5, -0.0, math.inf, math.nan, 1e-45]),
        "nan_payload": torch.tensor([0x7FC00001, 0x7F800001], dtype=torch.int32).view(torch.float32),
        "bf16": torch.randn(3, 5, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16),
        "i64": torch.tensor([-(2**63), 2**63 - 1]),
        "mask": torch.tensor([True, False]),
        "view": torch.arange(10.0)[2:7],  # a view shares its storage with the whole
    }
    path = support.gpu_saved_checkpoint(values)
    assert os.path.dirname(path) == str(tmp_path)
    return path, values


def _bits(tensor) -> bytes:
    return bytes(tensor.contiguous().view(torch.uint8).flatten().tolist()) if tensor.numel() else b""


def test_every_storage_is_tagged_cuda_0(support, checkpoint):
    path, _ = checkpoint
    assert support.location_tags(path) == {"cuda:0"}


def test_another_tag_is_written_as_asked(support, tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    assert support.location_tags(support.gpu_saved_checkpoint({"w": torch.ones(2)}, tag="cuda:1")) == {"cuda:1"}


def test_a_plain_save_is_tagged_cpu(support, tmp_path):
    path = tmp_path / "plain.pt"
    torch.save({"w": torch.ones(2)}, path)
    assert support.location_tags(str(path)) == {"cpu"}


def test_torch_tagging_is_restored_even_when_the_save_fails(support, tmp_path):
    original = torch.serialization.location_tag
    with pytest.raises((pickle.PicklingError, AttributeError)):  # a local lambda cannot be pickled
        with support.storages_tagged("cuda:0"):
            assert torch.serialization.location_tag is not original
            torch.save(lambda: None, tmp_path / "unpicklable.pt")  # a lambda cannot be pickled
    assert torch.serialization.location_tag is original


@pytest.mark.skipif(torch.cuda.is_available(), reason="a machine with CUDA loads a cuda:0 checkpoint")
@pytest.mark.parametrize("weights_only", [True, False])
def test_loading_without_map_location_fails_with_torchs_message(checkpoint, weights_only):
    path, _ = checkpoint
    with pytest.raises(RuntimeError) as raised:
        torch.load(path, weights_only=weights_only)
    assert type(raised.value) is RuntimeError
    assert str(raised.value).startswith(
        "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False."
    )


def test_map_location_cpu_gives_bit_identical_values(checkpoint):
    path, values = checkpoint
    loaded = torch.load(path, map_location="cpu")
    assert loaded.keys() == values.keys()
    for name, value in values.items():
        got = loaded[name]
        assert (got.dtype, got.shape, got.device.type) == (value.dtype, value.shape, "cpu"), name
        assert _bits(got) == _bits(value), name
