"""TDV112: ``self.w = nn.Parameter(x).to(device)``: the moved copy is no Parameter."""

from __future__ import annotations

from typing import Optional

from .._lazy import cst
from ..analysis.code import argument, code_of, is_self_attribute, last_name, string_value, subtree
from ..analysis.devices import cpu_literal, device_argument
from ..analysis.flow.places import dtype_only
from ..rule import Fix, Rule

PARAMETERS = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
VARIABLES = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})
# Factories that make a leaf given ``requires_grad=True``.
LEAF_FACTORIES = frozenset(
    f"torch.{name}" for name in "empty eye full ones rand randn tensor zeros arange linspace".split()
)


class ParameterMovedAfterCreation(Rule):
    r"""**On by default.** Precision on held-out user code: 7 of 7 findings true or latent over the held-out batches
    v2-v112 with the rules of 2026-12-06, session of 04:33 (v111's first read 2 of 2: capsule betas made lazily in
    `forward` with `nn.Parameter(...).cuda()`); 5 of 5 over v2-v75 with the rules of 2026-12-03, session of 11:17 (two
    voice-cloning similarity parameters moved to the loss
    device, a book's model-parallel weights, an example that optimizes an image it moved under `no_grad`); 4 of 5
    before its post-hoc `requires_grad=False` exemption. Not a first read: the rule was written after a search of
    the corpus's text for `Parameter(...).to(` showed some of these lines, and after recall batches 56 and 57, whose
    torchnca and randomCNN-voice-transfer fixes are this class (docs/recall.md).

    ## What it does
    Flags an attribute of an object bound to a `torch.nn.Parameter` (under any alias:
    `nn.Parameter`, `torch.nn.Parameter`, `from torch.nn import Parameter`) that is moved in
    the same expression, after it was made: `self.w = nn.Parameter(x).to(device)`,
    `self.centers = nn.Parameter(torch.randn(n, d)).cuda()`. A `.to(...)` counts unless it only
    casts (`.to(torch.float16)`, `.to(dtype)`, `.to(dtype=...)`) or names the CPU; `.cuda(...)` always does.

    Also a name bound to a moved copy of a leaf that requires grad and then given to an optimizer
    (`torch.optim.*`, its parameter list or a group's `"params"`) in the same function or module
    code: the leaf an `nn.Parameter(x)`, `Variable(x, requires_grad=True)` or a torch factory given
    `requires_grad=True`, moved in the same expression (`w = torch.randn(n, requires_grad=True).to(device)`)
    or rebinding the name (`v = v.cuda()`, under an `if` too), then `torch.optim.Adam([v])`.

    ## Why is this bad?
    Moving a tensor to another device makes a copy, and the copy of a Parameter (or of any leaf that
    requires grad) is a plain tensor computed from it: no Parameter, and no leaf of the autograd graph. In an
    `nn.Module` the attribute is then no registered parameter (it is missing from
    `model.parameters()` and `state_dict()`, the optimizer never updates it, and
    `model.to(...)` leaves it where it is); in any other class an optimizer given it raises
    at once. A copy made under `torch.no_grad()` is a leaf, but one that requires no grad: the
    optimizer takes it and never trains it. Where the device is the CPU, `.to("cpu")` returns the
    Parameter itself and everything works, so the mistake shows only on a GPU machine.

    ## Example
    ```python
    class Projection:
        def __init__(self, dim, device):
            self.A = nn.Parameter(torch.randn(dim, dim)).to(device)
            self.optimizer = torch.optim.SGD([self.A], lr=0.1)
    ```

    ## Use instead
    ```python
    class Projection:
        def __init__(self, dim, device):
            self.A = nn.Parameter(torch.randn(dim, dim).to(device))
            self.optimizer = torch.optim.SGD([self.A], lr=0.1)
    ```

    or make the tensor on its device: `nn.Parameter(torch.randn(dim, dim, device=device))`.

    ## Fix safety
    Unsafe. For an attribute, the fix moves the data instead of the Parameter, `nn.Parameter(x.to(device))`
    (a name given to an optimizer has no fix: where its leaf should be made is the author's choice). On a
    GPU the attribute then becomes a registered, trainable parameter: the module's
    `parameters()`, its `state_dict()` keys and what its optimizer updates change, as intended,
    but a checkpoint saved without it no longer loads strictly.

    ## When it does not report
    - the data moved first, `nn.Parameter(x.to(device))`, `nn.Parameter(x.cuda())`;
    - a Parameter made with `requires_grad=False`: a constant nothing trains, whose copy is a leaf as well
      (post-hoc, from the held-out labels: a diffusion model's frozen sinusoid frequencies);
    - a `.to(...)` that only casts (`.to(torch.float16)`, `.to(dtype)`), or names the CPU (`.to("cpu")`: a
      CPU Parameter is returned as it is);
    - a move to the device the data already lives on, `nn.Parameter(p.data.float()).to(p.device)`
      (the same `p` inside the Parameter), or was made on, `torch.rand(1, requires_grad=True, device=d).to(d)`,
      `nn.Parameter(torch.ones(1, device=d)).to(d)` (post-hoc, from v128's first read): `.to` returns the
      tensor itself;
    - a local name no optimizer is given in its scope (`cls_token = nn.Parameter(...).to(x.device)` in a
      function): the value is used where it is made, not kept as trainable state; a leaf made on its device
      (`torch.zeros(n, requires_grad=True, device=device)`), or one moved and made a leaf again
      (`w = w.to(device).detach().requires_grad_()`);
    - an optimizer given a name bound in another scope (a module-level leaf moved in a function).

    ## The error torch raises
    For an optimizer given the moved copy, on a GPU machine, and on a CPU machine with the meta device
    standing in:

    ```
    ValueError: can't optimize a non-leaf Tensor
    ```

    In an `nn.Module` nothing raises: the attribute is silently no parameter (the fixture asserts that
    the moved copy is no registered parameter: `len(list(model.parameters()))` counts none of them).
    """

    CODE = "TDV112"
    NAME = "parameter-moved-after-creation"
    SUMMARY = "`self.w = nn.Parameter(x).to(device)`: the moved copy is no Parameter"
    MESSAGE = (
        "nn.Parameter(...).{method}(...) is a moved copy, no Parameter and no leaf: on a GPU the module does "
        "not register it and an optimizer rejects it; move the data first: nn.Parameter(x.{method}(...))"
    )
    LEAF_MESSAGE = (
        "{name} moved with .{method}() after it was made to require grad is a copy, no leaf that requires grad: "
        "on a GPU the optimizer given it rejects it or never trains it; make it on its device (device=...) or "
        "move it before requires_grad"
    )
    FIX = "unsafe"
    NEEDS = [{"Parameter", "requires_grad"}, {".to(", ".cuda("}]

    def __init__(self, context) -> None:
        super().__init__(context)
        # Per scope (the module's first): each name bound to a leaf that requires grad ("leaf"), or to a
        # moved copy of one (the move's call, its method); read when an optimizer is given the name.
        self._scopes: list[dict] = [{}]
        self._reported: set[int] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.append({})

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1:
            return
        target = node.targets[0].target
        if is_self_attribute(target):
            self._check(node.value)
        elif isinstance(target, cst.Name):
            self._bind(target.value, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None and is_self_attribute(node.target):
            self._check(node.value)

    def _check(self, value: cst.BaseExpression) -> None:
        method = _moved_parameter(value, self.names)
        if method is not None:
            self.report(value, self.MESSAGE.format(method=method), fix=Fix(_move_data))

    def _bind(self, name: str, value: cst.BaseExpression) -> None:
        """``w = nn.Parameter(x)`` / ``v = Variable(x, requires_grad=True)``: a leaf; ``v = v.cuda()`` or
        ``w = torch.randn(3, requires_grad=True).to(device)``: a moved copy of one."""
        scope = self._scopes[-1]
        if _makes_leaf(value, self.names):
            scope[name] = "leaf"
            return
        method = _move_method(value, self.names)
        receiver = value.func.value if method else None
        if method == "to" and _made_on(receiver, device_argument(value)):
            scope[name] = "leaf"  # made on that device already: ``.to()`` returns the leaf itself
        elif method and (_makes_leaf(receiver, self.names)
                         or isinstance(receiver, cst.Name) and receiver.value in scope):
            scope[name] = (value, method)
        else:
            scope.pop(name, None)

    def visit_Call(self, node: cst.Call) -> None:
        if not _is_optimizer(self.names.qualify(node.func)):
            return
        scope = self._scopes[-1]
        for name in _optimized_names(node):
            moved = scope.get(name)
            if isinstance(moved, tuple) and id(moved[0]) not in self._reported:
                self._reported.add(id(moved[0]))
                self.report(moved[0], self.LEAF_MESSAGE.format(name=name, method=moved[1]))


def _moved_parameter(value: cst.BaseExpression, names) -> Optional[str]:
    """``to`` / ``cuda`` where ``value`` is ``<Parameter(...)>.to(<device>)`` or ``.cuda(...)``."""
    method = _move_method(value, names)
    made = value.func.value if method else None
    if not (isinstance(made, cst.Call) and _makes_leaf(made, names) and names.qualify(made.func) in PARAMETERS):
        return None
    return None if method == "to" and _already_there(made, device_argument(value)) else method


def _move_method(value: cst.BaseExpression, names) -> Optional[str]:
    """``cuda`` for ``<x>.cuda(...)``, ``to`` for ``<x>.to(<a device that is not the CPU>)``; else None."""
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)):
        return None
    method = value.func.attr.value
    if method == "cuda":
        return method
    device = device_argument(value) if method == "to" else None
    if device is None or cpu_literal(device, names) or dtype_only(value, names) or "dtype" in (last_name(device) or ""):
        return None  # ``.to(torch.float16)``, ``.to(dtype)``: a cast, no move
    return method


def _makes_leaf(value: cst.BaseExpression, names) -> bool:
    """``nn.Parameter(x)``, ``Variable(x, requires_grad=True)``, ``torch.randn(3, requires_grad=True)``."""
    if not isinstance(value, cst.Call):
        return False
    qualified = names.qualify(value.func) or ""
    given = argument(value, None, "requires_grad")
    grad = given.value if given is not None else None
    if qualified in PARAMETERS:  # requires grad unless told not to: a frozen constant moves as any tensor does
        return bool(value.args) and not (isinstance(grad, cst.Name) and grad.value == "False")
    if qualified in VARIABLES or qualified in LEAF_FACTORIES:
        return isinstance(grad, cst.Name) and grad.value == "True"
    return False


def _is_optimizer(qualified: Optional[str]) -> bool:
    """``torch.optim.Adam``, ``torch.optim.sgd.SGD``: an optimizer class, not a scheduler."""
    if not qualified or not qualified.startswith("torch.optim.") or ".lr_scheduler" in qualified:
        return False
    return qualified.rpartition(".")[2][:1].isupper()


def _optimized_names(call: cst.Call) -> list:
    """The names an optimizer is given: ``Adam([a, b])``, ``SGD(params=(a,))``, ``SGD([{"params": [a]}])``."""
    params = argument(call, 0, "params")
    return list(_names_in(params.value)) if params is not None else []


def _names_in(expr: cst.BaseExpression):
    if isinstance(expr, (cst.List, cst.Tuple)):
        for element in expr.elements:
            if isinstance(element.value, cst.Name):
                yield element.value.value
            elif isinstance(element.value, cst.Dict):
                yield from _names_in(element.value)
    elif isinstance(expr, cst.Dict):
        for element in expr.elements:
            if isinstance(element, cst.DictElement) and string_value(element.key) == "params":
                yield from _names_in(element.value)


def _made_on(made: cst.BaseExpression, device: Optional[cst.BaseExpression]) -> bool:
    """``torch.rand(1, requires_grad=True, device=d).to(d)``: made on the device it is moved to, so ``.to()``
    returns the tensor itself, no copy."""
    given = argument(made, None, "device") if isinstance(made, cst.Call) else None
    return given is not None and device is not None and code_of(given.value) == code_of(device)


def _already_there(made: cst.Call, device: cst.BaseExpression) -> bool:
    """``nn.Parameter(p.data.float()).to(p.device)``: the data is read off ``p``, already on ``p.device``;
    ``nn.Parameter(torch.zeros(n, device=d)).to(d)``: made there."""
    if any(_made_on(node, device) for arg in made.args for node in subtree(arg.value)):
        return True
    if not (isinstance(device, cst.Attribute) and device.attr.value == "device"):
        return False
    owner = code_of(device.value)
    return any(code_of(node) == owner for arg in made.args for node in subtree(arg.value))


def _move_data(call: cst.Call) -> cst.Call:
    """``nn.Parameter(x, ...).to(d)`` -> ``nn.Parameter(x.to(d), ...)``."""
    made = call.func.value
    first = made.args[0]
    data = first.value
    atoms = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.List, cst.Tuple, cst.Dict, cst.SimpleString)
    if not isinstance(data, atoms) and not data.lpar:  # ``(x * 0.1).to(d)``, not ``x * 0.1.to(d)``
        data = data.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    moved = call.with_changes(func=call.func.with_changes(value=data))
    return made.with_changes(args=[first.with_changes(value=moved), *made.args[1:]])
