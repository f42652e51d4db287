"""Tests of where a value is (``x.is_cuda``), as opposed to tests of the machine
(``torch.cuda.is_available()``), and the branches in which such a value may be off CUDA.

A value test says the function takes values on either device; it keeps state next to
its input (``if p.is_cuda: self.grid = self.grid.cuda()``). It shows code written for a
CPU value only in the branch the test sends that value to: the ``else`` of ``if
x.is_cuda:`` (or the rest of the block after its body returns), the body of ``if not
x.is_cuda:``. A ``.cuda()`` there breaks exactly the
case the author wrote for (WaveGlow's ``else: torch.cuda.FloatTensor(...)``)."""

from __future__ import annotations

from .._lazy import cst
from .code import subtree
from .guards import AVAILABILITY_CALLS, asks_where_a_value_is, ends_block


def value_device_test(expr: cst.CSTNode, names) -> bool:
    """``x.is_cuda`` or ``x.type() == "torch.cuda.HalfTensor"`` in the test, and no question of the
    machine (``torch.cuda.is_available()``, ``device_count()``) beside it."""
    value = False
    for node in subtree(expr):
        if isinstance(node, cst.Call) and names.qualify(node.func) in AVAILABILITY_CALLS:
            return False
        value = value or asks_where_a_value_is(node)
    return value


class ValueTestBranches:
    """Mixin for a ``Rule`` (before ``CudaGuards`` in its bases): whether the walk is in a branch a
    value test sends a CPU value to. A subclass that defines these hooks itself must call ``super()``."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._cpu_value_branches: set[int] = set()  # ids of the Else / If (elif) / IndentedBlock nodes
        self._cpu_value_depth = 0
        self._rest_of_block: list[bool] = []  # per open block: the rest follows ``if x.is_cuda: return ...``
        self._returning_tests: set[int] = set()  # ids of ``if x.is_cuda:`` whose body leaves the block

    def in_cpu_value_branch(self) -> bool:
        return self._cpu_value_depth > 0

    def _enter(self, node) -> None:
        self._cpu_value_depth += id(node) in self._cpu_value_branches

    def _leave(self, node) -> None:
        self._cpu_value_depth -= id(node) in self._cpu_value_branches

    def visit_If(self, node: cst.If) -> None:
        super().visit_If(node)
        self._enter(node)  # an ``elif`` of ``if x.is_cuda:``
        if value_device_test(node.test, self.names):
            negative = self._if_stack[-1][1]  # CudaGuards.visit_If's ``is_no_cuda_test`` of this test
            branch = node.body if negative else node.orelse
            if branch is not None:
                self._cpu_value_branches.add(id(branch))
            if not negative and ends_block(node.body):
                self._returning_tests.add(id(node))

    def leave_If(self, node: cst.If) -> None:
        self._leave(node)
        super().leave_If(node)
        if id(node) in self._returning_tests and self._rest_of_block and not self._rest_of_block[-1]:
            self._rest_of_block[-1] = True
            self._cpu_value_depth += 1

    def visit_Else(self, node: cst.Else) -> None:
        super().visit_Else(node)
        self._enter(node)

    def leave_Else(self, node: cst.Else) -> None:
        self._leave(node)

    def visit_Module(self, node: cst.Module) -> None:
        super().visit_Module(node)
        self._rest_of_block.append(False)

    def leave_Module(self, node: cst.Module) -> None:
        self._cpu_value_depth -= self._rest_of_block.pop()
        super().leave_Module(node)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        super().visit_IndentedBlock(node)
        self._enter(node)
        self._rest_of_block.append(False)

    def leave_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._cpu_value_depth -= self._rest_of_block.pop()
        self._leave(node)
        super().leave_IndentedBlock(node)
