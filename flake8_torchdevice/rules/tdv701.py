"""TDV701: the deprecated ``torch.cuda.amp`` / ``torch.cpu.amp`` API.

Uses are collected during the walk and judged in ``leave_Module``: whether a
use is a version-gated fallback, and whether a ``from torch.cuda.amp import``
can be rewritten, depend on every binding of the name in the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .._lazy import cst
from ..analysis.code import last_name
from ..fixes import amp
from ..fixes.amp import Api
from ..names import dotted_name
from ..rule import Fix, Rule

_NAMES = {"cuda": ("autocast", "GradScaler", "custom_fwd", "custom_bwd"), "cpu": ("autocast", "GradScaler")}
_SUBMODULE = {
    "autocast": "autocast_mode", "custom_fwd": "autocast_mode", "custom_bwd": "autocast_mode",
    "GradScaler": "grad_scaler",
}
DEPRECATED_MODULES = {f"torch.{device}.amp": device for device in _NAMES}
DEPRECATED = {
    f"torch.{device}.amp{sub}.{name}": Api(name, device)
    for device, names in _NAMES.items()
    for name in names
    for sub in ("", "." + _SUBMODULE[name])
}
# The replacement API: a branch using it makes the other branch a fallback.
NEW_API = frozenset({"torch.amp", "torch.autocast", "torch.GradScaler"})


# Callables that call their first argument later: ``functools.partial(torch.cuda.amp.autocast, dtype=...)``
# warns at each call of the partial, as the API itself does. Read by their last name (``functools`` is no
# tracked import): with a deprecated API as the first argument, no other ``partial`` is plausible.
_DEFERRED_CALLS = frozenset({"partial", "partialmethod"})


@dataclass
class _Use:
    node: cst.CSTNode  # a Call, or a Decorator without a call
    api: Api
    statement: Optional[int]
    in_handler: bool
    ifs: tuple  # enclosing If / IfExp nodes, outermost first
    scope: dict  # the enclosing function's (or module's) facts
    target: Optional[cst.BaseExpression] = None  # the deprecated callable, where it is not ``node``'s callee

    @property
    def callee(self) -> Optional[cst.BaseExpression]:
        return self.target if self.target is not None else _callee(self.node)


class DeprecatedAmp(Rule):
    r"""## What it does
    Flags calls of the deprecated mixed-precision API: `torch.cuda.amp.autocast(...)`,
    `torch.cuda.amp.GradScaler(...)`, `torch.cuda.amp.custom_fwd` / `custom_bwd` (as
    decorators too), `torch.cpu.amp.autocast(...)` and `torch.cpu.amp.GradScaler(...)`,
    under any alias (`from torch.cuda.amp import autocast`, `from torch.cuda import amp`,
    `import torch.cuda.amp as amp`), and the `from torch.cuda.amp import ...` /
    `from torch.cpu.amp import ...` statements whose names are called so. A
    `functools.partial(torch.cuda.amp.autocast, dtype=torch.bfloat16)` (or `partialmethod`)
    calls the API each time it is called, so it is reported too (post-hoc, from recall
    batch 91's first read: Bark's `autocast` in coqui-ai-TTS).

    ## Why is this bad?
    Since torch 2.4 each call emits a `FutureWarning` and the API is slated for removal;
    the device is baked into the module name, which ties the code to CUDA. `torch.amp`
    takes the device as an argument (`torch.amp.autocast(device.type)`), so the same code
    runs on CPU, CUDA, XPU or MPS.

    ## Example
    ```python
    scaler = torch.cuda.amp.GradScaler()
    with torch.cuda.amp.autocast(False):
        loss = model(x)
    ```

    ## Use instead
    ```python
    scaler = torch.amp.GradScaler("cuda")
    with torch.amp.autocast("cuda", enabled=False):
        loss = model(x)
    ```

    ## Fix safety
    Safe. The old and new signatures differ (old `autocast(enabled=True,
    dtype=torch.float16, cache_enabled=True)`, new `autocast(device_type, dtype=None,
    enabled=True, cache_enabled=None)`; old `GradScaler(init_scale, ...)`, new
    `GradScaler(device="cuda", init_scale, ...)`), so the fix binds every positional
    argument by the old signature and writes it as a keyword:
    `torch.cpu.amp.autocast(False)` becomes `torch.amp.autocast("cpu", enabled=False)`,
    never `torch.amp.autocast("cpu", False)` (which passes `False` as the dtype and raises
    when the block is entered). Where no dtype is given the fix writes the old default
    (`dtype=torch.float16` for CUDA, `torch.bfloat16` for CPU), because the new autocast
    would otherwise inherit the dtype of an enclosing autocast region; a disabled region
    (`enabled=False`) needs none. `custom_fwd` / `custom_bwd` get `device_type="cuda"`.
    `from torch.cuda.amp import autocast` becomes `from torch.amp import autocast` only when
    every use of every name such imports bind is a call or decorator the fix rewrites;
    otherwise neither the imports nor the uses of their names are changed (fix them
    together: silencing only some of them with `# noqa` would leave a name imported from one
    API and called with the other's arguments). Calls forwarding `*args` are reported, not
    fixed, and so are partials (their own arguments would need the same rebinding). A qualified call (`torch.cuda.amp.autocast(...)`) is rewritten on its own; an
    `import torch.cuda.amp` or `from torch.cuda import amp` it leaves unused stays.
    The one difference left: the new autocast reads the autocast cache setting of an
    enclosing region where the old one forced it on; the cache changes speed, not results.

    ## When it does not report
    - version-gated fallbacks: a use or import inside an `except` handler (`try: from
      torch.amp import autocast` / `except ImportError: from torch.cuda.amp import
      autocast`); in a branch of an `if` / conditional expression that tests the torch
      version or a feature (`torch.__version__`, `version.parse(...)`, `TORCH_2_4`,
      `hasattr(...)`) when another branch uses `torch.amp`, `torch.autocast` or
      `torch.GradScaler`; after such an `if` whose branch returns the new API; or through a
      name the file also binds to something else (`autocast = partial(torch.amp.autocast,
      "cuda")` in the other branch of a version check). A branch chosen by device
      (`if device_type == "cuda": torch.cuda.amp.GradScaler() else:
      torch.amp.GradScaler(device_type)`) is reported: it warns on every torch >= 2.4;
    - references that are not called (`isinstance(s, torch.cuda.amp.GradScaler)`, type
      annotations; a partial's first argument is called), and imports used only so: they
      emit no warning;
    - `torch.amp.*`, `torch.autocast`, and other libraries' `autocast`.

    ## The error torch raises
    A warning, which `-W error::FutureWarning` (or pytest's `filterwarnings = error`)
    turns into an error:

    ```
    FutureWarning: `torch.cuda.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cuda', args...)` instead.
    FutureWarning: `torch.cpu.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cpu', args...)` instead.
    FutureWarning: `torch.cuda.amp.GradScaler(args...)` is deprecated. Please use `torch.amp.GradScaler('cuda', args...)` instead.
    FutureWarning: `torch.cpu.amp.GradScaler(args...)` is deprecated. Please use `torch.amp.GradScaler('cpu', args...)` instead.
    FutureWarning: `torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use `torch.amp.custom_fwd(args..., device_type='cuda')` instead.
    FutureWarning: `torch.cuda.amp.custom_bwd(args...)` is deprecated. Please use `torch.amp.custom_bwd(args..., device_type='cuda')` instead.
    ```

    The wrong rewrite `torch.amp.autocast("cpu", False)` (another linter's fix) fails
    when the block is entered:

    ```
    TypeError: set_autocast_dtype(): argument 'dtype' (position 2) must be torch.dtype, not bool
    ```
    """

    CODE = "TDV701"
    NAME = "deprecated-amp-api"
    SUMMARY = "deprecated `torch.cuda.amp` / `torch.cpu.amp` call"
    MESSAGE = "torch.{device}.amp.{name} is deprecated since torch 2.4 (FutureWarning); use {new}"
    IMPORT_MESSAGE = "import from torch.amp: the torch.cuda.amp / torch.cpu.amp API is deprecated since torch 2.4"
    FIX = "safe"
    # Attributes (``torch.cuda.amp.autocast``, ``amp.GradScaler``); a name imported by its own
    # name or bound to one is found through it. Not the word in a string ("autocast is enabled").
    NEEDS = {".autocast", ".GradScaler", ".custom_fwd", ".custom_bwd"}

    def __init__(self, context) -> None:
        super().__init__(context)
        self._module: Optional[cst.Module] = None
        self._uses: list[_Use] = []
        self._handlers = 0
        self._ifs: list[cst.CSTNode] = []
        self._bindings: dict[str, set] = {}  # local name -> what the file binds it to
        self._gated: set[str] = set()  # locals whose deprecated import is a fallback
        self._imports: list[tuple] = []  # (ImportFrom of a deprecated module, statement, locals, gated)
        self._scopes: list[dict] = [{"gated": False}]  # module, then enclosing functions

    # -- context ------------------------------------------------------
    def visit_Module(self, node: cst.Module) -> None:
        self._module = node

    def visit_ExceptHandler(self, node) -> None:
        self._handlers += 1

    def leave_ExceptHandler(self, node) -> None:
        self._handlers -= 1

    def visit_FunctionDef(self, node) -> None:
        self._scopes.append({"gated": False})

    def leave_FunctionDef(self, node) -> None:
        self._scopes.pop()

    def visit_If(self, node) -> None:
        self._ifs.append(node)

    def leave_If(self, node) -> None:
        """``if <version check>: return <torch.amp ...>``: what follows in the
        scope is the fallback."""
        self._ifs.pop()
        body = node.body.body
        if body and _returns(body[-1]) and _version_test(node.test) and self._uses_new_api(node.body):
            self._scopes[-1]["gated"] = True

    def visit_IfExp(self, node) -> None:
        self._ifs.append(node)

    def leave_IfExp(self, node) -> None:
        self._ifs.pop()

    # -- bindings -----------------------------------------------------
    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        module = dotted_name(node.module)
        if module in DEPRECATED_MODULES:
            locals_ = [amp.local_name(alias) for alias in node.names]
            self._imports.append((node, self.context.statement, locals_, bool(self._handlers or self._ifs)))
        for alias in node.names:
            local = amp.local_name(alias)
            name = dotted_name(alias.name)
            if local is None or module is None or name is None:
                continue
            qualified = f"{module}.{name}"
            self._bindings.setdefault(local, set()).add(qualified)
            if qualified in DEPRECATED and (self._handlers or self._ifs):
                self._gated.add(local)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                value = self.names.qualify(node.value) if isinstance(node.value, (cst.Name, cst.Attribute)) else None
                self._bindings.setdefault(target.target.value, set()).add(value)

    # -- uses -----------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        name = self.names.qualify(node.func) or ""
        api = DEPRECATED.get(name)
        if api is not None:
            self._record(node, api)
        elif last_name(node.func) in _DEFERRED_CALLS and node.args and _plain(node.args[0]):
            api = DEPRECATED.get(self.names.qualify(node.args[0].value) or "")
            if api is not None:  # reported, not fixed: the partial's own arguments follow the old signature
                self._record(node, api, target=node.args[0].value)

    def visit_Decorator(self, node: cst.Decorator) -> None:
        api = DEPRECATED.get(self.names.qualify(node.decorator) or "")
        if api is not None and api.name in amp.DECORATORS:
            self._record(node, api)

    def _record(self, node: cst.CSTNode, api: Api, target: Optional[cst.BaseExpression] = None) -> None:
        statement = self.context.statement
        use = _Use(node, api, statement, self._handlers > 0, tuple(self._ifs), self._scopes[-1], target)
        self._uses.append(use)

    # -- verdicts -------------------------------------------------------
    def leave_Module(self, node: cst.Module) -> None:
        reported = [use for use in self._uses if not self._fallback(use)]
        renamed = self._renamed_locals(reported)
        for use in reported:
            fix = self._use_fix(use, renamed)
            self.report(use.node, self._message(use.api), fix=fix, statement=use.statement)
        called = {use.callee.value for use in reported if isinstance(use.callee, cst.Name)}
        for imported, statement, locals_, gated in self._imports:
            if not gated and called.intersection(locals_):
                fix = Fix(amp.rewrite_import) if renamed is not None else None
                self.report(imported, self.IMPORT_MESSAGE, fix=fix, statement=statement)

    def _fallback(self, use: _Use) -> bool:
        callee = use.callee
        if isinstance(callee, cst.Name) and self._fallback_name(callee.value):
            return True
        return use.in_handler or use.scope["gated"] or self._gated_by_if(use)

    def _message(self, api: Api) -> str:
        if api.name in amp.DECORATORS:
            new = f'torch.amp.{api.name}(..., device_type="{api.device}")'
        else:
            new = f'torch.amp.{api.name}("{api.device}", ...)'
        return self.MESSAGE.format(device=api.device, name=api.name, new=new)

    def _fallback_name(self, local: str) -> bool:
        """A name also bound to something else (the other arm of a version
        check), or imported as a fallback."""
        bound = self._bindings.get(local, set())
        return local in self._gated or any(q not in DEPRECATED for q in bound) or len(bound) > 1

    def _gated_by_if(self, use: _Use) -> bool:
        for branch in use.ifs:
            arms = (branch.body, branch.orelse)
            inside = [arm for arm in arms if arm is not None and _contains(arm, use.node)]
            others = [arm for arm in arms if arm is not None and not any(arm is i for i in inside)]
            if inside and _version_test(branch.test) and any(self._uses_new_api(part) for part in others):
                return True
        return False

    def _uses_new_api(self, node: cst.CSTNode) -> bool:
        for part in _nodes(node):
            if isinstance(part, cst.Attribute):
                if self.names.qualify(part) in NEW_API:
                    return True
        return False

    # -- fixes ----------------------------------------------------------
    def _torch_name(self, func: cst.BaseExpression) -> Optional[str]:
        """The file's name for the torch module: the callee's own head if it
        is torch (``th.cuda.amp.autocast``), else ``torch`` if bound."""
        head = func
        while isinstance(head, cst.Attribute):
            head = head.value
        if isinstance(head, cst.Name) and self.names.resolve_dotted(head.value) == "torch":
            return head.value
        return "torch" if self.names.resolve_dotted("torch") == "torch" else None

    def _use_fix(self, use: _Use, renamed: Optional[set]) -> Optional[Fix]:
        node, api = use.node, use.api
        if use.target is not None:
            return None
        func = _callee(node)
        torch_name = self._torch_name(func)
        if isinstance(func, cst.Name):  # imported by name: rewritten with its import
            if renamed is None or func.value not in renamed:
                return None
            new_func = func
        elif torch_name is None:
            return None
        else:
            new_func = amp.new_api(torch_name, api.name)
        if isinstance(node, cst.Decorator):
            return Fix(lambda d: amp.rewrite_decorator(d, api, new_func))
        if amp.new_arguments(node, api, torch_name) is None:
            return None
        return Fix(lambda call: amp.rewrite_call(call, api, new_func, torch_name) or call)

    def _renamed_locals(self, reported: list) -> Optional[set]:
        """The names that ``from torch.<device>.amp import`` binds, if every
        such import can become ``from torch.amp import`` with every use of
        its names reported and rewritten (all of them, or none: a
        half-rewritten name would call the new API with the old arguments);
        else None."""
        names = set()
        for _, _, locals_, gated in self._imports:
            if gated or any(local is None or self._fallback_name(local) for local in locals_):
                return None
            names.update(locals_)
        if not names or self._module is None or not amp.only_called(self._module, names):
            return None
        for use in self._uses:
            callee = use.callee
            if not isinstance(callee, cst.Name) or callee.value not in names:
                continue
            if use.target is not None:
                return None  # ``partial(autocast, ...)``: not rewritten
            if not any(use is r for r in reported):
                return None
            if (
                isinstance(use.node, cst.Call)
                and amp.new_arguments(use.node, use.api, self._torch_name(callee)) is None
            ):
                return None
        return names


def _plain(arg: cst.Arg) -> bool:
    return arg.keyword is None and not arg.star


def _callee(node: cst.CSTNode) -> Optional[cst.BaseExpression]:
    if isinstance(node, cst.Decorator):
        return node.decorator
    return node.func


def _nodes(tree: cst.CSTNode):
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children)


def _version_test(test: cst.BaseExpression) -> bool:
    """A test of the torch version or of a feature: ``torch.__version__``,
    ``version.parse(...)``, ``TORCH_2_4``, ``_TORCH_GREATER_EQUAL_2_4``,
    ``hasattr(torch, "amp")``."""
    for node in _nodes(test):
        if isinstance(node, cst.Name):
            word = node.value.lower()
            if "version" in word or word == "hasattr" or ("torch" in word and any(c.isdigit() for c in word)):
                return True
    return False


def _returns(statement: cst.CSTNode) -> bool:
    if isinstance(statement, cst.SimpleStatementLine):
        return any(isinstance(part, (cst.Return, cst.Raise)) for part in statement.body)
    return False


def _contains(tree: cst.CSTNode, target: cst.CSTNode) -> bool:
    return any(node is target for node in _nodes(tree))
