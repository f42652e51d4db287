"""TDV301: DataParallel / DistributedDataParallel wraps a module before it is moved.

Flow is followed per function (or module) body, in source order. A name is
*unplaced* from ``m = Net()`` (a CapWords construction, optionally followed by
placement-neutral calls such as ``.eval()``) until something may place it:
``m.to(...)``, ``m.cuda()``, ``m = m.to(...)``, passing ``m`` to any other call
(``setup(m, device)`` may move it), or any other rebinding. Only unplaced
modules are reported; parameters, attributes and modules from other functions
(``m = build_model(cfg)``) have unknown placement and are never reported.

``DataParallel`` of an unplaced module is reported at its first forward
(``dp(x)``) if neither the module nor the wrapper was moved before it; a
moved wrapper goes to ``device_ids[0]`` and runs. ``DistributedDataParallel`` of a CPU module is legitimate CPU training
(gloo), so it is reported only when the call shows the module was meant for
a GPU: ``device_ids=``/``output_device=``, or a move of the wrapper itself
(``DDP(m).cuda()``, ``ddp = DDP(m); ddp.to(device)``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from .._lazy import cst
from ..analysis.code import code_of
from ..analysis.devices import DEFAULT_DEVICE_SETTERS  # change where new modules are created, file-wide
from ..analysis.vocabulary import PARALLEL_WRAPPERS, wrapper_names_a_gpu
from ..rule import Rule

_DP = "DataParallel"
_DDP = "DistributedDataParallel"
WRAPPERS = PARALLEL_WRAPPERS  # qualified name -> _DP or _DDP
# Methods that (may) place a module; ``_apply`` is how ``to``/``cuda`` work.
MOVES = frozenset({"to", "cuda", "xpu", "mps", "npu", "hpu", "ipu", "mtia", "to_empty", "_apply"})
# Methods that leave a module where it is (and return it, for the chaining ones).
NEUTRAL = frozenset(
    """eval train float double half bfloat16 requires_grad_ zero_grad apply
    parameters named_parameters buffers named_buffers modules named_modules
    children named_children state_dict load_state_dict add_module register_buffer
    register_parameter register_module register_forward_hook register_forward_pre_hook
    register_full_backward_hook share_memory""".split()
)
# Calls that read a module without placing it (everything else given a module
# may place it: setup(model, device)).
READERS = frozenset({"print", "isinstance", "hasattr", "getattr", "len", "repr", "str", "type", "id"})
# An argument that names a device hands the module its placement: Net(device=d).
_DEVICE_WORD = re.compile(r"device|cuda|gpu|rank", re.I)
UNPLACED, PLACED, UNKNOWN = "unplaced", "placed", "unknown"


@dataclass
class _Frame:
    """One function (or module, or class) body."""

    states: dict = field(default_factory=dict)  # name -> (state, block path)
    blocks: list = field(default_factory=list)  # ids of the enclosing statement blocks
    withs: int = 0  # open ``with`` statements (device contexts, init_empty_weights, ...)
    wrappers: dict = field(default_factory=dict)  # name -> (DDP call waiting for a move, block path of its binding)
    parallel: dict = field(default_factory=dict)  # name -> DataParallel call of an unplaced module, not yet moved


def _on_one_path(first: tuple, then: tuple) -> bool:
    """Does a statement in block path ``then`` run after one in ``first`` on some path: the same
    branch or one inside it, or a block that encloses it (after the ``if``), not a sibling branch?"""
    shorter = min(len(first), len(then))
    return first[:shorter] == then[:shorter]


def _callee_name(func: cst.BaseExpression) -> Optional[str]:
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return None


def _method(call: cst.BaseExpression) -> Optional[str]:
    if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute):
        return call.func.attr.value
    return None


def _wrapped(call: cst.Call) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "module":
            return arg.value
    first = call.args[0] if call.args else None
    return first.value if first is not None and first.keyword is None and not first.star else None


class WrapBeforePlacement(Rule):
    r"""**On by default.** No finding in the precision corpus (about 2.3 M lines of released
    code and user scripts): released code rarely keeps this crash; docs/precision.md.

    ## What it does
    Flags a call to `DataParallel` or `DistributedDataParallel` (under any alias:
    `torch.nn.DataParallel`, `torch.nn.parallel.DataParallel`, `DP = nn.DataParallel`,
    `from torch.nn.parallel import DistributedDataParallel as DDP`,
    `import torch.nn.parallel as par`, the `data_parallel` / `distributed` module paths)
    that can fail because its module is not on its device yet. Within the same function (or
    module) body, a module is unplaced when it is an inline construction (`Net()`) or a name
    last assigned from one (`model = Net()`, also `Net().eval()`) that nothing has moved:
    no `model.to(...)`, `model.cuda()`, `model = model.to(...)`, and no other call that
    received `model`.

    - `DistributedDataParallel(model, device_ids=...)` (or `output_device=`) of an unplaced
      module: the constructor raises at once, on any machine, whatever is done to the
      module afterwards (the training-script form: the wrap inside `if RANK != -1:`, the
      `model = model.to(device)` lines later). Without `device_ids` a CPU module is
      legitimate CPU (gloo) training, so it is reported only when the wrapper itself is
      moved afterwards (`DDP(model).cuda()`, `ddp = DDP(model); ddp.to(device)`, also a wrapper
      bound in one branch of an `if` and moved after it, whatever the other branch binds: `if
      use_cuda: net = DDP(net)` / `else: net = DDPCPU(net)`, then `net.to(device)`): it was
      meant for a GPU, and was built where its module was.
    - `DataParallel` of an unplaced module whose wrapper is run (`dp(x)`,
      `DataParallel(Net())(x)`) before either is moved. With two or more GPUs that
      forward fails. A wrapper moved before its first forward
      (`model = nn.DataParallel(model); model = model.to(device)`, the tutorial form, or
      `nn.DataParallel(m).eval().to(device)`) goes to `device_ids[0]` and runs; a wrapper
      returned, stored or handed to another call is not followed.

    Not flagged, because the placement is not known where the wrap happens: a module
    that is a parameter, an attribute (`self.model`), or comes from another function
    (`model = build_model(cfg)`: code bases often build and move the model in one
    function and wrap it in another; a helper `def wrap(model): return DDP(model,
    device_ids=[rank])` is mostly called with a placed model); a module built inside a
    `with` block (`with torch.device("cuda"):`); a construction that is handed a device
    (`Net(device=device)`); a construction in one branch of an `if` when the wrap is
    outside it; and files that call `torch.set_default_device`. Names that merely
    contain the word (`DistributedDataParallelKwargs`, `MyDataParallel`) are not wrappers.

    ## Why is this bad?
    PyTorch's documented order is: move the module to its device, then wrap it.
    `DistributedDataParallel(model, device_ids=[rank])` with `model` still on the CPU
    raises at construction. `DataParallel` requires its module's parameters on
    `device_ids[0]` before it runs: with one GPU it moves the module itself (which hides
    the bug), with two or more the first forward pass fails. Moving the wrapper afterwards
    (`DataParallel(model).to(device)`) works only while `device` happens to be
    `device_ids[0]`; moving a `DistributedDataParallel` after construction leaves its
    gradient buckets and broadcast state on the device it was built on.

    ## Example
    ```python
    model = Net()
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])
    ```

    ## Use instead
    ```python
    model = Net().to(device)  # device = torch.device("cuda", rank)
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])
    ```

    ## Fix safety
    No fix is offered. The right device (`rank`, `local_rank`, a configured device) is
    not known from the wrapping call alone, and moving the statement changes the order
    of side effects.

    ## When it does not report
    - a module that is a parameter, an attribute or built in another function (its placement is unknown where it is
      wrapped);
    - a `DataParallel` moved before its first forward (`nn.DataParallel(m).to(device)`, `dp = dp.to(device)`, or
      the module it holds: `m.to(device)`), or never run here (returned, stored, handed on);
    - a module already moved (`model.to(device)`, `model.cuda()`), passed to any other call first, built inside
      `with torch.device(...)`, handed a device (`Net(device=d)`), or built around a placed module
      (`LossWrapper(model, opt)` after `model = Net().cuda()`: its parameters may all be that model's);
    - `DistributedDataParallel` without `device_ids` / `output_device` and never moved: CPU (gloo) training;
    - files that call `torch.set_default_device` or `torch.set_default_tensor_type`.

    ## The error torch raises
    `DistributedDataParallel` with `device_ids` and a CPU module (one-process gloo group,
    torch 2.13):

    ```
    ValueError: DistributedDataParallel device_ids and output_device arguments only work with single-device/multiple-device GPU modules or CPU modules, but got device_ids [0], output_device None, and module parameters {device(type='cpu')}.
    ```

    `DataParallel` of a CPU module, or of a wrapper moved to another GPU, on a machine
    with two or more GPUs, at the first forward pass:

    ```
    RuntimeError: module must have its parameters and buffers on device cuda:0 (device_ids[0]) but found one of them on device: cpu
    ```

    and, for `DataParallel(model)` moved afterwards with `.to("cuda:1")`:

    ```
    RuntimeError: module must have its parameters and buffers on device cuda:0 (device_ids[0]) but found one of them on device: cuda:1
    ```
    """  # noqa: E501 -- quotes torch's error messages verbatim

    CODE = "TDV301"
    NAME = "parallel-wrap-before-placement"
    SUMMARY = "`DataParallel`/`DistributedDataParallel` wrapping a module that is not on its device yet"
    MESSAGE = (
        "DataParallel/DistributedDataParallel wraps a module that is not on its device "
        "yet; move the module first (module.to(device)), then wrap it"
    )

    FORWARD = (
        "DataParallel runs a module that neither it nor the module was moved to a GPU before; "
        "with two or more GPUs the forward fails: move the module first (module.to(device)), then wrap it"
    )

    NEEDS = {"DataParallel", "DistributedDataParallel"}
    # A default device set anywhere in the file places every new module.
    READS = {"set_default_device", "set_default_tensor_type"}

    def __init__(self, context) -> None:
        super().__init__(context)
        self._frames = [_Frame()]
        self._moved_results: set = set()  # ids of calls whose result is moved: DDP(m).cuda()
        self._waiting: dict = {}  # id(DDP call) -> call, unplaced module, no GPU sign yet
        self._parallel: dict = {}  # id(DataParallel call) -> call, unplaced module, not moved with it
        self._holds_placed: set = set()  # ids of calls given a placed module (a construction may hold it)
        self._called: set = set()  # ids of calls that are called at once: ``DataParallel(m)(x)``
        self._found: list = []  # (call, message, statement), reported unless a default device is set
        self._default_device = False

    # -- frames and blocks ---------------------------------------------------
    @property
    def _frame(self) -> _Frame:
        return self._frames[-1]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._frames.append(_Frame())

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._frames.pop()

    visit_ClassDef = visit_FunctionDef
    leave_ClassDef = leave_FunctionDef

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._frame.blocks.append(id(node))

    def leave_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._frame.blocks.pop()

    visit_SimpleStatementSuite = visit_IndentedBlock
    leave_SimpleStatementSuite = leave_IndentedBlock

    def visit_With(self, node: cst.With) -> None:
        self._frame.withs += 1
        for item in node.items:
            self._forget_targets(item.asname.name if item.asname else None)

    def leave_With(self, node: cst.With) -> None:
        self._frame.withs -= 1

    # -- bindings ------------------------------------------------------------
    def leave_Assign(self, node: cst.Assign) -> None:
        # On leave: the value's own calls (a wrap reading the old binding) ran first.
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            self._bind(node.targets[0].target.value, node.value)
        else:
            for target in node.targets:
                self._forget_targets(target.target)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        if isinstance(node.target, cst.Name) and node.value is not None:
            self._bind(node.target.value, node.value)

    def visit_For(self, node: cst.For) -> None:
        self._forget_targets(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._forget_targets(node.target)

    def _forget_targets(self, target: Optional[cst.BaseExpression]) -> None:
        if target is None:
            return
        if isinstance(target, cst.Name):
            self._frame.states[target.value] = (UNKNOWN, ())
            self._frame.parallel.pop(target.value, None)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._forget_targets(element.value)
        elif isinstance(target, cst.StarredElement):
            self._forget_targets(target.value)

    def _bind(self, name: str, value: cst.BaseExpression) -> None:
        frame = self._frame
        path = tuple(frame.blocks)
        frame.states[name] = (self._placement(value), path)
        frame.parallel.pop(name, None)
        bound = frame.wrappers.get(name)
        if bound is not None and _on_one_path(bound[1], path):
            del frame.wrappers[name]  # rebound after the wrap on its path; another branch's binding leaves it
        wrap = id(self._unchain(value))
        if wrap in self._waiting:
            frame.wrappers[name] = (self._waiting[wrap], path)
        elif wrap in self._parallel:
            frame.parallel[name] = self._parallel[wrap]

    # -- what placement an expression has ------------------------------------
    @staticmethod
    def _unchain(expr: cst.BaseExpression) -> cst.BaseExpression:
        """``Net().eval().float()`` -> ``Net()``: neutral calls keep placement."""
        while _method(expr) in NEUTRAL:
            expr = expr.func.value
        return expr

    def _placement(self, expr: cst.BaseExpression) -> str:
        if _method(expr) in MOVES:
            return PLACED
        expr = self._unchain(expr)
        if isinstance(expr, cst.Name):
            state, path = self._frame.states.get(expr.value, (UNKNOWN, ()))
            # A construction in one branch says nothing about another branch.
            if state == UNPLACED and tuple(self._frame.blocks[: len(path)]) != path:
                return UNKNOWN
            return state
        if not isinstance(expr, cst.Call):
            return UNKNOWN
        if _callee_name(expr.func) == "deepcopy":  # copy.deepcopy(m) is where m is
            return self._placement(expr.args[0].value) if expr.args else UNKNOWN
        return UNPLACED if self._is_construction(expr) else UNKNOWN

    def _is_construction(self, call: cst.Call) -> bool:
        name = _callee_name(call.func)
        if not name or not name[0].isupper() or self.names.qualify(call.func) in WRAPPERS:
            return False
        # Inside ``with torch.device("cuda")`` / ``init_empty_weights()`` it may be placed.
        if self._frame.withs:
            return False
        if id(call) in self._holds_placed:  # ``LossWrapper(model, opt)``: its parameters may be the model's
            return False
        return not any(_DEVICE_WORD.search(code_of(arg)) for arg in call.args)

    # -- calls ---------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if self.names.qualify(func) in DEFAULT_DEVICE_SETTERS:
            self._default_device = True
        method = _method(node)
        if method in MOVES:
            receiver = self._unchain(func.value)  # ``DataParallel(m).eval().to(device)``
            if isinstance(receiver, cst.Call):
                self._moved_results.add(id(receiver))
            elif isinstance(receiver, cst.Name):
                self._moved(receiver.value)
        self._forward(func)
        wrapper = WRAPPERS.get(self.names.qualify(func) or "")
        if wrapper is not None:
            self._check_wrap(node, wrapper)
        elif method not in NEUTRAL and not (isinstance(func, cst.Name) and func.value in READERS):
            if any(self._placement(arg.value) == PLACED for arg in node.args if isinstance(arg.value, cst.Name)):
                self._holds_placed.add(id(node))  # noted before handing it on makes its state unknown
            # Any other call may place a module it is given: setup(model, device).
            for arg in node.args:
                if isinstance(arg.value, cst.Name) and arg.value.value in self._frame.states:
                    self._frame.states[arg.value.value] = (UNKNOWN, ())
                if isinstance(arg.value, cst.Name):
                    self._release(arg.value.value)

    def _forward(self, func: cst.BaseExpression) -> None:
        """``dp(x)`` or ``DataParallel(m)(x)``: a forward pass of a wrapper whose
        module was never placed, the call that fails with two GPUs."""
        if isinstance(func, cst.Call):
            self._called.add(id(func))  # visited before the wrap it calls
        call = self._frame.parallel.pop(func.value, None) if isinstance(func, cst.Name) else None
        if call is not None:
            self._report(call, _DP)

    def _moved(self, name: str) -> None:
        frame = self._frame
        if name in frame.states:
            frame.states[name] = (PLACED, ())
        self._release(name)  # ``dp = DataParallel(m); dp.to(device)`` (or ``m.to(device)``) before any forward
        waiting = frame.wrappers.get(name)
        if waiting is not None and _on_one_path(waiting[1], tuple(frame.blocks)):
            del frame.wrappers[name]  # ddp = DDP(m); ddp.cuda(): it was meant for a GPU
            self._report(waiting[0], _DDP)

    def _release(self, name: str) -> None:
        """``name`` (a DataParallel, or the module one holds) was moved or handed
        on before the wrapper's first forward: that forward is not known to fail."""
        parallel = self._frame.parallel
        for wrapper, call in list(parallel.items()):
            module = _wrapped(call)
            if wrapper == name or (isinstance(module, cst.Name) and module.value == name):
                del parallel[wrapper]

    def _check_wrap(self, call: cst.Call, wrapper: str) -> None:
        module = _wrapped(call)
        placement = self._placement(module) if module is not None else UNKNOWN
        if wrapper == _DP:
            # Placed before its first forward (``DataParallel(m).to(device)``,
            # ``dp = dp.to(device)``) it runs: wait for a forward or a move.
            if placement != UNPLACED or id(call) in self._moved_results:
                return
            if id(call) in self._called:  # ``DataParallel(Net())(x)``
                self._report(call, _DP)
            else:
                self._parallel[id(call)] = call
        elif placement == UNPLACED:
            if wrapper_names_a_gpu(call) or id(call) in self._moved_results:
                self._report(call, wrapper)
            else:
                self._waiting[id(call)] = call

    def _report(self, call: cst.Call, wrapper: str) -> None:
        if wrapper == _DP:
            message = self.FORWARD
        else:
            message = self.MESSAGE.replace("DataParallel/DistributedDataParallel", wrapper)
        self._found.append((call, message, self.context.statement))

    def leave_Module(self, node: cst.Module) -> None:
        if not self._default_device:
            for call, message, statement in self._found:
                self.report(call, message, statement=statement)
