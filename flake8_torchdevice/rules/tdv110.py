"""TDV110: a module moves its own input to a device it guesses, not to its own device."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .._lazy import cst
from ..analysis.code import argument, subtree, target_names
from ..analysis.devices import device_argument
from ..analysis.modules import class_kind, is_layer_attribute
from ..rule import CLASS, Fix, Rule

# Questions about the machine, not about the module: their answer is the same for a
# module kept on the CPU of a GPU machine as for one placed on the GPU.
_MACHINE_QUESTIONS = frozenset({
    "torch.cuda.is_available", "torch.cuda.device_count", "torch.backends.mps.is_available",
    "torch.mps.is_available", "torch.xpu.is_available",
})


@dataclass
class _Method:
    name: str
    guesses: set = field(default_factory=set)  # local names bound to a guessed device
    moved: dict = field(default_factory=dict)  # local name -> (the move, its statement)
    returned: list = field(default_factory=list)  # moves whose value the method returns
    # names bound from a call of another method of the class: (method name, names)
    from_methods: list = field(default_factory=list)
    fed: set = field(default_factory=set)  # local names handed to the module's weights


@dataclass
class _Class:
    name: str
    module: bool
    methods: list = field(default_factory=list)
    moves_itself: bool = False  # ``self.to(...)`` / ``self.cuda()``: it places itself too
    # tensor state kept on a guessed device in a plain attribute: name -> (the move, its
    # statement, the method that set it), and the attributes other methods read as they are
    state: dict = field(default_factory=dict)
    read_by: dict = field(default_factory=dict)  # attribute -> names of the methods reading it


class InputMovedToGuessedDevice(Rule):
    r"""**On by default.** Precision on held-out user code: 8 of 8 findings true or latent on the 228 held-out projects
    this machine holds with the rules of 2026-12-07, session of 07:19, whose post-hoc change (a bare `.cuda()` under
    the method's own availability check) added three, all latent (a RetinaNet's box transform keeping its mean and std
    on CUDA whenever CUDA exists, a tagger's forward sending its characters there); 5 of 5 findings true or latent over the held-out batches
    v2-v89 with the rules of 2026-12-04, session of 21:03, post-hoc: a submodule built on a guessed device
    (`self.encoder = Encoder(..., device=guess)`) is moved by `.to()` and no longer reported (v89's first read 0 of
    1, that submodule; nothing right lost); 5 of 5 findings true or latent (v2-v22), none a first read: the class
    came from a recall fix (docs/precision.md). Fewer than 15 exist: a guessed device inside a module's own methods
    is rare.

    ## What it does
    Flags, in a method of an `nn.Module`, a move of a value to a device the method guesses from
    the machine (`"cuda" if torch.cuda.is_available() else "cpu"`, with or without an `"mps"`
    branch, also inside `torch.device(...)`; or a bare `.cuda()` in the body of the method's own
    `if torch.cuda.is_available():`, the same guess as a statement: post-hoc, from recall batch 105's
    `forward_pass`, which sends each batch with `data.cuda()` there and never moves the network), where the moved
    value then reaches the module's
    own weights: it is handed to `self(...)`, `self.forward(...)` or a layer of the module
    (`self.encoder(...)`) in the same method, or returned to another method of the class that
    hands it to them (`image, size = self.image2tensor(raw)`, then `self.forward(image)`).
    Also tensor state a method keeps on such a device in a plain attribute
    (`self.coords = grid.to(device)` in `__init__`) that another method reads as it is.

    ## Why is this bad?
    Where the module lives is its user's choice (`model.to(device)`), not the machine's. A
    module kept on the CPU of a GPU machine (to save GPU memory, in a CPU test run, in a
    service that pins models to devices) moves its input to `cuda:0` and its weights meet it
    there; a module on `cuda:1` gets its input on `cuda:0`. Either way the first layer fails.
    A plain tensor attribute is worse: `model.to(...)` does not move it at all, so it stays on
    the guessed device wherever the module goes.

    ## Example
    ```python
    class DepthNet(nn.Module):
        def image2tensor(self, image):
            device = "cuda" if torch.cuda.is_available() else "cpu"
            return torch.from_numpy(image).unsqueeze(0).to(device)

        def infer(self, image):
            return self.forward(self.image2tensor(image))
    ```

    ## Use instead
    ```python
    class DepthNet(nn.Module):
        def image2tensor(self, image):
            return torch.from_numpy(image).unsqueeze(0).to(next(self.parameters()).device)
    ```

    ## Fix safety
    Unsafe. `torchdevice --fix --unsafe-fixes` replaces the guessed device of a move that reaches
    the module's weights with `next(self.parameters()).device`, which raises `StopIteration` in a
    module without parameters (one with buffers only wants a buffer's device). State kept in a
    plain attribute is not rewritten: registering it as a buffer changes the module's
    `state_dict`, which is the author's call.

    ## When it does not report
    - a class that moves itself to a device (`self.to(device)`, `self.cuda()`): it places its
      weights where it places its inputs;
    - a move to the module's own device (`next(self.parameters()).device`, `self.device`,
      `x.device`) or to a device the method is given;
    - a device guessed at module level (`DEVICE = "cuda" if ... else "cpu"` beside the script's
      own `model.to(DEVICE)`): the script places the model by the same guess;
    - state read through a move (`self.coords.to(x.device)`, `.type_as(x)`), or only by the
      method that set it, and buffers (`self.register_buffer(...)`: they move with the module);
    - a submodule built on a guessed device (`self.encoder = Encoder(..., device=guess)`, a `torch.nn` layer or a
      module class of the file): `.to()` moves it with its parent;
    - a guessed-device value that never reaches the module's weights (a tensor for a loss, a
      metric, or a caller), and classes that are not `nn.Module`s (a wrapper that owns its
      model places it itself).

    ## The error torch raises
    On a GPU machine, with the module kept on the CPU:

    ```
    RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
    ```

    On a CPU machine, with the module kept on the meta device (standing in for a device
    other than the guessed one):

    ```
    RuntimeError: Tensor on device meta is not on the expected device cpu!
    ```

    or, where the guessed-device value is the first operand (state concatenated with the input):

    ```
    RuntimeError: Tensor on device cpu is not on the expected device meta!
    ```
    """  # noqa: E501 -- quotes torch's error messages verbatim

    CODE = "TDV110"
    NAME = "module-input-to-guessed-device"
    FIX = "unsafe"
    SUMMARY = "a module moves its input, or keeps its state, on a device guessed from the machine, not on its own"
    MESSAGE = (
        "{name} is moved to a device guessed from the machine, not to this module's own device: a module "
        "kept on the CPU of a GPU machine (or on another GPU) gets its input elsewhere; move it to "
        "next(self.parameters()).device"
    )
    STATE_MESSAGE = (
        "self.{name} is kept on a device guessed from the machine, in a plain attribute that .to() "
        "does not move: a module kept on the CPU of a GPU machine (or on another GPU) meets it elsewhere; "
        "register it as a buffer (self.register_buffer) or move it to the input's device where it is used"
    )
    # The guess and the move are in the method that moves, or that keeps the state (a factory's
    # ``device=``, ``self.pe = torch.zeros(n, device=guess)``); the weights it meets, or the method
    # that reads the state, may be another method of the class, which SCOPE keeps.
    NEEDS = [{"*is_available", "device_count"}, {".to(", "device=", ".cuda("}]
    TOGETHER = True
    SCOPE = CLASS

    def __init__(self, context) -> None:
        super().__init__(context)
        self._classes: list[_Class] = []
        self._methods: list[Optional[_Method]] = []
        self._followed: set[int] = set()  # ids of ``self.<attr>`` nodes moved where they are read
        # ``if torch.cuda.is_available():``: the ids of such bodies, and how many of them the walk is in
        self._guarded_bodies: set[int] = set()
        self._guarded = 0

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.append(_Class(node.name.value, class_kind(self.names, node) == "module"))

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        frame = self._classes.pop()
        if not frame.module or frame.moves_itself:
            return
        for attr, (move, statement, setter) in frame.state.items():
            if is_layer_attribute(self.names, frame.name, attr):
                continue  # ``self.encoder = Encoder(device=guess)``: a submodule, which ``.to()`` moves
            if any(reader != setter for reader in frame.read_by.get(attr, ())):
                self.report(move, self.STATE_MESSAGE.format(name=attr), statement=statement)
        returning = {method.name: method.returned for method in frame.methods if method.returned}
        for method in frame.methods:
            for name, move in method.moved.items():
                if name in method.fed:
                    self._report(name, move)
            for callee, names in method.from_methods:
                if callee in returning and names & method.fed:
                    for name, move in returning[callee]:
                        self._report(name, move)

    def _report(self, name: str, move: tuple) -> None:
        target = device_argument(move[0])  # ``device=`` of a factory, else ``.to()``'s target
        fix = Fix(cst.parse_expression(_OWN_DEVICE), target=target) if target is not None else None
        self.report(move[0], self.MESSAGE.format(name=name), fix=fix, statement=move[1])

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        in_class = bool(self._classes) and not self._methods
        self._methods.append(_Method(node.name.value) if in_class else None)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        method = self._methods.pop()
        if method is not None:
            self._classes[-1].methods.append(method)

    @property
    def _method(self) -> Optional[_Method]:
        return self._methods[-1] if self._methods else None

    def visit_If(self, node: cst.If) -> None:
        if self._method is not None and self._asks_machine(node.test):
            self._guarded_bodies.add(id(node.body))  # its body runs where the machine has CUDA: a guess

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._guarded += id(node) in self._guarded_bodies

    def leave_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._guarded -= id(node) in self._guarded_bodies

    def visit_Assign(self, node: cst.Assign) -> None:
        method = self._method
        if method is None:
            return
        move = self._move(node.value)
        for target in node.targets:
            attr = _self_attribute(target.target)
            self._followed.add(id(target.target))  # a binding, not a read
            if attr and move is not None:
                self._classes[-1].state[attr] = (move, self.context.statement, method.name)
        names = [name for target in node.targets for name in target_names(target.target)]
        if self._guessed(node.value):
            method.guesses.update(names)
            return
        for name in names:
            method.guesses.discard(name)
            method.moved.pop(name, None)
            if move is not None and len(names) == 1:
                method.moved[name] = (move, self.context.statement)
        callee = self._own_method(node.value)
        if callee is not None:
            method.from_methods.append((callee, set(names)))

    def visit_Return(self, node: cst.Return) -> None:
        method = self._method
        if method is None or node.value is None:
            return
        for value in _elements(node.value):
            if isinstance(value, cst.Name) and value.value in method.moved:
                method.returned.append((value.value, method.moved[value.value]))
            elif (move := self._move(value)) is not None:
                method.returned.append((_label(move), (move, self.context.statement)))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        method = self._method
        attr = _self_attribute(node)
        if method is not None and attr and id(node) not in self._followed:
            self._classes[-1].read_by.setdefault(attr, set()).add(method.name)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _FOLLOWING:
            self._followed.add(id(func.value))  # ``self.coords.to(x.device)``: moved where it is used
        if self._classes and isinstance(func, cst.Attribute) and _is_self(func.value) \
                and func.attr.value in ("to", "cuda"):
            self._classes[-1].moves_itself = True
        method = self._method
        if method is None or not self._meets_weights(func):
            return
        for arg in node.args:
            callee = self._own_method(arg.value)
            if callee is not None:  # ``self.forward(self.prepare(raw))``
                method.from_methods.append((callee, {callee + "()"}))
                method.fed.add(callee + "()")
            if (move := self._move(arg.value)) is not None:
                method.moved.setdefault(_label(move), (move, self.context.statement))
                method.fed.add(_label(move))
            method.fed.update(part.value for part in subtree(arg.value) if isinstance(part, cst.Name))

    def _meets_weights(self, func: cst.BaseExpression) -> bool:
        """``self(...)``, ``self.forward(...)``, ``self.encoder(...)`` (a layer of the module)."""
        if _is_self(func):
            return True
        if not (isinstance(func, cst.Attribute) and _is_self(func.value)):
            return False
        attr = func.attr.value
        return attr == "forward" or is_layer_attribute(self.names, self._classes[-1].name, attr)

    def _own_method(self, value: cst.BaseExpression) -> Optional[str]:
        """``self.image2tensor(raw)`` (or a subscript of it): the method's name."""
        while isinstance(value, cst.Subscript):
            value = value.value
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and _is_self(value.func.value):
            return value.func.attr.value
        return None

    def _move(self, value: cst.BaseExpression) -> Optional[cst.Call]:
        """The ``.to(<guess>)`` that makes ``value``, along its chain of method calls
        (``torch.from_numpy(a).unsqueeze(0).to(device).float()``), if any."""
        while isinstance(value, cst.Call):
            made_on = argument(value, None, "device")  # ``torch.arange(n, device=device)``
            if made_on is not None and self._is_guess(made_on.value):
                return value
            if not isinstance(value.func, cst.Attribute):
                return None
            if value.func.attr.value == "to" and not _is_self(value.func.value):
                target = device_argument(value)
                if target is not None and self._is_guess(target):
                    return value
            if value.func.attr.value == "cuda" and not value.args and self._guarded and not _is_self(value.func.value):
                return value  # ``if torch.cuda.is_available(): x = x.cuda()``: the same guess, as a statement
            value = value.func.value
        return None

    def _is_guess(self, target: cst.BaseExpression) -> bool:
        method = self._method
        if isinstance(target, cst.Name) and method is not None and target.value in method.guesses:
            return True
        return self._guessed(target)

    def _guessed(self, value: cst.BaseExpression) -> bool:
        """``"cuda" if torch.cuda.is_available() else "cpu"``, also in ``torch.device(...)``."""
        if isinstance(value, cst.Call) and self.names.qualify(value.func) == "torch.device":
            first = argument(value, 0, "type")
            value = first.value if first is not None else value
        return isinstance(value, cst.IfExp) and any(self._machine_question(part) for part in subtree(value.test))

    def _asks_machine(self, test: cst.BaseExpression) -> bool:
        """Does ``test`` hold when the machine has CUDA (``torch.cuda.is_available()``, also in a conjunction)?"""
        if isinstance(test, cst.BooleanOperation):
            either = self._asks_machine(test.left) or self._asks_machine(test.right)
            return isinstance(test.operator, cst.And) and either
        return self._machine_question(test)

    def _machine_question(self, node: cst.BaseExpression) -> bool:
        """``torch.cuda.is_available()`` and the other questions ``_MACHINE_QUESTIONS`` names."""
        return isinstance(node, cst.Call) and self.names.qualify(node.func) in _MACHINE_QUESTIONS


# The module's own device, as the fix writes it.
_OWN_DEVICE = "next(self.parameters()).device"


# Methods that put a tensor where another value is: a read through them follows that value.
_FOLLOWING = frozenset({"to", "type_as", "to_device"})


def _self_attribute(expr: cst.BaseExpression) -> Optional[str]:
    """``coords`` of ``self.coords``."""
    if isinstance(expr, cst.Attribute) and _is_self(expr.value):
        return expr.attr.value
    return None


def _is_self(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "self"


def _elements(value: cst.BaseExpression) -> list:
    """The values a ``return`` hands back: each element of a tuple or list, or the value."""
    if isinstance(value, (cst.Tuple, cst.List)):
        return [element.value for element in value.elements]
    return [value]


def _label(move: cst.Call) -> str:
    """The moved value's name where it has one (``image`` of ``image.float().to(d)``)."""
    value = move.func.value
    while isinstance(value, (cst.Call, cst.Attribute, cst.Subscript)):
        value = value.func if isinstance(value, cst.Call) else value.value
    return value.value if isinstance(value, cst.Name) else "this value"
