"""TDV113: a placed module moved to the CPU in place inside a loop that runs it again."""

from __future__ import annotations

from typing import Optional

from .._lazy import cst
from ..analysis.code import target_names
from ..analysis.devices import cpu_literal, device_argument
from ..analysis.flow.places import dtype_only
from ..rule import Rule

# Calls only a module (not a tensor) answers: a name they are called on is a module.
_MODULE_METHODS = frozenset(
    "parameters named_parameters state_dict load_state_dict eval train modules children zero_grad apply".split()
)


class ModuleMovedToCpuInLoop(Rule):
    r"""**On by default.** No finding on the precision corpus (the 520 projects held here, 487 held out): its
    `.cpu().state_dict()` and `torch.save(model.cpu(), ...)` saves move the module back right after, run after the
    loop, or sit in a helper without a loop; fewer than 15 findings exist for that reason. Written after recall
    batch 89's first read (attribute-control's `learn_delta.py`, which saves a checkpoint with
    `delta.cpu().state_dict()` in its training loop): that fix is tune evidence for it.

    ## What it does
    Flags `model.cpu()` (or `model.to("cpu")`) inside a `for` or `while` loop of the function (or module code) that
    put `model` on a device that may be a GPU (`model.to(device)`, `model = model.cuda()`), when the loop also runs
    `model` elsewhere and does not move it back after the `.cpu()`. The typical form saves a checkpoint in the middle
    of training: `torch.save(model.cpu().state_dict(), path)`.

    A name counts as a module when the same code calls a method only modules have on it (`.parameters()`,
    `.state_dict()`, `.load_state_dict()`, `.eval()`, `.train()`, `.zero_grad()`, ...).

    ## Why is this bad?
    `nn.Module.cpu()` and `nn.Module.to()` move the module in place, unlike `Tensor.cpu()`, which returns a copy.
    After the first checkpoint every later iteration runs a CPU model on inputs that are still moved to the GPU,
    and training stops with a device mismatch at the next step. On a CPU-only machine nothing happens, so the
    mistake shows only on a GPU.

    ## Example
    ```python
    model.to(device)
    for epoch in range(epochs):
        for x, y in loader:
            loss = criterion(model(x.to(device)), y.to(device))
            ...
        torch.save(model.cpu().state_dict(), f"epoch{epoch}.pt")
    ```

    ## Use instead
    ```python
    model.to(device)
    for epoch in range(epochs):
        for x, y in loader:
            loss = criterion(model(x.to(device)), y.to(device))
            ...
        torch.save(model.state_dict(), f"epoch{epoch}.pt")  # load it with map_location
    ```
    Or move the module back (`model.to(device)`) right after saving.

    ## Fix safety
    No fix is offered: whether to keep the checkpoint's tensors on the GPU or move the module back is the
    author's choice.

    ## When it does not report
    - a move of the module to a device in the loop, before or after the `.cpu()` (`model.cuda()`,
      `model.to(device)`), a new binding of its name there, or a `break`/`return` right after the `.cpu()`: no
      later iteration runs the CPU module;
    - a loop that does not use the module anywhere else;
    - a name the code does not place on a device that may be a GPU before the loop (a `.to("cpu")` is no
      placement), or does not show to be a module (a tensor's `.cpu()` returns a copy);
    - attributes (`self.model.cpu()`) and names the loop rebinds.

    ## The error torch raises
    On a GPU machine, at the next iteration's forward:

    ```
    RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
    ```
    (or `Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same` from a
    convolution). On a CPU machine, with the meta device standing in for the GPU, the flagged call itself fails: it
    moves the module's parameters in place, and a meta tensor has no data to copy to the CPU (a tensor's `.cpu()`
    fails the same way there, so the GPU claim is the one that shows the next iteration's mismatch):

    ```
    NotImplementedError: Cannot copy out of meta tensor; no data!
    ```
    """

    CODE = "TDV113"
    NAME = "module-moved-to-cpu-in-loop"
    SUMMARY = "`Module.cpu()` inside a loop moves the placed module for every later iteration"
    MESSAGE = (
        "{name}.cpu() moves the module to the CPU in place, inside a loop that runs it again on inputs on the "
        "device; save {name}.state_dict() as it is, or move it back with {name}.to(device)"
    )
    NEEDS = [{".cpu(", "cpu\""}, {"for", "while"}]
    TOGETHER = True

    def __init__(self, context) -> None:
        super().__init__(context)
        self._scopes: list[_Scope] = [_Scope()]

    # -- scopes ------------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.append(_Scope())

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._decide(self._scopes.pop())

    def leave_Module(self, node: cst.Module) -> None:
        self._decide(self._scopes.pop())

    def visit_For(self, node: cst.For) -> None:
        scope = self._scopes[-1]
        scope.loops.append(node)
        self._rebinds(node.target)

    def visit_Assign(self, node: cst.Assign) -> None:
        moved = _moved_to_cpu(node.value, self.names)  # ``model = model.cpu()`` is the same module, moved
        for target in node.targets:
            self._rebinds(target.target, skip=moved)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._rebinds(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._rebinds(node.name)

    def _rebinds(self, target: cst.CSTNode, skip: Optional[str] = None) -> None:
        scope = self._scopes[-1]
        for name in target_names(target):
            if name == skip:
                continue
            scope.placed_in.update((name, id(loop)) for loop in scope.loops)  # bound anew each time round

    def leave_For(self, node: cst.For) -> None:
        self._scopes[-1].loops.pop()

    def visit_While(self, node: cst.While) -> None:
        self._scopes[-1].loops.append(node)

    def leave_While(self, node: cst.While) -> None:
        self._scopes[-1].loops.pop()

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        scope = self._scopes[-1]
        scope.order += 1
        if scope.loops and any(isinstance(s, (cst.Break, cst.Return)) for s in node.body):
            scope.exits.append((scope.loops[-1], scope.order))

    # -- what the scope does with its names ----------------------------------
    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self._scopes[-1].loops:
            self._scopes[-1].not_reads.add(id(node.attr))  # ``x.model`` reads no name ``model``

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None and self._scopes[-1].loops:
            self._scopes[-1].not_reads.add(id(node.keyword))

    def visit_Name(self, node: cst.Name) -> None:
        scope = self._scopes[-1]
        if scope.loops and id(node) not in scope.not_reads:
            for loop in scope.loops:
                reads = scope.uses.setdefault(id(loop), {})
                reads[node.value] = reads.get(node.value, 0) + 1

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)):
            return
        scope, name, method = self._scopes[-1], func.value.value, func.attr.value
        if method in _MODULE_METHODS:
            scope.modules.add(name)
        move = _move(node, method, self.names)
        if move == "cpu" and scope.loops:
            scope.candidates.append((node, name, scope.loops[-1], scope.order))
        elif move == "device":
            scope.placed.setdefault(name, scope.order)
            scope.placed_in.update((name, id(loop)) for loop in scope.loops)

    def _decide(self, scope: "_Scope") -> None:
        for call, name, loop, order in scope.candidates:
            if name not in scope.modules or scope.placed.get(name, order) >= order:
                continue
            if (name, id(loop)) in scope.placed_in:
                continue  # moved (or bound anew) in the loop: each iteration places it again
            if any(lp is loop and o == order + 1 for lp, o in scope.exits):
                continue  # the loop ends right after it
            if scope.uses.get(id(loop), {}).get(name, 0) > 1:  # read elsewhere in the loop than by this call
                self.report(call, self.MESSAGE.format(name=name))


class _Scope:
    __slots__ = ("loops", "order", "placed", "modules", "candidates", "placed_in", "uses", "exits", "not_reads")

    def __init__(self) -> None:
        self.loops: list = []  # the loops open at this point, outermost first
        self.order = 0  # simple statements seen: the source order of what follows
        self.placed: dict = {}  # name -> order of its first move to a device that may be a GPU
        self.modules: set = set()  # names a module-only method is called on
        self.candidates: list = []  # (call, name, innermost loop, order) of each .cpu() in a loop
        self.placed_in: set = set()  # (name, id(loop)): moved to a device or bound anew somewhere in that loop
        self.uses: dict = {}  # id(loop) -> {name: how many times the loop reads it}
        self.exits: list = []  # (loop, order) of each break / return statement line
        self.not_reads: set = set()  # ids of Name nodes that read no variable (attributes, keywords)


def _moved_to_cpu(value: cst.BaseExpression, names) -> Optional[str]:
    """The name in ``name.cpu()`` / ``name.to("cpu")``, else None."""
    func = value.func if isinstance(value, cst.Call) else None
    if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)):
        return None
    return func.value.value if _move(value, func.attr.value, names) == "cpu" else None


def _move(call: cst.Call, method: str, names) -> Optional[str]:
    """"cpu" for ``.cpu()`` / ``.to("cpu")``, "device" for ``.cuda()`` / ``.to(device)``, else None."""
    if method == "cpu" and not call.args:
        return "cpu"
    if method == "cuda":
        return "device"
    if method != "to" or dtype_only(call, names):
        return None
    device = device_argument(call)
    if device is None:
        return None
    return "cpu" if cpu_literal(device, names) else "device"
