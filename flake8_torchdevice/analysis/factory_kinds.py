"""The vocabulary and small CST helpers of the factory data flow (``factory_meets``):
which torch calls and tensor methods combine devices, which keep or shrink a tensor, and
how the flow's kinds are written.

Kinds: ``("T", roots, pure)`` for a value derived from the function's inputs (``roots``:
the parameter names), ``("C", call, zero_dim)`` for a fresh CPU factory tensor, ``None``
for anything else (scalars, unknown).
"""

from __future__ import annotations

from typing import Optional

from .._lazy import cst
from .code import code_of, last_name
from .function_inputs import TENSOR_HINTS, is_data_class_name
from .vocabulary import PRODUCT_METHODS, PRODUCT_OPS
from ..rule import is_none

# Reading these never gives a device-bound tensor.
META_ATTRS = frozenset("shape dtype device ndim is_cuda requires_grad grad_fn layout names is_sparse".split())
SCALAR_METHODS = frozenset(
    """size dim numel nelement item tolist numpy stride element_size data_ptr is_contiguous
    get_device equal is_floating_point is_complex storage_offset""".split()
)
SCALAR_BUILTINS = frozenset(
    """len int float bool str isinstance issubclass hasattr getattr range enumerate zip print
    min max sum abs round type id repr sorted list tuple dict set any all iter next format""".split()
)
# Shape factories: their positional Name arguments are sizes, not tensors.
SHAPE_FACTORIES = frozenset(
    f"torch.{n}" for n in "zeros ones empty full rand randn randint randperm arange range linspace logspace eye".split()
)
# torch functions whose tensor arguments must share one device.
COMBINE_FUNCS = frozenset(
    f"torch.{n}"
    for n in """cat concat concatenate stack hstack vstack dstack column_stack where add sub subtract
    mul multiply div divide true_divide floor_divide remainder fmod pow maximum minimum max min
    eq ne lt le gt ge matmul mm bmm dot einsum masked_select gather index_select logical_and
    logical_or logical_xor bitwise_and bitwise_or bitwise_xor atan2 lerp cdist outer searchsorted
    bucketize isin index_add scatter scatter_add take_along_dim cross allclose isclose stft istft""".split()
) | frozenset(f"torch.{n}" for n in PRODUCT_OPS)
# torch functions that return no tensor (or one that is not on the inputs' device).
TORCH_NON_TENSOR = frozenset(
    f"torch.{n}"
    for n in """numel is_tensor is_floating_point is_complex device Size finfo iinfo typename
    is_grad_enabled no_grad enable_grad get_default_dtype result_type promote_types""".split()
)
TENSOR_OP_NAMESPACES = frozenset({"torch", "torch.nn.functional", "torch.linalg", "torch.special", "torch.fft"})
# Tensor methods that combine the receiver with their tensor arguments.
COMBINE_METHODS = frozenset(
    """add sub mul div true_divide floor_divide remainder fmod pow eq ne lt le gt ge maximum
    minimum matmul mm bmm dot masked_fill masked_select masked_scatter index_add index_copy
    index_fill index_put scatter scatter_add scatter_reduce gather where logical_and logical_or
    logical_xor bitwise_and bitwise_or bitwise_xor atan2 lerp outer cross index_select take
    take_along_dim index_reduce isclose allclose stft istft""".split()
) | PRODUCT_METHODS
# In-place methods that do not combine devices (copy_ copies across devices).
NOT_COMBINING_INPLACE = frozenset("copy_ set_ requires_grad_ share_memory_ resize_ resize_as_ fill_ zero_".split())
# Methods that can turn a 0-dim tensor into an n-dim one.
GROWS_DIMS = frozenset(
    "unsqueeze expand expand_as repeat reshape reshape_as broadcast_to flatten repeat_interleave view_as".split()
)
# Keywords that carry tensor operands (dim=, k=, generator= ... do not).
TENSOR_KEYWORDS = frozenset(
    "input other index src source mask value values indices tensor tensors condition weight pos_weight target window"
    .split()
)
# Members that only a tensor has (not device/dtype/to/cuda: modules and
# accelerators have those too): reading one says the value is a tensor.
TENSOR_MEMBERS = frozenset(
    """shape ndim size dim numel nelement view reshape permute transpose t T mT unsqueeze squeeze
    expand expand_as repeat flatten contiguous detach sum mean max min argmax argmin abs exp log
    sqrt pow clamp clamp_ softmax log_softmax sigmoid tanh relu masked_fill masked_fill_
    index_select gather scatter scatter_ scatter_add scatter_add_ index_add_ index_put_ new_zeros
    new_ones new_full new_empty new_tensor type_as view_as reshape_as eq ne lt le gt ge any all
    nonzero topk sort argsort cumsum cumprod norm std var matmul mm bmm split chunk narrow unbind
    masked_select fill_ zero_ add_ sub_ mul_ div_ item tolist numpy grad is_cuda stride sign round
    floor ceil neg logical_not prod logsumexp unfold roll flip tril triu diag diagonal unique
    bincount histc element_size is_contiguous isnan isinf isfinite nan_to_num square reciprocal
    rsqrt amax amin median kthvalue quantile count_nonzero repeat_interleave index_fill
    masked_scatter take_along_dim copy_ broadcast_to movedim float long int bool byte""".split()
)
# ``Variable(t)`` returns ``t`` itself, wherever it is.
VARIABLES = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})
COMPARE_OPS = frozenset("Equal NotEqual LessThan LessThanEqual GreaterThan GreaterThanEqual".split())  # node types


def union_of_roots(kinds: list) -> tuple:
    roots: list = []
    for kind in kinds:
        roots.extend(r for r in kind[1] if r not in roots)
    return tuple(roots)


def is_data_class(node: cst.ClassDef) -> bool:
    """A Dataset/Sampler/Processor/Transform (by its own name or a base's): data-loading code,
    whose tensors are made on the CPU on purpose and moved by the loop."""
    bases = [last_name(base.value) for base in node.bases if base.keyword is None]
    return is_data_class_name([node.name.value] + bases)


def is_string_index(element: cst.SubscriptElement) -> bool:
    index = element.slice
    return isinstance(index, cst.Index) and isinstance(index.value, (cst.SimpleString, cst.ConcatenatedString))


def is_none_index(element: cst.SubscriptElement) -> bool:
    index = element.slice
    return isinstance(index, cst.Index) and isinstance(index.value, cst.Name) and index.value.value == "None"


def is_self_member(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "self" or (
        isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self"
    )


def items_of_self(target: cst.BaseExpression, iterable: cst.BaseExpression) -> dict:
    """{loop variable: attr} for the variables that take the items of ``self.attr``:
    ``for x in self.attr``, ``for a, x in zip(self.other, self.attr)``,
    ``for i, x in enumerate(self.attr)``, ``reversed(self.attr)``."""
    if isinstance(iterable, cst.Attribute) and is_self(iterable.value):
        return {target.value: iterable.attr.value} if isinstance(target, cst.Name) else {}
    if not (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name)):
        return {}
    wrapper, args = iterable.func.value, [arg.value for arg in iterable.args if arg.keyword is None]
    if wrapper == "reversed" and len(args) == 1:
        return items_of_self(target, args[0])
    if not isinstance(target, (cst.Tuple, cst.List)):
        return {}
    elements = [element.value for element in target.elements]
    if wrapper == "enumerate" and args and len(elements) == 2:
        return items_of_self(elements[1], args[0])
    if wrapper == "zip" and len(args) == len(elements):
        found = {}
        for element, arg in zip(elements, args):
            found.update(items_of_self(element, arg))
        return found
    return {}


def is_self(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "self"


def is_tensor_op(qualified: str) -> bool:
    """torch.add, torch.nn.functional.pad, torch.linalg.norm ... (not private helpers)."""
    namespace, _, name = qualified.rpartition(".")
    return namespace in TENSOR_OP_NAMESPACES and not name.startswith("_")


def impure(kind):
    return ("T", kind[1], False)


def flat_args(call: cst.Call) -> list:
    """Args, with a literal list/tuple argument expanded (matches _arg_kinds)."""
    flat = []
    for arg in call.args:
        if isinstance(arg.value, (cst.List, cst.Tuple)):
            flat.extend(cst.Arg(e.value, keyword=arg.keyword) for e in arg.value.elements)
        else:
            flat.append(arg)
    return flat


def tensor_arg(arg: cst.Arg) -> bool:
    """Positional, or a keyword that names a tensor operand (not dim=, k=, generator=)."""
    return arg.keyword is None or arg.keyword.value in TENSOR_KEYWORDS


def tagged(kind, tag: str) -> bool:
    """Is ``kind`` one of ``tag`` ("T": from an input, "C": a fresh CPU tensor)?"""
    return kind is not None and kind[0] == tag


def decorator_name(decorator: cst.Decorator) -> Optional[str]:
    target = decorator.decorator
    return target.value if isinstance(target, cst.Name) else None


def annotation(param: cst.Param) -> Optional[str]:
    if param.annotation is None:
        return None
    return code_of(param.annotation.annotation)


def maybe_tensor(param: cst.Param, typed: Optional[str]) -> bool:
    """Could this parameter hold a tensor? Typed or defaulted as a plain
    number/string/flag says no."""
    if typed is not None:
        return any(hint in typed for hint in TENSOR_HINTS)
    default = param.default
    if default is None:
        return True
    return not is_literal(default)


def is_literal(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Attribute):  # torch.float32 and other constants
        return True
    if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        return True
    if isinstance(expr, cst.Name):
        return expr.value in {"True", "False"}
    if isinstance(expr, cst.UnaryOperation):
        return is_literal(expr.expression)
    if isinstance(expr, (cst.Tuple, cst.List)):
        return all(is_literal(e.value) for e in expr.elements)
    return False


def is_mask(expr: cst.BaseExpression) -> bool:
    """A boolean mask as written: a comparison (``x > 0``), its negation (``~m``), or masks joined
    with ``&`` / ``|``."""
    if isinstance(expr, cst.Comparison):
        return all(type(target.operator).__name__ in COMPARE_OPS for target in expr.comparisons)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
        return is_mask(expr.expression)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.BitAnd, cst.BitOr)):
        return is_mask(expr.left) and is_mask(expr.right)
    return False


def none_default(expr: "cst.IfExp"):
    """The default branch of ``make() if p is None else p`` (or ``p if p is not None else make()``),
    an optional argument's fallback; None for any other conditional."""
    test = expr.test
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and is_none(test.comparisons[0].comparator)
            and isinstance(test.left, cst.Name)):
        return None
    operator, name = test.comparisons[0].operator, test.left.value
    if isinstance(operator, cst.Is) and isinstance(expr.orelse, cst.Name) and expr.orelse.value == name:
        return expr.body
    if isinstance(operator, cst.IsNot) and isinstance(expr.body, cst.Name) and expr.body.value == name:
        return expr.orelse
    return None
