"""TDV101 fix (unsafe): ``x.cuda()`` -> ``x.to(device)``.

Only when exactly one device-like name (``device``, ``dev``, ``*_device``)
is bound by a module-level assignment, so there is no choice to guess; and
only where that name exists when the call runs: inside a function body, or
at module level after the assignment. Unsafe because the name may hold a
device other than CUDA (that is the point, but it changes behaviour).
"""

from __future__ import annotations

import ast
from typing import Optional

import libcst as cst

CODE = "TDV101"


def _device_like(name: str) -> bool:
    return name in ("device", "dev") or name.endswith("_device") or name.endswith("device_")


def module_device_names(tree: ast.Module) -> dict[str, int]:
    """Device-like names assigned at module level -> first line assigned."""
    found: dict[str, int] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            targets = stmt.targets
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets = [stmt.target]
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name) and _device_like(target.id):
                found.setdefault(target.id, stmt.lineno)
    return found


def fix(node: cst.CSTNode, context, where) -> Optional[cst.CSTNode]:
    if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
        return None
    if node.func.attr.value != "cuda" or any(arg.keyword is None or arg.star for arg in node.args):
        return None  # .cuda(0) names a device: not this rule's case
    names = module_device_names(context.tree)
    if len(names) != 1:
        return None
    (name, line), = names.items()
    if not (context.in_function(where.start.line) or line < where.start.line):
        return None
    device = cst.Arg(cst.Name(name))
    if node.args:
        device = device.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return node.with_changes(func=node.func.with_changes(attr=cst.Name("to")), args=[device, *node.args])
