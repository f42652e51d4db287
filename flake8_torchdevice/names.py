"""Shared name and alias resolution: one place that turns a local name into a
qualified name (``th.load`` -> ``torch.load``) for every rule.

The map is seeded from the stdlib ``ast`` tree of the whole file (module-level
imports and alias assignments, which the engine does not hand to LibCST), then
kept up to date by the engine while it walks the LibCST statements it parsed
(imports and aliases inside functions, which count inside that function
only). It is deliberately flow-insensitive within a scope: a name bound to
``torch.load`` counts as ``torch.load`` from there on, unless it is later
rebound to something we cannot resolve.
"""

from __future__ import annotations

import ast
from typing import Iterable, Optional

from ._lazy import cst
from .ast_helpers import ast_dotted_name

# Only names under these roots matter to any rule; everything else is dropped
# so that the map stays tiny and lookups stay cheap.
# Packages whose functions read a tensor as an array (TDV603: NumPy functions, scikit-learn's metrics).
ARRAY_PACKAGES = frozenset({"numpy", "sklearn"})
TRACKED_ROOTS = frozenset(
    {"torch", "torchmetrics", "torchvision", "lightning", "pytorch_lightning", "lightning_fabric", "accelerate"}
) | ARRAY_PACKAGES


def _root(qualified: str) -> str:
    return qualified.split(".", 1)[0]


class NameResolver:
    """Local name -> qualified name for tracked libraries."""

    __slots__ = ("_aliases", "_imported", "_classes", "_layers", "_frames", "_defs", "facts", "main_blocks",
                 "argv_at_import", "default_device_at_import", "hf_names", "module_body", "words")

    def __init__(self) -> None:
        self._aliases: dict[str, str] = {}
        # (is a class body, bindings) of the functions and classes being
        # walked, innermost last (None: a local that hides the module's name).
        # A function's own ``torch = kwargs["torch"]`` must not change what
        # ``torch`` means in the rest of the file: which functions are parsed
        # would then decide.
        self._frames: list[tuple[bool, dict[str, Optional[str]]]] = []
        self._imported: set[str] = set()  # top-level packages imported at module level, any library
        self._classes: dict[str, list[str]] = {}  # module-level class -> dotted bases
        # module-level class -> its ast node, then {attr: dotted callee} of its __init__ once asked
        self._layers: dict[str, object] = {}
        self._defs: dict[str, ast.AST] = {}  # module-level class or function -> its ast node
        self.facts: dict = {}  # what shared analyses derived from ``_defs`` once (analysis/still_modules.py)
        self.main_blocks: list[ast.If] = []  # the module's ``if __name__ == "__main__":`` statements
        # Does the module parse its command line outside those blocks (``args = parser.parse_args()``
        # at module level)? Then importing it runs the script: it is never a library.
        self.argv_at_import = False
        # Does module-level code set a default device that may be CUDA (``torch.set_default_device(device)``,
        # ``torch.set_default_tensor_type("torch.cuda.FloatTensor")``)? Then a factory without ``device=``
        # is made there, where the modules built after it live too.
        self.default_device_at_import = False
        # Names module code binds to Hugging Face transformers (``from transformers import AutoModel``,
        # ``import transformers as tf``): ``AutoModel.from_pretrained(...)`` builds on the CPU (flow/layers.py).
        self.hf_names: dict[str, str] = {}  # local name -> the transformers name it is bound to
        self.module_body: list[ast.stmt] = []  # the module's statements (analysis/cuda_only.py reads them)
        # Every identifier-like word of the file's text (``words.identifiers``), where the engine read it:
        # a shared analysis may skip a walk for a name the text never spells. None: not known.
        self.words: Optional[frozenset[str]] = None

    # -- building -----------------------------------------------------
    def bind_import(self, module: str, asname: Optional[str]) -> None:
        """``import a.b.c`` binds ``a``; ``import a.b.c as x`` binds ``x``."""
        self._imported.add(_root(module))
        if _root(module) not in TRACKED_ROOTS:
            if asname:
                self.unbind(asname)
            return
        if asname:
            self._set(asname, module)
        else:
            root = _root(module)
            self._set(root, root)

    def bind_from(self, module: str, name: str, asname: Optional[str], level: int = 0) -> None:
        local = asname or name
        if not level:
            self._imported.add(_root(module))
        if level or name == "*" or _root(module) not in TRACKED_ROOTS:
            self.unbind(local)
            return
        self._set(local, f"{module}.{name}")

    def bind_assignment(self, target: str, value_dotted: Optional[str]) -> None:
        """``f = torch.load`` makes ``f`` an alias; any other value unbinds,
        except ``None`` (the ``except ImportError: torch = None`` fallback)."""
        if value_dotted == "None":
            return
        resolved = self.resolve_dotted(value_dotted) if value_dotted else None
        if resolved is None:
            self.unbind(target)
        else:
            self._set(target, resolved)

    def bind_star_conventions(self, names: dict[str, str]) -> None:
        """``from utils import *`` (a module of the project's own): the conventional names of torch and NumPy
        the file reads and never binds (``_star_names``) come from there."""
        for local, qualified in names.items():
            self._set(local, qualified)
            self._imported.add(_root(qualified))

    def unbind(self, local: str) -> None:
        if self._frames:
            self._frames[-1][1][local] = None
        else:
            self._aliases.pop(local, None)

    def _set(self, local: str, qualified: str) -> None:
        (self._frames[-1][1] if self._frames else self._aliases)[local] = qualified

    def enter_scope(self, is_class: bool = False) -> None:
        """A function or class body begins: its bindings stay in it."""
        self._frames.append((is_class, {}))

    def leave_scope(self) -> None:
        self._frames.pop()

    # -- querying -----------------------------------------------------
    def resolve_dotted(self, dotted: str) -> Optional[str]:
        head, sep, rest = dotted.partition(".")
        innermost = len(self._frames) - 1
        for depth in range(innermost, -1, -1):
            is_class, frame = self._frames[depth]
            if head in frame and (depth == innermost or not is_class):  # methods skip the class body, as Python does
                base = frame[head]
                break
        else:
            base = self._aliases.get(head)
        if base is None:
            return None
        return f"{base}.{rest}" if sep else base

    def qualify(self, node: cst.CSTNode) -> Optional[str]:
        """Qualified name of a Name/Attribute expression, or None if unknown."""
        dotted = dotted_name(node)
        return self.resolve_dotted(dotted) if dotted else None

    def qualify_ast(self, node: ast.expr) -> Optional[str]:
        """``qualify`` for an ``ast`` expression (the analyses that read the ``ast`` once per file)."""
        dotted = ast_dotted_name(node)
        return self.resolve_dotted(dotted) if dotted else None

    def local_bases(self, name: str) -> list[str]:
        """The dotted bases of the module-level class ``name`` of this file."""
        return self._classes.get(name, [])

    def local_class_names(self) -> list[str]:
        """The module-level classes of this file."""
        return list(self._classes)

    def init_callees(self, name: str, attr: str) -> Optional[tuple]:
        """The dotted callees of ``self.<attr> = callee(...)`` in the ``__init__`` of the
        module-level class ``name``, one per distinct callee (``nn.GRU`` in one branch,
        ``nn.LSTM`` in another); None if it has no such assignment, or one that is not a
        call of a named callee. Read from the class's ``ast`` node on the first question:
        most files never ask."""
        calls = self._layers.get(name)
        if isinstance(calls, ast.ClassDef):
            calls = self._layers[name] = _init_calls(calls)
        return calls.get(attr) if calls else None

    def bind_class(self, name: str, bases: list[str], node: Optional[ast.ClassDef] = None) -> None:
        self._classes[name] = bases
        self._layers[name] = node
        self._bind_definition(name, node)
        self.unbind(name)

    def bind_function(self, name: str, node: ast.AST) -> None:
        self._bind_definition(name, node)
        self.unbind(name)

    def _bind_definition(self, name: str, node) -> None:
        # A name defined twice at module level is ambiguous: no analysis reads either.
        self._defs[name] = None if name in self._defs else node

    def definition(self, name: str) -> Optional[ast.AST]:
        """The ``ast`` node of the module-level class or function ``name``; None if the file
        defines that name more than once (which one runs is not known here)."""
        return self._defs.get(name)

    def local_function_names(self) -> list[str]:
        """The module-level functions of this file (each defined once)."""
        return [name for name, node in self._defs.items() if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]

    def imports_any(self, packages) -> bool:
        """Was one of ``packages`` (top-level names) imported at module level?"""
        return any(package in self._imported for package in packages)


def dotted_name(node: cst.CSTNode) -> Optional[str]:
    """``a.b.c`` for a chain of plain names, else None.

    Unlike LibCST's ``get_full_name_for_node``, a call inside the chain does
    not count: ``torch.arange(6).view`` is not ``torch.arange.view``.
    """
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def module_level_statements(body: Iterable[ast.stmt], skip=None) -> Iterable[ast.stmt]:
    """Statements executed at module level, including those nested in
    ``if``/``try``/``with`` blocks (``try: import torch`` is common); a statement
    ``skip`` says yes to is left out with all it holds."""
    for stmt in body:
        if skip is not None and skip(stmt):
            continue
        yield stmt
        if isinstance(stmt, (ast.If, ast.For, ast.While, ast.With, ast.AsyncWith)):
            yield from module_level_statements(stmt.body, skip)
            yield from module_level_statements(getattr(stmt, "orelse", []), skip)
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            yield from module_level_statements(stmt.body, skip)
            for handler in stmt.handlers:
                yield from module_level_statements(handler.body, skip)
            yield from module_level_statements(stmt.orelse, skip)
            yield from module_level_statements(stmt.finalbody, skip)


# argparse's, and Hugging Face's ``HfArgumentParser``'s, readers of ``sys.argv``.
_ARGV_READERS = frozenset({"parse_args", "parse_known_args", "parse_args_into_dataclasses"})


def is_main_block(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.If) and _is_main_test(stmt.test)


def _reads_argv(stmt: ast.stmt) -> bool:
    """``args = parser.parse_args()``, ``opt, _ = parser.parse_known_args()``,
    ``parser.parse_known_args()[0]``: the statement reads the command line."""
    value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.Expr)) else None
    while isinstance(value, ast.Subscript):
        value = value.value
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and value.func.attr in _ARGV_READERS)


# What a star import of the project's own module brings, when the file binds none of these names itself:
# ``from utils import *`` where utils.py did ``import torch`` is how a script reaches torch, and these names
# are only ever these modules (``F`` only beside ``nn``: torchvision's transforms use it too).
STAR_CONVENTIONS = {"torch": "torch", "nn": "torch.nn", "np": "numpy", "optim": "torch.optim"}
STAR_FUNCTIONAL = ("F", "torch.nn.functional")


def _star_names(tree: ast.Module) -> dict[str, str]:
    """The conventional names the file reads and never binds, anywhere (imports, assignments, loop and
    ``with`` targets, parameters, defs, ``global``): a name the file binds itself may be anything."""
    bound: set[str] = set()
    read: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.Global):
            bound.update(node.names)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
    names = {local: qualified for local, qualified in STAR_CONVENTIONS.items() if local in read}
    if "nn" in names:
        names[STAR_FUNCTIONAL[0]] = STAR_FUNCTIONAL[1]
    return {local: qualified for local, qualified in names.items() if local not in bound}


def resolver_from_ast(tree: ast.Module, words: Optional[frozenset[str]] = None) -> NameResolver:
    """Seed a resolver from module-level imports, aliases and shadowing defs
    (``words``: the file's identifier words, see ``NameResolver.words``)."""
    resolver = NameResolver()
    resolver.module_body = tree.body
    resolver.words = words
    star_names: Optional[dict[str, str]] = None
    for stmt in module_level_statements(tree.body):
        if isinstance(stmt, ast.ImportFrom) and (stmt.level or _root(stmt.module or "") not in TRACKED_ROOTS) \
                and any(alias.name == "*" for alias in stmt.names):
            star_names = _star_names(tree) if star_names is None else star_names
            resolver.bind_star_conventions(star_names)
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                resolver.bind_import(alias.name, alias.asname)
                if _root(alias.name) == "transformers":
                    resolver.hf_names[alias.asname or "transformers"] = "transformers"
        elif isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                resolver.bind_from(stmt.module or "", alias.name, alias.asname, stmt.level)
                if not stmt.level and _root(stmt.module or "") == "transformers" and alias.name != "*":
                    resolver.hf_names[alias.asname or alias.name] = alias.name
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Name):
                value = stmt.value
                is_none = isinstance(value, ast.Constant) and value.value is None
                resolver.bind_assignment(target.id, "None" if is_none else ast_dotted_name(value))
        elif isinstance(stmt, ast.ClassDef):
            bases = [ast_dotted_name(b.value if isinstance(b, ast.Subscript) else b) for b in stmt.bases]
            resolver.bind_class(stmt.name, [b for b in bases if b], stmt)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            resolver.bind_function(stmt.name, stmt)
        elif is_main_block(stmt):
            resolver.main_blocks.append(stmt)
    resolver.argv_at_import = any(map(_reads_argv, module_level_statements(tree.body, skip=is_main_block)))
    resolver.default_device_at_import = any(
        _sets_default_device(stmt, resolver) for stmt in module_level_statements(tree.body))
    return resolver


# Calls after which a factory without device= lands on the default device.
DEFAULT_DEVICE_SETTERS = frozenset({"torch.set_default_device", "torch.set_default_tensor_type"})


def _sets_default_device(stmt: ast.stmt, resolver: NameResolver) -> bool:
    """``torch.set_default_device(device)``, ``torch.set_default_tensor_type(torch.cuda.FloatTensor)``:
    a default that may be CUDA (not a string or type that names no CUDA: ``"cpu"``, ``torch.FloatTensor``)."""
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    if not isinstance(call, ast.Call) or not call.args:
        return False
    if resolver.resolve_dotted(ast_dotted_name(call.func) or "") not in DEFAULT_DEVICE_SETTERS:
        return False
    value = call.args[0]
    if isinstance(value, ast.Constant):
        return isinstance(value.value, str) and "cuda" in value.value
    dotted = ast_dotted_name(value)
    return dotted is None or "cuda" in dotted or not dotted.startswith(("torch.", "th."))


def _is_main_test(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return any(isinstance(side, ast.Name) and side.id == "__name__" for side in sides) and any(
        isinstance(side, ast.Constant) and side.value == "__main__" for side in sides)


def _init_calls(node: ast.ClassDef) -> dict:
    """``{attr: (dotted callee, ...)}`` for each ``self.attr = callee(...)`` in the class's
    ``__init__`` (the layers a module builds, one per branch that builds it); None for an
    attribute also bound to anything else."""
    calls: dict = {}
    for stmt in node.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__" and stmt.args.args:
            me = stmt.args.args[0].arg
            for sub in ast.walk(stmt):
                if isinstance(sub, ast.Assign) and len(sub.targets) == 1:
                    target, value = sub.targets[0], sub.value
                    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                            and target.value.id == me:
                        callee = ast_dotted_name(value.func) if isinstance(value, ast.Call) else None
                        known = calls.get(target.attr, ())
                        calls[target.attr] = None if callee is None or known is None else \
                            known + (callee,) * (callee not in known)
    return calls


def scope_nodes() -> tuple[type, ...]:
    """The nodes whose bodies are scopes of their own (see ``enter_scope``)."""
    return (cst.FunctionDef, cst.ClassDef)


def name_binding_nodes() -> tuple[type, ...]:
    """The only nodes ``update_from_cst`` acts on (the walker skips the call for
    others); a function, so that importing this module does not load LibCST."""
    return (cst.Import, cst.ImportFrom, cst.Assign)


def full_name(node: cst.CSTNode) -> Optional[str]:
    """LibCST's ``get_full_name_for_node``, which reads through calls and
    subscripts (``f().g`` -> ``f.g``); see ``dotted_name`` for plain chains."""
    return cst.helpers.get_full_name_for_node(node)


def update_from_cst(resolver: NameResolver, node: cst.CSTNode) -> None:
    """Apply an import or alias assignment met inside the parsed statements."""
    if isinstance(node, cst.Import):
        for alias in node.names:
            asname = _cst_asname(alias)
            resolver.bind_import(full_name(alias.name) or "", asname)
    elif isinstance(node, cst.ImportFrom):
        if isinstance(node.names, cst.ImportStar) or node.module is None:
            return
        module = full_name(node.module) or ""
        level = len(node.relative)
        for alias in node.names:
            name = full_name(alias.name) or ""
            resolver.bind_from(module, name, _cst_asname(alias), level)
    elif isinstance(node, cst.Assign) and len(node.targets) == 1:
        target = node.targets[0].target
        if isinstance(target, cst.Name):
            resolver.bind_assignment(target.value, dotted_name(node.value))


def _cst_asname(alias: cst.ImportAlias) -> Optional[str]:
    if alias.asname is None:
        return None
    name = alias.asname.name
    return name.value if isinstance(name, cst.Name) else None
