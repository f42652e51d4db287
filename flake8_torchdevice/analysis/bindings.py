"""Assignments handed to one method: the visitor pair several rules share."""

from __future__ import annotations


class AssignmentBindings:
    """Mixin for a visitor: each target of ``x = v`` (``a = b = v`` has two), and an
    annotated target given a value (``x: T = v``), goes to ``self._bind(target, value)``;
    an annotation alone (``x: T``) binds nothing."""

    def visit_Assign(self, node: "cst.Assign") -> None:  # noqa: F821 - libcst loads lazily
        for target in node.targets:
            self._bind(target.target, node.value)

    def visit_AnnAssign(self, node: "cst.AnnAssign") -> None:  # noqa: F821
        if node.value is not None:
            self._bind(node.target, node.value)
