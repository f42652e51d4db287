"""One scope's walk, and the place where two kinds of value meet."""

from __future__ import annotations

from typing import Optional

from ..._lazy import cst
from .calls import Calls
from .expressions import Expressions
from .loops import Loops
from .statements import Statements, body_of, params_of
from .values import CPU, Flow, INPUT, Meet, PLACED, SIBLING, Value


def flow_of(context, node: "cst.CSTNode") -> Flow:
    """The flow of a function (``FunctionDef``) or of a module's top level
    (``Module``), computed once per file and shared by the rules."""
    cache = context.__dict__.setdefault("_device_flow", {})
    key = id(node)
    if key not in cache:
        cache[key] = (node, _Analysis(context).run(node))
    return cache[key][1]


class _Analysis(Statements, Loops, Expressions, Calls):
    """One scope's walk: the mixins walk statements, loops, expressions and
    calls; this class holds the state and records where values meet."""

    def __init__(self, context) -> None:
        self.names = context.names
        self.is_test = context.is_test
        self.flow = Flow()
        self.mute = 0
        self.pending: list = []  # (node, sibling, placed, loop, statement): decided at the end
        self.index: Optional[int] = None  # the module-level statement being walked

    # -- scopes -----------------------------------------------------------
    def run(self, node) -> Flow:
        env: dict = {}
        if isinstance(node, cst.FunctionDef):
            for param in params_of(node):
                env[param] = Value(INPUT, param, param=True)
            body = body_of(node.body)
        else:
            body = node.body
        try:
            if isinstance(node, cst.FunctionDef):
                self.block(body, env)
            else:
                for index, statement in enumerate(body):
                    self.index = index
                    self.statement(statement, env)
        except RecursionError:
            return Flow()
        for where, sibling, placed, loop, index in self.pending:
            if loop.moved and sibling.label not in loop.moved and loop.elements.get(sibling.label, sibling).evidence:
                self.flow.siblings.append(Meet(where, sibling, placed, index))
        return self.flow

    def meet(self, node, a: Optional[Value], b: Optional[Value], evident: bool = False, module: bool = False) -> None:
        """``a`` and ``b`` meet in an op that needs one device. ``evident``: the op
        itself proves both are tensors (a loss, ``torch.cat``, a module call)."""
        if a is None or b is None or self.mute:
            return
        for cpu, placed in ((a, b), (b, a)):
            if placed.kind != PLACED:
                continue
            if cpu.kind == CPU and not cpu.zero:
                if cpu.factory and placed.param and not module:
                    continue  # TDV502 reports a factory meeting an input
                self.flow.meets.append(Meet(node, cpu, placed, self.index))
            elif cpu.kind == SIBLING and not module:
                if evident:
                    cpu.evidence = True
                self.pending.append((node, cpu, placed, cpu.loop, self.index))

    def record_numpy(self, node, value: Value) -> None:
        if not self.mute:
            self.flow.numpys.append(Meet(node, None, value, self.index))
