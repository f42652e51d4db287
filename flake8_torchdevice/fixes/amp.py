"""Rewrites from the deprecated ``torch.cuda.amp`` / ``torch.cpu.amp`` API to
``torch.amp``, for TDV701 (which decides what to report and what to fix).

The old and new signatures differ, so every positional argument is bound by
the OLD signature and written as a keyword; the device goes first
(``torch.amp.autocast("cuda", enabled=False)``, never ``("cpu", False)``,
which would pass ``False`` as the dtype).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .._lazy import cst
from . import edit

# Old signatures, in positional order.
OLD_PARAMETERS = {
    "autocast": ("enabled", "dtype", "cache_enabled"),
    "GradScaler": ("init_scale", "growth_factor", "backoff_factor", "growth_interval", "enabled"),
    "custom_fwd": ("fwd",),
    "custom_bwd": ("bwd",),
}
# The dtype the old autocast passed when none was given; the new one would
# inherit it from an enclosing autocast region instead.
OLD_DTYPE = {"cuda": "float16", "cpu": "bfloat16"}
DECORATORS = frozenset({"custom_fwd", "custom_bwd"})


@dataclass(frozen=True)
class Api:
    """A deprecated callable: its name in ``torch.amp`` and its device."""

    name: str
    device: str


def new_arguments(call: cst.Call, api: Api, torch_name: Optional[str]) -> Optional[list]:
    """The new call's arguments, or None when they cannot be bound safely
    (``*args``; an extra positional)."""
    args = list(call.args)
    if any(arg.star == "*" for arg in args):
        return None
    names = OLD_PARAMETERS[api.name]
    positional = [arg for arg in args if arg.keyword is None and not arg.star]
    if len(positional) > len(names):
        return None
    device = edit.keyword("device_type", _string(api.device)) if api.name in DECORATORS else None
    out = []
    for index, arg in enumerate(args):
        if arg.keyword is None and not arg.star:
            if api.name in DECORATORS:  # fwd/bwd stays positional
                out.append(arg)
                continue
            arg = arg.with_changes(keyword=cst.Name(names[index]), equal=_equal())
        out.append(arg)
    if api.name == "autocast" and not _keeps_dtype(args):
        if torch_name is None:
            return None
        dtype = cst.Attribute(cst.Name(torch_name), cst.Name(OLD_DTYPE[api.device]))
        out = _append(call, out, edit.keyword("dtype", dtype))
    if device is not None:
        return _append(call, out, device)
    if api.name in DECORATORS:
        return out
    head = cst.Arg(_string(api.device))
    if out:
        head = head.with_changes(comma=cst.Comma(whitespace_after=_first_separator(call)))
    return [head, *out]


def _first_separator(call: cst.Call):
    """What follows the new first argument: one argument per line stays so."""
    first = call.args[0].comma if call.args else None
    if isinstance(first, cst.Comma) and isinstance(first.whitespace_after, cst.ParenthesizedWhitespace):
        return first.whitespace_after.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=())
    if isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
        return call.whitespace_before_args.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=())
    return cst.SimpleWhitespace(" ")


def _keeps_dtype(args: list) -> bool:
    """No dtype to add: one is given (or may be, through ``**kwargs``), or
    autocast is disabled (no op is cast in the region)."""
    for index, arg in enumerate(args):
        if arg.star == "**":
            return True
        name = arg.keyword.value if arg.keyword is not None else OLD_PARAMETERS["autocast"][index]
        if name == "dtype":
            return True
        if name == "enabled" and isinstance(arg.value, cst.Name) and arg.value.value == "False":
            return True
    return False


def _append(call: cst.Call, args: list, new: cst.Arg) -> list:
    return list(edit.add_argument(call.with_changes(args=args), new).args)


def _equal() -> cst.AssignEqual:
    return cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))


def _string(text: str) -> cst.SimpleString:
    return cst.SimpleString(f'"{text}"')


def rewrite_call(call: cst.Call, api: Api, func: cst.BaseExpression, torch_name: Optional[str]) -> Optional[cst.Call]:
    args = new_arguments(call, api, torch_name)
    return None if args is None else call.with_changes(func=func, args=args)


def rewrite_decorator(decorator: cst.Decorator, api: Api, func: cst.BaseExpression) -> cst.Decorator:
    """``@custom_fwd`` (no call) -> ``@torch.amp.custom_fwd(device_type="cuda")``."""
    call = cst.Call(func=func, args=[edit.keyword("device_type", _string(api.device))])
    return decorator.with_changes(decorator=call)


def new_api(torch_name: str, name: str) -> cst.Attribute:
    """``torch.amp.<name>``, spelled with the file's name for torch."""
    return cst.Attribute(cst.Attribute(cst.Name(torch_name), cst.Name("amp")), cst.Name(name))


def rewrite_import(node: cst.ImportFrom) -> cst.ImportFrom:
    """``from torch.cuda.amp import autocast`` -> ``from torch.amp import autocast``."""
    return node.with_changes(module=cst.Attribute(cst.Name("torch"), cst.Name("amp")))


def only_called(module: cst.Module, names: set) -> bool:
    """Every occurrence of ``names`` is a call's callee, a decorator, an
    import, an attribute's name or a keyword: renaming what they import
    and rewriting every call leaves nothing behind."""
    stack = [module]
    fine: set = set()
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name) and node.value in names and id(node) not in fine:
            return False
        fine.update(id(child) for child in _harmless_children(node))
        stack.extend(node.children)
    return True


def local_name(alias: cst.ImportAlias) -> Optional[str]:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return alias.name.value if isinstance(alias.name, cst.Name) else None


def _harmless_children(node: cst.CSTNode) -> list:
    if isinstance(node, cst.Call):
        return [node.func]
    if isinstance(node, cst.Decorator):
        return [node.decorator]
    if isinstance(node, cst.ImportAlias):
        return [node.name]
    if isinstance(node, cst.AsName):
        return [node.name]
    if isinstance(node, cst.Attribute):
        return [node.attr]
    if isinstance(node, cst.Arg) and node.keyword is not None:
        return [node.keyword]
    return []
