"""Shared detection of code that only runs when CUDA is there.

A ``.cuda()`` call is harmless where the code around it has already checked
for CUDA. ``CudaGuards`` is a mixin for rules: it follows the walk (``if``
tests, early exits, skip decorators, methods named ``cuda``) and answers
``cuda_guarded()`` for the node being visited.

What counts as a check (``is_cuda_test``): a call into ``torch.cuda``
(``is_available()``, ``device_count()``), ``<x>.is_cuda``, an equality or
``in`` test against a ``"cuda..."`` string (``x.device.type == "cuda"``) or a CUDA
tensor type (``x.type() == "torch.cuda.HalfTensor"``), or a
flag whose name says cuda/gpu (``args.cuda``, ``use_gpu``, ``TEST_CUDA``).
A test against ``"cpu"`` (``device != "cpu"``) is not a check: on MPS or XPU
it is true and ``.cuda()`` still fails.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .._lazy import cst
from ..names import NameResolver, full_name
from .code import argument, last_name, string_value, subtree

# Identifiers that name CUDA or a GPU: ``use_cuda``, ``args.gpu``, ``TEST_CUDA``.
CUDA_WORD = re.compile(r"cuda|gpu", re.I)
# Words of the module-level and class-level statements that guard what
# follows (early exits, skips, marks, a chosen GPU): the engine always parses
# the statements holding them, so that every rule sees its file's guards.
# Identifiers that speak of CUDA, GPUs or device counts (``torch.cuda``,
# ``use_cuda``, ``TEST_MULTIGPU``, ``n_gpu``, ``skip_if_no_gpu``, a "cuda"
# string), ``set_device``, ``init_process_group`` and ``pytestmark``: every guard these analyses
# recognise holds one (an early exit sits in the ``if`` whose test does).
# The engine keeps the module- and class-level statements holding them, and,
# where a function is parsed statement by statement, its statements too.
_CONTEXT_PARTS = r"cuda|gpu|device_count|multi_?device|set_device|pytestmark|init_process_group"
# A whole line of identifiers joined by newlines that holds a part: one C-level
# scan per file, not one search per identifier.
_CONTEXT_IDENTIFIER = re.compile(rf"^.*(?:{_CONTEXT_PARTS}).*$", re.I | re.M)


def context_words(present) -> set:
    """The context words among the identifiers ``present`` in a file."""
    return set(_CONTEXT_IDENTIFIER.findall("\n".join(present)))


# Calls that end the current block (``pytest.skip``, ``sys.exit``, ``self.skipTest``).
_EXIT_CALL = re.compile(r"(?:^|\.)(?:skip|skipTest|exit|quit|_exit|fail)$")


def _is_cuda_string(node: cst.CSTNode) -> bool:
    """``"cuda"``, ``"cuda:1"``, and a CUDA tensor type, ``"torch.cuda.HalfTensor"`` (``x.type() == ...``)."""
    value = string_value(node)
    return value is not None and value.startswith(("cuda", "torch.cuda."))


def _is_positive_cuda_comparison(node: cst.Comparison) -> bool:
    """``a == "cuda"``, ``"cuda" in str(d)``, ``d.type == "cuda"``,
    ``torch.device("cuda").type == d.type`` -- not ``!=``."""
    operands = [node.left] + [t.comparator for t in node.comparisons]
    positive = all(isinstance(t.operator, (cst.Equal, cst.In, cst.Is)) for t in node.comparisons)
    return positive and any(_is_cuda_string(n) for o in operands for n in subtree(o))


def is_cuda_comparison(test: cst.BaseExpression) -> bool:
    """``device == "cuda"``, ``args.device.type == "cuda"``, ``"cuda" in device``: the test itself
    compares with a CUDA device string, so its body runs where the chosen device is CUDA."""
    return isinstance(test, cst.Comparison) and _is_positive_cuda_comparison(test)


def _is_negated_cpu_flag(node: cst.CSTNode) -> bool:
    """``not args.cpu``, ``not use_cpu``: a flag that says CPU, negated."""
    if not (isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not)):
        return False
    flag = node.expression
    last = flag.attr.value if isinstance(flag, cst.Attribute) else flag.value if isinstance(flag, cst.Name) else ""
    return "cpu" in last.lower()


def is_nccl_init(call: cst.Call, names: NameResolver) -> bool:
    """``init_process_group("nccl", ...)``: NCCL runs on CUDA only, so the
    code after it in the block is CUDA-only code."""
    if names.qualify(call.func) != "torch.distributed.init_process_group":
        return False
    backend = argument(call, 0, "backend")
    return backend is not None and string_value(backend.value) == "nccl"


def demands_gpu_accelerator(call: cst.Call) -> bool:
    """``Trainer(accelerator="gpu")``, ``Fabric(accelerator="cuda", ...)``, a ``LightningLite``
    subclass started so: the launcher refuses to start without a GPU, so the program it runs
    is CUDA code (a conditional value, ``"gpu" if cuda else "cpu"``, is a choice)."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "accelerator":
            return string_value(arg.value) in ("gpu", "cuda")
    return False


def is_cuda_test(expr: cst.CSTNode) -> bool:
    """True if the test expression ``expr`` checks for CUDA somewhere in it."""
    for node in subtree(expr):
        if isinstance(node, cst.Comparison) and _is_positive_cuda_comparison(node):
            return True
        if _is_negated_cpu_flag(node):
            return True
        # Attribute parts are Name nodes too: ``torch.cuda.is_available``,
        # ``x.is_cuda``, ``args.cuda``, ``use_gpu``.
        if isinstance(node, cst.Name) and CUDA_WORD.search(node.value):
            return True
        if isinstance(node, cst.Index) and CUDA_WORD.search(string_value(node.value) or ""):
            return True  # a flag kept in a mapping: ``args["cuda"]``, ``cfg["use_gpu"]``
    return False


def is_cuda_type_test(node: cst.Comparison) -> bool:
    """``x.type() == "torch.cuda.HalfTensor"``: is the value on CUDA, as ``x.is_cuda`` asks."""
    operands = [node.left] + [t.comparator for t in node.comparisons]
    typed = any(isinstance(o, cst.Call) and isinstance(o.func, cst.Attribute) and o.func.attr.value == "type"
                and not o.args for o in operands)
    named = any((string_value(o) or "").startswith("torch.cuda.") for o in operands)
    return typed and named and all(isinstance(t.operator, (cst.Equal, cst.In)) for t in node.comparisons)


def is_cuda_flag(test: cst.BaseExpression) -> bool:
    """``args.cuda`` / ``use_gpu`` / ``self.gpu_mode``, alone or asked as switched on
    (``args.cuda > 0``, ``use_gpu == 1``, ``opt.cuda is True``): the code's own GPU switch."""
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        (compared,) = test.comparisons
        if not _switched_on(compared.operator, compared.comparator):
            return False
        test = test.left
    return isinstance(test, (cst.Name, cst.Attribute)) and bool(CUDA_WORD.search(last_name(test) or ""))


def _switched_on(operator, value) -> bool:
    """``> 0``, ``>= 1``, ``== 1``, ``== True``, ``is True``."""
    if isinstance(value, cst.Name) and value.value == "True":
        return isinstance(operator, (cst.Equal, cst.Is))
    number = int(value.value) if isinstance(value, cst.Integer) and value.value.isdigit() else None
    return isinstance(operator, cst.GreaterThan) and number == 0 or \
        isinstance(operator, (cst.GreaterThanEqual, cst.Equal)) and number == 1


# The words of an ``availability_test``: a rule reading it declares them.
AVAILABILITY_WORDS = frozenset({"is_available", "device_count", "is_cuda", "*gpu"})


AVAILABILITY_CALLS = ("torch.cuda.is_available", "torch.cuda.device_count")


def asks_where_a_value_is(node: cst.CSTNode) -> bool:
    """``x.is_cuda`` or ``x.type() == "torch.cuda.HalfTensor"``: a question of a value's device,
    not of the machine (analysis/value_tests.py tells the two apart)."""
    if isinstance(node, cst.Attribute):
        return node.attr.value == "is_cuda"
    return isinstance(node, cst.Comparison) and is_cuda_type_test(node)


def availability_test(expr: cst.CSTNode, names: NameResolver, options: bool = True) -> bool:
    """A test of whether CUDA is there, not of an option: ``torch.cuda.is_available()``,
    ``torch.cuda.device_count()``, ``x.is_cuda``, and (with ``options``) ``args.gpu is
    not None`` (a GPU was given: whether the code runs without one is for the caller to
    say). ``if use_cuda:`` may be a storage option (keep features on the GPU) in code
    that needs CUDA anyway: not one."""
    for node in subtree(expr):
        if isinstance(node, cst.Call) and names.qualify(node.func) in AVAILABILITY_CALLS:
            return True
        if asks_where_a_value_is(node):
            return True
        if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
            comparison = node.comparisons[0]
            if options and isinstance(comparison.operator, cst.IsNot) and isinstance(comparison.comparator, cst.Name) \
                    and comparison.comparator.value == "None" and "gpu" in (last_name(node.left) or "").lower():
                return True
    return False


def is_no_cuda_test(expr: cst.BaseExpression, names: NameResolver) -> bool:
    """True for a test that is true when CUDA is missing: ``not <check>``,
    ``not a or not b``, ``device.type != "cuda"``, ``torch.cuda.device_count() == 0``."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        return is_cuda_test(expr.expression)
    if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, cst.Or):
        return is_no_cuda_test(expr.left, names) or is_no_cuda_test(expr.right, names)
    if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1:
        op = expr.comparisons[0].operator
        if isinstance(op, (cst.NotEqual, cst.NotIn, cst.IsNot)):  # device.type != "cuda"
            return _is_cuda_string(expr.left) or _is_cuda_string(expr.comparisons[0].comparator)
        # ``device_count() < n`` / ``<= n`` exits unless a GPU is there; ``== 1`` does not.
        right = expr.comparisons[0].comparator
        zero = isinstance(right, cst.Integer) and right.value == "0"
        if isinstance(op, (cst.LessThan, cst.LessThanEqual)) or (isinstance(op, cst.Equal) and zero):
            return isinstance(expr.left, cst.Call) and names.qualify(expr.left.func) == "torch.cuda.device_count"
    return False


def branch_blocks(orelse) -> list:
    """The ids of the blocks of the ``else`` / ``elif`` chain ``orelse`` of an ``if``: the
    code that runs when its test is false."""
    return [id(block) for block in else_blocks(orelse)]


def else_blocks(orelse) -> list:
    """The blocks of an ``else`` / ``elif`` chain (``orelse`` of an ``if``, or a loop's or a
    ``try``'s ``else``), in order."""
    blocks = []
    while orelse is not None:
        blocks.append(orelse.body)
        orelse = orelse.orelse if isinstance(orelse, cst.If) else None
    return blocks


class MarkedBlocks:
    """Blocks marked by id (the branches of an ``if`` that run only with CUDA, or only
    without it), and whether a walk is inside one: a rule calls ``enter`` / ``leave`` from
    its ``IndentedBlock`` visitors."""

    def __init__(self) -> None:
        self._ids: set[int] = set()
        self._depth = 0

    def mark(self, ids) -> None:
        self._ids.update(ids)

    def enter(self, node: cst.IndentedBlock) -> None:
        self._depth += id(node) in self._ids

    def leave(self, node: cst.IndentedBlock) -> None:
        self._depth -= id(node) in self._ids

    @property
    def inside(self) -> bool:
        return self._depth > 0


def ends_block(body: cst.BaseSuite) -> bool:
    """True if ``body`` always leaves the enclosing block: return, raise,
    continue, break, or a call such as ``pytest.skip()`` / ``sys.exit()``."""
    final = body.body[-1] if body.body else None
    if isinstance(final, cst.SimpleStatementLine):  # an indented block's last line
        final = final.body[-1] if final.body else None
    if isinstance(final, (cst.Return, cst.Raise, cst.Continue, cst.Break)):
        return True
    if isinstance(final, cst.Expr) and isinstance(final.value, cst.Call):
        name = full_name(final.value.func) or ""
        return bool(_EXIT_CALL.search(name))
    return False


def is_cuda_skip_decorator(decorator: cst.Decorator) -> bool:
    """A decorator or mark whose name or arguments speak of CUDA or a GPU:
    ``@unittest.skipIf(not torch.cuda.is_available(), ...)``, ``@onlyCUDA``,
    ``@RunIf(min_cuda_gpus=2)``, ``@pytest.mark.gpu``, ``@requires_cuda`` --
    every project spells its own. A parametrization counts only through the
    marks of its cases (``pytest.param("cuda", marks=RunIf(...))``): a plain
    ``@parametrize("d", ["cpu", "cuda"])`` runs the CPU case too."""
    expr = decorator.decorator
    dotted = full_name(expr.func if isinstance(expr, cst.Call) else expr) or ""
    if dotted.startswith("torch.") and not dotted.startswith("torch.testing."):
        return False  # torch's own API (``@torch.cuda.amp.custom_fwd``) gates nothing
    if "parametri" in dotted.rpartition(".")[2].lower():
        return any(
            isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value == "marks"
            and speaks_of_cuda(node.value)
            for node in subtree(expr)
        )
    return speaks_of_cuda(expr)


def speaks_of_cuda(expr: cst.CSTNode) -> bool:
    """Does a name or string in ``expr`` say cuda or gpu?"""
    for node in subtree(expr):
        if isinstance(node, cst.Name):
            if CUDA_WORD.search(node.value):
                return True
        elif isinstance(node, (cst.SimpleString, cst.FormattedStringText)) and CUDA_WORD.search(node.value):
            return True
    return False


# Words of a test that asks where things are: ``x.is_cuda``, ``y.device != x.device``, ``"mps"``, ``is_available()``.
DEVICE_WORD = re.compile(r"cuda|gpu|device|cpu|mps|is_available", re.I)


def speaks_of_devices(expr: cst.CSTNode) -> bool:
    """Does a name or string in ``expr`` speak of devices (``speaks_of_cuda``'s question, widened to the CPU,
    MPS and ``.device``)?"""
    for node in subtree(expr):
        if isinstance(node, (cst.Name, cst.SimpleString, cst.FormattedStringText)) and DEVICE_WORD.search(node.value):
            return True
    return False


def is_test_code(function: str, in_test_file: bool) -> bool:
    """Tests and their private helpers (``test_*``, ``_check_pair``) in a
    test module: they run where the suite's own gates put them (a GPU job, a
    skip decorator on the caller), so the device they name is deliberate.
    Public functions of a test module are code like any other."""
    private = function.startswith("_") and not function.startswith("__")
    return in_test_file and (function.startswith("test") or private)


@dataclass
class _Block:
    """A statement block being walked; ``cuda_only`` once the rest of it can
    only run with CUDA (after a no-CUDA exit or ``torch.cuda.set_device``)."""

    children: set = field(default_factory=set)
    cuda_only: bool = False


def _expects_failure(item: cst.WithItem) -> bool:
    """``with pytest.raises(...)`` / ``with self.assertRaisesRegex(...)``."""
    call = item.item
    if not isinstance(call, cst.Call):
        return False
    name = (full_name(call.func) or "").rpartition(".")[2]
    return name == "raises" or name.startswith("assertRaises")


class CudaGuards:
    """Mixin for a ``Rule``: tracks whether the walk is inside CUDA-only code.

    A subclass that defines one of these hooks itself must call ``super()``.
    """

    names: NameResolver

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._guard_depth = 0  # open guarded regions (if/ifexp/decorated defs/def cuda)
        self._guard_pushes: list[bool] = []  # per If/IfExp/def: did it open one?
        self._blocks: list[_Block] = []
        self._if_stack: list = []  # (If, its test is a no-CUDA test) being walked

    def cuda_guarded(self) -> bool:
        return self._guard_depth > 0 or any(block.cuda_only for block in self._blocks)

    # -- if / conditional expression ---------------------------------------
    def _push(self, guarded: bool) -> None:
        self._guard_pushes.append(guarded)
        self._guard_depth += guarded

    def _pop(self) -> None:
        self._guard_depth -= self._guard_pushes.pop()

    def visit_If(self, node: cst.If) -> None:
        # ``if not x.is_cuda: x = x.cuda()`` runs its body without CUDA: a
        # negated check guards the ``else`` branch only -- and every ``elif`` after
        # it (``if not torch.cuda.is_available(): ... elif args.distributed: m.cuda()``).
        inherited = False
        if self._if_stack and self._if_stack[-1][0].orelse is node:  # an ``elif``
            self._pop()  # the branch above it is left: its guard no longer holds
            inherited = self._else_guarded(self._if_stack[-1])
            self._push(inherited)
        negative = is_no_cuda_test(node.test, self.names)
        self._push((is_cuda_test(node.test) and not negative) or inherited)
        self._if_stack.append((node, negative, inherited))

    def visit_Else(self, node: cst.Else) -> None:
        if self._if_stack and self._if_stack[-1][0].orelse is node:
            self._pop()
            self._push(self._else_guarded(self._if_stack[-1]))

    @staticmethod
    def _else_guarded(frame: tuple) -> bool:
        """Does the ``else`` (or ``elif``) of this ``if`` run only where CUDA is?"""
        _, negative, inherited = frame
        return negative or inherited

    def leave_If(self, node: cst.If) -> None:
        self._if_stack.pop()
        self._pop()
        block = self._blocks[-1] if self._blocks else None
        if block is not None and id(node) in block.children:
            if is_no_cuda_test(node.test, self.names) and ends_block(node.body):
                block.cuda_only = True

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._push(is_cuda_test(node.test))

    def leave_IfExp(self, node: cst.IfExp) -> None:
        self._pop()

    def visit_With(self, node: cst.With) -> None:
        # Code written to fail (``with pytest.raises(...): m.cuda()``) is not a bug.
        self._push(any(_expects_failure(item) for item in node.items))

    def leave_With(self, node: cst.With) -> None:
        self._pop()

    # -- definitions -------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._push(
            bool(CUDA_WORD.search(node.name.value))  # ``def cuda``, ``load_module_gpu``: CUDA by its name
            or any(is_cuda_skip_decorator(d) for d in node.decorators)
            or is_test_code(node.name.value, self.context.is_test)
        )

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._push(any(is_cuda_skip_decorator(d) for d in node.decorators))

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._pop()

    # -- blocks, for early exits --------------------------------------------
    def visit_Module(self, node: cst.Module) -> None:
        self._blocks.append(_Block({id(s) for s in node.body}))

    def leave_Module(self, node: cst.Module) -> None:
        self._blocks.pop()

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._blocks.append(_Block({id(s) for s in node.body}))

    def leave_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._blocks.pop()

    def leave_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        # After ``torch.cuda.set_device(rank)`` the code has chosen its GPU and
        # ``.cuda()`` follows it; after an NCCL process group it has GPUs: the
        # rest of the block is CUDA-only code.
        block = self._blocks[-1] if self._blocks else None
        if block is None or block.cuda_only or id(node) not in block.children:
            return
        for small in node.body:
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                call = small.value
                if self.names.qualify(call.func) == "torch.cuda.set_device" or is_nccl_init(call, self.names):
                    block.cuda_only = True
            elif isinstance(small, cst.Assert) and is_cuda_test(small.test) \
                    and not is_no_cuda_test(small.test, self.names):
                block.cuda_only = True  # ``assert torch.cuda.is_available()``: an early exit without CUDA
