"""Device flow: per function (or module top level), where the code proves a value lives.

One analysis shared by TDV601-TDV603. It walks a function body (or the
module's top-level statements) in source order, keeping per name what the
code itself proves:

- ``CPU``: a tensor factory without ``device=``, ``torch.from_numpy``,
  ``.cpu()``, ``.to("cpu")``, ``torch.load(..., map_location="cpu")``, ops on
  CPU values;
- ``PLACED``: ``.to(<device>)``, ``.cuda()``, a factory with a non-CPU
  ``device=``, the output of a placed module, ops on placed values;
- ``MOVED``: a module moved in place (``model.to(device)`` as a statement):
  only calling it says anything;
- ``SIBLING``: an element of a loader loop (``for x, y in loader``,
  ``batch["y"]``) not moved yet;
- anything else is unknown and never reported. Re-binding, branches that
  disagree, loops and ``del`` make a name unknown unless every path agrees.

It records where values of two kinds meet in an operation that needs one
device (``Flow.meets``), where a loader element that stayed behind meets a
placed value while a sibling was moved (``Flow.siblings``), and where a
placed tensor is turned into NumPy (``Flow.numpys``). Code under
``pytest.raises`` / ``assertRaises`` and CPU-only branches is walked (for the
bindings) but records nothing.
"""

from __future__ import annotations

from typing import Optional

from .._lazy import cst
from .code import argument, code_of, last_name, param_names, string_value, subtree, target_names
from .guards import _expects_failure, is_no_cuda_test
from .vocabulary import DATA_FACTORIES, factory_name, maybe_zero_dim

CPU, PLACED, MOVED, SIBLING, BATCH, LOSS, OBJECT, INPUT, FRAMEWORK, DEVICE, NUMPY = (
    "cpu placed moved sibling batch loss object input framework device numpy".split()
)

# Reading these gives no device-bound tensor.
_META_ATTRS = frozenset("shape dtype ndim is_cuda requires_grad grad_fn layout names is_sparse".split())
_SCALAR_METHODS = frozenset(
    """size dim numel nelement item tolist stride element_size data_ptr is_contiguous get_device
    equal is_floating_point is_complex storage_offset numpy keys items values __len__""".split()
)
_SCALAR_BUILTINS = frozenset(
    """len int float bool str isinstance hasattr getattr range enumerate zip print min max sum abs
    round type id repr sorted list tuple dict set any all iter next format""".split()
)
_REDUCTIONS = frozenset("sum mean prod max min amax amin norm all any median std var argmax argmin".split())
# Tensor members: using one on a loader element says it is a tensor.
_TENSOR_MEMBERS = frozenset(
    """shape ndim size dim numel view reshape permute transpose t unsqueeze squeeze expand flatten
    contiguous detach float long int half double bool byte sum mean max min argmax argmin abs
    exp log sqrt pow clamp softmax log_softmax sigmoid masked_fill index_select gather eq ne lt le
    gt ge squeeze_ unsqueeze_ type_as view_as numel""".split()
)
# torch functions whose tensor arguments must share one device.
_COMBINE_FUNCS = frozenset(
    f"torch.{n}"
    for n in """cat concat concatenate stack hstack vstack dstack column_stack where add sub
    subtract mul multiply div divide maximum minimum eq ne lt le gt ge matmul mm bmm dot einsum
    masked_select gather index_select logical_and logical_or bitwise_and bitwise_or atan2 lerp
    cdist outer allclose isclose""".split()
)
_COMBINE_METHODS = frozenset(
    """add sub mul div true_divide floor_divide remainder fmod pow eq ne lt le gt ge maximum
    minimum matmul mm bmm dot masked_fill masked_select where logical_and logical_or atan2 lerp
    outer""".split()
)
# Keep the receiver's device (tensor methods and module methods alike).
_KEEPING_METHODS = frozenset(
    """detach clone contiguous float double half bfloat16 long int bool byte view reshape permute
    transpose t unsqueeze squeeze flatten expand expand_as repeat view_as reshape_as narrow flip
    roll abs exp log sqrt sigmoid tanh relu softmax log_softmax clamp argmax argmin sum mean prod
    max min amax amin norm std var cumsum masked_fill eval train requires_grad_ squeeze_
    unsqueeze_ index_select gather type_as add sub mul div pow matmul mm bmm eq ne lt le gt ge
    round floor ceil neg sign square T mT""".split()
)
# Calls whose results a framework places (Accelerate, Fabric).
_FRAMEWORK_CALLS = frozenset("prepare prepare_data_loader setup_dataloaders setup prepare_model".split())
# Arguments kept on the CPU on purpose (pack_padded_sequence lengths).
_CPU_ON_PURPOSE = ("len", "length", "lens", "seq_len", "sizes")
# What data loaders are called: a loop over one of these names (or over
# ``DataLoader(...)``) is a loop over CPU batches.
LOADER_WORDS = frozenset(
    """loader dataloader data_loader DataLoader train_loader val_loader valid_loader
    validation_loader test_loader eval_loader trainloader testloader valloader
    train_dataloader val_dataloader valid_dataloader test_dataloader eval_dataloader
    train_dl val_dl valid_dl test_dl dl""".split()
)
# Loops over these wrappers yield what they wrap.
_WRAPPERS = frozenset("enumerate tqdm iter".split())


class Value:
    __slots__ = ("kind", "_label", "zero", "factory", "param", "local", "loop", "evidence")

    def __init__(self, kind, label="", zero=False, factory=False, param=False, local=False, loop=None):
        self.kind = kind
        self._label = label  # text, or the node whose code it is (generated when read: few are)
        self.zero = zero  # maybe 0-dim: mixes with any device legally
        self.factory = factory  # a CPU factory result (TDV502's domain when it meets an input)
        self.param = param  # derived from a function parameter
        self.local = local  # a module of a class defined in this file (its forward may move inputs)
        self.loop = loop  # the loader loop of a SIBLING / BATCH
        self.evidence = False  # a SIBLING used as a tensor

    @property
    def label(self) -> str:
        if not isinstance(self._label, str):
            self._label = code_of(self._label)
        return self._label

    def derived(self, kind=None, label=None, zero=None):
        copy = Value(kind or self.kind, self._label if label is None else label,
                     self.zero if zero is None else zero, self.factory, self.param, self.local, self.loop)
        copy.evidence = self.evidence
        return copy


BOUND = Value("bound")  # a local name bound to something unknown (not a free name)


class Loop:
    __slots__ = ("moved", "elements")

    def __init__(self) -> None:
        self.moved: list = []  # labels of elements moved with .to / .cuda
        self.elements: dict = {}  # label -> Value, to share tensor evidence


class Meet:
    __slots__ = ("node", "cpu", "placed", "statement")

    def __init__(self, node, cpu: Optional[Value], placed: Value, statement: Optional[int] = None) -> None:
        self.node, self.cpu, self.placed, self.statement = node, cpu, placed, statement


class Flow:
    """What one scope proves: the meetings found in it."""

    __slots__ = ("meets", "siblings", "numpys")

    def __init__(self) -> None:
        self.meets: list = []  # Meet: a CPU value and a placed value (TDV601)
        self.siblings: list = []  # Meet: a loader element left behind (TDV602)
        self.numpys: list = []  # Meet(node, None, placed): NumPy of a placed tensor (TDV603)


def flow_of(context, node: "cst.CSTNode") -> Flow:
    """The flow of a function (``FunctionDef``) or of a module's top level
    (``Module``), computed once per file and shared by the rules."""
    cache = context.__dict__.setdefault("_device_flow", {})
    key = id(node)
    if key not in cache:
        cache[key] = (node, _Analysis(context).run(node))
    return cache[key][1]


class _Analysis:
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
            for param in _params(node):
                env[param] = Value(INPUT, param, param=True)
            body = _body(node.body)
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

    def block(self, statements, env: dict) -> None:
        for statement in statements:
            self.statement(statement, env)

    def statement(self, node, env: dict) -> None:
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                self.small(small, env)
        elif isinstance(node, cst.If):
            self.if_(node, env)
        elif isinstance(node, (cst.For, cst.While)):
            self.loop(node, env)
        elif isinstance(node, cst.With):
            muted = any(_expects_failure(item) for item in node.items)
            for item in node.items:
                self.ev(item.item, env)
                if item.asname is not None:
                    self.bind(item.asname.name, None, env)
            self.mute += muted
            self.block(_body(node.body), env)
            self.mute -= muted
        elif isinstance(node, cst.Try):
            before = dict(env)
            self.block(_body(node.body), env)
            ends = [env.copy()]
            for handler in node.handlers:
                local = _merge(before, env)
                self.block(_body(handler.body), local)
                ends.append(local)
            if node.orelse is not None:
                self.block(_body(node.orelse.body), ends[0])
            merged = ends[0]
            for other in ends[1:]:
                merged = _merge(merged, other)
            env.clear()
            env.update(merged)
            if node.finalbody is not None:
                self.block(_body(node.finalbody.body), env)
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            env.pop(node.name.value, None)
        else:
            env.clear()  # match, async constructs: forget what was known

    def small(self, node, env: dict) -> None:
        if isinstance(node, cst.Assign):
            value = self.ev(node.value, env)
            for target in node.targets:
                self.bind(target.target, value, env)
        elif isinstance(node, cst.AnnAssign):
            value = self.ev(node.value, env) if node.value is not None else None
            self.bind(node.target, value, env)
        elif isinstance(node, cst.AugAssign):
            target = self.ev(node.target, env)
            value = self.ev(node.value, env)
            self.meet(node, target, value)
            self.bind(node.target, _combined(target, value), env)
        elif isinstance(node, cst.Expr):
            self.expression_statement(node.value, env)
        elif isinstance(node, cst.Del):
            for name in target_names(node.target):
                env.pop(name, None)
        elif isinstance(node, (cst.Return, cst.Assert)):
            expr = node.value if isinstance(node, cst.Return) else node.test
            if expr is not None:
                self.ev(expr, env)
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            for name in node.names:
                env.pop(name.name.value, None)
        elif isinstance(node, (cst.Import, cst.ImportFrom)):
            for name in _imported_names(node):
                env.pop(name, None)

    def expression_statement(self, expr, env: dict) -> None:
        """``model.to(device)`` / ``model.cuda()`` alone moves a module in place."""
        if (
            isinstance(expr, cst.Call)
            and isinstance(expr.func, cst.Attribute)
            and isinstance(expr.func.value, cst.Name)
            and expr.func.attr.value in ("to", "cuda")
        ):
            name = expr.func.value.value
            before = env.get(name)
            before = None if before is BOUND else before
            result = self.ev(expr, env)
            if before is None or before.kind in (OBJECT, INPUT, PLACED, MOVED):
                if result is not None and result.kind == PLACED:
                    env[name] = Value(MOVED, name, local=bool(before and before.local),
                                      param=bool(before and before.param))
                elif result is not None and result.kind == CPU:
                    env.pop(name, None)
            return
        self.ev(expr, env)

    def if_(self, node: cst.If, env: dict) -> None:
        self.ev(node.test, env)
        cpu_only = _cpu_only_test(node.test, self.names)
        body_env = dict(env)
        self.mute += cpu_only
        self.block(_body(node.body), body_env)
        self.mute -= cpu_only
        else_env = dict(env)
        if node.orelse is not None:
            cuda_only_else = _cuda_test(node.test)
            self.mute += cuda_only_else
            if isinstance(node.orelse, cst.If):
                self.if_(node.orelse, else_env)
            else:
                self.block(_body(node.orelse.body), else_env)
            self.mute -= cuda_only_else
        merged = _merge(body_env, else_env)
        env.clear()
        env.update(merged)

    def loop(self, node, env: dict) -> None:
        """The body is walked once, from the state before the loop: exactly the
        first iteration, which runs whenever any does. After the loop, a name
        keeps its value only where the loop body left it unchanged."""
        before = dict(env)
        if isinstance(node, cst.For):
            self.ev(node.iter, env)
            self.bind(node.target, None, env)
            self.loader_elements(node, env)
        else:
            self.ev(node.test, env)
        self.block(_body(node.body), env)
        merged = _merge(before, env)
        if node.orelse is not None:
            self.block(_body(node.orelse.body), merged)
        env.clear()
        env.update(merged)

    def loader_elements(self, node: cst.For, env: dict) -> None:
        """``for x, y in loader`` / ``for i, (x, y) in enumerate(loader)`` /
        ``for batch in loader``: the elements, not moved yet."""
        iterable, target = node.iter, node.target
        if isinstance(iterable, cst.Call) and last_name(iterable.func) in _WRAPPERS and iterable.args:
            if last_name(iterable.func) == "enumerate":
                if not (isinstance(target, cst.Tuple) and len(target.elements) == 2):
                    return
                target = target.elements[1].value
            iterable = iterable.args[0].value
        if not self.is_loader(iterable, env):
            return
        loop = Loop()
        if isinstance(target, cst.Name):
            env[target.value] = Value(BATCH, target.value, loop=loop)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                if isinstance(element.value, cst.Name):
                    label = element.value.value
                    env[label] = loop.elements[label] = Value(SIBLING, label, loop=loop)

    def is_loader(self, iterable, env: dict) -> bool:
        if isinstance(iterable, cst.Name):
            known = env.get(iterable.value)
            if known is not None and known.kind == FRAMEWORK:
                return False
            return iterable.value in LOADER_WORDS
        if isinstance(iterable, cst.Attribute):
            return iterable.attr.value in LOADER_WORDS and not _framework_owner(iterable)
        if isinstance(iterable, cst.Call):
            return last_name(iterable.func) == "DataLoader"
        return False

    # -- bindings -----------------------------------------------------------
    def bind(self, target, value: Optional[Value], env: dict) -> None:
        if isinstance(target, cst.Name):
            if value is None:
                env[target.value] = BOUND
            elif value.kind in (CPU, PLACED):
                env[target.value] = value.derived(label=target.value)  # messages name the variable
            else:
                env[target.value] = value
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                framework = value is not None and value.kind == FRAMEWORK
                self.bind(element.value, value if framework else None, env)
        elif isinstance(target, cst.StarredElement):
            self.bind(target.value, None, env)
        else:
            self.ev(target, env)  # a[i] = v / self.x = v: evaluate the parts

    # -- expressions --------------------------------------------------------
    def ev(self, expr, env: dict) -> Optional[Value]:
        if isinstance(expr, cst.Name):
            value = env.get(expr.value)
            return None if value is BOUND else value
        if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
            text = string_value(expr) or ""
            if text.partition(":")[0] in _DEVICE_TYPES:
                return Value(DEVICE, repr(text), zero=text.startswith("cpu"))
            return None
        if isinstance(expr, cst.Call):
            return self.call(expr, env)
        if isinstance(expr, cst.Attribute):
            base = self.ev(expr.value, env)
            return self.attribute(expr, base)
        if isinstance(expr, cst.BinaryOperation):
            left, right = self.ev(expr.left, env), self.ev(expr.right, env)
            self.meet(expr, left, right, evident=False)
            return _combined(left, right)
        if isinstance(expr, cst.Comparison):
            left = self.ev(expr.left, env)
            result = None
            for comparison in expr.comparisons:
                right = self.ev(comparison.comparator, env)
                if isinstance(comparison.operator, (cst.In, cst.NotIn, cst.Is, cst.IsNot)):
                    result = None
                else:
                    self.meet(expr, left, right, evident=False)
                    result = _combined(left, right)
                left = right
            return result
        if isinstance(expr, cst.Subscript):
            return self.subscript(expr, env)
        if isinstance(expr, cst.UnaryOperation):
            inner = self.ev(expr.expression, env)
            return None if isinstance(expr.operator, cst.Not) else inner
        if isinstance(expr, cst.IfExp):
            self.ev(expr.test, env)
            body, orelse = self.ev(expr.body, env), self.ev(expr.orelse, env)
            return body if _same(body, orelse) else None
        if isinstance(expr, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            self.comprehension(expr, env)
            return None
        if isinstance(expr, cst.NamedExpr):
            value = self.ev(expr.value, env)
            self.bind(expr.target, value, env)
            return value
        if isinstance(expr, cst.Lambda):
            return None
        for child in _expression_children(expr):
            self.ev(child, env)
        return None

    def attribute(self, expr: cst.Attribute, base: Optional[Value]) -> Optional[Value]:
        attr = expr.attr.value
        if base is None:
            return None
        if base.kind == BATCH:
            return self.element(base, code_of(expr))
        if attr == "device" and base.kind in (CPU, PLACED):
            return Value(DEVICE, expr, zero=base.kind == CPU)
        if base.kind == SIBLING:
            if attr in _TENSOR_MEMBERS:
                base.evidence = True
            return None
        if attr in _META_ATTRS or base.kind not in (CPU, PLACED):
            return None
        if base.kind == CPU and base.factory is False and base.label.startswith("torch.load"):
            return None  # checkpoint["epoch"]: may be anything
        return base

    def element(self, batch: Value, label: str) -> Value:
        loop = batch.loop
        if label not in loop.elements:
            loop.elements[label] = Value(SIBLING, label, loop=loop)
        return loop.elements[label]

    def subscript(self, expr: cst.Subscript, env: dict) -> Optional[Value]:
        base = self.ev(expr.value, env)
        for element in expr.slice:
            if isinstance(element.slice, cst.Index):
                self.index_with(expr, base, self.ev(element.slice.value, env))
            else:
                for part in (element.slice.lower, element.slice.upper, element.slice.step):
                    if part is not None:
                        self.ev(part, env)
        if base is None:
            return None
        if base.kind == BATCH:
            return self.element(base, code_of(expr))
        if base.kind == SIBLING:
            base.evidence = True  # indexed: a tensor or a sequence; see evidence in use
            return None
        if base.kind == PLACED:
            return base
        if base.kind == CPU and not base.label.startswith("torch.load"):
            return base.derived(zero=True)  # counts[j]: maybe one element
        return None

    def index_with(self, expr, base: Optional[Value], index: Optional[Value]) -> None:
        """``cpu_values[placed_indices]``: torch takes indices on the CPU or on
        the indexed tensor's device, so only this way round fails."""
        if base is None or index is None or self.mute:
            return
        if base.kind == CPU and not base.zero and index.kind == PLACED:
            if not (base.factory and index.param):  # TDV502 reports a factory meeting an input
                self.flow.meets.append(Meet(expr, base, index, self.index))

    def comprehension(self, expr, env: dict) -> None:
        local = dict(env)
        clause = expr.for_in
        while clause is not None:
            self.ev(clause.iter, local)
            self.bind(clause.target, None, local)
            for condition in clause.ifs:
                self.ev(condition.test, local)
            clause = clause.inner_for_in
        if isinstance(expr, cst.DictComp):
            self.ev(expr.key, local)
            self.ev(expr.value, local)
        else:
            self.ev(expr.elt, local)

    # -- calls --------------------------------------------------------------
    def call(self, call: cst.Call, env: dict) -> Optional[Value]:
        qualified = self.names.qualify(call.func) or ""
        if qualified and factory_name(self.names, call):
            return self.factory(call, qualified, env)
        if qualified == "torch.load":
            return self.load(call, env)
        if qualified == "torch.onnx.export":
            args = [self.ev(arg.value, env) for arg in call.args]
            model = args[0] if args else None
            if model is not None and model.kind in (PLACED, MOVED) and len(call.args) > 1:
                for value in self.flat(call.args[1].value, env):
                    self.meet(call, value, model.derived(PLACED), evident=True, module=True)
            return None
        if qualified == "torch.device":
            for arg in call.args:
                self.ev(arg.value, env)
            first = call.args[0].value if call.args else None
            text = string_value(first) if first is not None else None
            return Value(DEVICE, call, zero=text is not None and text.startswith("cpu"))
        if qualified.startswith("torch.") and not qualified.startswith("torch.nn.") or qualified.startswith(
            "torch.nn.functional."
        ):
            return self.torch_function(call, qualified, env)
        if qualified.startswith("torch.nn.") and qualified.endswith("Loss"):
            for arg in call.args:
                self.ev(arg.value, env)
            return Value(LOSS, call.func)
        if _is_numpy_array(call.func, self.names):
            values = [self.ev(arg.value, env) for arg in call.args]
            if values and values[0] is not None and values[0].kind == PLACED:
                self.record_numpy(call, values[0])
            return Value(NUMPY, call)
        if isinstance(call.func, cst.Attribute):
            return self.method(call, call.func, env)
        callee = self.ev(call.func, env)
        args = [(arg, self.ev(arg.value, env)) for arg in call.args]
        name = last_name(call.func) or ""
        if name in _SCALAR_BUILTINS:
            return None
        if callee is not None and callee.kind in (PLACED, MOVED):
            return self.module_call(call, callee, args)
        if callee is not None and callee.kind == LOSS or "loss" in name.lower() or "criterion" in name.lower():
            self.combine_all(call, [v for _, v in args], evident=True)
            return _placed_result([v for _, v in args])
        if isinstance(call.func, cst.Name) and name in getattr(self.names, "_classes", {}):
            return Value(OBJECT, name, local=True)  # an instance of a class of this file
        return None

    def module_call(self, call, module: Value, args) -> Value:
        if not module.local:
            for arg, value in args:
                if _on_purpose(arg):
                    continue
                for each in [value] if value is not None else []:
                    self.meet(call, each, module.derived(PLACED, label=module.label), evident=True, module=True)
        param = module.param or any(v is not None and (v.param or v.kind == INPUT) for _, v in args)
        result = Value(PLACED, f"{module.label}(...)", param=param)
        return result

    def method(self, call: cst.Call, func: cst.Attribute, env: dict) -> Optional[Value]:
        receiver = self.ev(func.value, env)
        method = func.attr.value
        args = [self.ev(arg.value, env) for arg in call.args]
        if method in _FRAMEWORK_CALLS and not isinstance(func.value, cst.Name) or (
            method in _FRAMEWORK_CALLS and receiver is None
        ):
            return Value(FRAMEWORK, call)
        if receiver is not None and receiver.kind == BATCH:
            return None  # batch.to(device) may move a container in place
        if method in ("to", "cuda"):
            return self.move(call, receiver, method, args, env)
        if method == "cpu":
            if receiver is not None and receiver.kind == SIBLING:
                return None
            zero = receiver.zero if receiver is not None and receiver.kind in (CPU, PLACED) else True
            return Value(CPU, call, zero=zero)
        if method == "numpy":
            if receiver is not None and receiver.kind == PLACED and not _forced(call):
                self.record_numpy(call, receiver)
            return Value(NUMPY, call)
        if receiver is None:
            return None
        if receiver.kind == SIBLING:
            if method in _TENSOR_MEMBERS:
                receiver.evidence = True
                if method in _COMBINE_METHODS:
                    for value in args:
                        self.meet(call, receiver, value, evident=True)
                return receiver if method in _KEEPING_METHODS else None
            return None
        if receiver.kind == MOVED and method in ("eval", "train", "half", "float", "double"):
            return receiver
        if receiver.kind not in (CPU, PLACED):
            return None
        if method in _SCALAR_METHODS:
            return None
        if method in _COMBINE_METHODS:
            for value in args:
                self.meet(call, receiver, value, evident=False)
        if method not in _KEEPING_METHODS:
            return None
        if receiver.kind == CPU and method in _REDUCTIONS and not call.args:
            return receiver.derived(zero=True)
        return receiver

    def move(self, call: cst.Call, receiver: Optional[Value], method: str, args, env: dict) -> Optional[Value]:
        """``.to(...)`` / ``.cuda(...)``: where does the result live?"""
        if method == "cuda":
            where = PLACED
        else:
            where = self.destination(call, args, env)
        if receiver is not None and receiver.kind == SIBLING and where is not None:
            receiver.loop.moved.append(receiver.label)
        if where is None:
            if receiver is not None and receiver.kind in (CPU, PLACED) and _dtype_only(call, self.names):
                return receiver
            return None
        if receiver is not None and receiver.kind == BATCH:
            return None
        local = receiver is not None and receiver.local
        param = receiver is not None and (receiver.param or receiver.kind == INPUT)
        if where == CPU:
            zero = receiver.zero if receiver is not None and receiver.kind in (CPU, PLACED) else True
            return Value(CPU, call, zero=zero)
        label = call.func.value if receiver is None or receiver.kind != PLACED else receiver.label
        return Value(PLACED, label, local=local, param=param)

    def destination(self, call: cst.Call, args, env: dict) -> Optional[str]:
        """``CPU``, ``PLACED`` or None (a dtype, another tensor's device unknown)."""
        arg = argument(call, 0, "device")
        if arg is None:
            return None
        value = args[[a for a in call.args].index(arg)] if arg in call.args else None
        expr = arg.value
        text = string_value(expr)
        if text is not None:
            return CPU if text.startswith("cpu") else PLACED
        if isinstance(expr, cst.Integer):
            return PLACED
        if value is not None:
            if value.kind == DEVICE:
                return CPU if value.zero else PLACED
            if value.kind in (CPU, PLACED):
                return value.kind  # .to(other): other's device
            if value.kind not in (INPUT,):
                return None
        if isinstance(expr, cst.Attribute) and expr.attr.value == "device":
            return None  # the device of something unknown
        name = code_of(expr).lower()
        if "cpu" in name:
            return CPU
        if isinstance(expr, (cst.Name, cst.Attribute)) and any(
            w in name for w in ("device", "dev", "gpu", "cuda", "rank")
        ):
            return PLACED
        return None

    def factory(self, call: cst.Call, qualified: str, env: dict) -> Optional[Value]:
        values = [self.ev(arg.value, env) for arg in call.args]
        if any(arg.star == "**" for arg in call.args) or argument(call, None, "out") is not None:
            return None
        device = argument(call, None, "device")
        if device is not None:
            where = self.destination(cst.Call(func=call.func, args=[device]), [values[call.args.index(device)]], env)
            if where == PLACED:
                return Value(PLACED, call.func)
            if where == CPU:
                return Value(CPU, call.func, zero=maybe_zero_dim(qualified, call), factory=True)
            return None
        if qualified in DATA_FACTORIES and values:
            first = values[0]
            if first is not None and first.kind in (PLACED, INPUT, SIBLING):
                return None  # torch.tensor(x) keeps x's device; unknown inputs: unknown
            if first is not None and first.kind == NUMPY:
                return Value(CPU, call.func, factory=True)
        if qualified == "torch.from_numpy":
            return Value(CPU, call.func, factory=True)
        return Value(CPU, call.func, zero=maybe_zero_dim(qualified, call), factory=True)

    def load(self, call: cst.Call, env: dict) -> Optional[Value]:
        for arg in call.args:
            self.ev(arg.value, env)
        where = argument(call, 1, "map_location")
        text = string_value(where.value) if where is not None else None
        if text is not None and text.startswith("cpu"):
            return Value(CPU, "torch.load(...)", zero=True)  # a model or a checkpoint dict
        return None

    def torch_function(self, call: cst.Call, qualified: str, env: dict) -> Optional[Value]:
        values = []
        for arg in call.args:
            values.extend(self.flat(arg.value, env))
        if qualified in _COMBINE_FUNCS or qualified.startswith("torch.nn.functional."):
            self.combine_all(call, values, evident=True)
        if any(v is not None and v.kind == PLACED for v in values):
            return _placed_result(values)
        cpu = [v for v in values if v is not None and v.kind == CPU]
        if cpu and len(cpu) == len(values):
            return Value(CPU, cpu[0].label, zero=all(v.zero for v in cpu), factory=cpu[0].factory)
        return None

    def flat(self, expr, env: dict) -> list:
        if isinstance(expr, (cst.List, cst.Tuple)):
            return [self.ev(e.value, env) for e in expr.elements]
        return [self.ev(expr, env)]

    def combine_all(self, node, values, evident: bool) -> None:
        for i, a in enumerate(values):
            for b in values[i + 1:]:
                self.meet(node, a, b, evident=evident)

    # -- findings -----------------------------------------------------------
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


# -- helpers ------------------------------------------------------------------
def _params(node: cst.FunctionDef) -> list:
    return [n for n in param_names(node.params) if n not in ("self", "cls")]


def _body(suite) -> list:
    return list(suite.body) if isinstance(suite, cst.IndentedBlock) else [cst.SimpleStatementLine(body=suite.body)]


def _same(a: Optional[Value], b: Optional[Value]) -> bool:
    if a is None or b is None or a.kind != b.kind:
        return False
    if a.kind == CPU:
        return a.zero == b.zero
    return a.loop is b.loop and a.local == b.local


def _merge(a: dict, b: dict) -> dict:
    return {name: value for name, value in a.items() if name in b and (value is b[name] or _same(value, b[name]))}


def _combined(left: Optional[Value], right: Optional[Value]) -> Optional[Value]:
    """The result of an out-of-place op of two operands."""
    values = [left, right]
    placed = [v for v in values if v is not None and v.kind == PLACED]
    if placed:
        return _placed_result(values)
    if left is not None and right is not None and left.kind == CPU and right.kind == CPU:
        return left.derived(zero=left.zero and right.zero)
    return None


def _placed_result(values) -> Optional[Value]:
    placed = [v for v in values if v is not None and v.kind == PLACED]
    if not placed:
        return None
    param = any(v is not None and (v.param or v.kind == INPUT) for v in values)
    return Value(PLACED, placed[0].label, param=param)


def _is_numpy_array(func, names) -> bool:
    """``np.asarray`` / ``numpy.array`` (NumPy imported in this file)."""
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value in ("asarray", "array")
        and isinstance(func.value, cst.Name)
        and func.value.value in ("np", "numpy")
        and names.imports_any(("numpy",))
    )


def _on_purpose(arg: cst.Arg) -> bool:
    """``lengths`` for ``pack_padded_sequence``: kept on the CPU on purpose."""
    words = [arg.keyword.value if arg.keyword is not None else "", code_of(arg.value)]
    return any(w in word.lower() for word in words for w in _CPU_ON_PURPOSE)


def _forced(call: cst.Call) -> bool:
    force = argument(call, 0, "force")
    return force is not None and not (isinstance(force.value, cst.Name) and force.value.value == "False")


def _dtype_only(call: cst.Call, names) -> bool:
    """``.to(torch.float16)`` / ``.to(dtype=...)``: the device does not change."""
    if not call.args:
        return False
    first = call.args[0]
    if first.keyword is not None:
        return all(a.keyword is not None and a.keyword.value in ("dtype", "non_blocking", "copy") for a in call.args)
    qualified = names.qualify(first.value) or ""
    return qualified.startswith("torch.") and qualified.rpartition(".")[2] in _DTYPES


_DEVICE_TYPES = frozenset("cpu cuda mps xpu meta hpu npu xla".split())
_DTYPES = frozenset(
    """float float16 float32 float64 half double bfloat16 int int8 int16 int32 int64 long short
    uint8 bool complex64 complex128 cfloat cdouble""".split()
)


def _framework_owner(expr: cst.Attribute) -> bool:
    return "trainer" in code_of(expr.value).lower()


def _cpu_only_test(test, names) -> bool:
    """``device.type == "cpu"`` / ``not torch.cuda.is_available()``: the body runs on the CPU."""
    if is_no_cuda_test(test, names):
        return True
    for node in subtree(test):
        if isinstance(node, cst.Comparison) and all(
            isinstance(c.operator, (cst.Equal, cst.Is)) for c in node.comparisons
        ):
            operands = [node.left] + [c.comparator for c in node.comparisons]
            if any((string_value(o) or "").startswith("cpu") for o in operands):
                return True
    return False


def _cuda_test(test) -> bool:
    """``torch.cuda.is_available()`` / ``device.type == "cuda"``: the else branch is CPU-only."""
    for node in subtree(test):
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            return False
        if isinstance(node, cst.Comparison) and any(
            isinstance(c.operator, (cst.NotEqual, cst.IsNot)) for c in node.comparisons
        ):
            return False
    code = code_of(test)
    return "is_available" in code or "is_cuda" in code or '"cuda"' in code or "'cuda'" in code


def _expression_children(expr) -> list:
    if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
        return [e.value for e in expr.elements]
    if isinstance(expr, cst.Dict):
        out = []
        for element in expr.elements:
            if isinstance(element, cst.DictElement):
                out.append(element.key)
            out.append(element.value)
        return out
    if isinstance(expr, cst.BooleanOperation):
        return [expr.left, expr.right]
    if isinstance(expr, cst.Await):
        return [expr.expression]
    if isinstance(expr, (cst.Yield, cst.StarredElement)):
        return [expr.value] if isinstance(expr.value, cst.BaseExpression) else []
    if isinstance(expr, cst.FormattedString):
        return [p.expression for p in expr.parts if isinstance(p, cst.FormattedStringExpression)]
    return []


def _imported_names(node) -> list:
    if isinstance(node.names, cst.ImportStar):
        return []
    out = []
    for alias in node.names:
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            out.append(alias.asname.name.value)
        else:
            out.append(code_of(alias.name).partition(".")[0])
    return out


class FlowReports:
    """Mixin for a ``Rule`` that reports one list of the device flow: each
    function on its own, and the module's top level as one scope."""

    def _findings(self, flow: Flow) -> list:  # overridden
        return []

    def _message(self, meet: Meet) -> str:  # overridden
        return ""

    def visit_FunctionDef(self, node: "cst.FunctionDef") -> None:
        for meet in self._findings(flow_of(self.context, node)):
            self.report(meet.node, self._message(meet))

    def visit_Module(self, node: "cst.Module") -> None:
        for meet in self._findings(flow_of(self.context, node)):
            self.report(meet.node, self._message(meet), statement=meet.statement)
