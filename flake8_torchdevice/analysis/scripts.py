"""The functions a script runs itself: those its ``if __name__ == "__main__":`` block
calls, directly or through other module-level functions of the file; and every
module-level function of a file that reads its command line at import (``args =
parser.parse_args()`` outside that block): importing such a file runs the script, so
no library imports it.

Such a function's parameters come from the script (its options, its constants), not
from a user of a library: a path it loads is the script's choice, so the script's own
evidence of the machines it runs on decides (TDV201). Read from the ``ast`` once per
file, so the answer does not depend on what code the engine's selection parses.
"""

from __future__ import annotations

import ast


def script_functions(names) -> frozenset:
    """The module-level functions reachable by plain-name calls from the ``__main__`` block;
    all of them in a script at import."""
    found = names.facts.get("script_functions")
    if found is None:
        found = names.facts["script_functions"] = frozenset(_reachable(names))
    return found


def _reachable(names) -> set:
    if names.argv_at_import:
        return set(names.local_function_names())
    seen: set = set()
    pending = [name for block in names.main_blocks for name in called_names(block)]
    while pending:
        name = pending.pop()
        node = names.definition(name)
        if name in seen or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        seen.add(name)
        pending.extend(called_names(node))
    return seen


def called_names(node: ast.AST) -> set:
    return {sub.func.id for sub in ast.walk(node) if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name)}
