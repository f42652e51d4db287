"""Module code that cannot run without CUDA (TDV201's evidence).

A script whose module-level code places on CUDA unconditionally (``model = Net().to(torch.device("cuda"))``,
``model.cuda()``, ``x = torch.ones(3).cuda()``: a statement of the module body, or of a ``with`` in it), never
branches on CUDA there (no ``if``, conditional expression or ``while`` whose test names ``cuda`` / ``gpu``) and
never chooses the CPU there (a ``"cpu"`` device; not a result's ``.to("cpu")`` nor a ``map_location``) cannot run
on a machine without a GPU: importing it fails, and so does running it, whether or not its loads name a
``map_location``. The same for a ``__main__`` block and the loads in it. Where that code does branch on CUDA
(``if use_gpu: model.cuda()``, ``device = "cuda" if ... else "cpu"``) or chooses the CPU (``device = "cpu"``)
before the placement, an unguarded ``.cuda()`` after it is the mistake that breaks its CPU path (TDV101's), not a
requirement. A branch or CPU choice that only follows the placement (``model.cuda()`` then ``if
torch.cuda.device_count() > 1:``, or a loop's ``if torch.cuda.is_available(): x = x.cuda()``) is never reached
on a machine without a GPU: the placement has failed there first.

A weaker form covers a whole file (``cuda_throughout``): code that places on CUDA somewhere, in any function, and
nowhere branches on CUDA, chooses the CPU or takes a device parameter from its caller is written for GPUs only, so a
library load in it serves code that runs where a GPU is.

Read from the ``ast`` once per file (``names.module_body``, ``names.main_blocks``), so the answer does
not depend on what code the engine's selection parses.
"""

from __future__ import annotations

import ast
import re
from typing import Iterable

from ..ast_helpers import ast_dotted_name, ast_nodes_outside_definitions, ast_own_nodes
from ..names import is_main_block, module_level_statements
from .devices import constructs_a_module, names_a_module
from .guards import CUDA_WORD
from .machines import CPU_FLAGS

_GPU_LIST = re.compile(r"gpus$|_ids$", re.I)  # ``args.gpus``, ``gpu_ids``: which GPUs, not whether
_CUDA_DEVICE = re.compile(r"cuda(:\d+)?")  # a device string that is always CUDA: "cuda", "cuda:1"
_DEVICE_PARAMETER = re.compile(r"^(device|dev)$|_device$|^device_")
# Sub-expressions that may not run: a branch, a short circuit, a deferred or repeated body.
# Calls that put something somewhere: an arm holding one decides where the code runs.
_PLACING_METHODS = frozenset({"cuda", "to", "cpu", "device", "set_device"})
_MAYBE_RUN = (ast.IfExp, ast.BoolOp, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def cuda_at_import(names) -> bool:
    """Does the module's own code (outside definitions and the ``__main__`` block) require CUDA?"""
    found = names.facts.get("cuda_at_import")
    if found is None:
        body = [stmt for stmt in names.module_body if not is_main_block(stmt)]
        code = list(module_level_statements(body))
        found = names.facts["cuda_at_import"] = _requires_cuda(body, code, _cuda_constants(code))
    return found


def main_requires_cuda(names) -> bool:
    """Does a ``__main__`` block require CUDA, by its own statements?"""
    found = names.facts.get("main_requires_cuda")
    if found is None:
        constants = _cuda_constants(list(module_level_statements(names.module_body)))
        found = names.facts["main_requires_cuda"] = any(
            _requires_cuda(block.body, list(module_level_statements(block.body)), constants)
            for block in names.main_blocks)
    return found


def cuda_throughout(names) -> bool:
    """Is the whole file written for GPUs only? Somewhere, in any function, it places on CUDA (``x.cuda()``,
    ``.to("cuda")``, ``torch.arange(n, device="cuda")``; a parameter's CUDA default is no placement: the caller
    may pass another), and nowhere does it branch on CUDA, choose the CPU or leave the device to its caller (a
    ``device`` parameter without a CUDA default): its helpers serve code that runs where a GPU is (a BigGAN-style
    ``utils.py`` whose ``load_weights(root)`` sits beside ``device="cuda"`` factories)."""
    found = names.facts.get("cuda_throughout")
    if found is None and names.words is not None and not any("cuda" in word for word in names.words):
        found = names.facts["cuda_throughout"] = False  # a placement on CUDA spells the word (``.cuda(``, "cuda:0")
    if found is None:
        statements = [node for stmt in names.module_body for node in ast.walk(stmt) if isinstance(node, ast.stmt)]
        found = names.facts["cuda_throughout"] = any(_places_itself(stmt) for stmt in statements) and not any(
            _offers_cpu_path(stmt) or _caller_chooses_device(stmt) for stmt in statements)
    return found


def _caller_chooses_device(stmt: ast.stmt) -> bool:
    """``def predict(x, device)`` / ``device=None``: a device parameter whose default is no CUDA device."""
    if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    arguments = stmt.args
    positional = arguments.posonlyargs + arguments.args
    defaults = [None] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)
    pairs = list(zip(positional, defaults)) + list(zip(arguments.kwonlyargs, arguments.kw_defaults))
    return any(_DEVICE_PARAMETER.search(arg.arg) and not (default is not None and _is_cuda_device(default, set()))
               for arg, default in pairs)


def _places_itself(stmt: ast.stmt) -> bool:
    """A CUDA placement in this statement's own expressions (not in a nested statement)."""
    parts = [getattr(stmt, field, None) for field in ("value", "test", "iter")] + list(getattr(stmt, "items", ()))
    for part in parts:
        for node in ast.walk(part) if isinstance(part, ast.AST) else ():
            if _moves_to_cuda(node, set()):
                return True
            if isinstance(node, ast.keyword) and node.arg == "device" and _is_cuda_device(node.value, set()):
                return True
    return False


def _requires_cuda(body: list, code: list, constants: set) -> bool:
    """Does a statement of ``body`` (or of a ``with`` in it) place on CUDA before ``code`` branches on CUDA or
    chooses the CPU? A CPU path that only follows the placement is never reached on a machine without a GPU."""
    first = next((stmt.lineno for stmt in _unconditional(body) if _places_on_cuda(stmt, constants)), None)
    if first is None:
        return False
    return not any(_offers_cpu_path(stmt) for stmt in code if stmt.lineno < first)


def _offers_cpu_path(stmt: ast.stmt) -> bool:
    """A branch on CUDA or a CPU choice in this statement: code that can run without a GPU."""
    return _branches_on_cuda(stmt) or _names_cpu(stmt)


def _unconditional(body: Iterable[ast.stmt]) -> Iterable[ast.stmt]:
    for stmt in body:
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            yield from _unconditional(stmt.body)
        elif isinstance(stmt, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign)):
            yield stmt


def _branches_on_cuda(stmt: ast.stmt) -> bool:
    """An ``if`` / ``while`` / conditional expression of this statement (not of a definition in it)
    whose test names CUDA or a GPU: ``if use_gpu:``, ``"cuda" if torch.cuda.is_available() else "cpu"``."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return False
    if isinstance(stmt, (ast.If, ast.While)) and not _arms_place(stmt):
        return _names_cuda(stmt.test, switches_only=True)
    tests = [stmt.test] if isinstance(stmt, (ast.If, ast.While)) else []
    if not isinstance(stmt, (ast.If, ast.While, ast.For, ast.With, ast.Try)):
        tests += [node.test for node in ast.walk(stmt) if isinstance(node, ast.IfExp)]
    return any(_names_cuda(test) for test in tests)


def _arms_place(stmt) -> bool:
    """Does an arm of this ``if`` / ``while`` decide where something runs (a ``.cuda()`` / ``.to()`` / ``.cpu()``,
    a ``device=`` or ``map_location=``, ``torch.device`` or ``set_device``, a ``"cuda"`` / ``"cpu"`` string)? A
    branch on a GPU word that only picks which GPUs (``devices = args.gpus``), a seed, a loader backend
    (``"dali-gpu"``) or a message chooses no CPU path."""
    for arm in (stmt.body, stmt.orelse):
        for node in ast_nodes_outside_definitions(arm):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in _PLACING_METHODS:
                return True
            if isinstance(node, ast.keyword) and node.arg in ("device", "map_location"):
                return True
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    (node.value.startswith("cpu") or _CUDA_DEVICE.fullmatch(node.value)):
                return True
    return False


def _names_cpu(stmt: ast.stmt) -> bool:
    """A CPU path this statement (not a definition in it) takes: a ``"cpu"`` device (``device = "cpu"``, a module's
    ``model.to("cpu")``; not a result taken off the GPU, ``model(x).to("cpu")``, nor a load's ``map_location``),
    a CPU flag read (``args.no_cuda``, ``use_gpu=args.use_gpu``), or the CUDA question asked and kept
    (``use_gpu = torch.cuda.is_available()``; not one only printed)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return False
    if isinstance(stmt, ast.Assign) and any(
            isinstance(node, ast.Attribute) and node.attr == "is_available" for node in ast.walk(stmt.value)):
        return True
    results: set = set()
    nodes = list(ast_own_nodes(stmt))  # its nested statements are visited on their own
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "to" \
                and not _moves_a_module(node, stmt):
            results.update(id(arg) for arg in node.args)
        if isinstance(node, ast.keyword) and node.arg == "map_location":
            results.add(id(node.value))
    return any(_cpu_sign(node) and id(node) not in results for node in nodes)


def _cpu_sign(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value.startswith("cpu")
    word = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return word in CPU_FLAGS


def _moves_a_module(call: ast.Call, stmt: ast.stmt) -> bool:
    """``model.to("cpu")``, ``Net().to("cpu")``, a bare ``x.to("cpu")`` statement: a module placed, no result."""
    if isinstance(stmt, ast.Expr) and stmt.value is call:
        return True
    receiver = call.func.value
    if isinstance(receiver, ast.Call):
        return constructs_a_module((ast_dotted_name(receiver.func) or "").rpartition(".")[2])
    return names_a_module((ast_dotted_name(receiver) or "").rpartition(".")[2])


def _names_cuda(test: ast.expr, switches_only: bool = False) -> bool:
    """Does the test name CUDA or a GPU? With ``switches_only`` (a branch whose arms place nothing), only a switch
    counts (``args.cuda``, ``use_gpu``, ``torch.cuda.is_available()``): not a list of GPU ids (``args.gpus``,
    ``gpu_ids``), which picks GPUs, nor a string (``backend == "dali-gpu"``)."""
    for node in ast.walk(test):
        word = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else \
            node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""
        if switches_only and (isinstance(node, ast.Constant) or _GPU_LIST.search(word)):
            continue
        if CUDA_WORD.search(word):
            return True
    return False


def _places_on_cuda(stmt: ast.stmt, constants: set) -> bool:
    """``x.cuda()`` / ``x.to("cuda")`` / ``x.to(DEVICE)`` (a CUDA constant), evaluated whenever the statement runs."""
    if stmt.value is None:
        return False
    pending = [stmt.value]
    while pending:
        node = pending.pop()
        if isinstance(node, _MAYBE_RUN):
            continue
        if _moves_to_cuda(node, constants):
            return True
        pending.extend(ast.iter_child_nodes(node))
    return False


def _moves_to_cuda(node: ast.AST, constants: set) -> bool:
    """``x.cuda()`` / ``x.to("cuda")`` / ``x.to(DEVICE)`` with a CUDA constant."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
        node.func.attr == "cuda" or node.func.attr == "to" and _to_cuda(node, constants))


def _to_cuda(call: ast.Call, constants: set) -> bool:
    targets = call.args[:1] + [keyword.value for keyword in call.keywords if keyword.arg == "device"]
    return any(_is_cuda_device(target, constants) for target in targets)


def _is_cuda_device(expr: ast.expr, constants: set) -> bool:
    """``"cuda"``, ``"cuda:0"``, ``torch.device("cuda")``, ``torch.device("cuda", 1)``, or a CUDA constant."""
    if isinstance(expr, ast.Name):
        return expr.id in constants
    if isinstance(expr, ast.Call) and (ast_dotted_name(expr.func) or "").endswith("device") and expr.args:
        expr = expr.args[0]
    return isinstance(expr, ast.Constant) and isinstance(expr.value, str) and bool(_CUDA_DEVICE.fullmatch(expr.value))


def _cuda_constants(code: list) -> set:
    """Module names every module-level binding of which is a CUDA device (``DEVICE = torch.device("cuda")``)."""
    verdicts: dict[str, bool] = {}
    for stmt in code:
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    verdicts[target.id] = verdicts.get(target.id, True) and _is_cuda_device(stmt.value, set())
    return {name for name, cuda in verdicts.items() if cuda}
