"""TDV201 fix: ``torch.load(p)`` -> ``torch.load(p, map_location="cpu")``.

An explicit ``map_location=None`` (keyword or second positional) gets its
value replaced instead. A multi-line call gets the new argument on its own
line, indented like the first argument.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

CODE = "TDV201"
_CPU = cst.SimpleString('"cpu"')


def fix(node: cst.CSTNode, context, where) -> Optional[cst.CSTNode]:
    if not isinstance(node, cst.Call) or any(arg.star for arg in node.args):
        return None
    args = list(node.args)
    positional = [i for i, arg in enumerate(args) if arg.keyword is None]
    for i, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == "map_location":
            return _replace_none(node, args, i)
    if len(positional) >= 2:
        return _replace_none(node, args, positional[1])
    if not args:
        return None
    return node.with_changes(args=_append(node, args))


def _replace_none(node: cst.Call, args: list, index: int) -> Optional[cst.Call]:
    value = args[index].value
    if not (isinstance(value, cst.Name) and value.value == "None"):
        return None  # a real map_location: nothing to fix
    args[index] = args[index].with_changes(value=_CPU)
    return node.with_changes(args=args)


def _append(node: cst.Call, args: list) -> list:
    last = args[-1]
    new = cst.Arg(
        keyword=cst.Name("map_location"),
        value=_CPU,
        equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
    )
    separator = _separator(node, args)
    if isinstance(last.comma, cst.Comma):
        # Trailing comma: the new argument inherits it (and what follows it,
        # e.g. the newline before ``)``).
        args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=separator))
        return [*args, new.with_changes(comma=last.comma)]
    # No trailing comma: the new argument inherits the space before ``)``;
    # a comment after the old last argument stays on its line.
    tail = last.whitespace_after_arg
    if isinstance(tail, cst.ParenthesizedWhitespace) and isinstance(separator, cst.ParenthesizedWhitespace):
        separator = separator.with_changes(first_line=tail.first_line, empty_lines=tail.empty_lines)
        tail = tail.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=())
    args[-1] = last.with_changes(
        comma=cst.Comma(whitespace_after=separator), whitespace_after_arg=cst.SimpleWhitespace("")
    )
    return [*args, new.with_changes(whitespace_after_arg=tail)]


def _separator(node: cst.Call, args: list) -> cst.BaseParenthesizableWhitespace:
    """One argument per line stays one per line; otherwise a single space."""
    if len(args) >= 2 and isinstance(args[-2].comma, cst.Comma):
        if isinstance(args[-2].comma.whitespace_after, cst.ParenthesizedWhitespace):
            return _bare(args[-2].comma.whitespace_after)
        return cst.SimpleWhitespace(" ")  # the arguments share a line: join them
    if isinstance(node.whitespace_before_args, cst.ParenthesizedWhitespace):
        return _bare(node.whitespace_before_args)
    return cst.SimpleWhitespace(" ")


def _bare(space: cst.ParenthesizedWhitespace) -> cst.ParenthesizedWhitespace:
    """The same line break and indent, without the comment or blank lines."""
    return space.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=())
