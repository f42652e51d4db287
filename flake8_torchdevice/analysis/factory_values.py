"""The expressions of the factory data flow (``factory_meets.py``): what kind of value each
expression gives (a CPU factory result, a value derived from the inputs, a tensor, a layer of
``self``), and where two kinds meet in an operation that needs one device.

``FactoryValues`` is a mixin of ``FactoryMeetings``, which holds the state (the current
group, the names' kinds) and the statements' walk.
"""

from __future__ import annotations

from typing import Optional

from .._lazy import cst
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
    flat_args,
    impure,
    is_literal,
    is_mask,
    none_default,
    is_none_index,
    is_self,
    is_self_member,
    is_string_index,
    is_tensor_op,
    tagged,
    tensor_arg,
    union_of_roots,
)
from .devices import device_argument
from .guards import is_cuda_test
from .flow.places import cpu_type_cast, dtype_only
from .modules import is_layer_attribute
from .module_state import state_attributes
from .vocabulary import (
    CTC_FUNCTIONS,
    DATA_FACTORIES,
    FUNCTIONAL_LOSSES,
    MOVED_OR_CONVERTED,
    QUALIFIED_FACTORIES,
    factory_name,
    maybe_zero_dim,
    reduces_all,
)


class FactoryValues:
    """Mixin of ``FactoryMeetings``: expressions, calls and meetings."""

    def _kind(self, expr):
        if isinstance(expr, cst.Name):
            return self._env.get(expr.value)
        if isinstance(expr, cst.Call):
            return self._call(expr)
        if isinstance(expr, cst.Attribute):
            if is_self(expr.value):
                return self._state(expr.attr.value)
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
            self._masked_read(expr, base, indices)
            return base
        if isinstance(expr, cst.UnaryOperation):
            kind = self._kind(expr.expression)
            return None if isinstance(expr.operator, cst.Not) else kind
        if isinstance(expr, cst.IfExp):
            self._kind(expr.test)
            checked = is_cuda_test(expr.test)  # ``t.cuda() if use_gpu else t``: the switch's own move
            self._gpu_tests += checked
            body = self._kind(expr.body)
            self._gpu_tests -= checked
            orelse = self._kind(expr.orelse)
            default = none_default(expr)
            if default is not None:  # ``torch.ones(n) if w is None else w``: what a call without w gets
                return body if default is expr.body else orelse
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

    def _masked_read(self, expr: cst.Subscript, base, indices: list) -> None:
        """``torch.arange(n)[x > 0]``: a CPU tensor read through a mask made from the input meets
        it (a mask on the GPU cannot index a CPU tensor). Only a mask written as a comparison: a
        0-dim index (``x.argmax()``) is read as a number, wherever it is."""
        if not tagged(base, "C") or base[2]:
            return
        elements = [e for e in expr.slice if isinstance(e.slice, cst.Index)]
        for element, kind in zip(elements, indices):
            if tagged(kind, "T") and is_mask(element.slice.value):
                self._found(base, kind)

    def _index_kinds(self, subscript: cst.Subscript) -> list:
        kinds = []
        for element in subscript.slice:
            if isinstance(element.slice, cst.Index):
                kinds.append(self._kind(element.slice.value))
            else:
                self._children(element.slice)
        return kinds

    def _comprehension(self, expr):
        """Evaluate a comprehension in its own scope; the kind of its element (None for a dict)."""
        saved = dict(self._env)
        clause = expr.for_in
        while clause is not None:
            kind = self._kind(clause.iter)
            self._bind(clause.target, kind if tagged(kind, "T") else None)
            for condition in clause.ifs:
                self._kind(condition.test)
            clause = clause.inner_for_in
        element = None
        if isinstance(expr, cst.DictComp):
            self._kind(expr.key)
            self._kind(expr.value)
        else:
            element = self._kind(expr.elt)
        self._env.clear()
        self._env.update(saved)
        return element

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
        if label and isinstance(call.func, cst.Subscript) and self._layer_output(call.func.value.attr.value):
            return self._output_of(label, tensors)  # self.heads[name](x): the label is "self.heads[...]"
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
        # A loss meets its weight and target too (not CTC's lengths).
        if qualified in COMBINE_FUNCS or qualified in FUNCTIONAL_LOSSES and qualified not in CTC_FUNCTIONS:
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
            whole = reduces_all(call, qualified.rpartition(".")[2], operands=1)
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
        # A call of the module's own layer or helper reads into a list of tensors it is given
        # (``self.fpn([x2, x3])``); other methods' list arguments stay what they are.
        read = self._arg_kinds if is_self_member(func.value) else (lambda arg: [self._kind(arg.value)])
        args = [kind for arg in call.args if tensor_arg(arg) for kind in read(arg)]
        for arg in call.args:
            if not tensor_arg(arg):
                self._kind(arg.value)
        if receiver is None and is_self(func.value) and self._groups and self._groups[-1].layers_of:
            self._layer_call(call, method, args)
        if method == "cuda" and tagged(receiver, "C") and device_argument(call) is None and self._groups:
            return self._forced(call, receiver)
        if method in SCALAR_METHODS or (method in MOVED_OR_CONVERTED and not tagged(receiver, "T")):
            return None
        if method == "type" and tagged(receiver, "C") and call.args and not cpu_type_cast(call, self.names):
            return None  # converted to a type that may be CUDA's (``.type(self.FloatTensor)``)
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
            if is_self(func.value) and self._layer_output(method):
                return self._output_of(f"self.{method}", tensors)
            return ("T", union_of_roots(tensors), False) if tensors else None
        zero = (receiver[2] and method not in GROWS_DIMS) or reduces_all(call, method, operands=0)
        return ("C", receiver[1], zero)

    def _forced(self, call: cst.Call, receiver):
        """``torch.ones(n).cuda()``: the current GPU, not where the inputs are (the CPU on a
        laptop run, ``cuda:1``): it still meets them on two devices, and is reported at the
        ``.cuda()`` call. Made where CUDA is missing, it fails by itself."""
        if self._cpu_blocks.inside or self._gpu_blocks.inside or self._gpu_tests:
            return None  # fails by itself where CUDA is missing; follows the code's own check or switch
        self._groups[-1].forced.add(id(call))
        return ("C", call, receiver[2])

    def _state(self, attr: str):
        """``self.theta`` in a module's method: a buffer or parameter the module registered, on
        whatever device the module was moved to (``module_state.py``)."""
        group = self._groups[-1] if self._groups else None
        if group is None or not group.layers_of or attr not in state_attributes(self.names, group.layers_of):
            return None
        root = f"self.{attr}"
        group.evidence.add(root)
        return ("T", (root,), True)

    def _arg_kinds(self, arg: cst.Arg) -> list:
        """Kinds of an argument, looking into a literal list/tuple (torch.cat([...])) and into
        a list or generator comprehension, whose items are its element's kind
        (``torch.cat([self.head(f) for f in features])``)."""
        if isinstance(arg.value, (cst.List, cst.Tuple)):
            return [self._kind(e.value) for e in arg.value.elements]
        if isinstance(arg.value, (cst.ListComp, cst.GeneratorExp)):
            return [self._comprehension(arg.value)]
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
            for kind in args:  # a layer with weights takes tensors: what it is given is one
                self._used_as_tensor(kind, None)

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

    def _layer_output(self, attr: str) -> bool:
        """Is ``self.<attr>`` one of the module's layers with weights (or a container of them)?"""
        group = self._groups[-1] if self._groups else None
        return bool(group and group.layers_of) and is_layer_attribute(self.names, group.layers_of, attr)

    def _output_of(self, layer: str, tensors: list):
        """A layer's output is on the module's device, whatever it was given (``self.emb(batch["ids"])``):
        derived from its arguments, and a root ``self.<layer>()`` with its own evidence."""
        self._groups[-1].evidence.add(f"{layer}()")
        return ("T", union_of_roots(tensors) + (f"{layer}()",), False)

    def _cpu_into_layer(self, call: cst.Call, label: str, args: list) -> None:
        cpu = [k for k in args if tagged(k, "C") and not k[2]]
        if cpu and not self._cpu_blocks.inside:  # a layer run where CUDA is missing is on the CPU
            self._groups[-1].layer_findings.append((cpu[0][1], label))

    # -- reporting ------------------------------------------------------
