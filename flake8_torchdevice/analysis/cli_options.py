"""What a script does with the options it parses: does it hand the whole namespace
(``args = parser.parse_args()``) to code imported from another module (``GAN(args)``,
``utils.get_network(args)``), which may read any option there?

Read from the file's ``ast``, whole, whatever the selection kept: TDV109 asks only for a file
with a stuck CUDA switch that the file itself never reads, which is rare."""

from __future__ import annotations

import ast
import builtins

# ``parser.parse_args()``, ``parse_known_args()[0]``, and a script's own ``parse_args()`` wrapper.
_PARSES = frozenset({"parse_args", "parse_known_args"})


def hands_options_away(source: str) -> bool:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    spaces = option_namespaces(tree)
    if not spaces:
        return False
    imported, star = _imported_names(tree)
    # ``from utils import *``: any name the file does not define may come from there.
    local = _defined_names(tree) | set(dir(builtins)) if star else set()
    return any(
        isinstance(node, ast.Call)
        and (_root(node.func) in imported or star and _root(node.func) not in local)
        and any(isinstance(arg, ast.Name) and arg.id in spaces for arg in node.args)
        for node in ast.walk(tree)
    )


def option_namespaces(tree: ast.AST) -> set[str]:
    """Names bound to the parsed options: ``args = parser.parse_args()``, ``opt, _ =
    parser.parse_known_args()``, ``args = parse_args()``."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _parsed(node.value):
            for target in node.targets:
                first = target.elts[0] if isinstance(target, ast.Tuple) and target.elts else target
                if isinstance(first, ast.Name):
                    names.add(first.id)
    return names


def _parsed(value: ast.AST) -> bool:
    if isinstance(value, ast.Subscript):  # parse_known_args()[0]
        value = value.value
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    return last in _PARSES


def _imported_names(tree: ast.AST) -> tuple[set[str], bool]:
    """The names imports bind, and whether a ``from m import *`` binds unknown ones."""
    names, star = set(), False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.asname or alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            star = star or any(alias.name == "*" for alias in node.names)
            names.update(alias.asname or alias.name for alias in node.names if alias.name != "*")
    return names, star


def _defined_names(tree: ast.AST) -> set[str]:
    """Names the file binds itself: definitions, assignments, loop and ``with`` targets."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _root(func: ast.AST) -> str | None:
    while isinstance(func, ast.Attribute):
        func = func.value
    return func.id if isinstance(func, ast.Name) else None
