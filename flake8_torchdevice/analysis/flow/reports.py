"""The rules' side: report one list of each scope's flow."""

from __future__ import annotations

from ..._lazy import cst
from .analysis import flow_of, start_file
from .values import Flow, Meet
from .words import DEFAULT_DEVICE_WORDS


class FlowReports:
    """Mixin for a ``Rule`` that reports one list of the device flow: each
    function on its own, and the module's top level as one scope."""

    # A module-level ``torch.set_default_tensor_type(...)`` is a fact every function reads.
    READS = DEFAULT_DEVICE_WORDS

    def _findings(self, flow: Flow) -> list:  # overridden
        return []

    def _message(self, meet: Meet) -> str:  # overridden
        return ""

    def visit_FunctionDef(self, node: "cst.FunctionDef") -> None:
        for meet in self._findings(flow_of(self.context, node)):
            self.report(meet.node, self._message(meet))

    def visit_Module(self, node: "cst.Module") -> None:
        start_file(self.context, node)
        for meet in self._findings(flow_of(self.context, node)):
            self.report(meet.node, self._message(meet), statement=meet.statement)
