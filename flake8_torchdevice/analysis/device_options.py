"""Which options a script parses are read as devices (``.to(args.device)``, ``torch.device(args.device)``,
``device=args.device``) and never rebound, so that their default reaches torch as it is written.

Read from the file's ``ast``, whole, whatever the selection kept (TDV106 asks only where an option's default is a
string torch cannot parse, which is rare)."""

from __future__ import annotations

import ast

from .cli_options import _namespaces


def device_option_reads(source: str) -> dict:
    """{option dest: [lines where ``<namespace>.<dest>`` is handed to torch as a device]} for the dests the file
    never rebinds (``args.device = ...``, ``setattr(args, "device", ...)``)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    spaces = _namespaces(tree)
    if not spaces:
        return {}
    reads: dict = {}
    rebound: set = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)) and _of(node, spaces):
            rebound.add(node.attr)
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id == "setattr" and len(node.args) >= 2 \
                    and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
                rebound.add(node.args[1].value)
            for value in _device_arguments(node):
                if isinstance(value, ast.Attribute) and _of(value, spaces):
                    reads.setdefault(value.attr, []).append(value.lineno)
    return {dest: lines for dest, lines in reads.items() if dest not in rebound}


def _of(node: ast.Attribute, spaces: set) -> bool:
    return isinstance(node.value, ast.Name) and node.value.id in spaces


def _device_arguments(call: ast.Call) -> list:
    """What ``call`` reads as a device: ``.to(x)`` / ``.to(device=x)``, ``torch.device(x)``, any ``device=x``."""
    found = [kw.value for kw in call.keywords if kw.arg == "device"]
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in ("to", "device") and call.args:
        if func.attr == "to" or isinstance(func.value, ast.Name) and func.value.id in ("torch", "th"):
            found.append(call.args[0])
    return found
