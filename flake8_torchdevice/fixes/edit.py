"""Format-preserving edits that fixes share: LibCST nodes in, nodes out.

A new argument goes where the call's own layout puts it: one argument per
line stays one per line, a trailing comma stays, a comment after the old
last argument stays on its line.
"""

from __future__ import annotations

from .._lazy import cst

CPU = '"cpu"'


def keyword(name: str, value: cst.BaseExpression) -> cst.Arg:
    """``name=value`` without spaces around ``=``."""
    return cst.Arg(
        keyword=cst.Name(name),
        value=value,
        equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
    )


def add_argument(call: cst.Call, new: cst.Arg) -> cst.Call:
    """``call`` with ``new`` appended after its last argument."""
    args = list(call.args)
    if not args:
        return call.with_changes(args=[new])
    return call.with_changes(args=_append(call, args, new))


def _append(node: cst.Call, args: list, new: cst.Arg) -> list:
    last = args[-1]
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
