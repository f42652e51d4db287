"""NumPy arrays the flow knows the rank of, and stores into them that convert a tensor.

``a[i] = t`` into a NumPy array converts ``t`` one of two ways: a scalar slot (as many
integer indices as the array has dimensions) takes ``float(t)``, which reads a one-element
device tensor with ``.item()`` wherever it lives; any other slot (``g_loss[i]`` of a
``np.zeros((n, 1))``, a slice ``a[i:j]``) takes ``np.asarray(t)``, which a device tensor
refuses. Only the second is reported, and only where the array's rank is seen.
"""

from __future__ import annotations

from typing import Optional

from ..._lazy import cst
from ..code import argument
from .values import NUMPY

# NumPy constructors whose first argument is the array's shape.
SHAPED = frozenset({"numpy.zeros", "numpy.ones", "numpy.empty", "numpy.full"})


def array_rank(call: "cst.Call", qualified: str) -> Optional[int]:
    """The rank of ``np.zeros((n, 1))`` (2) or ``np.zeros(n)`` (1); None when the shape is
    not written out (``np.zeros(shape)``: a tuple of any length)."""
    if qualified not in SHAPED:
        return None
    shape = argument(call, 0, "shape")
    if shape is None:
        return None
    value = shape.value
    if isinstance(value, (cst.Tuple, cst.List)):
        if any(isinstance(element, cst.StarredElement) for element in value.elements):
            return None
        return len(value.elements)
    return 1 if isinstance(value, cst.Integer) else None


def converts_stored(target: "cst.Subscript", rank: int) -> bool:
    """Does storing into ``target`` (an index of an array of ``rank``) go through
    ``np.asarray``: a slice among the indices, or fewer indices than dimensions?"""
    indices = 0
    for element in target.slice:
        index = element.slice
        if isinstance(index, cst.Slice):
            return True
        if not isinstance(index, cst.Index) or index.star is not None:
            return False  # ``a[*idx]``: not worth guessing
        if isinstance(index.value, cst.Name) and index.value.value in ("None", "Ellipsis"):
            return False
        if isinstance(index.value, cst.Ellipsis):
            return False
        indices += 1
    return indices < rank


def numpy_only(call: cst.Call, args: list) -> bool:
    """Is every positional argument of ``call`` (with ``args``, their values) a NumPy array?"""
    positional = [value for arg, value in zip(call.args, args) if arg.keyword is None and not arg.star]
    return bool(positional) and all(value is not None and value.kind == NUMPY for value in positional)
