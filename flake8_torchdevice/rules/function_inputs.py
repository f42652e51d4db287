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

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_PLAIN_CONSTANTS = (bool, int, float, str, bytes)


def may_see_inputs(
    chain: Sequence[ast.stmt], tensor_hints: Sequence[str], data_functions: frozenset, data_suffixes: tuple
) -> bool:
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
    if any(_is_data_function(f.name, data_functions) for f in functions):
        return False
    if owner is not None and _in_data_class(chain, data_suffixes):
        return False
    outermost = functions[-1]
    return any(
        _may_be_tensor(f, is_method=f is outermost and owner is not None, hints=tensor_hints) for f in functions
    )


def _is_data_function(name: str, data_functions: frozenset) -> bool:
    return name in data_functions or "collate" in name.lower()


def _in_data_class(chain: Sequence[ast.stmt], suffixes: tuple) -> bool:
    """A Dataset/Sampler-like class (by its name or a base's), or one nested in such a class."""
    for stmt in chain:
        if isinstance(stmt, ast.ClassDef):
            names = [stmt.name] + [_last_name(base) for base in stmt.bases]
            if any(name.endswith(suffixes) for name in names if name):
                return True
    return False


def _last_name(expr: ast.expr) -> Optional[str]:
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return expr.id if isinstance(expr, ast.Name) else None


def _may_be_tensor(function, is_method: bool, hints: Sequence[str]) -> bool:
    args = function.args
    if args.vararg is not None or args.kwarg is not None:
        return True
    ordered = list(args.posonlyargs) + list(args.args)
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in function.decorator_list)
    if is_method and not static and ordered:
        ordered = ordered[1:]  # self / cls
    # Defaults belong to the last positional parameters, then to keyword-only ones.
    defaults = [None] * (len(list(args.posonlyargs) + list(args.args)) - len(args.defaults)) + list(args.defaults)
    defaults = defaults[len(defaults) - len(ordered):] if ordered else []
    pairs = list(zip(ordered, defaults)) + list(zip(args.kwonlyargs, args.kw_defaults))
    return any(_param_may_be_tensor(arg, default, hints) for arg, default in pairs)


def _param_may_be_tensor(arg: ast.arg, default: Optional[ast.expr], hints: Sequence[str]) -> bool:
    if arg.annotation is not None:
        text = ast.unparse(arg.annotation)
        return any(hint in text for hint in hints)
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
