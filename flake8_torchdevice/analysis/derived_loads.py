"""The ``torch.load`` calls a value is computed from, in one scope (TDV201's CPU-contents evidence).

``x.numpy()`` fails on a CUDA tensor on every machine, so code that reads a value with ``.numpy()`` proves that
value is on the CPU; and a value computed from a loaded tensor stays on that tensor's device unless something
moves it. So ``img = Variable(torch.load(f))``, ``out = F.conv2d(img, w)``, ``out.data.numpy()`` shows that
the file holds CPU tensors: a GPU-saved one would fail at ``.numpy()`` where the code was written.

The walk follows only what keeps a tensor's device: attribute and item reads, arithmetic, a tensor's own
methods (``.squeeze()``, ``.float()``), torch's functions (``torch.cat``, ``F.conv2d``), ``Variable`` /
``Parameter`` wrappers, and a call of a local name bound to a ``torch.nn`` module (``pool(f)``). It stops at a
device move (``.cpu()``, ``.to(...)``, ``.cuda()``), at what leaves torch (``.numpy()``, ``.item()``,
``.tolist()``), and at any other function, which may move its argument before it returns.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Optional

from .._lazy import cst

# Methods whose result is no longer the receiver's tensor on the receiver's device.
_STOPS = frozenset({"cpu", "to", "cuda", "numpy", "item", "tolist", "type"})
_WRAPPERS = frozenset({"Variable", "Parameter"})
# Name bindings followed back: ``out`` <- ``img`` <- the load, or a layer-by-layer chain of one name
# (``x = F.conv2d(x, w)``, ``x = bn(x)``, ``x = F.relu(x)``, ...).
_DEPTH = 16

# What a name meant where it is read: ``binding(name, within)``, ``within`` the bound value being read
# (None for the expression itself), so that ``x`` in ``x = F.relu(x)`` is the ``x`` bound before. (Nodes are
# typed ``Any`` here: naming ``cst.BaseExpression`` at import would load LibCST for files that need no parse.)
Binding = Callable[[str, Any], Any]


def loads_behind(expr: cst.BaseExpression, binding: Binding,
                 qualify: Callable[[cst.BaseExpression], Optional[str]], loads: frozenset) -> Iterator[cst.Call]:
    """The load calls (qualified names in ``loads``) whose result ``expr`` keeps on its device."""
    pending = [(expr, _DEPTH, None)]
    while pending:
        node, depth, within = pending.pop()
        if isinstance(node, cst.Name):
            bound = binding(node.value, within)
            if bound is not None and depth > 0:
                pending.append((bound, depth - 1, bound))
        elif isinstance(node, cst.Call):
            if qualify(node.func) in loads:
                yield node
            else:
                pending.extend((part, depth, within) for part in _kept_parts(node, binding, within, qualify))
        elif isinstance(node, (cst.Attribute, cst.Subscript)):
            pending.append((node.value, depth, within))
        elif isinstance(node, cst.BinaryOperation):
            pending.extend(((node.left, depth, within), (node.right, depth, within)))
        elif isinstance(node, cst.UnaryOperation):
            pending.append((node.expression, depth, within))
        elif isinstance(node, (cst.List, cst.Tuple)):
            pending.extend((element.value, depth, within) for element in node.elements)


def _kept_parts(call: cst.Call, binding: Binding, within, qualify) -> list:
    """The parts of ``call`` whose device its result keeps (none where the call may move it)."""
    func = call.func
    if isinstance(func, cst.Attribute):
        if func.attr.value in _STOPS:
            return []
        name = qualify(func) or ""
        if name.startswith("torch."):
            return [arg.value for arg in call.args]  # ``torch.cat([a, b])``, ``F.conv2d(x, w)``
        return [func.value]  # a tensor's own method: ``x.squeeze()``, ``x.data.float()``
    if isinstance(func, cst.Name):
        if func.value in _WRAPPERS or (qualify(func) or "").startswith("torch."):
            return [arg.value for arg in call.args]
        bound = binding(func.value, within)
        if isinstance(bound, cst.Call) and (qualify(bound.func) or "").startswith("torch.nn."):
            return [arg.value for arg in call.args]  # ``pool = nn.AvgPool2d(2)``, ``pool(x)``
    return []
