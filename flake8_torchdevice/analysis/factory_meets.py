"""The factory data flow of TDV502 and TDV504: a tensor made without ``device=`` inside a
function, followed to where it meets a value derived from the function's inputs, or to
one of the module's own layers.

``torch.zeros(n)`` inside a function makes a CPU tensor; combining it with a tensor
derived from the function's parameters fails once those live on a GPU. Metric helpers
cannot be found by name, so the flow follows the data within each function: parameters
-> values derived from them -> an operation that needs one device, with the factory's
result on the other side. Values are tracked flow-insensitively enough to stay cheap:
one pass over the statements in source order, one kind per local name.

``FactoryMeetings`` is a mixin for a ``Rule``; ``MODEL_ENTRIES`` says which functions the
rule decides (a model's ``forward`` / a metric's ``update``, or every other one), so the
two rules that share it never report the same call. A module's state (``self.theta``, a
registered buffer or parameter) and layers are where the module was moved in any of its
methods but ``__init__`` and the helpers only ``__init__`` calls: a meeting with them is
TDV504's, wherever it is (``module_state.py``).
"""

from __future__ import annotations

from typing import Optional

from .._lazy import cst
from ..names import dotted_name
from .code import code_of, paired_assignment
from .cuda_only import cuda_at_import
from .factory_kinds import annotation, decorator_name, impure, is_data_class, items_of_self, maybe_tensor, tagged
from .factory_values import FactoryValues
from .entry_helpers import entry_helpers
from .function_inputs import is_data_function
from .guards import (
    MarkedBlocks, availability_test, branch_blocks, is_cuda_flag, is_cuda_test, is_no_cuda_test, speaks_of_devices,
)
from .modules import class_kind
from .module_state import init_only_methods, state_methods
from .vocabulary import passes_device


class FactoryMeetings(FactoryValues):
    """The walk; the rule class gives ``MESSAGE``, ``LAYER_MESSAGE`` and ``MODEL_ENTRIES``."""

    MESSAGE = (
        "{factory}() without device= makes a CPU tensor, and it meets {root} (an input) in an "
        "operation that needs one device; pass device={root}.device"
    )
    LAYER_MESSAGE = (
        "{factory}() without device= makes a CPU tensor, and {layer} receives it: the layer's "
        "weights are on the module's device; pass device={device}"
    )
    STATE_MESSAGE = (
        "{factory}() without device= makes a CPU tensor, and it meets {root}, which the module registered "
        "and moves with it, in an operation that needs one device; pass device={root}.device"
    )
    OUTPUT_MESSAGE = (
        "{factory}() without device= makes a CPU tensor, and it meets the output of {layer}, which is on the "
        "module's device, in an operation that needs one device; pass device={device}"
    )
    FORCED_STATE_MESSAGE = (
        ".cuda() sends a tensor made without device= to the current GPU, and it meets {root}, which the module "
        "registered and moves with it (to the CPU, cuda:1); make it with device={root}.device"
    )
    # ``torch.ones(n).cuda()``: made without device=, then sent to the current GPU.
    FORCED_MESSAGE = (
        ".cuda() sends a tensor made without device= to the current GPU, and it meets {root} (an "
        "input), which is wherever the caller put it (the CPU, cuda:1); make it with device={root}.device"
    )
    FORCED_LAYER_MESSAGE = (
        ".cuda() sends a tensor made without device= to the current GPU, and {layer} receives it: "
        "the layer's weights are on the module's device (the CPU, cuda:1); make it with device={device}"
    )
    # False: every function but a model's entry point; True: those alone.
    MODEL_ENTRIES = False

    def __init__(self, context) -> None:
        super().__init__(context)
        # One env per function being walked; None for class bodies and
        # functions the rule leaves alone.
        self._frames: list[Optional[dict]] = []
        self._in_class: list[bool] = []
        self._data_class: list[bool] = []  # inside a Dataset/Sampler class
        self._model_class: list[Optional[str]] = []  # "module" / "metric" / None, per class
        self._class_names: list[str] = []
        # Blocks that run only where CUDA is missing (or the input is not on it): a tensor
        # made there meets nothing on a GPU.
        self._cpu_blocks = MarkedBlocks()
        # Blocks that run only where the code checked for CUDA or its own GPU switch is on
        # (``if torch.cuda.is_available():``, ``if self.use_gpu:``): a ``.cuda()`` there follows it.
        self._gpu_blocks = MarkedBlocks()
        self._gpu_tests = 0  # conditional expressions open whose test speaks of CUDA
        # Open ``if`` statements without ``else``: the names bound to a CPU factory before each.
        self._one_armed: list = []
        # Per outermost function: parameters seen used as tensors, and the
        # findings waiting for that evidence (a later line may provide it).
        self._groups: list[_Group] = []

    # -- scopes ---------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._frames.append(None)
        self._in_class.append(True)
        self._data_class.append(is_data_class(node) or bool(self._data_class and self._data_class[-1]))
        self._model_class.append(class_kind(self.names, node))
        self._class_names.append(node.name.value)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._frames.pop()
        self._in_class.pop()
        self._data_class.pop()
        self._model_class.pop()
        self._class_names.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        is_method = bool(self._in_class) and self._in_class[-1]
        outer = self._frames[-1] if self._frames else None
        name = node.name.value
        disabled = is_data_function(name) or (is_method and self._data_class[-1])
        # Layers and registered state are where the module was moved, except in ``__init__``, which
        # builds them on the CPU (``self.conv(torch.zeros(1, 4, 84, 84)).shape`` is fine there).
        module = is_method and self._model_class[-1] == "module" and name != "__init__"
        state_only = False
        if outer is None and not disabled:  # a unit of its own: whose is it, TDV502's or TDV504's?
            if self._is_model_entry(name, is_method) != self.MODEL_ENTRIES:
                # TDV504 also reads a module's other methods, for its registered state alone.
                state_only = self.MODEL_ENTRIES and module and not self.context.is_test and (
                    name in state_methods(self.names, self._class_names[-1]))
                disabled = not state_only
        if disabled or (self._frames and outer is None and not is_method):
            env = None
        else:
            if outer is None:
                self._groups.append(_Group(node, self._class_names[-1] if module else None, state_only))
            env = dict(outer) if outer else {}
            env.update(self._params(node, is_method))
        self._frames.append(env)
        self._in_class.append(False)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._frames.pop()
        self._in_class.pop()
        if self._groups and self._groups[-1].owner is node:
            self._report_group(self._groups.pop())

    def _is_model_entry(self, name: str, is_method: bool) -> bool:
        """A module's ``forward`` or a metric's ``update``/``forward``, or a module-level helper
        one of them hands its input to, outside test modules: their inputs are on the device
        the model or metric was moved to."""
        if self.context.is_test:
            return False
        if not is_method:  # a module-level helper the forward hands its input to (``pad(x, n)``)
            return not self._frames and name in entry_helpers(self.names)
        kind = self._model_class[-1]
        return name == "forward" and kind is not None or name == "update" and kind == "metric"

    def _params(self, node: cst.FunctionDef, is_method: bool) -> dict:
        params = node.params
        # A method TDV504 reads for the module's state alone: its parameters are not the model's input.
        state_only = self._groups[-1].state_only
        ordered = list(params.posonly_params) + list(params.params)
        static = any(decorator_name(d) == "staticmethod" for d in node.decorators)
        if is_method and not static and ordered:
            ordered = ordered[1:]  # self / cls: its attributes are not inputs
        env = {}
        for param in ordered + list(params.kwonly_params):
            name = param.name.value
            typed = annotation(param)
            env[name] = ("T", (name,), True) if maybe_tensor(param, typed) and not state_only else None
            self._groups[-1].params.append(name)
            if typed and "Tensor" in typed:
                self._groups[-1].evidence.add(name)
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param) and state_only:
                env[star.name.value] = None
            elif isinstance(star, cst.Param):
                env[star.name.value] = ("T", (star.name.value,), True)
                if star is params.star_arg:
                    self._groups[-1].stars.add(star.name.value)  # ``*inputs``: a tuple of inputs
        return env

    @property
    def _env(self) -> Optional[dict]:
        return self._frames[-1] if self._frames else None

    # -- statements -----------------------------------------------------
    def visit_Assign(self, node: cst.Assign) -> None:
        if self._env is None:
            return
        pairs = paired_assignment(node)
        if pairs is not None:  # ``left, right = x, y``: each name its own value
            kinds = [self._ev(value) for _, value in pairs]
            for (target, _), kind in zip(pairs, kinds):
                self._bind(target, kind)
            return
        kind = self._ev(node.value)
        for target in node.targets:
            self._bind(target.target, kind)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if self._env is not None and node.value is not None:
            self._bind(node.target, self._ev(node.value))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if self._env is None:
            return
        target, value = self._ev(node.target), self._ev(node.value)
        self._inplace(target, [value])
        if target is None and isinstance(node.target, cst.Name) and tagged(value, "T"):
            self._env[node.target.value] = impure(value)  # total = 0; total += x

    def visit_Expr(self, node: cst.Expr) -> None:
        self._eval_stmt(node.value)

    def visit_Return(self, node: cst.Return) -> None:
        self._eval_stmt(node.value)

    def visit_If(self, node: cst.If) -> None:
        self._eval_stmt(node.test)
        if self._env is None:
            return
        if node.orelse is None and not speaks_of_devices(node.test):
            # ``y = torch.zeros(1); if seqs: y = stack(seqs)``: the path past the body keeps the CPU tensor. A
            # test that asks where things are (``if x.is_cuda:``) makes the skipped body follow the devices.
            self._one_armed.append((node, {n: k for n, k in self._env.items() if tagged(k, "C")}))
        if availability_test(node.test, self.names):  # if torch.cuda.is_available(): ... else: <no CUDA>
            self._cpu_blocks.mark(branch_blocks(node.orelse))
        elif is_no_cuda_test(node.test, self.names):
            self._cpu_blocks.mark([id(node.body)])
            self._gpu_blocks.mark(branch_blocks(node.orelse))
            return
        if is_cuda_test(node.test):
            self._gpu_blocks.mark([id(node.body)])
        if is_cuda_flag(node.test):  # ``if cuda: ... else: <the switch's CPU path>``
            self._cpu_blocks.mark(branch_blocks(node.orelse))

    def leave_If(self, node: cst.If) -> None:
        if not self._one_armed or self._one_armed[-1][0] is not node:
            return
        cpu_before, env = self._one_armed.pop()[1], self._env
        for name, kind in cpu_before.items():
            if tagged(env.get(name), "T"):  # rebound from the input in the body only
                env[name] = kind

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._cpu_blocks.enter(node)
        self._gpu_blocks.enter(node)

    def leave_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._cpu_blocks.leave(node)
        self._gpu_blocks.leave(node)

    # ``if self.use_gpu: t = t.cuda()`` on one line: its body is no IndentedBlock.
    visit_SimpleStatementSuite = visit_IndentedBlock
    leave_SimpleStatementSuite = leave_IndentedBlock

    def visit_While(self, node: cst.While) -> None:
        self._eval_stmt(node.test)

    def visit_Assert(self, node: cst.Assert) -> None:
        self._eval_stmt(node.test)

    def visit_For(self, node: cst.For) -> None:
        if self._env is not None:
            kind = self._ev(node.iter)
            self._bind(node.target, kind if tagged(kind, "T") else None)  # items of an input
            group = self._groups[-1] if self._groups else None
            if group is not None and group.layers_of:
                # ``for layer in self.layers`` / ``zip(self.dims, self.rnns)``: the module's own layers
                group.loop_layers.update(items_of_self(node.target, node.iter))

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if self._env is not None:
            kind = self._ev(node.item)
            if node.asname is not None:
                self._bind(node.asname.name, kind)

    def _eval_stmt(self, expr: Optional[cst.BaseExpression]) -> None:
        if self._env is not None and expr is not None:
            self._ev(expr)

    def _bind(self, target: cst.BaseExpression, kind) -> None:
        env = self._env
        if isinstance(target, cst.Name):
            env[target.value] = kind
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind(element.value, kind if tagged(kind, "T") else None)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value, kind)
        elif isinstance(target, cst.Subscript):
            # cpu[cuda_indices] = v is an index_put_ with indices on another device.
            base = self._kind(target.value)
            for index in self._index_kinds(target):
                if tagged(base, "C") and tagged(index, "T"):
                    self._found(base, index)

    # -- expressions ------------------------------------------------------
    def _ev(self, expr: cst.BaseExpression):
        """The kind of ``expr``; records the combinations met on the way."""
        try:
            return self._kind(expr)
        except RecursionError:  # absurdly nested expressions: skip them
            return None

    def _found(self, cpu, tensor) -> None:
        if self._groups and not self._cpu_blocks.inside:  # a meeting where CUDA is missing is on the CPU
            self._groups[-1].findings.append((cpu[1], tensor[1]))

    def _report_group(self, group: "_Group") -> None:
        # Module code set a default device that may be CUDA: a factory without ``device=`` is made there,
        # with the modules built after it; only a factory sent on with ``.cuda()`` (forced) is still read.
        default_device = self.names.default_device_at_import
        # A module whose own code places on CUDA unguarded cannot be imported without a GPU: a ``.cuda()`` in it
        # sends the tensor to the current GPU, where that code put everything else (a CUDA-only script's RNN state).
        gpu_bound = bool(group.forced) and cuda_at_import(self.names)
        before_move = group.layers_of is not None and group.owner.name.value in init_only_methods(
            self.names, group.layers_of)
        for call, inputs_met in group.findings:
            if default_device and id(call) not in group.forced or gpu_bound and id(call) in group.forced:
                continue
            evident = [r for r in inputs_met if r in group.evidence and r not in group.cpu_bound]
            outputs = [r for r in evident if r.endswith("()")]  # a layer's output: where the module is
            evident = [r for r in evident if not r.endswith("()")]
            if outputs and not evident:
                self._report_output(call, group, outputs[0], before_move)
                continue
            state = [r for r in evident if r.startswith("self.")]
            if state and (not self.MODEL_ENTRIES or before_move):
                continue  # TDV504's (TDV502 leaves it), and not before the module can have been moved
            if not evident:
                continue  # maybe a number (rank, scale): precision first
            if passes_device(call):
                continue
            # ``*inputs`` is a tuple: its first element has the device.
            root = f"{evident[0]}[0]" if evident[0] in group.stars else evident[0]
            if id(call) in group.forced:
                forced = self.FORCED_STATE_MESSAGE if state else self.FORCED_MESSAGE
                self.report(call, forced.format(root=state[0] if state else root))
                continue
            # The callee as dotted text: one line, whatever its layout (``torch . ones``).
            factory = dotted_name(call.func) or code_of(call.func)
            message = self.STATE_MESSAGE if state else self.MESSAGE
            self.report(call, message.format(factory=factory, root=state[0] if state else root))
        inputs = [name for name in group.params if name in group.evidence]
        device = f"{inputs[0]}.device" if inputs else "next(self.parameters()).device"
        # A module's layers outside its entry point are TDV504's too, as its registered state is.
        layers_here = group.layers_of is None or self.context.is_test or (self.MODEL_ENTRIES and not before_move)
        for call, attr in group.layer_findings if layers_here else ():
            if passes_device(call) or default_device and id(call) not in group.forced:
                continue
            if gpu_bound and id(call) in group.forced:
                continue
            if id(call) in group.forced:
                self.report(call, self.FORCED_LAYER_MESSAGE.format(layer=attr, device=device))
                continue
            factory = dotted_name(call.func) or code_of(call.func)
            self.report(call, self.LAYER_MESSAGE.format(factory=factory, layer=attr, device=device))

    def _report_output(self, call: cst.Call, group: "_Group", output: str, before_move: bool) -> None:
        """A factory that meets only a layer's output: the module's device. A ``.cuda()`` of it goes to the
        current GPU, which CUDA-only code shares with the module: left to the input and state forms."""
        if not self.MODEL_ENTRIES or before_move or id(call) in group.forced or passes_device(call):
            return
        inputs = [name for name in group.params if name in group.evidence]
        device = f"{inputs[0]}.device" if inputs else "next(self.parameters()).device"
        factory = dotted_name(call.func) or code_of(call.func)
        self.report(call, self.OUTPUT_MESSAGE.format(factory=factory, layer=output[:-2], device=device))


class _Group:
    __slots__ = ("owner", "layers_of", "state_only", "params", "evidence", "cpu_bound", "findings",
                 "layer_findings", "loop_layers", "forced", "stars")

    def __init__(self, owner: cst.FunctionDef, layers_of: Optional[str], state_only: bool = False) -> None:
        self.owner = owner
        self.layers_of = layers_of  # the module class whose ``self.<layer>(...)`` calls count
        self.state_only = state_only  # a method other than the entry point: its state is all it reads
        self.params: list = []  # the unit's parameters, in order
        self.evidence: set = set()
        self.cpu_bound: set = set()
        self.findings: list = []
        self.layer_findings: list = []  # (factory call, what names the layer)
        self.loop_layers: dict = {}  # loop variable -> the self attribute it iterates
        self.forced: set = set()  # ids of ``.cuda()`` calls sending a factory's tensor to the current GPU
        self.stars: set = set()  # the ``*args`` parameter's name
