"""Which options a script parses are read as devices (``.to(args.device)``, ``torch.device(args.device)``,
``device=args.device``) and never rebound, so that their default reaches torch as it is written.

Read from the file's ``ast`` (the resolver's, whole, whatever the selection kept), once per file; TDV106 asks only
where an option's default is a string torch cannot parse, which is rare."""

from __future__ import annotations

import ast

from .cli_options import option_namespaces


def device_option_reads(names) -> dict:
    """{option dest: [lines where ``<namespace>.<dest>`` is handed to torch as a device]} for the dests the file
    never rebinds (``args.device = ...``, ``setattr(args, "device", ...)``)."""
    found = names.facts.get("device_option_reads")
    if found is None:
        found = names.facts["device_option_reads"] = _reads(names)
    return found


def _reads(names) -> dict:
    tree = ast.Module(body=list(names.module_body), type_ignores=[])
    spaces = option_namespaces(tree)
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
            for value in _device_arguments(node, names):
                if isinstance(value, ast.Attribute) and _of(value, spaces):
                    reads.setdefault(value.attr, []).append(value.lineno)
    return {dest: lines for dest, lines in reads.items() if dest not in rebound}


def _of(node: ast.Attribute, spaces: set) -> bool:
    return isinstance(node.value, ast.Name) and node.value.id in spaces


def _device_arguments(call: ast.Call, names) -> list:
    """What ``call`` reads as a device: ``.to(x)`` / ``.to(device=x)``, ``torch.device(x)``, any ``device=x``."""
    found = [kw.value for kw in call.keywords if kw.arg == "device"]
    if call.args and isinstance(call.func, ast.Attribute) and (
            call.func.attr == "to" or names.qualify_ast(call.func) == "torch.device"):
        found.append(call.args[0])
    return found
