"""TDV401 / TDV402: a CUDA device ordinal written as a literal.

``"cuda:1"`` fails on every machine with fewer than two GPUs; ``"cuda:0"``
(TDV402, opt-in) pins every process of a distributed job to the same GPU.
One visitor finds both; each rule keeps the ordinals it wants.

Not reported: docstrings and other bare string statements, device strings
that are compared (``t.device == torch.device("cuda:1")``: a check, not a
choice), dict keys (``map_location={"cuda:1": "cuda:0"}`` names where a
checkpoint *was*), ordinals computed at run time, and code behind a
multi-GPU guard (``@skip_if_lt_x_gpu(2)``, ``if torch.cuda.device_count() > 1``),
which addresses a given GPU on purpose.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from typing import Iterable, Optional, Sequence, Union

from .._lazy import cst

from ..selection import STATEMENT
from .base import Rule, code_of
from .triggers import aliases, in_comment, in_doctest, per_source, word_matches

# Between tokens a call may hold spaces, newlines, comments, continuation
# backslashes and parentheses: the trigger must never miss a reported case.
# A comment runs to its newline, so "# ## ###" has one parse only (``#[^\n]*``
# alone backtracks exponentially over a line of many "#").
_GAP = r"(?:[\s(\\]|#[^\n]*(?:\n|$))*"
_CALLEES = ("cuda", "to", "device", "set_device")
# Only these can be called through an alias (``from torch.cuda import
# set_device as sd``): ``cuda``/``to`` count as methods (``x.cuda(1)``) only.
_ALIASABLE = ("device", "set_device")
# Each scan starts with one literal (a leading \b or alternation is ~10-50x
# slower, see triggers.py). "cuda:1" (the rule checks the literal's raw text,
# so no escapes) and torch.device("cuda", 1):
_CUDA_SCAN = re.compile(rf"cuda(?::\d|['\"]{_GAP},{_GAP}(?:index{_GAP}={_GAP})?\d)")
# device=1, index=1 (after a word boundary):
_DEVICE_SCAN, _INDEX_SCAN = (re.compile(rf"{word}{_GAP}={_GAP}\d") for word in ("device", "index"))
# A string whose whole raw text is a cuda ordinal: 'cuda:1', r"cuda:1", '''cuda:0'''.
_CUDA_STRING = re.compile(r"[rRuU]?('''|\"\"\"|'|\")cuda:(\d+)\1")
_CUDA_TEXT = re.compile(r"cuda:(\d+)")
# What a multi-GPU guard says: device_count() checks, TEST_MULTIGPU,
# skip_if_lt_x_gpu(2), requires_multi_gpu, num_gpus / n_gpu / gpu_count.
_GUARD_WORDS = r"device_count|multi_?gpu|multi_?device|gpu_?count|\bn(?:um)?_?gpus?\b|_x_gpu|\bgpus?\s*[<>]"
_MULTI_GPU_GUARD = re.compile(_GUARD_WORDS, re.I)
# A file with multi-GPU tests: its private helpers (``_test_device_maps``,
# ``_return_gpu_tensor_list``) are called from those tests. Only run on
# files whose trigger hit, so the slow ``^`` scan is rare.
_GUARD_DECORATOR = re.compile(rf"^[ \t]*@[^\n]*?(?:{_GUARD_WORDS})", re.I | re.M)
_TORCH_DEVICE = "torch.device"
_CUDA_DEVICE_SETTERS = frozenset({"torch.cuda.set_device", "torch.cuda.device"})


@lru_cache(maxsize=64)
def _call_scan(callee: str) -> re.Pattern:
    return re.compile(rf"{re.escape(callee)}[\s\\]*\({_GAP}\d")  # cuda(1, .to( 1, sd(1


@per_source  # TDV401 and TDV402 share it
def _trigger_offsets(source: str) -> list[int]:
    # Both string forms are reported only where the string is exactly "cuda:N"
    # or "cuda": a quote comes right before (``"worker1/cuda:0"`` is text).
    offsets = [m.start() for m in _CUDA_SCAN.finditer(source) if source[m.start() - 1:m.start()] in "'\""]
    callees = set(_CALLEES) | aliases(source, _ALIASABLE)
    scans = (_DEVICE_SCAN,) + tuple(_call_scan(callee) for callee in sorted(callees))
    if "cuda'" in source or 'cuda"' in source:  # index=N counts only in torch.device("cuda", ...)
        scans += (_INDEX_SCAN,)
    for scan in scans:
        offsets.extend(m.start() for m in word_matches(scan, source))
    # A hit in a comment would make the engine parse the code around it for
    # nothing (in module-level code: all of it, 17k lines in one torch file).
    return sorted(offset for offset in offsets if not in_comment(source, offset) and not in_doctest(source, offset))


def _guards_multi_gpu(stmt: ast.stmt, source: str) -> bool:
    """The ``ast`` side of the visitor's frames: a def or class that makes all
    code inside it multi-GPU code (a guard decorator, a guard-like name, a
    private helper of a multi-GPU test file). ``if`` guards are left to the
    visitor."""
    if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return False
    if any(_MULTI_GPU_GUARD.search(ast.unparse(d)) for d in stmt.decorator_list):
        return True
    return not isinstance(stmt, ast.ClassDef) and _guard_name(stmt.name, source)


def _guard_name(name: str, source: str) -> bool:
    """A function named like a guard, or a private helper of a multi-GPU test file."""
    return bool(_MULTI_GPU_GUARD.search(name)) or (name.startswith("_") and _is_multi_gpu_file(source))


@per_source
def _is_multi_gpu_file(source: str) -> bool:
    return bool(_GUARD_DECORATOR.search(source))


def _int_arg(call: cst.Call, position: Optional[int], keyword: str) -> Optional[cst.Integer]:
    """The int literal passed at ``position`` or as ``keyword``, if any."""
    index = 0
    for arg in call.args:
        if arg.star:
            if arg.star == "*":
                position = None  # later positions are unknown
            continue
        if arg.keyword is None:
            if index == position and isinstance(arg.value, cst.Integer):
                return arg.value
            index += 1
        elif arg.keyword.value == keyword and isinstance(arg.value, cst.Integer):
            return arg.value
    return None


def _is_cuda_type(arg: Optional[cst.Arg]) -> bool:
    value = arg.value if arg is not None else None
    return isinstance(value, cst.SimpleString) and value.raw_value == "cuda" and "b" not in value.prefix.lower()


def _torch_device_ordinal(call: cst.Call) -> Optional[cst.Integer]:
    """``torch.device(1)``, ``torch.device("cuda", 1)``, ``torch.device(type="cuda", index=1)``."""
    positional = [a for a in call.args if a.keyword is None and not a.star]
    keywords = {a.keyword.value: a for a in call.args if a.keyword is not None}
    if len(positional) == 1 and not keywords and isinstance(positional[0].value, cst.Integer):
        return positional[0].value
    kind = positional[0] if positional else keywords.get("type")
    if not _is_cuda_type(kind):
        return None
    index = positional[1] if len(positional) > 1 else keywords.get("index")
    return index.value if index is not None and isinstance(index.value, cst.Integer) else None


class _HardCodedOrdinal(Rule):
    """Shared visitor; subclasses choose the ordinals they report."""

    FIX = "none"
    # A literal is judged on its own: module-level hits need no module-level
    # data flow (torch's _torch_docs.py parsed 14,028 of 14,520 lines without this).
    SCOPE = STATEMENT

    @classmethod
    def trigger_offsets(cls, source: str) -> Iterable[int]:
        return _trigger_offsets(source)

    @classmethod
    def wants_statement(cls, chain: Sequence[ast.stmt], source: str) -> bool:
        # A docstring or other bare string is text (``visit_Expr``); an
        # f-string is not dropped: its expressions are code.
        stmt = chain[-1]
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            return False
        return not any(_guards_multi_gpu(node, source) for node in chain)

    @staticmethod
    def wants(ordinal: int) -> bool:
        raise NotImplementedError

    def __init__(self, context) -> None:
        super().__init__(context)
        self._not_a_choice: set[int] = set()  # ids of literals that only name a device
        self._checks: list[int] = []  # ids of open comparisons and assert calls
        self._guarded = [False]  # per def/class frame: inside multi-GPU-only code

    # -- where a literal is not a device choice ------------------------------
    def visit_Expr(self, node: cst.Expr) -> None:
        # Docstrings and other bare strings: text, not code.
        if isinstance(node.value, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
            self._not_a_choice.add(id(node.value))

    def visit_ConcatenatedString(self, node: cst.ConcatenatedString) -> None:
        # "cuda:1" "0" is not the string "cuda:1"; a docstring's parts are text too.
        self._not_a_choice.update((id(node.left), id(node.right)))

    def visit_Dict(self, node: cst.Dict) -> None:
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                self._not_a_choice.add(id(element.key))

    # Inside a comparison or an assert call a device is checked, not chosen:
    # ``t.device == torch.device("cuda:1")``, ``assertEqual(t.device, torch.device(1))``.
    def visit_Comparison(self, node: cst.Comparison) -> None:
        self._checks.append(id(node))

    def leave_Comparison(self, node: cst.Comparison) -> None:
        self._checks.pop()

    def leave_Call(self, node: cst.Call) -> None:
        if self._checks and self._checks[-1] == id(node):
            self._checks.pop()

    # -- multi-GPU guards --------------------------------------------------
    def _push_frame(self, decorators) -> None:
        said = any(_MULTI_GPU_GUARD.search(code_of(d.decorator)) for d in decorators)
        self._guarded.append(self._guarded[-1] or said)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._push_frame(node.decorators)
        if _guard_name(node.name.value, self.context.source):
            self._guarded[-1] = True

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._guarded.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._push_frame(node.decorators)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._guarded.pop()

    def _guard_test(self, test: cst.BaseExpression) -> None:
        # A guard covers its branches and, as an early exit
        # (``if device_count() < 2: skip``), the rest of the function.
        if not self._guarded[-1] and _MULTI_GPU_GUARD.search(code_of(test)):
            self._guarded[-1] = True

    def visit_If(self, node: cst.If) -> None:
        self._guard_test(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._guard_test(node.test)

    def visit_Assert(self, node: cst.Assert) -> None:
        self._guard_test(node.test)

    # -- the literals --------------------------------------------------------
    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        match = _CUDA_STRING.fullmatch(node.value)
        if match:
            self._consider(node, int(match.group(2)))

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        if len(node.parts) == 1 and isinstance(node.parts[0], cst.FormattedStringText):
            match = _CUDA_TEXT.fullmatch(node.parts[0].value)
            if match:
                self._consider(node, int(match.group(1)))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        callee = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
        if isinstance(callee, str) and callee.lower().startswith("assert"):
            self._checks.append(id(node))
        literal = self._ordinal_argument(node)
        if literal is not None:
            self._consider(literal, literal.evaluated_value)

    def _ordinal_argument(self, call: cst.Call) -> Optional[cst.Integer]:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("cuda", "to"):
            return _int_arg(call, 0, "device")  # x.cuda(1), x.to(1), x.to(device=1)
        qualified = self.names.qualify(func)
        if qualified is None or not qualified.startswith("torch."):
            return None
        if qualified == _TORCH_DEVICE:
            return _torch_device_ordinal(call)
        if qualified in _CUDA_DEVICE_SETTERS:
            return _int_arg(call, 0, "device")
        return _int_arg(call, None, "device")  # torch.zeros(2, device=1)

    def _consider(self, node: Union[cst.SimpleString, cst.FormattedString, cst.Integer], ordinal) -> None:
        if not isinstance(ordinal, int) or not self.wants(ordinal):
            return
        if self._checks or self._guarded[-1] or id(node) in self._not_a_choice:
            return
        self.report(node, self.MESSAGE)


class HardCodedCudaOrdinal(_HardCodedOrdinal):
    CODE = "TDV401"
    NAME = "hard-coded-cuda-ordinal"
    SUMMARY = 'a literal CUDA ordinal >= 1 (`"cuda:1"`, `.cuda(1)`, `set_device(1)`, `device=1`)'
    MESSAGE = (
        "hard-coded CUDA device ordinal >= 1 fails with 'invalid device ordinal' on a "
        "machine with fewer GPUs; take the device from configuration or LOCAL_RANK"
    )

    @staticmethod
    def wants(ordinal: int) -> bool:
        return ordinal >= 1


class HardCodedCudaZero(_HardCodedOrdinal):
    CODE = "TDV402"
    NAME = "hard-coded-cuda-zero"
    SUMMARY = 'a literal CUDA ordinal 0 (`"cuda:0"`, `.cuda(0)`, `device=0`)'
    MESSAGE = (
        'hard-coded CUDA device 0 puts every process on the first GPU; use "cuda" (the '
        "current device) or a device taken from configuration or LOCAL_RANK"
    )
    DEFAULT_ENABLED = False

    @staticmethod
    def wants(ordinal: int) -> bool:
        return ordinal == 0
