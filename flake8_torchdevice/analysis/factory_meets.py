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
two rules that share it never report the same call.
"""

from __future__ import annotations

from typing import Optional

from .._lazy import cst
from ..names import dotted_name
from .code import code_of
from .factory_kinds import (
    COMBINE_FUNCS,
    COMBINE_METHODS,
    COMPARE_OPS,
    GROWS_DIMS,
    META_ATTRS,
    NOT_COMBINING_INPLACE,
    SCALAR_BUILTINS,
    SCALAR_METHODS,
    SHAPE_FACTORIES,
    TENSOR_MEMBERS,
    TORCH_NON_TENSOR,
    VARIABLES,
    annotation,
    decorator_name,
    flat_args,
    impure,
    is_data_class,
    is_literal,
    is_none_index,
    is_self,
    is_self_member,
    is_string_index,
    is_tensor_op,
    items_of_self,
    maybe_tensor,
    reduces_all,
    tagged,
    tensor_arg,
    union_of_roots,
)
from .flow.calls import dtype_only
from .function_inputs import is_data_function
from .guards import MarkedBlocks, availability_test, branch_blocks, is_no_cuda_test
from .modules import class_kind, is_layer_attribute
from .vocabulary import (
    DATA_FACTORIES,
    MOVED_OR_CONVERTED,
    QUALIFIED_FACTORIES,
    factory_name,
    maybe_zero_dim,
    passes_device,
)


class FactoryMeetings:
    """The walk; the rule class gives ``MESSAGE``, ``LAYER_MESSAGE`` and ``MODEL_ENTRIES``."""

    MESSAGE = (
        "{factory}() without device= makes a CPU tensor, and it meets {root} (an input) in an "
        "operation that needs one device; pass device={root}.device"
    )
    LAYER_MESSAGE = (
        "{factory}() without device= makes a CPU tensor, and {layer} receives it: the layer's "
        "weights are on the module's device; pass device={device}"
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
        if outer is None and not disabled:  # a unit of its own: whose is it, TDV502's or TDV504's?
            disabled = self._is_model_entry(name, is_method) != self.MODEL_ENTRIES
        if disabled or (self._frames and outer is None and not is_method):
            env = None
        else:
            if outer is None:
                # Layers are where the module was moved, except in ``__init__``, which builds
                # them on the CPU (``self.conv(torch.zeros(1, 4, 84, 84)).shape`` is fine there).
                module = is_method and self._model_class[-1] == "module" and name != "__init__"
                self._groups.append(_Group(node, self._class_names[-1] if module else None))
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
        """A module's ``forward`` or a metric's ``update``/``forward``, outside test modules:
        their inputs are on the device the model or metric was moved to."""
        if not is_method or self.context.is_test:
            return False
        kind = self._model_class[-1]
        return name == "forward" and kind is not None or name == "update" and kind == "metric"

    def _params(self, node: cst.FunctionDef, is_method: bool) -> dict:
        params = node.params
        ordered = list(params.posonly_params) + list(params.params)
        static = any(decorator_name(d) == "staticmethod" for d in node.decorators)
        if is_method and not static and ordered:
            ordered = ordered[1:]  # self / cls: its attributes are not inputs
        env = {}
        for param in ordered + list(params.kwonly_params):
            name = param.name.value
            typed = annotation(param)
            env[name] = ("T", (name,), True) if maybe_tensor(param, typed) else None
            self._groups[-1].params.append(name)
            if typed and "Tensor" in typed:
                self._groups[-1].evidence.add(name)
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                env[star.name.value] = ("T", (star.name.value,), True)
        return env

    @property
    def _env(self) -> Optional[dict]:
        return self._frames[-1] if self._frames else None

    # -- statements -----------------------------------------------------
    def visit_Assign(self, node: cst.Assign) -> None:
        if self._env is not None:
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
        if availability_test(node.test, self.names):  # if torch.cuda.is_available(): ... else: <no CUDA>
            self._cpu_blocks.mark(branch_blocks(node.orelse))
        elif is_no_cuda_test(node.test, self.names):
            self._cpu_blocks.mark([id(node.body)])

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._cpu_blocks.enter(node)

    def leave_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._cpu_blocks.leave(node)

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

    def _kind(self, expr):
        if isinstance(expr, cst.Name):
            return self._env.get(expr.value)
        if isinstance(expr, cst.Call):
            return self._call(expr)
        if isinstance(expr, cst.Attribute):
            base = self._kind(expr.value)
            self._used_as_tensor(base, expr.attr.value)
            return None if expr.attr.value in META_ATTRS else base
        if isinstance(expr, cst.BinaryOperation):
            return self._combine(self._kind(expr.left), self._kind(expr.right))
        if isinstance(expr, cst.Comparison):
            return self._compare(expr)
        if isinstance(expr, cst.Subscript):
            base = self._kind(expr.value)
            indices = self._index_kinds(expr)
            if len(expr.slice) > 1 or any(is_none_index(e) for e in expr.slice):
                self._used_as_tensor(base, None)  # x[:, None]: no list is indexed so
            plain = all(isinstance(e.slice, cst.Index) and not is_none_index(e) for e in expr.slice)
            if tagged(base, "T") and any(is_string_index(e) for e in expr.slice):
                return impure(base)  # batch["key"]: a mapping, not a tensor
            if tagged(base, "C") and plain and not any(k is not None for k in indices):
                return ("C", base[1], True)  # counts[j]: maybe one element (precision first)
            return base
        if isinstance(expr, cst.UnaryOperation):
            kind = self._kind(expr.expression)
            return None if isinstance(expr.operator, cst.Not) else kind
        if isinstance(expr, cst.IfExp):
            self._kind(expr.test)
            body, orelse = self._kind(expr.body), self._kind(expr.orelse)
            return body if body is not None and orelse is not None and body[0] == orelse[0] else None
        if isinstance(expr, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            self._comprehension(expr)
            return None
        if isinstance(expr, cst.NamedExpr):
            kind = self._kind(expr.value)
            self._bind(expr.target, kind)
            return kind
        if isinstance(expr, cst.Lambda):
            return None  # its own scope
        if isinstance(expr, (cst.Tuple, cst.List)):
            kinds = [self._kind(element.value) for element in expr.elements]
            if kinds and all(tagged(k, "C") for k in kinds):  # (h0, c0): an RNN's CPU state
                return ("C", kinds[0][1], all(k[2] for k in kinds))
            return None
        self._children(expr)
        return None

    def _children(self, expr: cst.CSTNode) -> None:
        """Evaluate the nested expressions of a node we do not model."""
        if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
            for element in expr.elements:
                self._kind(element.value)
        elif isinstance(expr, cst.Dict):
            for element in expr.elements:
                if isinstance(element, cst.DictElement):
                    self._kind(element.key)
                self._kind(element.value)
        elif isinstance(expr, cst.BooleanOperation):
            self._kind(expr.left)
            self._kind(expr.right)
        elif isinstance(expr, (cst.Await, cst.Yield, cst.StarredElement)):
            inner = expr.expression if isinstance(expr, cst.Await) else expr.value
            if isinstance(inner, cst.BaseExpression):
                self._kind(inner)
        elif isinstance(expr, cst.Slice):
            for part in (expr.lower, expr.upper, expr.step):
                if part is not None:
                    self._kind(part)

    def _index_kinds(self, subscript: cst.Subscript) -> list:
        kinds = []
        for element in subscript.slice:
            if isinstance(element.slice, cst.Index):
                kinds.append(self._kind(element.slice.value))
            else:
                self._children(element.slice)
        return kinds

    def _comprehension(self, expr) -> None:
        saved = dict(self._env)
        clause = expr.for_in
        while clause is not None:
            kind = self._kind(clause.iter)
            self._bind(clause.target, kind if tagged(kind, "T") else None)
            for condition in clause.ifs:
                self._kind(condition.test)
            clause = clause.inner_for_in
        if isinstance(expr, cst.DictComp):
            self._kind(expr.key)
            self._kind(expr.value)
        else:
            self._kind(expr.elt)
        self._env.clear()
        self._env.update(saved)

    def _compare(self, expr: cst.Comparison):
        left = self._kind(expr.left)
        result = left
        for target in expr.comparisons:
            right = self._kind(target.comparator)
            if type(target.operator).__name__ in COMPARE_OPS:
                result = self._combine(left, right)
            else:
                result = None  # in / is: Python-level
            left = right
        return result

    def _combine(self, left, right):
        """An out-of-place op of two operands; returns the result's kind."""
        for a, b in ((left, right), (right, left)):
            if tagged(a, "C") and tagged(b, "T") and not a[2]:
                self._found(a, b)
        tensors = [k for k in (left, right) if tagged(k, "T")]
        if tensors:
            pure = all(k is None or (tagged(k, "T") and k[2]) for k in (left, right))
            return ("T", union_of_roots(tensors), pure)
        cpu = [k for k in (left, right) if tagged(k, "C")]
        if cpu:
            return ("C", cpu[0][1], all(k[2] for k in cpu))
        return None

    def _inplace(self, target, others: list) -> None:
        """``target op= other`` / ``target.op_(other)``: into a CPU tensor is never
        exempt; a CPU 0-dim argument next to a CUDA target is."""
        for other in others:
            if tagged(target, "C") and tagged(other, "T"):
                self._found(target, other)
            elif tagged(target, "T") and tagged(other, "C") and not other[2]:
                self._found(other, target)

    def _call(self, call: cst.Call):
        qualified = self.names.qualify(call.func)
        if qualified is not None and (qualified in QUALIFIED_FACTORIES or is_tensor_op(qualified)):
            return self._torch_call(call, qualified)
        if isinstance(call.func, cst.Attribute):
            return self._method_call(call, call.func)
        args = [self._kind(arg.value) for arg in call.args]
        if isinstance(call.func, cst.Name) and call.func.value in SCALAR_BUILTINS:
            if call.func.value == "range":
                self._forget_sizes(call)
            return None
        if qualified in VARIABLES and args:
            return args[0]  # Variable(t) is t (a no-op wrapper since torch 0.4)
        self._kind(call.func)
        label = self._layer_of_self(call.func)
        if label and any(tagged(k, "T") for k in args):  # layer(output, hidden): a layer run on the input
            self._cpu_into_layer(call, label, args)
        tensors = [k for k in args if tagged(k, "T")]
        return ("T", union_of_roots(tensors), False) if tensors else None  # helper(x): derived, maybe

    def _torch_call(self, call: cst.Call, qualified: str):
        if factory_name(self.names, call):
            return self._factory(call, qualified)
        kinds = [k for arg in call.args for k in self._arg_kinds(arg)]
        if qualified in TORCH_NON_TENSOR:
            return None
        tensor_args = [k for arg, k in zip(flat_args(call), kinds) if tensor_arg(arg)]
        for kind in tensor_args:
            self._used_as_tensor(kind, None)
        if qualified in COMBINE_FUNCS:
            inputs = [k for k in tensor_args if tagged(k, "T")]
            for kind in tensor_args:
                if inputs and tagged(kind, "C") and not kind[2]:
                    self._found(kind, inputs[0])
        tensors = [k for k in tensor_args if tagged(k, "T")]
        if tensors:
            return ("T", union_of_roots(tensors), all(k[2] for k in tensors))
        positional = [(arg, k) for arg, k in zip(flat_args(call), kinds) if arg.keyword is None]
        cpu = [k for _, k in positional if tagged(k, "C")]
        if cpu and all(tagged(k, "C") or is_literal(arg.value) for arg, k in positional):
            whole = reduces_all(qualified.rpartition(".")[2], call, positional=len(positional) - 1)
            return ("C", cpu[0][1], whole or all(k[2] for k in cpu))  # torch.sin(cpu) stays on the CPU
        return None

    def _factory(self, call: cst.Call, qualified: str):
        kinds = [self._kind(arg.value) for arg in call.args]
        if any(arg.star == "**" or (arg.keyword and arg.keyword.value in ("device", "out")) for arg in call.args):
            return None
        if qualified in DATA_FACTORIES and kinds and tagged(kinds[0], "T"):
            return impure(kinds[0])  # torch.tensor(x) / as_tensor(x) keep x's device
        if qualified in SHAPE_FACTORIES:
            self._forget_sizes(call)
        if self._cpu_blocks.inside:
            return None  # made where no GPU is: whatever it meets is on the CPU too
        return ("C", call, maybe_zero_dim(qualified, call))

    def _forget_sizes(self, call: cst.Call) -> None:
        """A name passed as a size is a number, whatever it was thought to be."""
        for arg in call.args:
            if arg.keyword is None and isinstance(arg.value, cst.Name) and arg.value.value in self._env:
                self._env[arg.value.value] = None

    def _method_call(self, call: cst.Call, func: cst.Attribute):
        receiver = self._kind(func.value)
        method = func.attr.value
        self._used_as_tensor(receiver, method)
        if method == "numpy" and tagged(receiver, "T") and receiver[2] and self._groups:
            self._groups[-1].cpu_bound.update(receiver[1])  # x.numpy() fails on a GPU: CPU code
        args = [self._kind(arg.value) for arg in call.args if tensor_arg(arg)]
        for arg in call.args:
            if not tensor_arg(arg):
                self._kind(arg.value)
        if receiver is None and is_self(func.value) and self._groups and self._groups[-1].layers_of:
            self._layer_call(call, method, args)
        if method in SCALAR_METHODS or (method in MOVED_OR_CONVERTED and not tagged(receiver, "T")):
            return None
        if method in ("to", "cuda") and not dtype_only(call, self.names):
            return None  # an input moved to a device: TDV601 follows it from here
        if method == "cpu":
            return receiver if tagged(receiver, "C") else None
        inplace = method.endswith("_") and not method.startswith("_") and method not in NOT_COMBINING_INPLACE
        if inplace:
            self._inplace(receiver, args)
        elif method in COMBINE_METHODS:
            for arg in args:
                self._combine(receiver, arg)
        if tagged(receiver, "T"):
            return receiver
        if receiver is None:
            # self.fc(x) / self._helper(x): derived from x; other objects'
            # methods (sizevars.hint(n), np.sum(x)) may return anything.
            tensors = [k for k in args if tagged(k, "T")] if is_self_member(func.value) else []
            return ("T", union_of_roots(tensors), False) if tensors else None
        zero = (receiver[2] and method not in GROWS_DIMS) or reduces_all(method, call, positional=len(call.args))
        return ("C", receiver[1], zero)

    def _arg_kinds(self, arg: cst.Arg) -> list:
        """Kinds of an argument, looking into a literal list/tuple (torch.cat([...]))."""
        if isinstance(arg.value, (cst.List, cst.Tuple)):
            return [self._kind(e.value) for e in arg.value.elements]
        return [self._kind(arg.value)]

    def _used_as_tensor(self, kind, member: Optional[str]) -> None:
        """A parameter read through a tensor attribute/method, or passed to a
        torch function, is a tensor: findings against it become certain."""
        if tagged(kind, "T") and kind[2] and (member is None or member in TENSOR_MEMBERS) and self._groups:
            self._groups[-1].evidence.update(kind[1])

    def _layer_call(self, call: cst.Call, attr: str, args: list) -> None:
        """``self.pos_emb(torch.arange(n))`` in a module: a CPU tensor handed to a layer,
        whose weights are wherever the module was moved."""
        if is_layer_attribute(self.names, self._groups[-1].layers_of, attr):
            self._cpu_into_layer(call, f"self.{attr}", args)

    def _layer_of_self(self, func: cst.BaseExpression) -> Optional[str]:
        """How to name ``func`` if it is one of a module's layers taken from ``self``: a loop
        variable over ``self.rnns`` or an item ``self.rnns[i]``."""
        group = self._groups[-1] if self._groups else None
        if group is None or not group.layers_of:
            return None
        if isinstance(func, cst.Name) and func.value in group.loop_layers:
            return f"{func.value} (a layer of self.{group.loop_layers[func.value]})"
        if isinstance(func, cst.Subscript) and isinstance(func.value, cst.Attribute) and is_self(func.value.value):
            return f"self.{func.value.attr.value}[...]"
        return None

    def _cpu_into_layer(self, call: cst.Call, label: str, args: list) -> None:
        cpu = [k for k in args if tagged(k, "C") and not k[2]]
        if cpu and not self._cpu_blocks.inside:  # a layer run where CUDA is missing is on the CPU
            self._groups[-1].layer_findings.append((cpu[0][1], label))

    # -- reporting ------------------------------------------------------
    def _found(self, cpu, tensor) -> None:
        if self._groups and not self._cpu_blocks.inside:  # a meeting where CUDA is missing is on the CPU
            self._groups[-1].findings.append((cpu[1], tensor[1]))

    def _report_group(self, group: "_Group") -> None:
        for call, inputs_met in group.findings:
            evident = [r for r in inputs_met if r in group.evidence and r not in group.cpu_bound]
            if not evident:
                continue  # maybe a number (rank, scale): precision first
            if passes_device(call):
                continue
            # The callee as dotted text: one line, whatever its layout (``torch . ones``).
            factory = dotted_name(call.func) or code_of(call.func)
            self.report(call, self.MESSAGE.format(factory=factory, root=evident[0]))
        inputs = [name for name in group.params if name in group.evidence]
        device = f"{inputs[0]}.device" if inputs else "next(self.parameters()).device"
        for call, attr in group.layer_findings:
            if passes_device(call):
                continue
            factory = dotted_name(call.func) or code_of(call.func)
            self.report(call, self.LAYER_MESSAGE.format(factory=factory, layer=attr, device=device))


class _Group:
    __slots__ = ("owner", "layers_of", "params", "evidence", "cpu_bound", "findings", "layer_findings",
                 "loop_layers")

    def __init__(self, owner: cst.FunctionDef, layers_of: Optional[str]) -> None:
        self.owner = owner
        self.layers_of = layers_of  # the module class whose ``self.<layer>(...)`` calls count
        self.params: list = []  # the unit's parameters, in order
        self.evidence: set = set()
        self.cpu_bound: set = set()
        self.findings: list = []
        self.layer_findings: list = []  # (factory call, what names the layer)
        self.loop_layers: dict = {}  # loop variable -> the self attribute it iterates
