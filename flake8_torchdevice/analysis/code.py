"""Small readers of LibCST nodes that every rule uses: one home each."""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from typing import Iterable, Iterator, Optional

from .._lazy import cst


def code_of(node: "cst.CSTNode") -> str:
    """The source code of ``node`` alone."""
    return _empty_module().code_for_node(node)


@lru_cache(maxsize=1)
def _empty_module() -> "cst.Module":
    return cst.Module(body=[])  # built on first use: importing must not load LibCST


def call_keywords(call: "cst.Call") -> Optional[list]:
    """The keyword names a call passes, or None where ``**mapping`` may pass any."""
    if any(arg.star == "**" for arg in call.args):
        return None
    return [arg.keyword.value for arg in call.args if arg.keyword is not None]


def argument(call: "cst.Call", position: Optional[int], keyword: str) -> Optional["cst.Arg"]:
    """The argument bound to a parameter that may be passed by ``position``
    (0-based; None: keyword-only) or by ``keyword``; None if absent. Starred
    arguments are not bound."""
    index = 0
    for arg in call.args:
        if arg.star:
            continue
        if arg.keyword is None:
            if index == position:
                return arg
            index += 1
        elif arg.keyword.value == keyword:
            return arg
    return None


def is_self_attribute(node: "cst.CSTNode") -> bool:
    """``self.<name>``: an attribute of the object a method runs on."""
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self"


def string_value(node: "cst.CSTNode") -> Optional[str]:
    """The text of a plain string, of joined literals (``'multi' '_gpu'``),
    or the literal parts of an f-string; None for anything else."""
    if isinstance(node, cst.SimpleString):
        return node.raw_value
    if isinstance(node, cst.ConcatenatedString):
        left, right = string_value(node.left), string_value(node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, cst.FormattedString):
        return "".join(p.value for p in node.parts if isinstance(p, cst.FormattedStringText))
    return None


def is_constant(expr: "cst.BaseExpression") -> bool:
    """A literal that holds no tensor: a number (signed too), a string, ``None``, ``True`` or ``False``."""
    if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)):
        return True
    if isinstance(expr, cst.UnaryOperation):
        return is_constant(expr.expression)
    return isinstance(expr, cst.Name) and expr.value in ("None", "True", "False")


def is_main_guard(test: "cst.BaseExpression") -> bool:
    """``__name__ == "__main__"`` (either way round; the string's joined parts too): the test of
    the block that runs a script. The ``ast`` reading of the same test is ``names._is_main_test``."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    if not isinstance(test.comparisons[0].operator, cst.Equal):
        return False
    sides = [test.left, test.comparisons[0].comparator]
    return any(isinstance(x, cst.Name) and x.value == "__name__" for x in sides) and any(
        string_value(x) == "__main__" for x in sides
    )


def last_name(expr: "cst.BaseExpression") -> Optional[str]:
    """``c`` for ``a.b.c`` and for ``c``; None for anything else."""
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    if isinstance(expr, cst.Name):
        return expr.value
    return None


# ``nn.Module`` methods that return the module itself: ``model.eval().cuda()`` moves ``model``.
MODULE_RETURNING_SELF = frozenset({"eval", "train", "float", "half", "double", "bfloat16", "requires_grad_", "apply"})


def module_chain_root(expr: "cst.BaseExpression") -> "cst.BaseExpression":
    """``model`` of ``model.eval().float()``: ``expr`` under its chain of calls of methods that
    return the module (``expr`` itself when there is none)."""
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
            and expr.func.attr.value in MODULE_RETURNING_SELF:
        expr = expr.func.value
    return expr


def chained_move(expr: "cst.BaseExpression") -> Optional["cst.Call"]:
    """The ``.to()`` / ``.cuda()`` / ``.cpu()`` / ``.to_empty()`` call of ``model.to(device).eval()``, under
    methods that return the module (``expr`` itself when it is one), else None."""
    move = module_chain_root(expr)
    if isinstance(move, cst.Call) and isinstance(move.func, cst.Attribute) and \
            move.func.attr.value in ("to", "cuda", "cpu", "to_empty"):
        return move
    return None


# Fields that only hold whitespace, comments, brackets or punctuation.
_SKIP = frozenset(
    """asynchronous colon comma comment default_indent default_newline dot
    empty_lines encoding equal first_colon footer has_trailing_newline header
    indent lbrace lbracket leading_lines leading_whitespace lines_after_decorators
    lpar newline operator posonly_ind rbrace rbracket relative rpar second_colon
    semicolon separator star trailing_comma trailing_whitespace""".split()
)
# Source order differs from dataclass order here: decorators come first.
_FIRST = ("decorators",)


def child_fields(node_type: type) -> tuple[str, ...]:
    names = [
        f.name
        for f in dataclasses.fields(node_type)
        if f.name not in _SKIP and not f.name.startswith("whitespace")
    ]
    first = [n for n in _FIRST if n in names]
    return tuple(first + [n for n in names if n not in first])


def children(node: cst.CSTNode, fields: Iterable[str]) -> list:
    children = []
    add = children.append
    for name in fields:
        value = getattr(node, name)
        kind = type(value)
        if kind is tuple or kind is list:
            for item in value:
                if _is_node(type(item)):
                    add(item)
        elif _is_node(kind):
            add(value)
    return children


def _is_node(kind: type) -> bool:
    """``issubclass(kind, cst.CSTNode)``, cached by type: an ``isinstance``
    against LibCST's abstract base costs an ABC check on every field."""
    known = _NODE_TYPES.get(kind)
    if known is None:
        known = _NODE_TYPES[kind] = issubclass(kind, cst.CSTNode)
    return known


_NODE_TYPES: dict = {}


def subtree(root: "cst.CSTNode") -> Iterator["cst.CSTNode"]:
    """Every node under ``root`` (``root`` included), reading fields directly:
    LibCST's ``children`` property rebuilds each node and costs ~20x more."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(children(node, _fields_of(type(node))))


def own_subtree(root: "cst.CSTNode") -> Iterator["cst.CSTNode"]:
    """``subtree`` without the insides of nested functions, classes and lambdas: the code
    that runs in ``root``'s own scope (a nested definition itself is yielded, not entered)."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        if node is root or not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            stack.extend(children(node, _fields_of(type(node))))


_FIELDS: dict = {}


def _fields_of(kind: type) -> tuple[str, ...]:
    """``child_fields``, computed once per node type."""
    fields = _FIELDS.get(kind)
    if fields is None:
        fields = _FIELDS[kind] = child_fields(kind)
    return fields


def layout_free(node: "cst.CSTNode", holes: "frozenset | set" = frozenset()) -> tuple:
    """What ``node`` says, whatever its layout (spaces, line breaks, comments,
    parentheses, a string's quotes or its split into joined parts: ``'a/'  "b"`` is
    ``"a/b"``): two expressions with equal keys are the same code. The subtrees whose
    ids are in ``holes`` count as one placeholder each (a file name's variable parts)."""
    key, stack = [], [node]
    while stack:
        part = stack.pop()
        if id(part) in holes:
            key.append(("hole", None))
            continue
        text = _literal_key(part)
        if text is not None:
            key.append(("str", text))
            continue
        value = getattr(part, "value", None)
        key.append((type(part).__name__, value if isinstance(value, str) else None))
        stack.extend(children(part, _fields_of(type(part))))
    return tuple(key)


def _literal_key(node: "cst.CSTNode") -> Optional[str]:
    """``repr`` of a string or bytes literal's value (joined parts too), or None: an f-string, no literal."""
    if not isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        return None
    try:
        value = node.evaluated_value
    except Exception:  # noqa: BLE001 -- a literal Python itself would refuse: compare it as written
        return None
    return repr(value) if value is not None else None


def target_names(target: "cst.CSTNode") -> list[str]:
    """The names an assignment target binds: ``x``, ``(a, [b, *c])``."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in target_names(element.value)]
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return []


def paired_assignment(node: "cst.Assign") -> Optional[list]:
    """(target, value) of each element of ``a, b = x, y``: one target, displays of one length,
    nothing starred; None for any other assignment."""
    if len(node.targets) != 1:
        return None
    target, value = node.targets[0].target, node.value
    if not (isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List))):
        return None
    if len(target.elements) != len(value.elements):
        return None
    if any(isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements)):
        return None
    return [(t.value, v.value) for t, v in zip(target.elements, value.elements)]


def param_names(params: "cst.Parameters") -> list[str]:
    """Every name a function's parameters bind, ``*args`` and ``**kwargs`` included."""
    names = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
    names += [star.name.value for star in (params.star_arg, params.star_kwarg) if isinstance(star, cst.Param)]
    return names
