"""Module-level device choices that the module itself replaces with the CPU before using them.

``device = torch.device("cuda" if torch.cuda.is_available() else "cpu")`` followed, a line later, by
``device = torch.device("cpu")``: the module runs on the CPU whatever machine it is on, and the first
line is no evidence of a GPU or of a CPU path (TDV201's evidence: the files such a module saves hold
CPU tensors). Read from the ``ast`` once per file, so the answer does not depend on what code the
engine's selection parses.
"""

from __future__ import annotations

import ast

from ..ast_helpers import ast_dotted_name

_FACT = "overridden_choices"
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def overridden_choices(names) -> frozenset:
    """First lines of module-level bindings of a name (``device = ...``) that a later module-level
    binding of the same name to the CPU replaces before module code reads the name."""
    found = names.facts.get(_FACT)
    if found is None:
        found = names.facts[_FACT] = frozenset(_overridden(names))
    return found


def _overridden(names) -> set:
    body = list(names.module_body)
    lines = set()
    for later, stmt in enumerate(body):
        name = _bound_name(stmt)
        if name is None or not _cpu_device(stmt.value, names):
            continue
        for earlier in range(later - 1, -1, -1):
            previous = body[earlier]
            if _bound_name(previous) == name:
                lines.add(previous.lineno)  # replaced before any read: not the module's device
                continue
            if _reads(previous, name):
                break
    return lines


def _bound_name(stmt: ast.stmt):
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    return None


def _cpu_device(value: ast.expr, names) -> bool:
    """``"cpu"`` or ``torch.device("cpu")``."""
    if isinstance(value, ast.Call):
        dotted = ast_dotted_name(value.func)
        if dotted is None or names.resolve_dotted(dotted) != "torch.device" or len(value.args) != 1:
            return False
        value = value.args[0]
    return isinstance(value, ast.Constant) and value.value == "cpu"


def _reads(stmt: ast.stmt, name: str) -> bool:
    """Does module code read ``name`` in ``stmt``? A definition's body runs later; its defaults and
    decorators now."""
    if isinstance(stmt, _DEFINITIONS):
        parts = list(getattr(stmt, "decorator_list", []))
        if isinstance(stmt, ast.ClassDef):
            parts += stmt.bases + [keyword.value for keyword in stmt.keywords]
        else:
            parts += stmt.args.defaults + [d for d in stmt.args.kw_defaults if d is not None]
    else:
        parts = [stmt]
    return any(isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)
               for part in parts for node in ast.walk(part))
