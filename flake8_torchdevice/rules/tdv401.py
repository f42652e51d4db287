"""TDV401 / TDV402: a CUDA device ordinal written as a literal where it selects a device.

``"cuda:1"`` fails on every machine with fewer than two GPUs; ``"cuda:0"``
(TDV402, opt-in) pins every process of a distributed job to the same GPU.
One visitor finds both; each rule keeps the ordinals it wants.

A literal ordinal matters where it allocates, moves or selects: in a *device
position* -- the device of ``.to(...)`` / ``.cuda(...)``, a ``device=``
keyword of a torch call (or of a tensor's ``new_*`` / ``to_empty``),
``map_location`` (the values of a dict, not its keys), ``torch.cuda.set_device``,
``torch.cuda.device`` and ``torch.set_default_device``, and a parallel wrapper's literal
``device_ids`` list (each element but a literal 0) and ``output_device``. It gets there
as a ``"cuda:N"`` string, an int, an f-string ending in ``:N`` (``f"{kind}:1"``), ``torch.device(...)`` of
those, either branch of a conditional -- directly, or through a simple name
bound once by plain assignment in the scope (a module-level constant counts
in a function). A device that only travels as data (handed to a mock, a
function under test, a pytest id, a dict value, a comparison) selects nothing.

Not reported besides: uses or literals inside a comparison or an assert
call, code behind a multi-GPU guard (``@skip_if_lt_x_gpu(2)``,
``if torch.cuda.device_count() > 1``) and test code, which address a given
GPU on purpose.

The verdict is data flow over a function (or the module's top level), so
``SCOPE`` is ``function``. The selection keeps whole functions holding a
word of ``NEEDS`` and all module-level code once one of its statements does;
every device position holds such a word (``.to``, ``cuda``, ``device=``
given a value other than ``None``, a call ``device(...)``, ``set_device``,
``map_location``, ``load``). A module-level binding is
followed from inside a function only when its own statement holds one too
(a ``"cuda:N"`` string, ``torch.device(...)``): a bare ``GPU = 1`` at module
level may be all the module code a file has without a needed word, and the
selection would not keep it.
"""

from __future__ import annotations

import re
from typing import Optional

from .._lazy import cst
from ..analysis.code import argument, code_of, param_names, subtree, target_names
from ..analysis.guards import is_test_code
from ..analysis.layers import built_without_tensor
from ..analysis.vocabulary import PARALLEL_WRAPPERS
from ..rule import FUNCTION, Rule
from ..words import JUNCTION

_CUDA_TEXT = re.compile(r"cuda:(\d+)")
_ORDINAL_TAIL = re.compile(r":(\d+)")  # the text after an f-string's last expression
# What a multi-GPU guard says: device_count() checks, TEST_MULTIGPU,
# skip_if_lt_x_gpu(2), requires_multi_gpu, num_gpus / n_gpu / gpu_count.
_GUARD_WORDS = r"device_count|multi_?gpu|multi_?device|gpu_?count|\bn(?:um)?_?gpus?\b|_x_gpu|\bgpus?\s*[<>]"
_MULTI_GPU_GUARD = re.compile(_GUARD_WORDS, re.I)

_TORCH_DEVICE = "torch.device"
_CUDA_DEVICE_SETTERS = frozenset({"torch.cuda.set_device", "torch.cuda.device", "torch.set_default_device"})
_TORCH_LOAD = "torch.load"
_DATA_PARALLEL_FUNCTION = "torch.nn.parallel.data_parallel"
BOOL_MESSAGE = (
    ".cuda({flag}) passes {flag} as the device (GPU 1 to old torch, a TypeError now); "
    "write .cuda(non_blocking={flag})"
)
# Tensor and module methods whose ``device=`` keyword places what they make.
_DEVICE_METHODS = frozenset("new_tensor new_zeros new_ones new_empty new_full to_empty".split())

# What a value is, for the positions that take it: an int (``.to(1)``), a
# device (``"cuda:1"``, ``torch.device(...)``), or a map_location dict value.
INT, DEVICE, MAPPED = "int", "device", "mapped"
_DEVICE_POSITION = frozenset({INT, DEVICE})
_LOCATION_POSITION = frozenset({DEVICE, MAPPED})
_INDEX = frozenset({INT})
# Names followed from a use to a literal (``a = "cuda:1"; b = a; ...``); a
# longer chain is unknown, and the recursion stays shallow.
_MAX_HOPS = 32


class _Literal:
    """A literal ordinal that reaches a device position from where it is written."""

    __slots__ = ("node", "ordinal", "kind", "word", "exempt", "statement")

    def __init__(self, node, ordinal: int, kind: str, word: bool, exempt: bool, statement) -> None:
        self.node, self.ordinal, self.kind = node, ordinal, kind
        self.word = word  # its statement holds a word of NEEDS (a "cuda:N" string, torch.device(...))
        self.exempt, self.statement = exempt, statement


class _Ref:
    """A name read where its value would reach a device position."""

    __slots__ = ("name", "accept", "as_kind", "top", "exempt", "shadow")

    def __init__(self, name: str, accept, as_kind, top: bool, exempt: bool, shadow: frozenset) -> None:
        self.name = name
        self.accept = accept  # the kinds its value may have here (None: what the position takes)
        self.as_kind = as_kind  # the kind it takes on (torch.device(n) is a device)
        self.top = top  # not inside torch.device(...)
        self.exempt, self.shadow = exempt, shadow


class _Value:
    """What an expression brings to a device position: literals and names."""

    __slots__ = ("literals", "refs")

    def __init__(self) -> None:
        self.literals: list[_Literal] = []
        self.refs: list[_Ref] = []


class _Binding:
    __slots__ = ("value", "scope", "exempt")

    def __init__(self, value: Optional[_Value], scope, exempt: bool) -> None:
        self.value = value  # None: not a plain assignment (a parameter, a loop, an import ...)
        self.scope, self.exempt = scope, exempt


class _Scope:
    __slots__ = ("kind", "parent", "bindings", "declared", "uses")

    def __init__(self, kind: str, parent) -> None:
        self.kind = kind  # "module", "function" or "class"
        self.parent = parent
        self.bindings: dict[str, list[_Binding]] = {}
        self.declared: set[str] = set()  # global / nonlocal names
        self.uses: list = []  # (ref, the kinds the position takes, how it is used)


def _literal_text(node: cst.CSTNode) -> Optional[str]:
    """The exact text of a str literal without expressions: a plain string,
    an f-string of text alone, or a joined literal of those (``"cu" "da"``);
    None for bytes and anything computed."""
    if isinstance(node, cst.SimpleString):
        return None if "b" in node.prefix.lower() else node.raw_value
    if isinstance(node, cst.FormattedString):
        if not node.parts:
            return ""
        only = node.parts[0]
        return only.value if len(node.parts) == 1 and isinstance(only, cst.FormattedStringText) else None
    if isinstance(node, cst.ConcatenatedString):
        left, right = _literal_text(node.left), _literal_text(node.right)
        return None if left is None or right is None else left + right
    return None


def _speaks_of_multi_gpu(expr: cst.CSTNode) -> bool:
    """A multi-GPU guard in ``expr``'s code or in its joined string literals
    (``@mark("multi" "_gpu")``)."""
    code = code_of(expr)
    # ``args.ngpu > 0`` names a GPU count but asks for one GPU only: no guard of ``cuda:1``.
    if _MULTI_GPU_GUARD.search(code) and _MULTI_GPU_GUARD.search(_without_one_gpu_comparisons(expr, code)):
        return True
    if "'" not in code and '"' not in code:
        return False
    for node in subtree(expr):
        if isinstance(node, cst.ConcatenatedString):
            text = _literal_text(node)
            if text is not None and _MULTI_GPU_GUARD.search(text):
                return True
    return False


def _one_gpu_comparison(node: cst.CSTNode) -> bool:
    """``args.ngpu > 0``, ``torch.cuda.device_count() >= 1``, ``n_gpu != 0``: a GPU is there, not several."""
    if not isinstance(node, cst.Comparison) or len(node.comparisons) != 1:
        return False
    target = node.comparisons[0]
    bound, operator = target.comparator, target.operator
    if not isinstance(bound, cst.Integer):
        return False
    return (bound.value == "0" and isinstance(operator, (cst.GreaterThan, cst.NotEqual))) or (
        bound.value == "1" and isinstance(operator, cst.GreaterThanEqual))


def _without_one_gpu_comparisons(expr: cst.CSTNode, code: str) -> str:
    for node in subtree(expr):
        if _one_gpu_comparison(node):
            code = code.replace(code_of(node), "")
    return code


def _may_speak_of_multi_gpu(source: str) -> bool:
    """False when no code of the file can speak of several GPUs (a cheap
    necessary condition of ``_speaks_of_multi_gpu``): an expression's code is a
    piece of the text, and a joined literal's text is the text without the
    junction (``"multi" "_gpu"``), the junctions the engine's words read."""
    low = source.lower()
    if _guard_in(low):
        return True
    joined = JUNCTION.sub("", low)
    return joined != low and _guard_in(joined)


# Every alternative of ``_GUARD_WORDS`` holds one of these, with at most ``_REACH`` word characters
# on either side of it (``num_gpus``, ``multi_device``, ``gpu_count``) and blanks before a ``<`` / ``>``.
_ANCHORS = ("gpu", "device_count", "multi")
_REACH = 8


def _guard_in(low: str) -> bool:
    """Does ``_MULTI_GPU_GUARD`` match lower-case ``low``? Its full search costs a millisecond
    per file; it is asked only around each anchor, where any match must stand."""
    for anchor in _ANCHORS:
        at = low.find(anchor)
        while at != -1:
            end = at + len(anchor)
            reach = min(len(low), end + _REACH)
            while end < reach and (low[end].isalnum() or low[end] == "_"):
                end += 1
            while end < len(low) and low[end].isspace():
                end += 1
            if _MULTI_GPU_GUARD.search(low, max(0, at - _REACH), end + 1):
                return True
            at = low.find(anchor, at + 1)
    return False


class HardCodedOrdinal(Rule):
    """Shared visitor; subclasses choose the ordinals they report."""

    FIX = "none"
    # Flow through names (``DEVICE = "cuda:1"`` ... ``x.to(DEVICE)``) reads the
    # enclosing function, and at module level all module code.
    SCOPE = FUNCTION
    # Every device position holds one: .to(...), .cuda(...), device=<not None>,
    # torch.device(...), torch.cuda.set_device(...) / .device(...),
    # torch.set_default_device(...),
    # map_location=<not None>, torch.load(f, <map_location>). Not a bare
    # ``device``: the parameter ``device=None`` of nearly every torch.nn
    # function kept 19% of the sample's lines, not 13%.
    NEEDS = {
        ".cuda(", "cuda:", ".to(", "device=", "device(", "set_device(", "set_default_device(", "map_location=", "load(",
        "device_ids", "DataParallel(", "DistributedDataParallel(", "data_parallel(",  # device_ids, output_device
    }

    # Is ``.cuda(True)`` (a bool as the device) reported here (TDV401)?
    BOOL_DEVICE = False
    # Are a device object and a module device constant choices by themselves (TDV401),
    # or only where they reach a device position (TDV402's "cuda:0" names GPU 0 as data
    # far more often)?
    CHOICE_OBJECTS = False

    @staticmethod
    def wants(ordinal: int) -> bool:
        raise NotImplementedError

    def __init__(self, context) -> None:
        super().__init__(context)
        self._checks: list[int] = []  # ids of open comparisons and assert calls
        self._guarded = [False]  # per def/class frame: inside multi-GPU-only code
        self._scope = _Scope("module", None)
        self._scopes = [self._scope]
        self._shadows: list[frozenset] = []  # comprehension targets and lambda parameters
        self._reported: set[int] = set()
        self._may_guard = _may_speak_of_multi_gpu(context.source)
        # Module constants bound to a device ("cuda:1", torch.device(...)): name -> literals.
        self._constants: dict[str, list[_Literal]] = {}

    # -- checks and multi-GPU guards --------------------------------------
    # Inside a comparison or an assert call a device is checked, not chosen:
    # ``assertEqual(t.to(1).device, ...)``.
    def visit_Comparison(self, node: cst.Comparison) -> None:
        self._checks.append(id(node))

    def leave_Comparison(self, node: cst.Comparison) -> None:
        self._checks.pop()

    def _push_frame(self, decorators) -> None:
        said = self._may_guard and any(_speaks_of_multi_gpu(d.decorator) for d in decorators)
        self._guarded.append(self._guarded[-1] or said)

    def _guard_test(self, test: cst.BaseExpression) -> None:
        # A guard covers its branches and, as an early exit
        # (``if device_count() < 2: skip``), the rest of the function.
        if self._may_guard and not self._guarded[-1] and _speaks_of_multi_gpu(test):
            self._guarded[-1] = True

    def visit_If(self, node: cst.If) -> None:
        self._guard_test(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._guard_test(node.test)

    def visit_Assert(self, node: cst.Assert) -> None:
        self._guard_test(node.test)

    def _exempt(self) -> bool:
        return bool(self._checks) or self._guarded[-1]

    # -- scopes and bindings -------------------------------------------------
    def _bind(self, name: str, value: Optional[_Value] = None) -> None:
        scope = self._scope
        scope.bindings.setdefault(name, []).append(_Binding(value, scope, self._exempt()))

    def _enter(self, kind: str) -> None:
        self._scope = _Scope(kind, self._scope)
        self._scopes.append(self._scope)

    def _leave(self) -> None:
        self._scope = self._scope.parent

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._bind(node.name.value)
        self._push_frame(node.decorators)
        name = node.name.value
        if (self._may_guard and _MULTI_GPU_GUARD.search(name)) or is_test_code(name, self.context.is_test):
            self._guarded[-1] = True  # a guard-like helper, or a test
        self._enter("function")
        for param in param_names(node.params):
            self._bind(param)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._guarded.pop()
        self._leave()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._bind(node.name.value)
        self._push_frame(node.decorators)
        self._enter("class")

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._guarded.pop()
        self._leave()

    def _shadow(self, names) -> None:
        self._shadows.append(frozenset(names))

    def _unshadow(self, node=None) -> None:
        self._shadows.pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._shadow(param_names(node.params))

    leave_Lambda = _unshadow

    def _visit_comprehension(self, node) -> None:
        names, clause = [], node.for_in
        while clause is not None:
            names += target_names(clause.target)
            clause = clause.inner_for_in
        self._shadow(names)

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _visit_comprehension
    leave_ListComp = leave_SetComp = leave_DictComp = leave_GeneratorExp = _unshadow

    def visit_Assign(self, node: cst.Assign) -> None:
        plain = [t.target.value for t in node.targets if isinstance(t.target, cst.Name)]
        value = self._follow(node.value, self._exempt()) if plain else None
        if value is not None and self.CHOICE_OBJECTS and self._scope.kind == "module" and not self.context.is_test:
            devices = [found for found in value.literals if found.kind == DEVICE and found.word]
            for name in plain:
                self._constants.setdefault(name, []).extend(devices)
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                self._bind(target.target.value, value)
            else:
                for name in target_names(target.target):
                    self._bind(name)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            for name in target_names(node.target):
                plain = isinstance(node.target, cst.Name)
                self._bind(name, self._follow(node.value, self._exempt()) if plain else None)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        for name in target_names(node.target):
            self._bind(name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        for name in target_names(node.target):
            self._bind(name)

    def visit_For(self, node: cst.For) -> None:
        for name in target_names(node.target):
            self._bind(name)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            for name in target_names(node.asname.name):
                self._bind(name)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            for name in target_names(node.name.name):
                self._bind(name)

    def visit_Del(self, node: cst.Del) -> None:
        for name in target_names(node.target):
            self._bind(name)

    def _visit_import(self, node) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = alias.asname.name if alias.asname is not None else alias.name
            while isinstance(name, cst.Attribute):  # import a.b binds a
                name = name.value
            if isinstance(name, cst.Name):
                self._bind(name.value)

    visit_Import = visit_ImportFrom = _visit_import

    def _visit_declaration(self, node) -> None:
        self._scope.declared.update(item.name.value for item in node.names)

    visit_Global = visit_Nonlocal = _visit_declaration

    def visit_MatchAs(self, node) -> None:
        if node.name is not None:
            self._bind(node.name.value)

    def visit_MatchStar(self, node) -> None:
        if node.name is not None:
            self._bind(node.name.value)

    def visit_MatchMapping(self, node) -> None:
        if node.rest is not None:
            self._bind(node.rest.value)

    # -- what an expression brings to a device position ----------------------
    def _follow(self, expr: cst.BaseExpression, exempt: bool) -> _Value:
        value = _Value()
        self._walk(expr, value, exempt, None, None, True)
        return value

    def _walk(self, expr, value: _Value, exempt: bool, accept, as_kind, top: bool) -> None:
        """Collect into ``value`` the literals and names ``expr`` hands on:
        ``accept`` filters their own kinds (None: any), ``as_kind`` is the kind
        they take on, ``top``: not inside ``torch.device(...)``."""

        def literal(node, ordinal: int, kind: str, word: bool) -> None:
            if accept is None or kind in accept:
                word = word or not top
                value.literals.append(_Literal(node, ordinal, as_kind or kind, word, exempt, self.context.statement))

        if isinstance(expr, cst.Integer):
            ordinal = expr.evaluated_value
            if isinstance(ordinal, int):
                literal(expr, ordinal, INT, False)
        elif isinstance(expr, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            text = _literal_text(expr)
            match = _CUDA_TEXT.fullmatch(text) if text is not None else None
            if match:
                literal(expr, int(match.group(1)), DEVICE, True)
            elif isinstance(expr, cst.FormattedString) and len(expr.parts) > 1:
                self._walk_formatted(expr, value, exempt, accept, as_kind, top, literal)
        elif isinstance(expr, cst.Name):
            shadow = frozenset().union(*self._shadows) if self._shadows else frozenset()
            value.refs.append(_Ref(expr.value, accept, as_kind, top, exempt, shadow))
        elif isinstance(expr, cst.IfExp):
            # A multi-GPU test guards both branches (``"cuda:1" if device_count() > 1 else "cpu"``).
            inner = exempt or (self._may_guard and _speaks_of_multi_gpu(expr.test))
            self._walk(expr.body, value, inner, accept, as_kind, top)
            self._walk(expr.orelse, value, inner, accept, as_kind, top)
        elif isinstance(expr, cst.BooleanOperation):
            self._walk(expr.left, value, exempt, accept, as_kind, top)
            self._walk(expr.right, value, exempt, accept, as_kind, top)
        elif isinstance(expr, cst.Dict):
            # A map_location dict: where storages go are its values, not its keys.
            if as_kind is None and (accept is None or MAPPED in accept):
                for element in expr.elements:
                    if isinstance(element, cst.DictElement):
                        self._walk(element.value, value, exempt, frozenset({DEVICE}), MAPPED, top)
        elif isinstance(expr, cst.Call) and self.names.qualify(expr.func) == _TORCH_DEVICE:
            self._walk_torch_device(expr, value, exempt, accept, as_kind or DEVICE)

    def _walk_formatted(self, expr: cst.FormattedString, value, exempt, accept, as_kind, top, literal) -> None:
        """``f"{kind}:1"`` (the text after the last expression is ``:N``) and
        ``f"cuda:{index}"`` (the last part is an expression after ``cuda:``)."""
        last = expr.parts[-1]
        if isinstance(last, cst.FormattedStringText):
            match = _ORDINAL_TAIL.fullmatch(last.value)
            if match and any(isinstance(p, cst.FormattedStringExpression) for p in expr.parts):
                literal(expr, int(match.group(1)), DEVICE, False)
            return
        before = expr.parts[-2]
        if (
            isinstance(before, cst.FormattedStringText)
            and before.value.endswith("cuda:")
            and last.conversion is None
            and last.format_spec is None
            and (accept is None or DEVICE in accept)
        ):
            self._walk(last.expression, value, exempt, _INDEX, as_kind or DEVICE, top)

    def _walk_torch_device(self, call: cst.Call, value: _Value, exempt: bool, accept, as_kind: str) -> None:
        """``torch.device(1)``, ``torch.device("cuda:1")``, ``torch.device("cuda", 1)``,
        ``torch.device(type="cuda", index=1)``: a device, whatever its argument was."""
        if accept is not None and DEVICE not in accept:
            return
        if any(arg.star for arg in call.args):
            return
        positional = [a for a in call.args if a.keyword is None]
        keywords = {a.keyword.value: a for a in call.args if a.keyword is not None}
        if len(positional) == 1 and not keywords:
            self._walk(positional[0].value, value, exempt, _DEVICE_POSITION, as_kind, False)
            return
        kind = positional[0] if positional else keywords.get("type")
        index = positional[1] if len(positional) > 1 else keywords.get("index")
        if kind is not None and index is not None and _literal_text(kind.value) == "cuda":
            self._walk(index.value, value, exempt, _INDEX, as_kind, False)

    # -- device positions ----------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if self.BOOL_DEVICE:
            self._bool_device(node)
        callee = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
        if isinstance(callee, str) and callee.lower().startswith("assert"):
            self._checks.append(id(node))
        for arg, accept, how in self._positions(node):
            self._use(arg.value, accept, how)
        if self.CHOICE_OBJECTS and not self.context.is_test and self.names.qualify(func) == _TORCH_DEVICE:
            # ``torch.device("cuda", 1)`` is the hard-coded choice itself, whatever is done
            # with it (in a test module devices are test data: ids, params, mocks).
            value = _Value()
            self._walk_torch_device(node, value, self._exempt(), None, DEVICE)
            for found in value.literals:
                self._consider(found, found.exempt)

    def _bool_device(self, call: cst.Call) -> None:
        """``x.cuda(True)``: ``non_blocking`` meant, a bool passed as the device. Old torch read it
        as GPU 1; torch now refuses a bool there on every machine, so no guard or test excuses it."""
        if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "cuda" and call.args):
            return
        first = call.args[0]
        if first.keyword is None and not first.star and isinstance(first.value, cst.Name) \
                and first.value.value in ("True", "False"):
            self.report(first.value, BOOL_MESSAGE.format(flag=first.value.value))

    def leave_Call(self, node: cst.Call) -> None:
        if self._checks and self._checks[-1] == id(node):
            self._checks.pop()

    def _positions(self, call: cst.Call) -> list:
        """(argument, the kinds it takes, how it is used) for each device
        position among ``call``'s arguments."""
        out = []
        func = call.func
        location = argument(call, None, "map_location")
        if location is not None:
            out.append((location, _LOCATION_POSITION, "map_location="))
        if isinstance(func, cst.Attribute) and func.attr.value in ("cuda", "to"):
            if built_without_tensor(self.names, func.value):
                return out  # ``nn.CrossEntropyLoss().cuda(3)``: a loss that holds no tensor moves nothing anywhere
            found = argument(call, 0, "device")  # x.cuda(1), x.to("cuda:1"), x.to(device=d)
            if found is not None:
                out.append((found, _DEVICE_POSITION, f".{func.attr.value}()"))
            return out
        if isinstance(func, cst.Attribute) and func.attr.value in _DEVICE_METHODS:
            found = argument(call, None, "device")
            if found is not None:
                out.append((found, _DEVICE_POSITION, "device="))
            return out
        qualified = self.names.qualify(func)
        if qualified is None or not qualified.startswith("torch.") or qualified == _TORCH_DEVICE:
            return out
        if qualified in PARALLEL_WRAPPERS or qualified == _DATA_PARALLEL_FUNCTION:
            return out + _wrapper_positions(call, 2 if qualified == _DATA_PARALLEL_FUNCTION else 1)
        if qualified in _CUDA_DEVICE_SETTERS:
            found = argument(call, 0, "device")
            how = qualified.rpartition(".")[2] + "()"
        elif qualified == _TORCH_LOAD:
            found = None if location is not None else argument(call, 1, "map_location")
            accept, how = _LOCATION_POSITION, "map_location"
            if found is not None:
                out.append((found, accept, how))
            return out
        else:
            found, how = argument(call, None, "device"), "device="  # torch.zeros(2, device=1)
        if found is not None:
            out.append((found, _DEVICE_POSITION, how))
        return out

    def _use(self, expr: cst.BaseExpression, accept: frozenset, how: str) -> None:
        value = self._follow(expr, self._exempt())
        for found in value.literals:
            if found.kind in accept:
                self._consider(found, found.exempt)
        for ref in value.refs:
            self._scope.uses.append((ref, accept, how))

    def _consider(self, found: _Literal, exempt: bool, message: Optional[str] = None) -> None:
        if exempt or not self.wants(found.ordinal) or id(found.node) in self._reported:
            return
        self._reported.add(id(found.node))
        self.report(found.node, message or self.MESSAGE, statement=found.statement)

    # -- names: decided once the whole scope is seen ---------------------------
    def leave_Module(self, node: cst.Module) -> None:
        self._report_constants()
        for scope in self._scopes:
            if scope.kind == "class":
                continue  # a class body's names are not followed
            for ref, accept, how in scope.uses:
                message = f"{self.MESSAGE} (`{ref.name}` holds it and reaches {how})"
                for found, kind, exempt in self._values(scope, ref, ref.exempt, frozenset()):
                    if kind in accept:
                        self._consider(found, exempt, message)

    def _report_constants(self) -> None:
        """A module constant ``SECOND_GPU = "cuda:1"`` is the choice, used in this file or
        not (other modules import it); silent only where every use here is guarded."""
        wanted = {name for name, literals in self._constants.items() if literals}
        if not wanted:
            return
        guarded: dict[str, bool] = {}  # name -> every use so far is exempt
        for scope in self._scopes:
            for ref, _accept, _how in scope.uses:
                if ref.name in wanted:
                    guarded[ref.name] = guarded.get(ref.name, True) and ref.exempt
        for name in wanted:
            if not guarded.get(name, False):
                for found in self._constants[name]:
                    self._consider(found, found.exempt)

    def _values(self, scope: _Scope, ref: _Ref, exempt: bool, seen: frozenset):
        """(literal, kind, exempt) for each literal the name ``ref``, read in
        ``scope``, brings where it is read: its binding's literals and, in
        turn, the names that binding reads."""
        binding, crossed = self._binding(scope, ref)
        if binding is None or binding.value is None or id(binding) in seen or len(seen) >= _MAX_HOPS:
            return
        exempt = exempt or binding.exempt
        found_kinds = [(found, found.kind, exempt or found.exempt) for found in binding.value.literals
                       if not (crossed and not found.word)]  # see the module doc
        for inner in binding.value.refs:
            if not (crossed and inner.top):
                found_kinds += self._values(binding.scope, inner, exempt or inner.exempt, seen | {id(binding)})
        for found, kind, why in found_kinds:
            if ref.accept is None or kind in ref.accept:
                yield found, ref.as_kind or kind, why

    @staticmethod
    def _binding(scope: _Scope, ref: _Ref):
        """The one plain binding ``ref`` reads (None if there are several, or
        another kind), and whether it lies in module code read from a function."""
        if ref.name in ref.shadow:
            return None, False
        crossed = False
        while scope is not None:
            if ref.name in scope.declared:
                return None, False
            bindings = scope.bindings.get(ref.name)
            if bindings is not None:
                return (bindings[0] if len(bindings) == 1 else None), crossed
            parent = scope.parent
            while parent is not None and parent.kind == "class":
                parent = parent.parent  # methods do not see their class's names
            crossed = crossed or (scope.kind == "function" and parent is not None and parent.kind == "module")
            scope = parent
        return None, False


class HardCodedCudaOrdinal(HardCodedOrdinal):
    r"""**On by default.** Precision on held-out code: 103 of 103 findings right (true, latent or deliberate) over the
    1,140 held-out projects with the rules of 2026-12-08, session of 00:45, whose first read of a wrapper's literal
    `device_ids` gave 14 of 14 (6 true: a DCGAN script's `--cuda` path on `device_ids=[0, 3]`; 8 deliberate
    two-GPU demos and scripts). Before: 33 of 33 findings true or latent over the held-out batches
    v2-v125 with the rules of 2026-12-06, session of 12:55 (v125's first read 8 of 8: a book's chapter notebooks that
    open with `torch.cuda.set_device("cuda:3")`); 25 of 25 findings true or latent over the held-out batches v2-v124
    with the rules of 2026-12-06, session of 10:44 (v124's first read 1 of 1: a GraphSAGE script's module-level
    `torch.device("cuda:1")`); 24 of 24 findings true or latent over the held-out batches v2-v118 with the rules of
    2026-12-06, session of 09:26 (v118's first read 1 of 1: `torch.device("cuda:2" if torch.cuda.is_available() else
    "cpu")`); 23 of 23 findings true or latent over the held-out batches v2-v91 with the rules of 2026-12-04, session of
    21:03, post-hoc: the `.cuda(N)` of a loss that holds no tensor selects no device and is no longer reported (v91's
    first read 4 of 8, the false four such losses in two notebooks; the true four, their labels sent to `.cuda(3)`;
    nothing right lost); 19 of 19 findings true or latent over the held-out batches v2-v88 with the rules of 2026-12-04,
    session of 18:37 (v88's first read 1 of 1, `DEVICE = 'cuda:1'` for a model and its replay memory), and 32 deliberate
    (multi-GPU demos, model-parallel code and tests that use a second GPU on purpose); docs/precision.md.

    ## What it does
    Flags a CUDA device ordinal of 1 or more written as a literal where it selects a
    device. The positions that select one:

    - the device of `.to(...)` and `.cuda(...)` (first argument or `device=`);
    - `device=` of a torch call (`torch.zeros(2, device=...)`, `nn.Linear(..., device=...)`)
      or of a tensor's `new_*` / `to_empty`;
    - `map_location=` and `torch.load(f, ...)`'s second argument (in a dict, its values);
    - `torch.cuda.set_device(...)`, `torch.cuda.device(...)`, `torch.set_default_device(...)`;
    - each element of a literal `device_ids` list or tuple of `nn.DataParallel`,
      `DistributedDataParallel` or `nn.parallel.data_parallel` (`device_ids=[0, 1]`: GPU 0 is
      every machine's, GPU 1 is not), and their `output_device`.

    What may stand there: a string whose whole value is `cuda:N` (`"cuda:1"`,
    `f"cuda:2"`), an int (`.cuda(1)`, `device=1`), an f-string whose text after its last
    expression is `:N` (`f"{kind}:1"`), `f"cuda:{n}"` of such an int, `torch.device(...)`
    of any of these (`torch.device("cuda", 1)`, `torch.device(type="cuda", index=1)`,
    `torch.device(1)`), either branch of a conditional -- directly, or through a simple
    name bound once by plain assignment in the same function (or module code):

    ```python
    DEVICE = "cuda:1"          # reported here ...
    def evaluate(model):
        return model.to(DEVICE)  # ... because it is used here

    gpu = 1                    # reported: a device held as a bare int
    batch = batch.cuda(gpu)
    ```

    Outside test modules, a device object with a literal ordinal (`torch.device("cuda:1")`,
    `torch.device("cuda", 1)`) and a module constant bound to one (`SECOND_GPU =
    "cuda:1"`) are the choice themselves, wherever they go (other modules import them):
    reported unless every use of the constant in the file is behind a multi-GPU guard.

    A bool in the device position of `.cuda(...)` (`target.cuda(True)`, written for
    `non_blocking=True`) is reported too, tests and multi-GPU code included: old torch read
    it as GPU 1, torch now refuses it on every machine.

    The report points at the literal. Ordinal 0 is TDV402 (off by default).

    ## Why is this bad?
    An ordinal of 1 or more assumes a machine with at least that many GPUs. The script
    fails on every one-GPU workstation, every CPU-only CI runner, and inside a job whose
    scheduler exposes a single GPU (`CUDA_VISIBLE_DEVICES=3` makes that GPU `cuda:0`).
    Under `torchrun`, the device of each process is given by `LOCAL_RANK`; a literal
    puts every process on the same GPU.

    ## Example
    ```python
    model = model.to("cuda:1")
    ```

    ## Use instead
    ```python
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")
    model = model.to(device)
    ```

    ## Fix safety
    No fix is offered: which device was meant (a configured one, `LOCAL_RANK`, the
    current device) is a decision about the program, not a rewrite.

    ## When it does not report
    - a device string that selects nothing: handed to a mock or to any other function
      (`canonical("cuda:1")`), a pytest id or param (`id="cuda:1"`), a dict value
      (`{"device": "cuda:1"}`), returned, or only compared (`t.device ==
      torch.device("cuda", 1)`); `device=` of a call that is not torch's; in a test module
      (ids, params, mocks), `torch.device(...)` and module constants too;
    - `"cuda"`, ordinals computed at run time (`f"cuda:{rank}"`, `torch.device("cuda", local_rank)`);
    - a name that is not bound exactly once by a plain assignment in its scope
      (a parameter, a loop variable, a name assigned in two branches; a chain of more
      than 32 names): its value is
      unknown; a local of another function;
    - from a function, a module-level name bound to a bare int or an f-string
      (`GPU = 1`): followed in module code only (the engine may not read module code
      that holds no device word); a module-level `"cuda:1"` or `torch.device(...)` is
      followed everywhere;
    - docstrings, comments and other bare strings; strings that only contain an ordinal (`"worker1/cuda:1"`);
    - the `.cuda(N)` / `.to("cuda:N")` of a torch.nn loss built from literals (`nn.CrossEntropyLoss().cuda(3)`): it
      holds no tensor, so the move touches no device and runs on any machine (a loss given a `weight` tensor holds
      it and is reported);
    - uses or literals inside a comparison or an assert call (`assertEqual(x.to(1).device, ...)`);
      `map_location` dict keys (`{"cuda:1": "cpu"}` names where a checkpoint was saved);
    - code behind a multi-GPU guard, at the literal or at its use: a decorator, function
      name or `if`/`assert`/conditional-expression test that mentions `device_count`,
      `multi_gpu`, `skip_if_lt_x_gpu`, `num_gpus`, `gpu_count` (joined literals such as
      `"multi" "_gpu"` count); a count compared with none or one (`args.ngpu > 0`,
      `n_gpu >= 1`, `device_count() != 0`) asks for one GPU and guards nothing (post-hoc,
      from v82's first read: `torch.device("cuda:1" if torch.cuda.is_available() and
      args.ngpu > 0 else "cpu")`);
    - a parallel wrapper's `device_ids` the code computes or holds in a name (`list(range(n_gpu))`,
      `device_ids=gpu_ids`, `device_ids=[local_rank]`), a literal `[0]` (every machine with a GPU has GPU 0; not
      TDV402's either), and a wrapper of another library (`other.DataParallel(...)`);
    - test code: `test*` functions and private `_helpers` of a test module.

    ## The error torch raises
    On a machine with one GPU:

    ```
    torch.AcceleratorError: CUDA error: invalid device ordinal
    ```

    and, from `nn.DataParallel(model, device_ids=[0, 1])`, which asks each listed GPU for its properties
    when it is built (without CUDA the wrapper keeps the module on the CPU and nothing fails):

    ```
    AssertionError: Invalid device id
    ```

    On a CPU-only machine (CPU build of torch 2.13), `.to("cuda:1")`:

    ```
    AssertionError: Torch not compiled with CUDA enabled
    ```

    and `.cuda(1)`:

    ```
    RuntimeError: Cannot access accelerator device when none is available.
    ```

    For `.cuda(True)`, on every machine:

    ```
    TypeError: cuda(): argument 'device' (position 1) must be torch.device, not bool
    ```
    """

    CODE = "TDV401"
    CHOICE_OBJECTS = True
    BOOL_DEVICE = True
    NAME = "hard-coded-cuda-ordinal"
    SUMMARY = (
        'a literal CUDA ordinal >= 1 where it selects a device (`.to("cuda:1")`, `.cuda(1)`, `device=1`, '
        "`gpu = 1; x.cuda(gpu)`)"
    )
    MESSAGE = (
        "hard-coded CUDA device ordinal >= 1 fails with 'invalid device ordinal' on a "
        "machine with fewer GPUs; take the device from configuration or LOCAL_RANK"
    )

    @staticmethod
    def wants(ordinal: int) -> bool:
        return ordinal >= 1


def _wrapper_positions(call: cst.Call, ids_position: int) -> list:
    """A parallel wrapper's devices: each element of a literal ``device_ids`` list or tuple other than a literal 0
    (``nn.DataParallel(model, device_ids=[0, 1])`` asks for two GPUs; GPU 0 is every machine's), and
    ``output_device``. A list held in a name, or built (``list(range(n))``), selects no literal GPU here."""
    out = []
    ids = argument(call, ids_position, "device_ids")
    if ids is not None and isinstance(ids.value, (cst.List, cst.Tuple)):
        out += [(element, _DEVICE_POSITION, "device_ids=") for element in ids.value.elements
                if isinstance(element, cst.Element)
                and not (isinstance(element.value, cst.Integer) and element.value.value == "0")]
    output = argument(call, ids_position + 1, "output_device")
    if output is not None:
        out.append((output, _DEVICE_POSITION, "output_device="))
    return out
