"""TDV503: submodules or Parameters kept in a plain list, dict or tuple.

The verdict reads the whole class: a list that another method wraps
(``nn.Sequential(*self.layers)``), a class that registers by hand
(``add_module``) or moves its own state (``_apply``) is fine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .._lazy import cst
from ..analysis.bindings import AssignmentBindings
from ..analysis.layers import STATE_WORDS, layer_state
from ..analysis.modules import MOVING_OVERRIDES, MethodFrames, class_kind
from ..names import dotted_name
from ..rule import CLASS, Fix, Rule

REGISTERING = frozenset({"add_module", "register_module", "register_parameter", "setattr"})
GROWING = frozenset({"append", "extend", "insert"})
# Calls that only read a list: passing it to them registers nothing.
READERS = frozenset({"len", "enumerate", "zip", "reversed", "iter", "isinstance", "print", "sorted", "range"})
_CONTAINERS = {("list", "module"): "ModuleList", ("dict", "module"): "ModuleDict",
               ("list", "parameter"): "ParameterList", ("dict", "parameter"): "ParameterDict"}


@dataclass
class _Candidate:
    value: cst.BaseExpression  # the list/dict/tuple display or comprehension
    statement: Optional[int]
    shape: str  # "list" or "dict"
    kinds: set = field(default_factory=set)  # "module" / "parameter" / "free" / "other"
    string_keys: bool = True  # every key a string literal: ModuleDict accepts it
    handed: bool = False  # a local list given to a call (``nn.Sequential(*layers)``): what it holds is registered


@dataclass
class _Class:
    is_module: bool
    candidates: dict = field(default_factory=dict)  # attr -> _Candidate
    stores: dict = field(default_factory=dict)  # attr -> number of assignments
    wrapped: set = field(default_factory=set)  # attrs passed to a call
    exempt: bool = False  # registers by hand or moves itself


class ModulesInPlainContainer(AssignmentBindings, Rule):
    r"""On by default. Its verdict reads the whole class (an `_apply` override, a later
    `nn.ModuleList(self.layers)` or `add_module` elsewhere clear a finding), but only a
    class that assigns a list, tuple or dict display or comprehension to an attribute, directly
    or through a local name, is parsed for it (every finding is one), which keeps its cost small
    (docs/performance.md).

    ## What it does
    Flags, in `__init__` of a class that derives from `torch.nn.Module` (under any alias, or
    through classes of the same file), or of a class that defines `forward` and whose every base
    comes from a module of the project this file imports and cannot see (`class Embedding(BaseLayer)`;
    not where the file imports another framework, Keras or MXNet, whose layers may be the bases;
    post-hoc, from a recall fix: NeuronBlocks' embedding layer), `self.<attr> = ` a list, tuple, dict or
    comprehension whose elements include stateful `torch.nn` layers (`nn.Linear`,
    `nn.Conv2d`, norms, embeddings, RNNs, attention, containers) or `nn.Parameter`s, and
    `self.<attr> = []` / `{}` / `list()` / `dict()` filled in `__init__` by `.append(...)` / `[key] = ...` with them,
    also through a local name (`blocks = []`, `blocks.append(nn.Linear(4, 4))` or of a name bound
    to one, then `self.blocks = blocks`), reported at the local display.

    ## Why is this bad?
    `nn.Module` registers a submodule or Parameter only when it is assigned to an
    attribute directly or held in `nn.ModuleList` / `nn.ModuleDict` / `nn.ParameterList` /
    `nn.ParameterDict`. Layers in a plain list are invisible to the module: `model.to(device)`
    leaves them on the CPU (the first forward on a GPU fails), `model.parameters()` misses
    them (the optimizer never trains them), `state_dict()` does not save them, and
    `model.eval()` does not reach them.

    ## Example
    ```python
    class Tower(nn.Module):
        def __init__(self, width, depth):
            super().__init__()
            self.layers = [nn.Linear(width, width) for _ in range(depth)]
    ```

    ## Use instead
    ```python
    class Tower(nn.Module):
        def __init__(self, width, depth):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(width, width) for _ in range(depth)])
    ```

    ## Fix safety
    Unsafe. The fix wraps the value: `nn.ModuleList(...)` / `nn.ParameterList(...)` for a list,
    tuple or list comprehension, `nn.ModuleDict(...)` / `nn.ParameterDict(...)` for a dict
    whose keys are all string literals (an empty `list()` / `dict()` becomes `nn.ModuleList()` /
    `nn.ModuleDict()`) (other keys are not offered a fix: `ModuleDict`
    takes string keys only). These behave like the list or dict where the attribute is
    iterated, indexed, appended to or measured, but the module changes: `state_dict()` gains
    the layers' keys, so checkpoints saved before the fix no longer load with
    `strict=True` ("Missing key(s) in state_dict"), and `parameters()` now yields them, so
    the optimizer starts training weights it never trained. Both are the point of the fix,
    and both are decisions for the author. Lists mixing Parameters and modules get no fix.

    ## When it does not report
    - lists whose elements hold no state: activations, dropout, pooling, padding, losses,
      `Identity`, `Flatten`, `Upsample` (nothing is lost on `.to(device)`; note that
      `model.eval()` still does not reach a listed `Dropout`);
    - a list the class passes to any call (`nn.ModuleList(self.layers)`,
      `nn.Sequential(*self.layers)`, a dict's view: `list(self.convs.values())`) or assigns again;
    - a class that registers by hand (`add_module`, `register_module`,
      `register_parameter`, `setattr`) or overrides `_apply` / `to` / `cuda`;
    - elements that are not `torch.nn` layers (Keras layers; classes of your own, which
      the rule cannot tell from other classes), elements that are existing attributes
      (`[self.a, self.b]`) or names also bound to one (`self.fc = block`), and classes that are not
      `nn.Module`s: a class of an imported base this file cannot see counts as one only with a `forward`.

    ## The error torch raises
    On a GPU machine, the first forward after `model.to("cuda")`:

    ```
    RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
    ```

    On a CPU machine, after `model.to("meta")` the meta kernels report the same mismatch:

    ```
    RuntimeError: Tensor on device cpu is not on the expected device meta!
    ```

    Another fixture moves the model to the meta device and checks that the
    listed layers followed; the check fails with
    `AssertionError: listed layer weight stayed on cpu after .to('meta')`. Counting the
    parameters shows what the optimizer would get:
    `AssertionError: parameters() misses the listed layers: 0 of 14`.
    """

    CODE = "TDV503"
    NAME = "modules-in-plain-container"
    SUMMARY = "submodules or Parameters of an nn.Module kept in a plain list, dict or tuple"
    MESSAGE = (
        "self.{attr} holds {what} in a plain {shape}: model.to(device), parameters() and "
        "state_dict() do not see them; use nn.{container}"
    )
    FIX = "unsafe"
    NEEDS = [{"__init__"}, STATE_WORDS]
    SCOPE = CLASS  # wrapping, add_module or _apply in other methods decide
    TOGETHER = True  # the layers, __init__ and the display assignment are in the finding's class
    DISPLAYED = True  # every finding is a display assigned to an attribute

    def __init__(self, context) -> None:
        super().__init__(context)
        # Owners are _Class; a closure in __init__ is __init__ (it grows its lists).
        self._frames = MethodFrames(nested_is_method=True)
        # ``layers = []`` in ``__init__``, grown there and given to ``self.layers`` later: per local name
        self._locals: dict[str, _Candidate] = {}
        self._calls: dict[str, cst.Call] = {}  # ``block = nn.Linear(4, 4)`` in ``__init__``, appended by name

    # -- classes and methods -------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._frames.enter_class(_Class(class_kind(self.names, node) == "module" or _module_like(self.names, node)))

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        info = self._frames.leave_class()
        if not info.is_module or info.exempt:
            return
        for attr, candidate in info.candidates.items():
            if info.stores.get(attr, 0) > 1 or attr in info.wrapped or candidate.handed:
                continue
            self._report(attr, candidate)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        method = self._frames.enter_function(node)
        if method is not None and method.name in MOVING_OVERRIDES:
            method.owner.exempt = True
        if method is not None:
            self._locals, self._calls = {}, {}

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._frames.leave_function()

    def _self_attr(self, expr: cst.BaseExpression) -> Optional[str]:
        return self._frames.self_attr(expr)

    def _in_init(self) -> bool:
        method = self._frames.current
        return method is not None and method.name == "__init__"

    # -- stores (AssignmentBindings calls _bind) ----------------------------
    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target, None)

    def _bind(self, target: cst.BaseExpression, value: Optional[cst.BaseExpression]) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind(element.value, None)
            return
        if isinstance(target, cst.Subscript):  # self.heads["cls"] = nn.Linear(...)
            self._grow(target.value, [value] if value is not None else [], _key(target))
            return
        attr = self._self_attr(target)
        if attr is None:
            if isinstance(target, cst.Name) and self._in_init():  # ``layers = []``, or a rebinding
                candidate = self._candidate(value) if value is not None else None
                self._locals.pop(target.value, None)
                self._calls.pop(target.value, None)
                if candidate is not None:
                    self._locals[target.value] = candidate
                elif isinstance(value, cst.Call):
                    self._calls[target.value] = value
            return
        info = self._frames.current.owner
        info.stores[attr] = info.stores.get(attr, 0) + 1
        if isinstance(value, cst.Name):
            self._calls.pop(value.value, None)  # ``self.fc = block``: registered, whatever list also holds it
        candidate = None
        if value is not None and self._in_init():
            local = self._locals.get(value.value) if isinstance(value, cst.Name) else None
            candidate = local or self._candidate(value)  # ``self.layers = layers``: the local list
        if candidate is not None and attr not in info.candidates:
            info.candidates[attr] = candidate

    def _candidate(self, value: cst.BaseExpression) -> Optional[_Candidate]:
        statement = self.context.statement
        if isinstance(value, (cst.List, cst.Tuple)):
            found = _Candidate(value, statement, "list")
            self._add(found, [e.value for e in value.elements if not isinstance(e, cst.StarredElement)])
        elif isinstance(value, cst.ListComp):
            found = _Candidate(value, statement, "list")
            self._add(found, [value.elt])
        elif isinstance(value, cst.Dict):
            found = _Candidate(value, statement, "dict")
            elements = [e for e in value.elements if isinstance(e, cst.DictElement)]
            found.string_keys = len(elements) == len(value.elements) and all(_is_string(e.key) for e in elements)
            self._add(found, [e.value for e in elements])
        elif isinstance(value, cst.DictComp):
            found = _Candidate(value, statement, "dict", string_keys=False)
            self._add(found, [value.value])
        elif _empty_call(value, self.names):  # ``dict()`` / ``list()``, filled later
            found = _Candidate(value, statement, value.func.value)
        else:
            return None
        return found

    def _add(self, candidate: _Candidate, elements: list, key: Optional[bool] = None) -> None:
        for element in elements:
            if isinstance(element, cst.Name) and element.value in self._calls:
                element = self._calls[element.value]  # ``layers.append(block)``, ``block = nn.Linear(...)``
            state = layer_state(self.names.qualify(element.func) or "") if isinstance(element, cst.Call) else ""
            candidate.kinds.add(state or "other")
        if key is False:
            candidate.string_keys = False

    def _grow(self, container: cst.BaseExpression, elements: list, string_key: Optional[bool]) -> None:
        """``self.layers.append(x)`` / ``self.heads[k] = x`` / ``layers.append(x)`` in ``__init__``."""
        if not self._in_init():
            return
        attr = self._self_attr(container)
        local = container.value if attr is None and isinstance(container, cst.Name) else None
        if attr is None and local is None:
            return
        candidate = self._locals.get(local) if local else self._frames.current.owner.candidates.get(attr)
        if candidate is not None:
            self._add(candidate, elements, string_key)

    # -- calls -------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        name = (
            func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        )
        current = self._frames.current
        owner = current.owner if current else None
        if owner is None:
            return
        if name in REGISTERING:
            owner.exempt = True
        if name in GROWING and isinstance(func, cst.Attribute):
            self._grow(func.value, [arg.value for arg in node.args if not arg.star][-1:], None)
        if isinstance(func, cst.Name) and name in READERS:
            return
        for arg in node.args:
            attr = self._self_attr(_viewed(arg.value))
            if attr is not None:
                owner.wrapped.add(attr)
            elif isinstance(arg.value, cst.Name) and arg.value.value in self._locals:
                self._locals[arg.value.value].handed = True  # ``nn.Sequential(*layers)``: registered there

    # -- report ------------------------------------------------------------
    def _report(self, attr: str, candidate: _Candidate) -> None:
        stateful = candidate.kinds & {"module", "parameter"}
        if not stateful:
            return
        kind = "parameter" if stateful == {"parameter"} else "module"
        container = _CONTAINERS[(candidate.shape, kind)]
        what = "Parameters" if kind == "parameter" else "submodules"
        shape = "dict" if candidate.shape == "dict" else _shape(candidate.value)
        message = self.MESSAGE.format(attr=attr, what=what, shape=shape, container=container)
        self.report(candidate.value, message, fix=self._fix(candidate, kind, container), statement=candidate.statement)

    def _fix(self, candidate: _Candidate, kind: str, container: str) -> Optional[Fix]:
        mixed = kind == "parameter" and candidate.kinds != {"parameter"}
        mixed = mixed or (kind == "module" and "parameter" in candidate.kinds)
        if mixed or (candidate.shape == "dict" and not candidate.string_keys):
            return None
        nn = self._nn_name()
        if nn is None:
            return None
        func = cst.Attribute(cst.parse_expression(nn), cst.Name(container))
        if _empty_call(candidate.value, self.names):
            return Fix(lambda value: cst.Call(func=func))  # ``dict()`` -> ``nn.ModuleDict()``
        return Fix(lambda value: cst.Call(func=func, args=[cst.Arg(value)]))

    def _nn_name(self) -> Optional[str]:
        for spelling in ("nn", "torch.nn"):
            if self.names.resolve_dotted(spelling) == "torch.nn":
                return spelling
        return None


# Frameworks whose layers define ``forward``-less or foreign state: a class based on them is no torch module.
_OTHER_FRAMEWORKS = frozenset({"tensorflow", "keras", "tf_keras", "mxnet", "flax", "haiku", "jax", "paddle", "sklearn"})


def _module_like(names, node: cst.ClassDef) -> bool:
    """A class based on an imported class this file cannot see (``class Embedding(BaseLayer)``) that
    defines ``forward``: a torch module of the project's own hierarchy (its layers are torch.nn's)."""
    if not node.bases or not isinstance(node.body, cst.IndentedBlock):
        return False
    if not any(isinstance(member, cst.FunctionDef) and member.name.value == "forward" for member in node.body.body):
        return False
    if names.imports_any(_OTHER_FRAMEWORKS):
        return False  # its classes' bases may be that framework's (``keras.layers.Layer``)
    local = set(names.local_class_names())
    for base in node.bases:
        if base.keyword is not None:
            return False  # ``metaclass=``: not a plain hierarchy
        dotted = dotted_name(base.value)
        if dotted is None or dotted in local or dotted in ("object", "ABC", "Generic") \
                or (names.qualify(base.value) or "").startswith("torch"):
            return False  # a base of this file, a builtin, or torch's own (class_kind decided those)
    return True


def _empty_call(value, names) -> bool:
    """``list()`` / ``dict()`` of the builtins (the file does not bind the name itself)."""
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in ("list", "dict") \
        and not value.args and names.qualify(value.func) is None \
        and value.func.value not in names.local_function_names() + names.local_class_names()


def _viewed(value: cst.BaseExpression) -> cst.BaseExpression:
    """The dict behind a view of it (``self.convs.values()``: ``nn.ModuleList(list(self.convs.values()))``
    registers what the dict holds), else the value."""
    if isinstance(value, cst.Call) and not value.args and isinstance(value.func, cst.Attribute):
        if value.func.attr.value in ("values", "items"):
            return value.func.value
    return value


def _key(target: cst.Subscript) -> Optional[bool]:
    """True if the subscript is one string literal (a ModuleDict key)."""
    if len(target.slice) != 1 or not isinstance(target.slice[0].slice, cst.Index):
        return False
    return _is_string(target.slice[0].slice.value)


def _is_string(node) -> bool:
    return isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))


def _shape(value: cst.BaseExpression) -> str:
    return "tuple" if isinstance(value, cst.Tuple) else "list"
