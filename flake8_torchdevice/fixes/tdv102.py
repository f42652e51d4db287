"""TDV102 fix: a discarded ``x.to(d)`` statement becomes ``x = x.to(d)``.

The rule reports the call; its expression statement has the same span, and
that statement is what gets replaced (keeping any ``;`` after it).
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

CODE = "TDV102"
_MOVES = ("to", "cuda", "cpu")


def fix(node: cst.CSTNode, context, where) -> Optional[cst.CSTNode]:
    if not isinstance(node, cst.Expr) or not isinstance(node.value, cst.Call):
        return None
    func = node.value.func
    if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.attr.value in _MOVES):
        return None
    if func.value.lpar:
        return None
    target = cst.AssignTarget(target=cst.Name(func.value.value))
    return cst.Assign(targets=[target], value=node.value, semicolon=node.semicolon)
