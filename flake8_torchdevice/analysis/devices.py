"""What names a device: strings, ``torch.device(...)`` calls, device-like names.

One home for device-expression recognition, shared by the rules that ask
"does this module choose its device?" (TDV101, TDV105), "is this argument a
device?" (TDV103) and "is this device not CUDA?" (TDV104).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from .._lazy import cst
from ..names import DEFAULT_DEVICE_SETTERS, NameResolver
from .bindings import AssignmentBindings
from .code import argument, last_name, module_chain_root, string_value, subtree
from .guards import demands_gpu_accelerator, is_nccl_init

# Device types torch accepts in a device string, optionally with an index.
DEVICE_STRING = re.compile(r"(?:cuda|cpu|mps|xpu|xla|meta|hpu|npu|mtia|ipu|privateuseone)(?::\d*)?$")
# The same types without CUDA: the words a non-CUDA device literal holds.
NON_CUDA_TYPES = frozenset("cpu mps xpu xla meta hpu npu mtia ipu privateuseone".split())


def device_argument(call: cst.Call) -> Optional[cst.BaseExpression]:
    """The ``device=`` keyword, else the first positional argument, of ``.to()``."""
    first = None
    for arg in call.args:
        if arg.star:
            continue
        if arg.keyword is None:
            first = arg.value if first is None else first
        elif arg.keyword.value == "device":
            return arg.value
    return first


def literal_text(expr: cst.BaseExpression) -> Optional[str]:
    """A plain or joined string's text; an f-string's literal head (``f"cuda:{rank}"``)."""
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
        return string_value(expr)
    if isinstance(expr, cst.FormattedString):
        head = expr.parts[0] if expr.parts else None
        return head.value if isinstance(head, cst.FormattedStringText) else None
    return None


def cuda_only_device(expr: cst.BaseExpression, names: NameResolver) -> bool:
    """A device that is CUDA whatever its ordinal: ``"cuda:1"``, ``f"cuda:{rank}"``, ``"cuda:" + str(gpu)``,
    ``"cuda:%d" % gpu``, ``"cuda:{}".format(gpu)``, and ``torch.device(...)`` of one, or ``torch.device("cuda", i)``."""
    expr = _device_type(expr, names)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "format":
        expr = expr.func.value
    while isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Modulo)):
        expr = expr.left
    return (literal_text(expr) or "").startswith("cuda")


def is_device_name(expr: cst.BaseExpression) -> bool:
    """``device``, ``args.dev``, ``self.target_device``, ``device_``."""
    if isinstance(expr, cst.Attribute):
        last = expr.attr.value
    elif isinstance(expr, cst.Name):
        last = expr.value
    else:
        return False
    return last in ("device", "dev") or last.endswith("_device") or last.endswith("device_")


def is_device_expression(expr: cst.BaseExpression, names: NameResolver) -> bool:
    """A ``torch.device(...)`` call, a device string, or a device-like name."""
    if isinstance(expr, cst.Call):
        return names.qualify(expr.func) == "torch.device"
    text = literal_text(expr)
    if text is not None:
        return bool(DEVICE_STRING.match(text))
    return is_device_name(expr)


def is_device_move(call: cst.Call, names: NameResolver, cpu_chooses: bool = True) -> bool:
    """A ``.to()`` call that chooses a device (not ``.to(torch.float16)``):
    the premise of "this module chooses its device". The literal ``"cuda"``,
    ``"cuda:0"`` and ``torch.device("cuda")`` are no choice: they go where
    ``.cuda()`` goes (a CUDA-bound script is consistent); a device held in a
    variable or chosen at run time is, and so is another machine's literal type
    (``.to("mps")``). The literal CPU is one where ``cpu_chooses``: code that puts
    its state on the CPU (an optimizer for CPU tensors) runs there; for a rule
    that asks whether a ``.cuda()`` breaks a choice made at run time it is none
    (``out.to(torch.device("cpu"))`` brings a result back)."""
    target = device_argument(call)
    return (
        target is not None
        and is_device_expression(target, names)
        and not literal_first_cuda(target, names)
        and (cpu_chooses or not _cpu_literal(target, names))
    )


def _cpu_literal(expr: cst.BaseExpression, names: NameResolver) -> bool:
    """``"cpu"``, ``torch.device("cpu")``: the literal CPU (``"mps"`` is a choice of machine)."""
    return _literal_type(expr, names) == "cpu"


def is_cuda_call(expr: cst.CSTNode) -> bool:
    """``<x>.cuda()`` without a device argument (``.cuda(non_blocking=True)`` too; not ``.cuda(rank)``)."""
    return (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value == "cuda"
        and device_argument(expr) is None
    )


def device_targets(call: cst.Call) -> list:
    """Where a call puts something: its ``device=`` keywords, and ``.to()``'s device argument."""
    targets = [arg.value for arg in call.args if arg.keyword is not None and arg.keyword.value == "device"]
    if isinstance(call.func, cst.Attribute) and call.func.attr.value == "to":
        target = device_argument(call)
        targets += [target] if target is not None else []
    return targets


def _device_type(expr: cst.BaseExpression, names: NameResolver) -> Optional[cst.BaseExpression]:
    """The type a literal device names: ``t`` of ``torch.device(t, ...)`` or ``torch.device(type=t)``
    (through nested calls), else ``expr`` itself; None for a ``torch.device`` call without one."""
    while isinstance(expr, cst.Call) and names.qualify(expr.func) == "torch.device":
        arg = argument(expr, 0, "type")
        if arg is None:
            return None
        expr = arg.value
    return expr


def non_cuda_literal(expr: cst.BaseExpression, names: NameResolver) -> bool:
    """``"cpu"``, ``"mps:0"``, ``torch.device("cpu")``, ``torch.device(type="xpu")``:
    a literal device whose type is not CUDA."""
    return _literal_type(expr, names) in NON_CUDA_TYPES


def _literal_type(expr: cst.BaseExpression, names: NameResolver) -> Optional[str]:
    """The type of a literal device (``"mps"`` of ``"mps:0"`` or ``torch.device("mps")``), or None."""
    expr = _device_type(expr, names)
    text = string_value(expr) if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)) else None
    return text.partition(":")[0] if text is not None and DEVICE_STRING.match(text) else None


def is_cpu_string(node: cst.CSTNode) -> bool:
    """``"cpu"`` or ``"cpu:0"``: a device string naming the CPU."""
    value = string_value(node)
    return value is not None and (value == "cpu" or value.startswith("cpu:"))


def cpu_literal(expr: cst.BaseExpression, names: NameResolver) -> bool:
    """A CPU string, ``torch.device("cpu")`` or ``torch.device(type="cpu")``: the CPU, literally."""
    expr = _device_type(expr, names)
    return expr is not None and is_cpu_string(expr)


def cpu_comparison(test: cst.BaseExpression, names: NameResolver) -> Optional[bool]:
    """Does ``test`` compare the chosen device with the CPU? True where it holds on the CPU
    (``device == "cpu"``, ``defaults.device == torch.device("cpu")``, ``"cpu" in str(device)``), False where
    it holds off it (``device.type != "cpu"``), None for any other test: the other branch, or the one that
    holds off the CPU, runs only where the device is not the CPU."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    comparison = test.comparisons[0]
    if not (cpu_literal(test.left, names) or cpu_literal(comparison.comparator, names)):
        return None
    operator = comparison.operator
    if isinstance(operator, (cst.Is, cst.IsNot)) and any(
            isinstance(side, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.Call))
            for side in (test.left, comparison.comparator)):
        return None  # identity with a value made on the spot: ``str(device) is not "cpu"`` is always true
    if isinstance(operator, (cst.Equal, cst.Is, cst.In)):
        return True
    return False if isinstance(operator, (cst.NotEqual, cst.IsNot, cst.NotIn)) else None


def cuda_literal(expr: cst.BaseExpression, names: NameResolver) -> bool:
    """``"cuda"``, ``"cuda:1"``, ``torch.device("cuda", 0)``, ``torch.device(type="cuda")``: CUDA, literally."""
    expr = _device_type(expr, names)
    value = string_value(expr) if expr is not None else None
    return value is not None and bool(_CUDA_STRING.match(value))


_CUDA_STRING = re.compile(r"cuda(?::\d+)?$")


def sets_cuda_default(call: cst.Call, names: NameResolver) -> bool:
    """``torch.set_default_tensor_type("torch.cuda.FloatTensor")`` (or ``torch.cuda.HalfTensor``),
    ``torch.set_default_device("cuda")``: every tensor made from here on is a CUDA one, on the
    current GPU, as ``.cuda()`` places (an ordinal, ``"cuda:1"``, names its GPU, as ``.cuda(1)``)."""
    if names.qualify(call.func) not in DEFAULT_DEVICE_SETTERS or not call.args or call.args[0].keyword is not None:
        return False
    value = call.args[0].value
    text = string_value(value)
    if text is None:
        text = names.qualify(value) or ""
    if text.startswith("torch.cuda."):
        return True
    if isinstance(value, cst.Call) and argument(value, 1, "index") is not None:
        return False  # ``torch.device("cuda", 1)``
    kind = _device_type(value, names)
    return kind is not None and string_value(kind) == "cuda"


# Receivers that are modules by name: ``model.cuda()``, ``self.netG.to(d)``.
_MODULE_NAME = re.compile(r"model|net|module|encoder|decoder|generator|discriminator|backbone|classifier|critic", re.I)


def names_a_module(name: str) -> bool:
    """``model``, ``netG``, ``self.encoder``'s ``encoder``: a name that says a module is held."""
    return bool(_MODULE_NAME.search(name))


def constructs_a_module(name: str) -> bool:
    """``Net``, ``nn.Linear``'s ``Linear``: a class called, not ``torch.FloatTensor`` nor ``Variable`` (a tensor's
    wrapper)."""
    return name[:1].isupper() and not name.endswith("Tensor") and name != "Variable"


# Holders of a configured device: ``args.device``, ``self.device``, ``accelerator.device``.
_OPTION_HOLDER = re.compile(
    r"^(?:self|args?|opts?|options|cfg|config|conf|hparams|params|flags|accelerator|fabric|trainer)$", re.I
)


def is_module_receiver(call: cst.Call, statement: bool) -> bool:
    """Is ``<x>.cuda()`` / ``<x>.to(d)`` placing a module? A bare statement
    (a tensor's move is lost unless bound), a construction (``Net()``, not
    ``torch.FloatTensor()`` nor ``Variable(t)``, a tensor's wrapper), or a name that says
    model/net/encoder."""
    if statement:
        return True
    receiver = module_chain_root(call.func.value)  # ``Net().eval().cuda()``
    if isinstance(receiver, cst.Call):
        return constructs_a_module(last_name(receiver.func) or "")
    return names_a_module(last_name(receiver) or "")


def chosen_device(call: cst.Call, names: NameResolver, cpu_chooses: bool = True) -> Optional[tuple]:
    """``x.to(device)``, a ``.to()`` that chooses a device (``is_device_move``) rather than following a value's
    (``.to(y.device)``): ``(name,)`` of the device it names (``None`` where no plain name); None for any other call."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "to" and is_device_move(call, names, cpu_chooses)):
        return None
    target = device_argument(call)
    if follows_a_value(target):  # ``.to(x.device)`` goes wherever ``x`` is: no choice
        return None
    return (target.value if isinstance(target, cst.Name) else None,)


def follows_a_value(target: cst.BaseExpression) -> bool:
    """``.to(x.device)``, ``.to(next(m.parameters()).device)``: a move that
    follows a value's device, no choice of the module's own (``args.device`` and
    ``self.device`` are configured choices)."""
    if not (isinstance(target, cst.Attribute) and target.attr.value == "device"):
        return False
    holder = target.value
    return not (isinstance(holder, cst.Name) and _OPTION_HOLDER.match(holder.value))


@dataclass
class DeviceScope:
    """One function (or the module): its device bindings and placements."""

    parent: Optional["DeviceScope"]
    bindings: dict = field(default_factory=dict)  # device-like name -> [is a literal CUDA device]
    literal_cuda: list = field(default_factory=list)  # unguarded placements on literal CUDA (names: to resolve)
    cuda_only: dict = field(default_factory=dict)  # device-like name -> [is a CUDA device, any ordinal]
    moves: list = field(default_factory=list)  # the target name of each device choice (None: not a name)
    offloads: bool = False  # moves a module back with .cpu(): it places its modules by hand

    def literal(self, name: str) -> bool:
        """Is every binding of ``name`` seen from here a literal CUDA device
        (parameters: their default)?"""
        return self._every("bindings", name)

    def always_cuda(self, name: str) -> bool:
        """Is every binding of ``name`` seen from here a CUDA device, whatever its ordinal (parameters: never)?"""
        return self._every("cuda_only", name)

    def _every(self, table: str, name: str) -> bool:
        """Is every entry for ``name`` true in ``table`` of the nearest scope that binds it?"""
        scope = self
        while scope is not None:
            entries = getattr(scope, table)
            if name in entries:
                return all(entries[name])
            scope = scope.parent
        return False

    def cuda_bound(self) -> bool:
        """Does this scope need CUDA anyway, unguarded: a literal ordinal (``x.cuda(0)``, ``"cuda:0"``), a
        question only CUDA answers, or a name every binding of which is a literal CUDA device? A placement
        on the plain ``"cuda"`` device is no such need: TDV101 reads it as a ``.cuda()`` spelt out."""
        return any(name is None or self.literal(name) for name in self.literal_cuda)


def plain_cuda(expr: cst.BaseExpression, names: NameResolver) -> bool:
    """``"cuda"`` or ``torch.device("cuda")``: CUDA without an ordinal, where ``.cuda()`` goes."""
    return _device_text(expr, names) == "cuda"


class DeviceChoice(AssignmentBindings):
    """Mixin for a ``Rule`` (before ``CudaGuards`` in its bases): does this
    module choose its device? It does when a ``.to()`` chooses one
    (``is_device_move``) that may be CPU: not a name every binding of which
    is a literal CUDA device (``dev = torch.device("cuda:0")``). A ``.to()`` that
    follows a value (``.to(x.device)``) chooses nothing: it goes wherever its input is. It chooses
    nothing when it is a CUDA program anyway: it starts an NCCL process
    group or a launcher that demands a GPU (``accelerator="gpu"``), or the worker it spawns (``mp.spawn(worker, ...)``,
    ``start_processes``) selects its GPU with an unconditional
    ``torch.cuda.set_device``. A scope that places on a literal CUDA ordinal unguarded
    (``.to("cuda:0")``, ``x.cuda(0)``) or asks a question only CUDA answers is ``cuda_bound``. Read
    ``chooses_device`` in ``leave_Module``, once the whole
    module is seen. Rules using it add ``DeviceChoice.READS``: the device
    names' bindings are read wherever they are, and so is a CUDA-or-CPU fallback bound to any name
    (``DEVICE = "cuda" if torch.cuda.is_available() else "cpu"``: its CUDA literal ends ``cuda"`` or ``cuda:``)."""

    READS = frozenset({"init_process_group", "set_device", "spawn", "start_processes", "*device", "dev", "accelerator",
                       'cuda"', "cuda:"})
    # Is ``.to("cpu")`` a choice of device (``is_device_move``)?
    CPU_CHOOSES = True

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.device_scope = DeviceScope(None)
        self._device_scopes = [self.device_scope]
        self._cuda_required = False
        self._device_setters: set[str] = set()  # top-level functions calling set_device unconditionally
        self._spawned: set[str] = set()  # functions handed to mp.spawn / start_processes
        self._function_names: list[str] = []
        self._statement_call: Optional[cst.Call] = None  # the call a bare expression statement makes

    def _cuda_program(self) -> bool:
        return self._cuda_required or bool(self._device_setters & self._spawned)

    @property
    def chooses_device(self) -> bool:
        """Does the module choose a device that may be the CPU, which a ``.cuda()`` breaks?"""
        return not self._cuda_program() and any(
            name is None or not scope.literal(name) for scope in self._device_scopes for name in scope.moves)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        self._function_names.append(node.name.value)
        self.device_scope = DeviceScope(self.device_scope)
        self._device_scopes.append(self.device_scope)
        for param in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params):
            # ``def f(x, device="cuda")``: the caller may pass another, but this code's own choice is CUDA.
            default = param.default
            literal = default is not None and literal_first_cuda(default, self.names)
            self.device_scope.bindings[param.name.value] = [literal]
            self.device_scope.cuda_only[param.name.value] = [False]  # the caller may pass any device

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().leave_FunctionDef(node)
        self._function_names.pop()
        self.device_scope = self.device_scope.parent

    def visit_Expr(self, node: cst.Expr) -> None:
        self._statement_call = node.value if isinstance(node.value, cst.Call) else None

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if not isinstance(target, cst.Name):
            return
        if is_device_name(target):
            literal = storage_choice(value, self.names) or literal_first_cuda(value, self.names)
            if not literal and cpu_or_cuda(value, self.names):
                # ``device = "cuda" if torch.cuda.is_available() else "cpu"``: the code's own choice,
                # whether or not a ``.to(device)`` uses it
                self.device_scope.moves.append(target.value)
            self.device_scope.bindings.setdefault(target.value, []).append(literal)
            self.device_scope.cuda_only.setdefault(target.value, []).append(cuda_only_device(value, self.names))
        elif cpu_or_cuda(value, self.names):
            # The fallback itself makes any name a device choice: ``DEVICE = "cuda" if ... else "cpu"``.
            self.device_scope.moves.append(target.value)

    def is_statement(self, call: cst.Call) -> bool:
        """Is ``call`` a whole expression statement (``model.cuda()``)?"""
        return call is self._statement_call

    def note_call(self, call: cst.Call) -> None:
        """Call from the rule's ``visit_Call`` for every call."""
        chosen = chosen_device(call, self.names, self.CPU_CHOOSES)
        if chosen is not None:
            self.device_scope.moves.extend(chosen)
        if not self.cuda_guarded():
            self._note_literal_cuda(call)
        if not self._cuda_required and (
                is_nccl_init(call, self.names) or demands_gpu_accelerator(call) and not self.cuda_guarded()):
            self._cuda_required = True  # NCCL, or a launcher that demands a GPU: a CUDA program
        qualified = self.names.qualify(call.func) or ""
        if qualified == "torch.cuda.set_device" and not self.cuda_guarded() and len(self._function_names) == 1:
            self._device_setters.add(self._function_names[0])
        elif qualified.rpartition(".")[2] in ("spawn", "start_processes") and call.args:
            target = call.args[0].value
            if isinstance(target, cst.Name):
                self._spawned.add(target.value)

    def _note_literal_cuda(self, call: cst.Call) -> None:
        """``x.to("cuda:0")``, ``torch.zeros(3, device="cuda:0")``, ``x.to(dev)`` with ``dev`` a
        literal CUDA device, ``x.cuda(0)`` (a literal ordinal), or a question only CUDA answers
        (``torch.cuda.current_device()``, ``get_device_name(0)``): this scope needs CUDA anyway.
        The plain ``"cuda"`` device is no such need: TDV101 reads it as a ``.cuda()`` spelt out."""
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "cuda" and call.args \
                and isinstance(call.args[0].value, cst.Integer) and call.args[0].keyword is None:
            self.device_scope.literal_cuda.append(None)
        elif isinstance(func, cst.Attribute) and func.attr.value in _QUERY_NAMES \
                and self.names.qualify(func) in CUDA_ONLY_QUERIES:  # the name first: qualify is not free
            self.device_scope.literal_cuda.append(None)
        plain = False
        for target in device_targets(call):
            if plain_cuda(target, self.names):
                plain = True  # no need of CUDA, but TDV101's mistake: a ``.cuda()`` spelt out
            elif literal_first_cuda(target, self.names):
                self.device_scope.literal_cuda.append(None)
            elif isinstance(target, cst.Name) and is_device_name(target):
                self.device_scope.literal_cuda.append(target.value)
        if plain:
            self.note_plain_cuda(call)

    def note_plain_cuda(self, call: cst.Call) -> None:
        """An unguarded placement on the plain ``"cuda"`` device (``x.to("cuda")``, ``device="cuda"``):
        for a rule that reads it (TDV101)."""


# ``torch.cuda`` questions that initialise CUDA and raise without it (measured on a CPU build: "Torch not
# compiled with CUDA enabled"; "No CUDA GPUs are available" on a CUDA build without a GPU).
_QUERY_NAMES = frozenset(("current_device", "get_device_name", "get_device_properties", "get_device_capability"))
CUDA_ONLY_QUERIES = frozenset(f"torch.cuda.{name}" for name in _QUERY_NAMES)


# Words of a flag that says where data is kept, not whether the code runs without a GPU.
_STORAGE_WORDS = frozenset(
    "gather offload store storage keep cache cached efficient pin stash buffer mem memory".split())


def storage_choice(expr: cst.BaseExpression, names: NameResolver) -> bool:
    """``torch.device("cpu") if gather_on_cpu else torch.device("cuda")``, ``"cpu" if
    self.cudaEfficient else "cuda"``: a literal CPU/CUDA choice made on a storage flag
    says where data is kept; the code runs on CUDA either way (a flag such as
    ``args.cpu`` or ``use_cuda``, or ``torch.cuda.is_available()``, is a real choice)."""
    if not isinstance(expr, cst.IfExp):
        return False
    branches = (expr.body, expr.orelse)
    if not (any(literal_first_cuda(b, names) for b in branches) and any(non_cuda_literal(b, names) for b in branches)):
        return False
    words = {word.lower() for node in subtree(expr.test) if isinstance(node, cst.Name)
             for word in _WORD.findall(node.value)}
    return bool(words & _STORAGE_WORDS)


_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


def cpu_or_cuda(expr: cst.BaseExpression, names: NameResolver) -> bool:
    """``"cuda" if torch.cuda.is_available() else "cpu"``, also inside ``torch.device(...)``: a literal
    choice between a CUDA device and another one, a device that may be the CPU."""
    if isinstance(expr, cst.Call) and names.qualify(expr.func) == "torch.device" and len(expr.args) == 1:
        expr = expr.args[0].value
    if not isinstance(expr, cst.IfExp):
        return False
    branches = (expr.body, expr.orelse)
    return any((string_value(b) or "").startswith("cuda") or literal_first_cuda(b, names) for b in branches) \
        and any(non_cuda_literal(b, names) for b in branches)


def literal_first_cuda(expr: cst.BaseExpression, names: NameResolver) -> bool:
    """``"cuda:0"``, ``torch.device("cuda:0")``, ``torch.device("cuda", 0)``
    and the plain ``"cuda"``: the GPU ``.cuda()`` goes to in a one-GPU process
    (``"cuda:1"`` is a choice)."""
    return _device_text(expr, names) in ("cuda", "cuda:0")


def _device_text(expr: cst.BaseExpression, names: NameResolver) -> Optional[str]:
    """The text of a literal device: ``"cuda"`` for itself or ``torch.device("cuda")``, ``"cuda:0"`` for
    ``torch.device("cuda", 0)`` too; None where ``torch.device``'s ordinal is no integer literal."""
    if isinstance(expr, cst.Call) and names.qualify(expr.func) == "torch.device":
        first, index = argument(expr, 0, "type"), argument(expr, 1, "index")
        text = string_value(first.value) if first is not None else None
        if index is None:
            return text
        return f"cuda:{index.value.value}" if text == "cuda" and isinstance(index.value, cst.Integer) else None
    return string_value(expr)
