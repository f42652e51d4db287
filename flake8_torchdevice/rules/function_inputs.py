"""Could a function receive a tensor? Read from the ``ast`` tree, before any
LibCST parse: TDV502 follows values that come from a function's parameters,
so a factory call in a function without possible tensor inputs (``def
test_x(self):``, ``def __getitem__``) cannot be reported and its function
need not be parsed.

These tests mirror the visitor's (``FactoryWithoutDevice._params`` and
``visit_FunctionDef``) and lean the other way wherever they differ: an
unsure answer is "maybe a tensor".
"""

from __future__ import annotations

import ast
from typing import Optional, Sequence

# Data-loading code: its tensors never meet a parameter tensor.
DATA_LOADING = frozenset({"__getitem__", "__iter__", "__next__", "__len__"})
DATA_CLASS_SUFFIXES = ("Dataset", "Sampler", "DataPipe", "Processor", "Preprocessing", "Transform", "Collator")
# An annotation naming one of these may hold a tensor.
TENSOR_HINTS = ("Tensor", "Any", "Variable", "Module")

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_PLAIN_CONSTANTS = (bool, int, float, str, bytes)


def is_data_function(name: str) -> bool:
    """``__getitem__``, ``collate_fn``...: data loading, left alone (both sides)."""
    return name in DATA_LOADING or "collate" in name.lower()


def is_data_class_name(names: Sequence[Optional[str]]) -> bool:
    """Is one of a class's name and its bases' last names Dataset/Sampler-like?"""
    return any(name.endswith(DATA_CLASS_SUFFIXES) for name in names if name)


def may_see_inputs(chain: Sequence[ast.stmt]) -> bool:
    """Has the innermost function in ``chain`` a parameter that may be a
    tensor, itself or through the functions around it (back to a class or
    the module), in code that the rule does not leave alone?"""
    functions: list = []  # innermost first
    owner: Optional[ast.ClassDef] = None
    for stmt in reversed(chain):
        if isinstance(stmt, _FUNCTIONS):
            functions.append(stmt)
        elif isinstance(stmt, ast.ClassDef):
            owner = stmt
            break
    if not functions:
        return False  # module or class-body code: no inputs at all
    if any(is_data_function(f.name) for f in functions):
        return False
    if owner is not None and _in_data_class(chain):
        return False
    outermost = functions[-1]
    return any(_may_be_tensor(f, is_method=f is outermost and owner is not None) for f in functions)


def _in_data_class(chain: Sequence[ast.stmt]) -> bool:
    """A Dataset/Sampler-like class, or one nested in such a class."""
    return any(
        is_data_class_name([stmt.name] + [_last_name(base) for base in stmt.bases])
        for stmt in chain
        if isinstance(stmt, ast.ClassDef)
    )


def _last_name(expr: ast.expr) -> Optional[str]:
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return expr.id if isinstance(expr, ast.Name) else None


def _may_be_tensor(function, is_method: bool) -> bool:
    args = function.args
    if args.vararg is not None or args.kwarg is not None:
        return True
    positional = list(args.posonlyargs) + list(args.args)
    # Defaults belong to the last positional parameters.
    pairs = list(zip(positional, [None] * (len(positional) - len(args.defaults)) + list(args.defaults)))
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in function.decorator_list)
    if is_method and not static:
        pairs = pairs[1:]  # self / cls
    pairs += zip(args.kwonlyargs, args.kw_defaults)
    return any(_param_may_be_tensor(arg, default) for arg, default in pairs)


def _param_may_be_tensor(arg: ast.arg, default: Optional[ast.expr]) -> bool:
    if arg.annotation is not None:
        text = ast.unparse(arg.annotation)
        return any(hint in text for hint in TENSOR_HINTS)
    return default is None or not _is_literal(default)


def _is_literal(expr: ast.expr) -> bool:
    """The ``ast`` side of the visitor's ``_is_literal``: numbers, strings,
    flags, attributes (``torch.float32``), and tuples/lists of them."""
    if isinstance(expr, ast.Attribute):
        return True
    if isinstance(expr, ast.Constant):
        return type(expr.value) in _PLAIN_CONSTANTS
    if isinstance(expr, ast.JoinedStr):
        return True
    if isinstance(expr, ast.UnaryOp):
        return _is_literal(expr.operand)
    if isinstance(expr, (ast.Tuple, ast.List)):
        return all(_is_literal(e) for e in expr.elts)
    return False
