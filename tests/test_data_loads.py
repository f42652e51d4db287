"""TDV201 and ``analysis/data_loads.py``: a file a scope hands to a data loader holds CPU data."""

from __future__ import annotations

import textwrap

import pytest

from flake8_torchdevice.engine import check_source
from flake8_torchdevice.rules.tdv201 import TorchLoadWithoutMapLocation

HEAD = """\
import torch
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
"""


def lines(body: str) -> list[int]:
    source = HEAD + textwrap.dedent(body)
    result = check_source(source, rules=[TorchLoadWithoutMapLocation], strict=True)
    assert result.error is None, result.error
    return [v.line - HEAD.count("\n") for v in result.violations]


@pytest.mark.parametrize("body", [
    # bound, then handed over
    "x = torch.load('x.pt')\nloader = DataLoader(x, batch_size=4)\n",
    # joined with another loaded file, in a function
    "def main():\n    a = torch.load('a.pt')\n    b = torch.load('b.pt')\n"
    "    loader = DataLoader(torch.cat((a, b)), batch_size=4)\n",
    # given to a dataset class directly, and through a subscript and a method call
    "ds = TensorDataset(torch.load('x.pt'))\n",
    "data = torch.load('data.pt')\ny = data['y'].long()\nds = TensorDataset(data['x'], y)\n",
    # a project's own dataset class, in a loop's header
    "train = torch.load('train.pt')\nfor batch in DataLoader(IconDataset(train)):\n    print(batch.to(device))\n",
])
def test_a_file_handed_to_a_loader_is_data(body):
    assert lines(body) == []


@pytest.mark.parametrize("body", [
    # a checkpoint beside the data
    "x = torch.load('x.pt')\nloader = DataLoader(x)\nstate = torch.load('model.pt')\n",
    # rebound before the loader sees it: the loader gets something else
    "x = torch.load('ckpt.pt')\nx = make_data()\nloader = DataLoader(x)\n",
    # handed to a model, not a loader
    "x = torch.load('weights.pt')\nmodel.load_state_dict(x)\nloader = DataLoader(other)\n",
    # a loader in another scope does not count for this one
    "def resume():\n    x = torch.load('run.pt')\n    return x\n\n\ndef data(x):\n    return DataLoader(x)\n",
])
def test_other_loads_are_still_read(body):
    assert lines(body) != []


@pytest.mark.parametrize("method, reported", [
    ("__getitem__(self, index)", False),  # a per-sample file, served by DataLoader workers
    ("__iter__(self)", False),  # an iterable dataset's samples
    ("__init__(self, path)", False),  # the data the dataset will serve
    ("restore(self, path)", True),  # any other method: a checkpoint as well as data
])
def test_a_datasets_item_methods_load_its_own_data(method, reported):
    body = (
        "class MelDataset(torch.utils.data.Dataset):\n"
        f"    def {method}:\n"
        "        mel = torch.load('mels/0001.pt')\n"
        "        return mel.to(device)\n"
    )
    assert lines(body) == ([3] if reported else [])


def test_a_plain_classs_getitem_is_still_read():
    body = "class Store:\n    def __getitem__(self, key):\n        return torch.load(key).to(device)\n"
    assert lines(body) == [3]


@pytest.mark.parametrize("writer, reported", [
    ("", False),
    # the file may have written them itself, from the GPU
    ("def cache(features, path):\n    torch.save(features, path)\n", True),
    ("def cache(features, path):\n    np.save(path, features)\n", True),
    ("def cache(model, path):\n    save_checkpoint(model, path)\n", True),
])
def test_a_datasets_item_load_is_read_where_the_file_writes_files(writer, reported):
    body = writer + (
        "class FeatureDataset(torch.utils.data.Dataset):\n"
        "    def __getitem__(self, index):\n"
        "        return torch.load(f'features/{index}.pt').to(device)\n"
    )
    line = writer.count("\n") + 3
    assert lines(body) == ([line] if reported else [])
