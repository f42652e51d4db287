"""One scope's walk, and the place where two kinds of value meet."""

from __future__ import annotations

from typing import Optional

from ..._lazy import cst
from ..code import last_name, subtree
from .calls import Calls
from .expressions import Expressions
from .facts import SELF, FileFacts, crossing, declared_global, key_of, numpy_rebound, param_for
from .flags import lasting
from .layers import Layers, is_cpu_layer
from .loops import Loops
from .callers import given_by_callers, sole_call
from .methods import given_by_siblings, returned_by
from .sinks import numpy_params, own_numpys
from .places import Places
from .statements import UNREAD, Statements, body_of, params_of
from .untouched import untouched, untouched_attributes
from .late import late_candidates
from .values import CPU, Flow, INPUT, MOVED, Meet, PLACED, SIBLING, Value
from .words import LIGHTNING_PACKAGES, LIGHTNING_STEPS, skips_nccl, starts_nccl


def flow_of(context, node: "cst.CSTNode") -> Flow:
    """The flow of a function (``FunctionDef``) or of a module's top level
    (``Module``), computed once per file and shared by the rules. A function
    starts from the facts of the module and, for a method, of its class's
    ``__init__`` (``facts``)."""
    cache = context.__dict__.setdefault("_device_flow", {})
    key = id(node)
    if key not in cache:
        # Methods read each other (flow/methods.py): one being walked is not asked again.
        busy = context.__dict__.setdefault("_flow_busy", set())
        busy.add(key)
        try:
            analysis = _Analysis(context, node)
            flow = analysis.run(node, _facts_for(context, node))
            if analysis.handed_placed and flow.numpys:
                # NumPy reads of what callers hand: reported at their calls (flow/sinks.py)
                flow.numpys = own_numpys(context, node, flow.numpys, analysis.given, _walker(context, node))
        finally:
            busy.discard(key)
        if analysis.partial:
            return flow  # walked while a sibling that calls it was being walked: asked again later
        cache[key] = (node, flow)
    return cache[key][1]


def start_file(context, module: "cst.Module") -> None:
    """Once per file, before any function: the module's facts."""
    if "_flow_facts" not in context.__dict__:
        facts = FileFacts(module)
        facts.nccl = starts_nccl(context.source)
        context._flow_facts = facts
        top = flow_of(context, module)
        rebound = declared_global(context.source)  # a function may rebind them: not the module's facts
        layers = {name for name, value in top.env.items() if is_cpu_layer(value)} - rebound
        still = frozenset(untouched(context.names, layers))
        facts.globals = {name: fact for name, fact in crossing(top.env, still=still).items() if name not in rebound}
        facts.default_device = top.default_device
        facts.note_calls(top.calls, lambda name, args: sole_call(context, name, args))
        facts.note_foreign_calls(top.foreign_calls)
        facts.note_shown_calls(top.shown_calls)
        facts.ready = True


def _walker(context, node: "cst.FunctionDef"):
    """``walk(given)``: a walk of the function ``node`` handed nothing but ``given`` (flow/sinks.py)."""
    def walk(given: dict) -> "_Analysis":
        analysis = _Analysis(context, node, handed=False)
        analysis.given.update(given)
        analysis.run(node, _facts_for(context, node))
        return analysis
    return walk


def _ends_in_return(method: "cst.FunctionDef") -> bool:
    body = body_of(method.body)
    last = body[-1] if body else None
    return isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Return)


def _facts_for(context, node) -> dict:
    facts = context.__dict__.get("_flow_facts")
    if facts is None or not isinstance(node, cst.FunctionDef):
        return {}
    env = dict(facts.globals)
    cls = facts.classes.get(id(node))
    every = facts.setup_methods(cls) if cls is not None else []
    setups = every
    for index, setup in enumerate(setups):
        if setup is node:  # a setup method sees what the ones before it bound
            setups = setups[:index]
            break
    env.update(_setup_facts(context, facts, cls, setups))
    if cls is not None and node not in every:  # ``env`` holds the module's and every setup method's facts
        for name, (fact, binders) in _late_facts(context, facts, cls, env).items():
            if node.name.value not in binders:
                env.setdefault(name, fact)
    return env


def _setup_facts(context, facts, cls, setups: list) -> dict:
    """What ``setups`` (``__init__`` first) leave in ``self.x``, walked once per class and count."""
    if not setups:
        return {}
    key = (id(cls), len(setups))
    if key not in facts.by_class:
        facts.by_class[key] = {}  # a recursion guard while the setup methods are walked
        rebound = numpy_rebound(context.names, cls)  # an attribute a method rebinds to a NumPy array
        found: dict = {}
        for setup in setups:
            setup_flow = flow_of(context, setup)
            layers = {name for name, value in setup_flow.env.items() if name.startswith(SELF) and is_cpu_layer(value)}
            still = untouched_attributes(context.names, cls.name.value, layers) if id(cls) in facts.top_classes \
                else set()  # a plain class's layers no code moves: their CPU weights cross into its methods
            bound = crossing(setup_flow.env, SELF, still=frozenset(still))
            found.update((name, fact) for name, fact in bound.items() if name not in rebound)
            if setup.name.value == "__init__":
                facts.branches_by_class[id(cls)] = lasting(setup_flow.branches, setup_flow.env)
        facts.by_class[key] = found
    return facts.by_class[key]


def _late_facts(context, facts, cls, base: dict) -> dict:
    """{"self.x": (placed fact, the methods binding it)} for each attribute the class binds only
    outside its setup methods, every binding placing it (``flow/late.py``): each binding method is
    walked once more, from ``base`` (the module's and the setup methods' facts) alone, to tell a move
    to a device from ``.to(torch.float)``. Computed once per class, at its first non-setup method."""
    late = facts.late_by_class
    if id(cls) in late:
        return late[id(cls)]
    late[id(cls)] = {}  # a recursion guard while the binding methods are walked
    candidates = late_candidates(context.names, cls.name.value) if id(cls) in facts.top_classes else {}
    methods = {m.name.value: m for m in cls.body.body if isinstance(m, cst.FunctionDef)}
    if any(name not in methods for binders in candidates.values() for name in binders):
        candidates = {}  # a binding method the selection left out: no fact may depend on it
    ends: dict = {}
    found: dict = {}
    for attr, binders in candidates.items():
        values = []
        for name in sorted(binders):
            if name not in ends:
                walk = _Analysis(context, methods[name], handed=False)
                ends[name] = crossing(walk.run(methods[name], base).env, SELF)
            values.append(ends[name].get(SELF + attr))
        if all(value is not None and value.kind in (PLACED, MOVED) for value in values):
            found[SELF + attr] = (values[0], binders)
    late[id(cls)] = found
    return found


def _lightning_step(node: "cst.FunctionDef", facts, names) -> bool:
    """A Lightning step hook (``training_step(self, batch, batch_idx)``): of a class based on
    ``LightningModule``, or of any class of a file that imports Lightning."""
    if node.name.value not in LIGHTNING_STEPS:
        return False
    cls = facts.classes.get(id(node))
    if cls is None:
        return False
    if names.imports_any(LIGHTNING_PACKAGES):
        return True
    return any(last_name(base.value) == "LightningModule" for base in cls.bases)


_MODULE_METHODS = frozenset(
    "train eval parameters named_parameters buffers modules children state_dict load_state_dict zero_grad "
    "requires_grad_".split()
)


def _module_params(node: cst.FunctionDef) -> set[str]:
    """The parameters, and the attributes of ``self`` (``self.network``, as ``key_of`` names them), that
    the function uses as modules (``model.train()``, ``self.network.parameters()``)."""
    params = set(params_of(node))
    found = set()
    for part in subtree(node.body):
        if isinstance(part, cst.Call) and isinstance(part.func, cst.Attribute) \
                and part.func.attr.value in _MODULE_METHODS:
            owner = part.func.value
            kept = isinstance(owner, cst.Attribute) and key_of(owner) is not None  # ``self.network``
            if kept or isinstance(owner, cst.Name) and owner.value in params:
                found.add(key_of(owner))
    return found


# A tensor's own attributes, which code sets on tensors (``w.requires_grad = False``).
_TENSOR_ATTRIBUTES = frozenset({"data", "grad", "requires_grad", "retains_grad", "names"})


def _attribute_targets(node) -> set[str]:
    """Names whose attributes the scope assigns, other than a tensor's own."""
    found = set()
    for part in subtree(node.body if isinstance(node, cst.FunctionDef) else node):
        if isinstance(part, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
            targets = [t.target for t in part.targets] if isinstance(part, cst.Assign) else [part.target]
            for target in targets:
                if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) \
                        and target.attr.value not in _TENSOR_ATTRIBUTES:
                    found.add(target.value.value)
    return found


class _Analysis(Statements, Loops, Expressions, Calls, Places, Layers):
    """One scope's walk: the mixins walk statements, loops, expressions and
    calls; this class holds the state and records where values meet."""

    def __init__(self, context, node, handed: bool = True) -> None:
        # ``handed``: read what callers and siblings hand the function (False: its parameters are unknown,
        # for what it returns whatever it is given, ``flow/callers.cpu_result``).
        self.names = context.names
        self.is_test = context.is_test
        self.flow = Flow()
        self.mute = 0
        self.pending: list = []  # (node, sibling, placed, statement, module call?): decided at the end
        self.index: Optional[int] = None  # the module-level statement being walked
        self.facts: dict = {}  # what the module (and __init__) proved, before this scope's own bindings
        self.loaders: set[str] = set()  # names this scope bound to a DataLoader (or a wrapper of one)
        self.unshown: set[str] = set()  # those of them whose building this file does not show (flow/loops.py)
        self.foreign: set[str] = set()  # names this scope bound to a loader another module built (``tqdm(it)``)
        self.enumerated: set[str] = set()  # those of them that yield (i, batch): ``tqdm(enumerate(loader))``
        self.prepared: set[str] = set()  # names bound to a wrapper of a framework's loader (``tqdm(prepared)``)
        self.attributes_bound: set[str] = set()  # ``self.x`` keys this walk has bound (``if_`` in ``__init__``)
        self._class_defaults = UNREAD  # in ``__init__``: its class body's attributes (``Statements.class_defaults``)
        self._node = node
        self._module_params: Optional[set[str]] = None  # read on the first question: most scopes never ask
        self._containers: Optional[set[str]] = None  # likewise
        # What the file proves before this scope starts (``start_file`` made ``_flow_facts``
        # before the first scope): whether it starts an NCCL group and, for a function, the
        # default device module code sets and the placed values it calls the function with.
        facts = context.__dict__.get("_flow_facts")
        function = facts is not None and isinstance(node, cst.FunctionDef)
        handed = handed and function
        self.nccl = facts is not None and facts.nccl and not (function and skips_nccl(node))
        self.imported = facts.imported_objects if facts is not None else frozenset()
        self.default_device = function and facts.default_device  # later ``set_default_device`` calls set it too
        # parameter name -> Value; a copy: FileFacts keeps the module's own per function
        self.given: dict = dict(facts.given_to(node)) if handed else {}
        self.foreign.update(facts.foreign_given(node) if handed else ())
        self.shown: set = facts.shown_given(node) if handed else set()  # parameters given a loader module code built
        self.context = context
        self.scope = node.name.value if function else None  # the function's name
        self.cls = facts.classes.get(id(node)) if function else None  # a method's class
        self.partial = False  # a sibling method that calls this one was busy: its facts are missing
        # A top-level function: what other top-level functions hand it is read (flow/callers.py).
        self.top_level = function and facts.functions.get(node.name.value) is node
        if self.cls is not None and handed:
            given, self.partial = given_by_siblings(context, node, self.cls, flow_of)
        elif self.top_level and handed:
            given, self.partial = given_by_callers(context, node, flow_of)
        else:
            given = {}
        for param, value in given.items():
            self.given.setdefault(param, value)
        # A top-level function handed a placed value by its callers (module code or another function)
        self.handed_placed = self.top_level and any(value.kind == PLACED for value in self.given.values())
        if handed and _lightning_step(node, facts, context.names):
            batch = Value(PLACED, "batch", param=True)
            batch.spread = True  # ``x, y = batch``: the Trainer moved every part
            self.given.setdefault("batch", batch)

    def is_module_param(self, name: str) -> bool:
        """Does the function treat ``name`` (a parameter, or an attribute of ``self`` by its key, ``self.network``)
        as a module (``model.train()``, ``self.network.parameters()``)? One called with a placed tensor is on
        that device; any other callable may take a tensor on any device."""
        if self._module_params is None:
            node = self._node
            self._module_params = _module_params(node) if isinstance(node, cst.FunctionDef) else set()
        return name in self._module_params

    def is_container(self, expr) -> bool:
        """Is ``expr`` a name this scope sets attributes on (``data.mask = torch.rand(2)``)? An object
        holding tensors (mmdet's ``InstanceData``), not one: its own ``.numpy()`` converts each of them."""
        if not isinstance(expr, cst.Name):
            return False
        if self._containers is None:
            self._containers = _attribute_targets(self._node)
        return expr.value in self._containers

    # -- scopes -----------------------------------------------------------
    def run(self, node, facts: dict) -> Flow:
        env: dict = dict(facts)
        self.facts = facts
        if isinstance(node, cst.FunctionDef):
            for param in params_of(node):
                env[param] = self.given.get(param) or Value(INPUT, param, param=True)
            body = body_of(node.body)
        else:
            body = node.body
        try:
            if isinstance(node, cst.FunctionDef):
                self.block(body, env)
            else:
                for index, statement in enumerate(body):
                    self.index = index
                    self.statement(statement, env)
        except RecursionError:
            return Flow()
        self.flow.env = env
        self.flow.default_device = self.default_device
        for where, sibling, placed, index, module in self.pending:
            loop = sibling.loop
            # Left behind: a sibling was moved (or this element, inline only: the name still
            # holds the CPU tensor), or the element meets a placed model, from a loader of CPU
            # batches as far as the file shows.
            if (loop.moved or module and not loop.unshown) and loop.elements.get(sibling.label, sibling).evidence:
                self.flow.siblings.append(Meet(where, sibling, placed, index))
        return self.flow

    def returned(self, call, method: str, args: list) -> Optional[Value]:
        return returned_by(self.context, self.cls, method, call, args, self)

    @classmethod
    def walk_with(cls, context, method: "cst.FunctionDef", given: dict, handed: bool = True) -> "_Analysis":
        """A walk of ``method`` whose parameters hold ``given`` (one call's values; with ``handed``
        False, nothing else), for what it returns (``.flow.returns``): its meetings are not the
        method's own (``flow_of`` finds those)."""
        analysis = cls(context, method, handed)
        analysis.given.update(given)
        if _ends_in_return(method):  # else it may fall off its end: None is one of its results
            analysis.run(method, _facts_for(context, method))
        return analysis

    def meet(self, node, a: Optional[Value], b: Optional[Value], module: bool = False, into: bool = False) -> None:
        """``a`` and ``b`` meet in an op that needs one device (``module``: ``b``
        is a placed module called with ``a``; ``into``: the op writes into ``a``, ``a += b``)."""
        if a is None or b is None or self.mute or a.opaque or b.opaque:
            return
        for cpu, placed in ((a, b), (b, a)):
            if placed.kind != PLACED:
                continue
            # A module's weights take no CPU scalar: data of unseen shape is no 0-dim exemption there.
            # Nor does an op writing into a CPU tensor (``total = torch.tensor(0.)``, then ``total += loss``):
            # only a CPU scalar read beside CUDA tensors is exempt, never one written to.
            if cpu.kind == CPU and (not cpu.zero or module and cpu.unseen or into and cpu is a):
                self.flow.meets.append(Meet(node, cpu, placed, self.index))
            elif cpu.kind == SIBLING:
                cpu.evidence = True  # it meets a placed tensor: a tensor itself
                if not self.default_device:  # else default collate makes a batch's numbers there
                    self.pending.append((node, cpu, placed, self.index, module))

    def handed_numpys(self, call, args: list) -> None:
        """A call of a top-level function of this file that hands a placed value to a parameter the
        function reads as a NumPy array: a NumPy read of a placed tensor, at the call (flow/sinks.py)."""
        facts = self.context.__dict__.get("_flow_facts")
        callee = facts.functions.get(call.func.value) if facts is not None else None
        if callee is None or self.mute:
            return
        handed = {}
        for index, (arg, value) in enumerate(args):
            param = param_for(callee.params, arg, index)
            # An opaque answer is believed only by a ``.numpy()`` of its own (record_numpy), never by a callee's read.
            if param is not None and value is not None and value.kind == PLACED and not value.opaque:
                handed.setdefault(param, (arg, value))
        if not handed:
            return  # no placed value handed to a parameter: nothing for the function to read
        for param in numpy_params(self.context, callee, handed, _walker(self.context, callee)):
            arg, value = handed[param]
            self.flow.numpys.append(Meet(call, None, value.derived(label=arg.value), self.index))

    def record_numpy(self, node, value: Value, method: bool = False) -> None:
        """A NumPy read of ``value`` at ``node``. An opaque answer (``flow/opaque.py``) is believed placed by
        a ``.numpy()`` read alone (``method``), where the code itself treats it as a tensor."""
        if not self.mute and (method or not value.opaque):
            self.flow.numpys.append(Meet(node, None, value, self.index))
