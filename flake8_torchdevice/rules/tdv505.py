"""TDV505: an optimizer's state loaded before its module is moved to a device.

Followed per function (or module) body, in source order: an optimizer built over a module's
parameters (``opt = SGD(model.parameters())``, also through ``params = model.parameters()``),
then ``opt.load_state_dict(...)`` while the module has not been moved in that body, then a move
of the module (``model.cuda()``, ``model = model.to(device)``, ``DataParallel(model).cuda()``) on
a path that can follow the load (not the other branch of the same ``if``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from .._lazy import cst
from ..analysis.code import code_of, last_name, subtree
from ..analysis.devices import device_argument, is_device_expression, non_cuda_literal
from ..rule import FUNCTION, Rule

# A call that builds an optimizer: ``torch.optim.SGD``, ``AdamW``, ``build_optimizer``, ``Lamb``...
_OPTIMIZER = re.compile(r"optim|sgd|adam|rmsprop|adagrad|adadelta|lamb|lars|lion|adafactor|lbfgs", re.I)
# A helper handed the optimizer that moves its state (``optimizer_to(opt, device)``).
_STATE_MOVER = re.compile(r"device|move|cuda|(?:^|_)to(?:$|_)", re.I)


@dataclass
class _Load:
    call: cst.Call
    statement: Optional[int]
    optimizer: str
    module: str
    path: tuple  # the (if, branch) pairs around it
    moved: bool = False


@dataclass
class _Frame:
    parameters: dict = field(default_factory=dict)  # name -> module whose parameters it holds
    optimizers: dict = field(default_factory=dict)  # optimizer code -> module code
    moved: set = field(default_factory=set)  # module codes moved so far in this body
    loads: list = field(default_factory=list)
    state_moved: set = field(default_factory=set)  # optimizers whose state the code moves itself
    path: list = field(default_factory=list)  # the (if, branch) pairs being walked


class OptimizerStateBeforePlacement(Rule):
    r"""**On by default.** Precision on held-out user code: 1 of 1 over v2-v78 with the rules of 2026-12-03, session
    of 13:59 (v76's false finding gone: the name resolver follows a star import of the project's own module for
    `torch` since); 1 of 2 findings right over the held-out batches v2-v76 with the rules of 2026-12-03, session of
    11:17 (v76's first read 0 of 1: a NeRF trainer whose `__main__` sets `torch.cuda.FloatTensor` as the default
    tensor type before it builds the model, so the state loads on the GPU; such a default is read since, but that
    file reaches `torch` only through a star import, which the name resolver did not follow then). It reported nothing
    in the 12,837 files the corpus first held (its well-known training scripts move the model before they resume the
    optimizer); the one real fix it comes from (deepspeech.pytorch bcad275, "Expected object of type
    torch.FloatTensor but found type torch.cuda.FloatTensor ... optimizer.step()") is found (docs/recall.md).

    ## What it does
    Flags `optimizer.load_state_dict(...)` when the optimizer was built in the same function (or
    script) over a module's parameters, the module had not been moved there yet, and the module
    is moved to a device after the load (`model.cuda()`, `model = model.to(device)`), on a path
    that can follow it.

    ## Why is this bad?
    `Optimizer.load_state_dict` casts the loaded state (momentum buffers, Adam's moments) to the
    device each parameter is on *at load time*, the CPU here. Moving the module afterwards moves
    its parameters but not the optimizer's state, so the first `optimizer.step()` after resuming
    on a GPU meets CPU state and fails. Training from scratch works (the state is created lazily,
    on the parameters' device), which is why the mistake survives until someone resumes.

    ## Example
    ```python
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    if args.resume:
        checkpoint = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
    model = model.to(device)
    ```

    ## Use instead
    ```python
    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    if args.resume:
        checkpoint = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])  # cast to the parameters' device
    ```

    ## Fix safety
    None: the move has to go above the load (or the optimizer's state be moved after it), and
    what else depends on where the model is at that point is the author's to check.

    ## When it does not report
    - a module moved before the load in the same body (the state follows the parameters);
    - an optimizer whose state the code moves itself (`optimizer.state` read anywhere in the body,
      as in `for state in optimizer.state.values(): ...`, or the optimizer handed to a helper named
      for a move, `optimizer_to(optimizer, device)`);
    - an optimizer built again after the load on every path (its loaded state is dropped);
    - a move to a device that is not CUDA by its literal (`model.to("cpu")`), a `.to()` of a dtype;
    - a move in the other branch of the `if` that holds the load;
    - an optimizer or module from another function (a parameter, an attribute set elsewhere), whose
      placement at load time this body does not show;
    - a module whose code sets a default device that may be CUDA at import (`torch.set_default_device(device)`,
      `torch.set_default_tensor_type("torch.cuda.FloatTensor")`, also in its `__main__` block): its modules are
      built on the GPU, so the state is loaded there (post-hoc, from v76's first read; a file that reaches `torch`
      only through a star import, `from models import *`, is not read so).

    ## The error torch raises
    At the first `optimizer.step()` after resuming, on a GPU:

    ```
    RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
    ```

    With the meta device standing in for the GPU on a CPU machine nothing raises (the step mixes
    meta parameters and CPU state silently), so the proof checks where the state is:

    ```
    AssertionError: the optimizer's state stayed on cpu while the parameters moved to meta
    ```
    """

    CODE = "TDV505"
    NAME = "optimizer-state-loaded-before-placement"
    SUMMARY = "`optimizer.load_state_dict(...)` before the optimizer's module is moved to a device"
    MESSAGE = (
        "{optimizer}.load_state_dict() casts the state to where {module}'s parameters are now (the CPU), "
        "and {module} is moved to a device after it: the first step on a GPU fails; move {module} before "
        "loading the optimizer's state"
    )
    NEEDS = [{".load_state_dict"}, {"*parameters"}, {".cuda", ".to"}]
    SCOPE = FUNCTION

    def __init__(self, context) -> None:
        super().__init__(context)
        self._frames = [_Frame()]
        self._orelse: set[int] = set()  # ids of the ``else`` / ``elif`` parts of the ``if``s walked
        self._moves: set[int] = set()  # ids of the calls that move to a device

    @property
    def _frame(self) -> _Frame:
        return self._frames[-1]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._frames.append(_Frame())

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._report(self._frames.pop())

    def leave_Module(self, node: cst.Module) -> None:
        self._report(self._frames.pop())

    # -- paths: which branch of which ``if`` the walk is in --------------------------------
    def visit_If(self, node: cst.If) -> None:
        if id(node) in self._orelse:
            self._switch_branch()  # an ``elif``: the ``if`` around it is in its other branch now
        self._frame.path.append((id(node), 0))
        if node.orelse is not None:
            self._orelse.add(id(node.orelse))

    def visit_Else(self, node: cst.Else) -> None:
        if id(node) in self._orelse:  # an ``if``'s, not a loop's or a ``try``'s
            self._switch_branch()

    def leave_If(self, node: cst.If) -> None:
        self._frame.path.pop()

    def _switch_branch(self) -> None:
        path = self._frame.path
        if path:
            if_id, branch = path[-1]
            path[-1] = (if_id, branch + 1)

    # -- bindings -----------------------------------------------------------------------------
    def leave_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind(node.target, node.value)

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if not isinstance(target, (cst.Name, cst.Attribute)):
            return
        name, frame = code_of(target), self._frame
        if any(id(node) in self._moves for node in subtree(value)):
            frame.moved.add(name)  # ``model = Net().to(device)``: placed from the start
        module = self._parameters_of(value)
        if isinstance(value, cst.Call) and _OPTIMIZER.search(last_name(value.func) or "") and module:
            frame.optimizers[name] = module
            path = tuple(frame.path)
            # Built again after the load on every path to here: the loaded state is gone.
            frame.loads = [load for load in frame.loads if not (load.optimizer == name and _prefix(path, load.path))]
        elif module:
            frame.parameters[name] = module

    def _parameters_of(self, value: cst.BaseExpression) -> Optional[str]:
        """The module whose parameters ``value`` holds: ``model.parameters()``, a comprehension or
        a filter over them, a name bound to them."""
        for node in subtree(value):
            if _is_parameters_call(node):
                return code_of(node.func.value)
            if isinstance(node, cst.Name) and node.value in self._frame.parameters:
                return self._frame.parameters[node.value]
        return None

    # -- loads and moves ----------------------------------------------------------------------
    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "state" and code_of(node.value) in self._frame.optimizers:
            self._frame.state_moved.add(code_of(node.value))  # ``optimizer.state``: moved by hand

    def visit_Call(self, node: cst.Call) -> None:
        frame, func = self._frame, node.func
        if frame.optimizers and _STATE_MOVER.search(last_name(func) or ""):  # before any code_of: a hot path
            for arg in node.args:
                if code_of(arg.value) in frame.optimizers:
                    frame.state_moved.add(code_of(arg.value))  # ``optimizer_to(optimizer, device)``
        if not isinstance(func, cst.Attribute):
            return
        method, receiver = func.attr.value, func.value
        if method == "load_state_dict":
            optimizer = code_of(receiver)
            module = frame.optimizers.get(optimizer)
            if module is not None and not self._was_moved(module):
                frame.loads.append(_Load(node, self.context.statement, optimizer, module, tuple(frame.path)))
        elif method in ("cuda", "to") and self._moves_to_a_device(node):
            self._moves.add(id(node))
            if isinstance(receiver, (cst.Name, cst.Attribute)):
                frame.moved.add(code_of(receiver))  # ``model.to(device)`` before any optimizer
            for module in self._modules_in(receiver):
                frame.moved.add(module)
                for load in frame.loads:
                    if load.module == module and not _exclusive(load.path, tuple(frame.path)):
                        load.moved = True

    def _was_moved(self, module: str) -> bool:
        return any(module == moved or module.startswith(moved + ".") for moved in self._frame.moved)

    def _moves_to_a_device(self, call: cst.Call) -> bool:
        """``.cuda(...)``, or ``.to(device)`` to a device that is not literally off CUDA."""
        if call.func.attr.value == "cuda":
            return True
        target = device_argument(call)
        return target is not None and is_device_expression(target, self.names) and not non_cuda_literal(
            target, self.names)

    def _modules_in(self, receiver: cst.BaseExpression) -> set[str]:
        """The optimizers' modules a moved value holds: the module itself (``model.cuda()``), or
        a wrapper built around it (``DataParallel(model).cuda()``, ``model.float().to(d)``)."""
        modules = set(self._frame.optimizers.values())
        found: set[str] = set()
        if not modules:
            return found
        for node in subtree(receiver):
            if isinstance(node, (cst.Name, cst.Attribute)):
                text = code_of(node)
                found.update(m for m in modules if m == text or m.startswith(text + "."))
        return found

    def _report(self, frame: _Frame) -> None:
        if self.names.default_device_at_import:
            return  # a CUDA default set at import: the modules are built on the GPU, and the state loads there
        for load in frame.loads:
            if load.moved and load.optimizer not in frame.state_moved:
                message = self.MESSAGE.format(optimizer=load.optimizer, module=load.module)
                self.report(load.call, message, statement=load.statement)


def _is_parameters_call(node: cst.CSTNode) -> bool:
    return (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in ("parameters", "named_parameters"))


def _prefix(outer: tuple, inner: tuple) -> bool:
    """Is ``outer`` (a path of if-branches) around ``inner``: on every path that reaches it?"""
    return inner[:len(outer)] == outer


def _exclusive(first: tuple, second: tuple) -> bool:
    """Are two places in different branches of one ``if``?"""
    branches = dict(first)
    return any(if_id in branches and branches[if_id] != branch for if_id, branch in second)
