"""TDV502: a tensor made without ``device=`` meets a function's inputs.

``torch.zeros(n)`` inside a function makes a CPU tensor; combining it with a
tensor derived from the function's parameters fails once those live on a GPU.
Metric helpers cannot be found by name, so the rule follows the data within
each function: parameters -> values derived from them -> an operation that
needs one device, with the factory's result on the other side.

Values are tracked flow-insensitively enough to stay cheap: one pass over the
statements in source order, one kind per local name.
"""

from __future__ import annotations

from typing import Optional

from .._lazy import cst
from ..analysis.code import code_of
from ..analysis.flow.calls import dtype_only
from ..analysis.function_inputs import TENSOR_HINTS, is_data_class_name, is_data_function
from ..analysis.guards import availability_test, branch_blocks, is_no_cuda_test
from ..analysis.modules import class_kind, is_layer_attribute
from ..analysis.vocabulary import (
    DATA_FACTORIES,
    FACTORY_NAMES,
    MOVED_OR_CONVERTED,
    QUALIFIED_FACTORIES,
    factory_name,
    maybe_zero_dim,
    passes_device,
)
from ..names import dotted_name
from ..rule import Rule

# Kinds: ("T", root_param) for input-derived values, ("C", call, zero_dim) for
# a fresh CPU factory tensor, None for anything else (scalars, unknown).

# Reading these never gives a device-bound tensor.
META_ATTRS = frozenset("shape dtype device ndim is_cuda requires_grad grad_fn layout names is_sparse".split())
SCALAR_METHODS = frozenset(
    """size dim numel nelement item tolist numpy stride element_size data_ptr is_contiguous
    get_device equal is_floating_point is_complex storage_offset""".split()
)
SCALAR_BUILTINS = frozenset(
    """len int float bool str isinstance issubclass hasattr getattr range enumerate zip print
    min max sum abs round type id repr sorted list tuple dict set any all iter next format""".split()
)
# Shape factories: their positional Name arguments are sizes, not tensors.
SHAPE_FACTORIES = frozenset(
    f"torch.{n}" for n in "zeros ones empty full rand randn randint randperm arange range linspace logspace eye".split()
)
# torch functions whose tensor arguments must share one device.
COMBINE_FUNCS = frozenset(
    f"torch.{n}"
    for n in """cat concat concatenate stack hstack vstack dstack column_stack where add sub subtract
    mul multiply div divide true_divide floor_divide remainder fmod pow maximum minimum max min
    eq ne lt le gt ge matmul mm bmm dot einsum masked_select gather index_select logical_and
    logical_or logical_xor bitwise_and bitwise_or bitwise_xor atan2 lerp cdist outer searchsorted
    bucketize isin index_add scatter scatter_add take_along_dim cross allclose isclose""".split()
)
# torch functions that return no tensor (or one that is not on the inputs' device).
TORCH_NON_TENSOR = frozenset(
    f"torch.{n}"
    for n in """numel is_tensor is_floating_point is_complex device Size finfo iinfo typename
    is_grad_enabled no_grad enable_grad get_default_dtype result_type promote_types""".split()
)
TENSOR_OP_NAMESPACES = frozenset({"torch", "torch.nn.functional", "torch.linalg", "torch.special", "torch.fft"})
# Tensor methods that combine the receiver with their tensor arguments.
COMBINE_METHODS = frozenset(
    """add sub mul div true_divide floor_divide remainder fmod pow eq ne lt le gt ge maximum
    minimum matmul mm bmm dot masked_fill masked_select masked_scatter index_add index_copy
    index_fill index_put scatter scatter_add scatter_reduce gather where logical_and logical_or
    logical_xor bitwise_and bitwise_or bitwise_xor atan2 lerp outer cross""".split()
)
# In-place methods that do not combine devices (copy_ copies across devices).
NOT_COMBINING_INPLACE = frozenset("copy_ set_ requires_grad_ share_memory_ resize_ resize_as_ fill_ zero_".split())
# Reductions: over all elements (no dim) they give a 0-dim tensor.
REDUCTIONS = frozenset(
    "sum mean prod max min amax amin norm all any median std var logsumexp argmax argmin count_nonzero".split()
)
# Methods that can turn a 0-dim tensor into an n-dim one.
GROWS_DIMS = frozenset(
    "unsqueeze expand expand_as repeat reshape reshape_as broadcast_to flatten repeat_interleave view_as".split()
)
# Keywords that carry tensor operands (dim=, k=, generator= ... do not).
TENSOR_KEYWORDS = frozenset("input other index src source mask value values indices tensor tensors condition".split())
# Members that only a tensor has (not device/dtype/to/cuda: modules and
# accelerators have those too): reading one says the value is a tensor.
TENSOR_MEMBERS = frozenset(
    """shape ndim size dim numel nelement view reshape permute transpose t T mT unsqueeze squeeze
    expand expand_as repeat flatten contiguous detach sum mean max min argmax argmin abs exp log
    sqrt pow clamp clamp_ softmax log_softmax sigmoid tanh relu masked_fill masked_fill_
    index_select gather scatter scatter_ scatter_add scatter_add_ index_add_ index_put_ new_zeros
    new_ones new_full new_empty new_tensor type_as view_as reshape_as eq ne lt le gt ge any all
    nonzero topk sort argsort cumsum cumprod norm std var matmul mm bmm split chunk narrow unbind
    masked_select fill_ zero_ add_ sub_ mul_ div_ item tolist numpy grad is_cuda stride sign round
    floor ceil neg logical_not prod logsumexp unfold roll flip tril triu diag diagonal unique
    bincount histc element_size is_contiguous isnan isinf isfinite nan_to_num square reciprocal
    rsqrt amax amin median kthvalue quantile count_nonzero repeat_interleave index_fill
    masked_scatter take_along_dim copy_ broadcast_to movedim float long int bool byte""".split()
)
# ``Variable(t)`` returns ``t`` itself, wherever it is.
VARIABLES = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})
COMPARE_OPS = frozenset("Equal NotEqual LessThan LessThanEqual GreaterThan GreaterThanEqual".split())  # node types


class FactoryWithoutDevice(Rule):
    r"""## What it does
    Inside a function or method (other than a module's `forward` or a metric's `update`:
    TDV504 decides those, on by default), flags a torch factory call without `device=`
    (`torch.zeros(n)`, `torch.arange(n)`, `torch.tensor([...])`, `torch.eye(n)`, ... under any
    alias) whose result is then used together with a tensor derived from the function's
    parameters in an operation that needs one device:
    - arithmetic or comparison with it (`x - centre`, `positions < lengths[:, None]`);
    - an in-place op on either side (`total += batch.sum(0)`, `hist.index_add_(0, idx, w)`);
    - `index_put_`/`index_add_`/`scatter*_`/`masked_fill(_)`/`gather` and similar methods;
    - `torch.cat`/`torch.stack`/`torch.where` and other torch functions taking both;
    - indexing the CPU tensor with input-derived indices in an assignment;
    - in a method of a module, handing it to one of the module's layers with weights
      (`self.pos_emb(torch.arange(n))`; TDV504's page says which layers count).

    The rule follows the data, not names: a parameter counts as a tensor input once the
    function uses it as one (a tensor attribute or method such as `x.shape`, `x.float()`,
    `x[:, None]`, passing it to a torch function, or a `Tensor` annotation).

    Not flagged:
    - `*_like` factories and `Tensor.new_*` (they inherit the input's device);
    - calls with `device=` (or `**kwargs` that may carry it);
    - factories moved or converted at once: `.to(...)`, `.type_as(...)`, `.cuda()`,
      `.item()`, `.tolist()`;
    - a 0-dim tensor (`torch.tensor(2.0)`, `torch.zeros(())`) in an out-of-place op:
      PyTorch allows CPU scalars next to CUDA tensors (in-place into it is still flagged);
    - `torch.tensor(x)`/`torch.as_tensor(x)` of an input (they keep its device);
    - data-loading code: `__getitem__`, `__iter__`, `__next__`, `__len__`, functions whose
      name contains `collate`, and every method of a class named (or deriving from a class
      named) `*Dataset`, `*Sampler`, `*DataPipe`, `*Processor`, `*Preprocessing`,
      `*Transform` or `*Collator`: they build CPU batches on purpose;
    - factory calls inside strings and comments (docstring examples), and a factory that is
      the whole value of a keyword argument other than a tensor operand
      (`add_state("n", default=torch.zeros(3))`);
    - `out=` (it decides the device);
    - parameters never used as tensors (`torch.ones(4) * rank`), and parameters typed or
      defaulted as numbers or strings (`eps=1e-6`, `num_classes: int`).

    **Off by default.** Precision on real code: 59% on the tune split (judged findings, see
    docs/precision.md; 16% counting `latent` as false); the held-out figure is in
    docs/precision.md. Most tune findings are helpers that only ever see CPU inputs
    (test and demo data, models kept on CPU by design, inputs that are not tensors) or
    code following a `set_default_device` convention: whether an input can be on a GPU
    is not visible in the function. Turn it on with `extend-select = TDV502` (flake8) or
    `torchdevice --select TDV502`.

    ## Why is this bad?
    A factory without `device=` creates its tensor on the CPU. The function works in every
    CPU test, then fails as soon as its inputs live on a GPU. Metric helpers, masks built in
    `forward`, and accumulators are the usual victims.

    ## Example
    ```python
    def _get_stats(preds, target, num_classes: int):
        classes = torch.arange(num_classes)
        return (target[:, None] == classes).sum(0)
    ```

    ## Use instead
    ```python
    def _get_stats(preds, target, num_classes: int):
        classes = torch.arange(num_classes, device=target.device)
        return (target[:, None] == classes).sum(0)
    ```

    ## Fix safety
    No fix is offered: which input's device to use (and whether the tensor should rather be
    a registered buffer) is the author's choice. The message names the input the rule saw,
    `device=<input>.device`.

    ## When it does not report
    - factory calls given `device=`, `out=` or `**kwargs`, or whose arguments mention a device;
    - tensors that never meet a function input in an operation that needs one device; inputs without evidence of being
      tensors (no tensor attribute or method used on them, no `Tensor` annotation);
    - 0-dim factories (`torch.tensor(1.0)`) and Python scalars, which mix with CUDA tensors legally;
    - data-loading code (`__getitem__`, collate functions, Dataset / Sampler classes) and inputs that go through
      `.numpy()` (CPU code by design);
    - a module's `forward` and a metric's `update` outside test modules: TDV504 reports those.

    ## The error torch raises
    On a GPU machine:

    ```
    RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
    ```

    On a CPU machine, with the meta device standing in for the GPU (out-of-place ops with
    n-dim operands check devices):

    ```
    RuntimeError: Tensor on device cpu is not on the expected device meta!
    RuntimeError: Tensor on device meta is not on the expected device cpu!
    ```

    In-place ops into a CPU tensor do not raise on meta; the accumulator fixture checks its
    post-condition instead: `AssertionError: the total stayed on cpu`.
    """

    CODE = "TDV502"
    NAME = "factory-without-device-mixed-with-input"
    SUMMARY = "tensor created without `device=` and combined with a function's input"
    MESSAGE = (
        "{factory}() without device= makes a CPU tensor, and it meets {root} (an input) in an "
        "operation that needs one device; pass device={root}.device"
    )
    LAYER_MESSAGE = (
        "{factory}() without device= makes a CPU tensor, and {layer} receives it: the layer's "
        "weights are on the module's device; pass device={device}"
    )
    DEFAULT_ENABLED = False  # 59% tune precision, 16% strict (docs/precision.md)
    NEEDS = FACTORY_NAMES
    # False: every function but a model's entry point (TDV504 decides those, on by default).
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
        self._cpu_blocks: set = set()
        self._cpu_depth = 0
        # Per outermost function: parameters seen used as tensors, and the
        # findings waiting for that evidence (a later line may provide it).
        self._groups: list[_Group] = []

    # -- scopes ---------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._frames.append(None)
        self._in_class.append(True)
        self._data_class.append(_is_data_class(node) or bool(self._data_class and self._data_class[-1]))
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
                module = is_method and self._model_class[-1] == "module"
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
        static = any(_decorator_name(d) == "staticmethod" for d in node.decorators)
        if is_method and not static and ordered:
            ordered = ordered[1:]  # self / cls: its attributes are not inputs
        env = {}
        for param in ordered + list(params.kwonly_params):
            name = param.name.value
            typed = _annotation(param)
            env[name] = ("T", (name,), True) if _maybe_tensor(param, typed) else None
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
        if target is None and isinstance(node.target, cst.Name) and _is(value, "T"):
            self._env[node.target.value] = _impure(value)  # total = 0; total += x

    def visit_Expr(self, node: cst.Expr) -> None:
        self._eval_stmt(node.value)

    def visit_Return(self, node: cst.Return) -> None:
        self._eval_stmt(node.value)

    def visit_If(self, node: cst.If) -> None:
        self._eval_stmt(node.test)
        if self._env is None:
            return
        if availability_test(node.test, self.names):  # if torch.cuda.is_available(): ... else: <no CUDA>
            self._cpu_blocks.update(branch_blocks(node.orelse))
        elif is_no_cuda_test(node.test, self.names):
            self._cpu_blocks.add(id(node.body))

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        if id(node) in self._cpu_blocks:
            self._cpu_depth += 1

    def leave_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        if id(node) in self._cpu_blocks:
            self._cpu_depth -= 1

    def visit_While(self, node: cst.While) -> None:
        self._eval_stmt(node.test)

    def visit_Assert(self, node: cst.Assert) -> None:
        self._eval_stmt(node.test)

    def visit_For(self, node: cst.For) -> None:
        if self._env is not None:
            kind = self._ev(node.iter)
            self._bind(node.target, kind if _is(kind, "T") else None)  # items of an input
            group = self._groups[-1] if self._groups else None
            if group is not None and group.layers_of:
                # ``for layer in self.layers`` / ``zip(self.dims, self.rnns)``: the module's own layers
                group.loop_layers.update(_items_of_self(node.target, node.iter))

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
                self._bind(element.value, kind if _is(kind, "T") else None)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value, kind)
        elif isinstance(target, cst.Subscript):
            # cpu[cuda_indices] = v is an index_put_ with indices on another device.
            base = self._kind(target.value)
            for index in self._index_kinds(target):
                if _is(base, "C") and _is(index, "T"):
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
            if len(expr.slice) > 1 or any(_is_none_index(e) for e in expr.slice):
                self._used_as_tensor(base, None)  # x[:, None]: no list is indexed so
            plain = all(isinstance(e.slice, cst.Index) and not _is_none_index(e) for e in expr.slice)
            if _is(base, "T") and any(_is_string_index(e) for e in expr.slice):
                return _impure(base)  # batch["key"]: a mapping, not a tensor
            if _is(base, "C") and plain and not any(k is not None for k in indices):
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
            if kinds and all(_is(k, "C") for k in kinds):  # (h0, c0): an RNN's CPU state
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
            self._bind(clause.target, kind if _is(kind, "T") else None)
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
            if _is(a, "C") and _is(b, "T") and not a[2]:
                self._found(a, b)
        tensors = [k for k in (left, right) if _is(k, "T")]
        if tensors:
            pure = all(k is None or (_is(k, "T") and k[2]) for k in (left, right))
            return ("T", _roots(tensors), pure)
        cpu = [k for k in (left, right) if _is(k, "C")]
        if cpu:
            return ("C", cpu[0][1], all(k[2] for k in cpu))
        return None

    def _inplace(self, target, others: list) -> None:
        """``target op= other`` / ``target.op_(other)``: into a CPU tensor is never
        exempt; a CPU 0-dim argument next to a CUDA target is."""
        for other in others:
            if _is(target, "C") and _is(other, "T"):
                self._found(target, other)
            elif _is(target, "T") and _is(other, "C") and not other[2]:
                self._found(other, target)

    def _call(self, call: cst.Call):
        qualified = self.names.qualify(call.func)
        if qualified is not None and (qualified in QUALIFIED_FACTORIES or _is_tensor_op(qualified)):
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
        group = self._groups[-1] if self._groups else None
        if isinstance(call.func, cst.Name) and group is not None and call.func.value in group.loop_layers:
            if any(_is(k, "T") for k in args):  # layer(output, hidden): a layer run on the input
                label = f"{call.func.value} (a layer of self.{group.loop_layers[call.func.value]})"
                self._cpu_into_layer(call, label, args)
        tensors = [k for k in args if _is(k, "T")]
        return ("T", _roots(tensors), False) if tensors else None  # helper(x): derived, maybe

    def _torch_call(self, call: cst.Call, qualified: str):
        if factory_name(self.names, call):
            return self._factory(call, qualified)
        kinds = [k for arg in call.args for k in self._arg_kinds(arg)]
        if qualified in TORCH_NON_TENSOR:
            return None
        tensor_args = [k for arg, k in zip(_flat_args(call), kinds) if _tensor_arg(arg)]
        for kind in tensor_args:
            self._used_as_tensor(kind, None)
        if qualified in COMBINE_FUNCS:
            inputs = [k for k in tensor_args if _is(k, "T")]
            for kind in tensor_args:
                if inputs and _is(kind, "C") and not kind[2]:
                    self._found(kind, inputs[0])
        tensors = [k for k in tensor_args if _is(k, "T")]
        if tensors:
            return ("T", _roots(tensors), all(k[2] for k in tensors))
        positional = [(arg, k) for arg, k in zip(_flat_args(call), kinds) if arg.keyword is None]
        cpu = [k for _, k in positional if _is(k, "C")]
        if cpu and all(_is(k, "C") or _is_literal(arg.value) for arg, k in positional):
            whole = _reduces_all(qualified.rpartition(".")[2], call, positional=len(positional) - 1)
            return ("C", cpu[0][1], whole or all(k[2] for k in cpu))  # torch.sin(cpu) stays on the CPU
        return None

    def _factory(self, call: cst.Call, qualified: str):
        kinds = [self._kind(arg.value) for arg in call.args]
        if any(arg.star == "**" or (arg.keyword and arg.keyword.value in ("device", "out")) for arg in call.args):
            return None
        if qualified in DATA_FACTORIES and kinds and _is(kinds[0], "T"):
            return _impure(kinds[0])  # torch.tensor(x) / as_tensor(x) keep x's device
        if qualified in SHAPE_FACTORIES:
            self._forget_sizes(call)
        if self._cpu_depth:
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
        if method == "numpy" and _is(receiver, "T") and receiver[2] and self._groups:
            self._groups[-1].cpu_bound.update(receiver[1])  # x.numpy() fails on a GPU: CPU code
        args = [self._kind(arg.value) for arg in call.args if _tensor_arg(arg)]
        for arg in call.args:
            if not _tensor_arg(arg):
                self._kind(arg.value)
        if receiver is None and _is_self(func.value) and self._groups and self._groups[-1].layers_of:
            self._layer_call(call, method, args)
        if method in SCALAR_METHODS or (method in MOVED_OR_CONVERTED and not _is(receiver, "T")):
            return None
        if method in ("to", "cuda") and not dtype_only(call, self.names):
            return None  # an input moved to a device: TDV601 follows it from here
        if method == "cpu":
            return receiver if _is(receiver, "C") else None
        inplace = method.endswith("_") and not method.startswith("_") and method not in NOT_COMBINING_INPLACE
        if inplace:
            self._inplace(receiver, args)
        elif method in COMBINE_METHODS:
            for arg in args:
                self._combine(receiver, arg)
        if _is(receiver, "T"):
            return receiver
        if receiver is None:
            # self.fc(x) / self._helper(x): derived from x; other objects'
            # methods (sizevars.hint(n), np.sum(x)) may return anything.
            tensors = [k for k in args if _is(k, "T")] if _is_self_member(func.value) else []
            return ("T", _roots(tensors), False) if tensors else None
        zero = (receiver[2] and method not in GROWS_DIMS) or _reduces_all(method, call, positional=len(call.args))
        return ("C", receiver[1], zero)

    def _arg_kinds(self, arg: cst.Arg) -> list:
        """Kinds of an argument, looking into a literal list/tuple (torch.cat([...]))."""
        if isinstance(arg.value, (cst.List, cst.Tuple)):
            return [self._kind(e.value) for e in arg.value.elements]
        return [self._kind(arg.value)]

    def _used_as_tensor(self, kind, member: Optional[str]) -> None:
        """A parameter read through a tensor attribute/method, or passed to a
        torch function, is a tensor: findings against it become certain."""
        if _is(kind, "T") and kind[2] and (member is None or member in TENSOR_MEMBERS) and self._groups:
            self._groups[-1].evidence.update(kind[1])

    def _layer_call(self, call: cst.Call, attr: str, args: list) -> None:
        """``self.pos_emb(torch.arange(n))`` in a module: a CPU tensor handed to a layer,
        whose weights are wherever the module was moved."""
        if is_layer_attribute(self.names, self._groups[-1].layers_of, attr):
            self._cpu_into_layer(call, f"self.{attr}", args)

    def _cpu_into_layer(self, call: cst.Call, label: str, args: list) -> None:
        cpu = [k for k in args if _is(k, "C") and not k[2]]
        if cpu and not self._cpu_depth:  # a layer run where CUDA is missing is on the CPU
            self._groups[-1].layer_findings.append((cpu[0][1], label))

    # -- reporting ------------------------------------------------------
    def _found(self, cpu, tensor) -> None:
        if self._groups and not self._cpu_depth:  # a meeting where CUDA is missing is on the CPU
            self._groups[-1].findings.append((cpu[1], tensor[1]))

    def _report_group(self, group: "_Group") -> None:
        for call, roots in group.findings:
            evident = [r for r in roots if r in group.evidence and r not in group.cpu_bound]
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


def _roots(kinds: list) -> tuple:
    roots: list = []
    for kind in kinds:
        roots.extend(r for r in kind[1] if r not in roots)
    return tuple(roots)


def _is_data_class(node: cst.ClassDef) -> bool:
    """A Dataset/Sampler/Processor/Transform (by its own name or a base's): data-loading code,
    whose tensors are made on the CPU on purpose and moved by the loop."""
    bases = [_last_name(base.value) for base in node.bases if base.keyword is None]
    return is_data_class_name([node.name.value] + bases)


def _last_name(expr: cst.BaseExpression) -> Optional[str]:
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    return expr.value if isinstance(expr, cst.Name) else None


def _is_string_index(element: cst.SubscriptElement) -> bool:
    index = element.slice
    return isinstance(index, cst.Index) and isinstance(index.value, (cst.SimpleString, cst.ConcatenatedString))


def _is_none_index(element: cst.SubscriptElement) -> bool:
    index = element.slice
    return isinstance(index, cst.Index) and isinstance(index.value, cst.Name) and index.value.value == "None"


def _is_self_member(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "self" or (
        isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self"
    )


def _items_of_self(target: cst.BaseExpression, iterable: cst.BaseExpression) -> dict:
    """{loop variable: attr} for the variables that take the items of ``self.attr``:
    ``for x in self.attr``, ``for a, x in zip(self.other, self.attr)``,
    ``for i, x in enumerate(self.attr)``, ``reversed(self.attr)``."""
    if isinstance(iterable, cst.Attribute) and _is_self(iterable.value):
        return {target.value: iterable.attr.value} if isinstance(target, cst.Name) else {}
    if not (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name)):
        return {}
    wrapper, args = iterable.func.value, [arg.value for arg in iterable.args if arg.keyword is None]
    if wrapper == "reversed" and len(args) == 1:
        return _items_of_self(target, args[0])
    if not isinstance(target, (cst.Tuple, cst.List)):
        return {}
    elements = [element.value for element in target.elements]
    if wrapper == "enumerate" and args and len(elements) == 2:
        return _items_of_self(elements[1], args[0])
    if wrapper == "zip" and len(args) == len(elements):
        found = {}
        for element, arg in zip(elements, args):
            found.update(_items_of_self(element, arg))
        return found
    return {}


def _is_self(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "self"


def _is_tensor_op(qualified: str) -> bool:
    """torch.add, torch.nn.functional.pad, torch.linalg.norm ... (not private helpers)."""
    namespace, _, name = qualified.rpartition(".")
    return namespace in TENSOR_OP_NAMESPACES and not name.startswith("_")


def _reduces_all(name: str, call: cst.Call, positional: int) -> bool:
    """``t.sum()`` / ``torch.max(t)``: a reduction over every element is 0-dim."""
    if name not in REDUCTIONS or positional:
        return False
    return not any(arg.keyword is not None and arg.keyword.value in ("dim", "axis") for arg in call.args)


def _impure(kind):
    return ("T", kind[1], False)


def _flat_args(call: cst.Call) -> list:
    """Args, with a literal list/tuple argument expanded (matches _arg_kinds)."""
    flat = []
    for arg in call.args:
        if isinstance(arg.value, (cst.List, cst.Tuple)):
            flat.extend(cst.Arg(e.value, keyword=arg.keyword) for e in arg.value.elements)
        else:
            flat.append(arg)
    return flat


def _tensor_arg(arg: cst.Arg) -> bool:
    """Positional, or a keyword that names a tensor operand (not dim=, k=, generator=)."""
    return arg.keyword is None or arg.keyword.value in TENSOR_KEYWORDS


def _is(kind, tag: str) -> bool:
    return kind is not None and kind[0] == tag


def _decorator_name(decorator: cst.Decorator) -> Optional[str]:
    target = decorator.decorator
    return target.value if isinstance(target, cst.Name) else None


def _annotation(param: cst.Param) -> Optional[str]:
    if param.annotation is None:
        return None
    return code_of(param.annotation.annotation)


def _maybe_tensor(param: cst.Param, typed: Optional[str]) -> bool:
    """Could this parameter hold a tensor? Typed or defaulted as a plain
    number/string/flag says no."""
    if typed is not None:
        return any(hint in typed for hint in TENSOR_HINTS)
    default = param.default
    if default is None:
        return True
    return not _is_literal(default)


def _is_literal(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Attribute):  # torch.float32 and other constants
        return True
    if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        return True
    if isinstance(expr, cst.Name):
        return expr.value in {"True", "False"}
    if isinstance(expr, cst.UnaryOperation):
        return _is_literal(expr.expression)
    if isinstance(expr, (cst.Tuple, cst.List)):
        return all(_is_literal(e.value) for e in expr.elements)
    return False
