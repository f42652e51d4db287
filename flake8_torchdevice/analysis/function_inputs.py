"""Which functions handle data rather than model inputs: data loading code
(``__getitem__``, collate functions, Dataset/Sampler classes) and the
annotations that may hold a tensor. Shared by the data-flow rules."""

from __future__ import annotations

from typing import Optional, Sequence

# Data-loading code: its tensors never meet a parameter tensor.
DATA_LOADING = frozenset({"__getitem__", "__iter__", "__next__", "__len__"})
DATA_CLASS_SUFFIXES = (
    "Dataset", "DataSet", "DataModule", "Sampler", "DataPipe", "Processor", "Preprocessing", "Transform", "Collator"
)
# An annotation naming one of these may hold a tensor.
TENSOR_HINTS = ("Tensor", "Any", "Variable", "Module")


def is_data_function(name: str) -> bool:
    """``__getitem__``, ``collate_fn``...: data loading, left alone (both sides)."""
    return name in DATA_LOADING or "collate" in name.lower()


def is_data_class_name(names: Sequence[Optional[str]]) -> bool:
    """Is one of a class's name and its bases' last names Dataset/Sampler-like?"""
    return any(name.endswith(DATA_CLASS_SUFFIXES) for name in names if name)
