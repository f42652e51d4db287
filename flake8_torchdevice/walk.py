"""One batched walk over a LibCST tree for every active rule.

LibCST's own ``visit`` rebuilds each node while walking and visits every
whitespace and comment node; rules never look at those. This walker reads
the dataclass fields directly, skips pure-syntax fields, and is iterative so
that deeply nested code cannot overflow the interpreter stack.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import libcst as cst

from .analysis.code import child_fields as _child_fields, children as _children

Hook = Callable[[cst.CSTNode], object]


class BatchedWalker:
    """Dispatches ``visit_<Type>``/``leave_<Type>`` of many visitors in one walk."""

    def __init__(
        self,
        visitors: Sequence[object],
        pre_visit: Hook | None = None,
        pre_visit_types: tuple[type, ...] | None = None,
        scope: tuple[Hook, Hook, tuple[type, ...]] | None = None,
    ) -> None:
        """``pre_visit`` runs before the visitors on nodes of ``pre_visit_types``
        (all if None); ``scope`` is (enter, leave, types): ``enter`` runs
        before every visitor on those nodes, ``leave`` after every visitor left."""
        self._visitors = visitors
        self._pre_visit = pre_visit
        self._pre_visit_types = pre_visit_types
        self._scope = scope
        # For every subset of the visitors that walks a statement (None: all of them): those visitors and
        # their plan per node type, built as node types are met.
        self._plans: dict = {None: ({}, visitors)}
        self._plan: dict[type, tuple[tuple[str, ...], list, list]] = {}
        self._subset: Sequence[object] = visitors
        self._use(None)

    def _use(self, subset: Optional[tuple]) -> None:
        """Walk with the visitors at positions ``subset`` (None: all); the hooks run on every node either way."""
        known = self._plans.get(subset)
        if known is None:
            known = self._plans[subset] = ({}, [self._visitors[i] for i in subset])
        self._plan, self._subset = known

    def _plan_for(self, node_type: type):
        plan = self._plan.get(node_type)
        if plan is None:
            name = node_type.__name__
            visits = [getattr(v, "visit_" + name) for v in self._subset if hasattr(v, "visit_" + name)]
            types = self._pre_visit_types
            if self._pre_visit is not None and (types is None or issubclass(node_type, types)):
                visits.insert(0, self._pre_visit)
            leaves = [getattr(v, "leave_" + name) for v in self._subset if hasattr(v, "leave_" + name)]
            if self._scope is not None and issubclass(node_type, self._scope[2]):
                visits.insert(0, self._scope[0])
                leaves.append(self._scope[1])
            plan = (_child_fields(node_type), visits, leaves)
            self._plan[node_type] = plan
        return plan

    def walk_module(self, module: cst.Module, on_statement: Callable[[int], object],
                    walkers: Optional[Sequence[tuple]] = None) -> None:
        """``walk(module)``, calling ``on_statement(i)`` before ``module.body[i]``
        (the engine then knows which top-level statement a report is in). ``walkers[i]``: the
        positions of the visitors that walk ``module.body[i]`` (all of them visit the module itself)."""
        self._use(None)
        plan = self._plan.get(cst.Module) or self._plan_for(cst.Module)
        for visit in plan[1]:
            visit(module)
        for index, statement in enumerate(module.body):
            on_statement(index)
            self._use(None if walkers is None else walkers[index])
            self.walk(statement)
        self._use(None)
        for leave in plan[2]:
            leave(module)

    def walk(self, root: cst.CSTNode) -> None:
        # Stack items: (node, entered). A node is visited when first popped,
        # re-pushed as entered, and left after all its children.
        stack: list = [(root, False)]
        pop, push = stack.pop, stack.append
        plans = self._plan
        while stack:
            node, entered = pop()
            plan = plans.get(type(node)) or self._plan_for(type(node))
            if entered:
                for leave in plan[2]:
                    leave(node)
                continue
            for visit in plan[1]:
                visit(node)
            if plan[2]:  # no visitor leaves this type: no second pop
                push((node, True))
            children = _children(node, plan[0])
            for index in range(len(children) - 1, -1, -1):
                push((children[index], False))
