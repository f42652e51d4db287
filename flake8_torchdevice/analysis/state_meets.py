"""Where a tensor kept in ``self.<attr>`` meets another tensor (TDV501).

A plain tensor attribute stays on the CPU when its module is moved. That is a crash only
where it then meets a tensor that moved: an operand of arithmetic or a comparison, an
argument of a torch function next to another tensor, an argument of one of the class's
submodules, or the target of an in-place update with such a value. A value that never
meets anything (file metadata, a constant copied into another CPU tensor, one only read
for its shape) fails nowhere. Operands are traced through calls and subscripts that keep
a tensor's device (``.float()``, ``.view(...)``, ``[:n]``); a subscript with integer
literals may give a 0-dim tensor, which CUDA lets meet anything out of place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .._lazy import cst
from .code import is_constant
from .flow.words import COMBINE_METHODS

# Tensor methods, and attributes, that keep the receiver's device and its being n-dimensional.
KEEPING = frozenset(
    """float double half bfloat16 long int short bool byte char view reshape view_as reshape_as
    unsqueeze squeeze expand expand_as repeat t transpose permute flatten contiguous clone detach
    narrow flip roll""".split()
)
KEEPING_ATTRIBUTES = frozenset({"data", "T", "mT"})


@dataclass
class Operand:
    """One operand of a meeting: a ``self.<attr>`` (``attr``) or anything else (``None``)."""

    attr: Optional[str]
    zero: bool = False  # may be 0-dim (an integer-literal subscript)
    indices: int = 0  # integer subscripts taken (a list attribute's first one picks a tensor)
    callee: bool = False  # the called submodule of ``self.<attr>(...)``
    returned_by: Optional[str] = None  # ``self.<method>(...)``: what that method returns


@dataclass
class Meeting:
    operands: list
    into: Optional[str] = None  # the attribute updated in place, if any


@dataclass
class MeetingLog:
    """Every meeting seen in one class's methods other than ``__init__``."""

    meetings: list = field(default_factory=list)
    returns: dict = field(default_factory=dict)  # method name -> attributes it may return

    def meets(self, attr: str, zero_dim: bool, candidates, methods, listed: bool = False) -> bool:
        """Does ``attr`` (a CPU tensor, or a list of them when ``listed``; ``zero_dim`` when it
        may be 0-dim) meet a tensor that is not another such attribute, where CUDA would refuse?"""
        for meeting in self.meetings:
            mine = [o for o in meeting.operands if self._is(o, attr)]
            others = [o for o in meeting.operands if not self._is(o, attr) and o.returned_by is None
                      and _placed(o, candidates, methods)]
            if not mine or not others:
                continue
            if meeting.into == attr or not (zero_dim or all(o.indices > listed for o in mine)):
                return True
        return False

    def _is(self, operand: Operand, attr: str) -> bool:
        """``operand`` is ``attr``, or a call of a method of the class that returns it."""
        if operand.attr == attr:
            return True
        return operand.returned_by is not None and attr in self.returns.get(operand.returned_by, ())


def _placed(operand: Operand, candidates, methods) -> bool:
    """An operand that may live on the module's device: not another plain CPU attribute,
    not a method of the class called as a function."""
    if operand.attr is None:
        return True
    if operand.callee:
        return operand.attr not in methods and operand.attr not in candidates
    return operand.attr not in candidates


def operand(expr, self_attr, held=None, counters=frozenset()) -> Optional[Operand]:
    """What ``expr`` brings to a meeting: a ``self.<attr>`` traced through keeping calls
    and subscripts (or a local name ``held`` maps to what it was bound to), ``None`` for a
    literal (it meets nothing), else an unknown tensor. ``counters``: the method's loop
    counters (``for i in range(n)``), integer indices like literals."""
    indices = 0
    while self_attr(expr) is None:
        if isinstance(expr, cst.Subscript):
            indices += _literal_index(expr, counters)
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in KEEPING:
            expr = expr.func.value
        elif isinstance(expr, cst.Attribute) and expr.attr.value in KEEPING_ATTRIBUTES:
            expr = expr.value
        elif isinstance(expr, cst.UnaryOperation):
            expr = expr.expression
        elif isinstance(expr, cst.BinaryOperation) and (is_constant(expr.left) or is_constant(expr.right)):
            expr = expr.right if is_constant(expr.left) else expr.left  # ``self.a * 2`` is still self.a's
        else:
            break
    zero = indices > 0
    attr = self_attr(expr)
    if attr is not None:
        return Operand(attr, zero, indices=indices)
    if held and isinstance(expr, cst.Name) and expr.value in held:
        bound = held[expr.value]
        return Operand(bound.attr, zero or bound.zero, indices=indices + bound.indices, returned_by=bound.returned_by)
    if isinstance(expr, cst.Call) and self_attr(expr.func) is not None:
        # a method's result, or a submodule's
        return Operand(None, zero, indices=indices, returned_by=self_attr(expr.func))
    return None if is_constant(expr) else Operand(None)


def _literal_index(node: cst.Subscript, counters=frozenset()) -> bool:
    """``a[0]`` / ``a[-1, 2]`` / ``a[i]`` of a loop counter: an integer index drops a dimension
    (``None`` adds one)."""
    return any(
        isinstance(element.slice, cst.Index) and (
            _integer(element.slice.value)
            or isinstance(element.slice.value, cst.Name) and element.slice.value.value in counters
        )
        for element in node.slice
    )


def _integer(expr) -> bool:
    if isinstance(expr, cst.UnaryOperation):
        return _integer(expr.expression)
    return isinstance(expr, cst.Integer)


def call_meeting(node: cst.Call, qualified: Optional[str], operand_of) -> Optional[Meeting]:
    """The meeting a call makes: a torch function of two tensors or more, a tensor method
    that combines its receiver with its arguments (in place when it ends in ``_``), or a
    submodule ``self.<name>(...)`` given a tensor. ``operand_of`` is ``operand`` as the
    caller sees names."""
    args = [a.value for a in node.args if a.keyword is None or a.keyword.value not in ("dim", "out")]
    if qualified is not None and qualified.startswith("torch."):
        return Meeting(_operands(_spread(args), operand_of))
    func = node.func
    if isinstance(func, cst.Attribute):
        name = func.attr.value
        if name.rstrip("_") in COMBINE_METHODS and args:
            receiver = operand_of(func.value)
            into = receiver.attr if receiver is not None and name.endswith("_") else None
            return Meeting([receiver, *_operands(args, operand_of)], into) if receiver is not None else None
        callee = operand_of(func)
        if callee is not None and callee.attr is not None and isinstance(func.value, cst.Name):
            return Meeting([Operand(callee.attr, callee=True), *_operands(args, operand_of)])
    return None


def _spread(args) -> list:
    """``torch.cat([a, b])``: the elements of a list or tuple argument are operands too."""
    out = []
    for arg in args:
        if isinstance(arg, (cst.List, cst.Tuple)):
            out.extend(element.value for element in arg.elements)
        else:
            out.append(arg)
    return out


def _operands(exprs, operand_of) -> list:
    return [found for found in map(operand_of, exprs) if found is not None]
