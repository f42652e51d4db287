"""TDV108: a parameter whose default device is CUDA (``def f(x, device="cuda")``, a ``cuda=True`` switch)."""

from __future__ import annotations

from pathlib import PurePath
from typing import Optional

from .._lazy import cst
from ..analysis import machines
from ..analysis.code import is_main_guard, last_name, subtree
from ..analysis.cuda_only import cuda_throughout
from ..analysis.devices import cuda_literal, device_targets, is_cuda_call, is_device_name
from ..analysis.flow.words import collective_name
from ..analysis.guards import CUDA_WORD, CudaGuards, is_cuda_flag
from ..analysis.machines import MachineEvidence
from ..analysis.sessions import is_notebook
from ..names import dotted_name
from ..rule import STATEMENT, Rule

# A function that asks for CUDA itself chooses where the default cannot be met.
_ASKS = frozenset({"torch.cuda.is_available", "torch.cuda.device_count"})
# Calls that place nothing with a device they are given: automatic mixed precision, which turns
# itself off (with a warning) without CUDA, and builtins that only look at the value.
_NOT_PLACING = frozenset({
    "autocast", "GradScaler", "get_autocast_dtype", "is_autocast_enabled", "set_autocast_enabled",
    "getattr", "hasattr", "isinstance", "str", "repr", "print", "len", "format",
})


class CudaDefaultDevice(MachineEvidence, CudaGuards, Rule):
    r"""**On by default.** Precision on held-out user code: 227 of 246 findings true or latent (92.3%) over the 631
    held-out projects of 667 with the rules of 2026-12-07, session of 04:24 (v139's first read 10 of 10, latent: a
    tracker's model files whose `device='cuda'` helpers every caller in the file hands the model's device); 210 of 229
    findings true or latent (91.7%) over the held-out
    split as this machine holds it (537 held-out projects of 573; v129's first read 1 of 1, latent, v130's 2 of 3, false
    a CUDA-only chapter's `np_to_variable`); 207 of 225 (92.0%) over the 515 held-out projects of 551 with the rules
    of 2026-12-06, session of 18:00, whose
    post-hoc change, a library file written for GPUs only (it places on CUDA itself and nowhere offers the CPU), removed
    8 false findings (BigGAN's utilities and a copy of them) and 4 latent (defaults in files that call `.cuda()`
    everywhere), and on the tune split 2 true and 1 latent; 211 of 237 (89.0%) before it on the same run; 299 of 332
    findings true or latent (90.1%) over the held-out
    batches v2-v124 with the rules of 2026-12-06, session of 10:44 (v123's first read 3 of 3 and v124's 4 of 4, all
    latent: `device="cuda"` and `cuda=True` defaults whose callers pass the device); 292 of 325 findings true or latent
    (89.8%) over the held-out batches v2-v122 with the rules of 2026-12-06, session of 09:26 (v122's first read 40 of
    40, all in one project: helpers' `device="cuda"` defaults beside notebooks and scripts that choose cuda if available
    else the CPU, some of whose calls omit the device); 252 of 285 findings true or latent (88.4%) over the held-out
    batches v2-v121 with the rules of 2026-12-06, session of 09:26 (v120's first read 4 of 8: a template's loss and
    data-module `device="cuda"` defaults beside a `--device` option, one of them never passed by its training script;
    false, a CUDA-only template's trainer defaults; v121's 1 of 1, a `cuda=True` default that its script's own call
    omits while `--cuda` is off by default); 247 of 276 findings true or latent (89.5%) over the held-out batches
    v2-v116 with the rules of 2026-12-06, session of 07:10 (v116's first read 0 of 5: a CUDA-only few-shot project's
    mixup helpers defaulting `use_cuda=True`, whose scripts move every batch with an unguarded `.cuda()` and never pass
    the switch; the switch's own branch reads as the scripts' CPU path; v113 to v115 give none); 247 of 271 (91.1%) over
    v2-v112 with the rules of 2026-12-06, session of 04:33 (v111's first read 4 of 4, latent `use_cuda=True` defaults a
    trainer overrides; v110's 0 of 1, a GPU-only benchmark's `device="cuda"`); 243 of 266 (91.4%) over v2-v109 with the
    rules of 2026-12-06, session of 02:05 (v109's first read 1 of 1; v107's 3 of 3, latent `gpu=True` defaults beside a
    switch off by default and a `device="cuda"` default beside `--device cpu`); 238 of 261 findings true or latent
    (91.2%) over the held-out batches v2-v104 (v104's first read 6 of 6, latent `use_gpu=True` defaults of loss
    libraries); 232 of 255 findings true or latent (91.0%) over the held-out batches v2-v103 with the rules of
    2026-12-06, session of 23:49 (v101's first read 1 of 1 and v102's 3 of 3: a template's `run(..., device="cuda:0")`
    its training script calls without the device it chose, and latent public defaults; v103's 0 of 1, an unused
    `use_gpu=True` default in a CUDA-only project); 224 of 246 findings true or latent (91.1%) over the held-out batches
    v2-v90 with the rules of 2026-12-04, session of 21:03 (v90's first read 4 of 4: a mixup target whose caller omits
    the `cuda` default, and three latent defaults of data helpers); 220 of 242 findings true or latent (90.9%) over the
    held-out batches v2-v88 with the rules of 2026-12-04, session of 18:37 (v88's first read 1 of 1, a replay memory's
    latent `cuda:0` defaults); 219 of 241 findings true or latent (90.9%) over the held-out batches v2-v87 with the
    rules of 2026-12-04, session of 18:37 (v87's first read 2 of 2, latent CUDA defaults of a project class and a public
    display helper); 217 of 239 findings true or latent (90.8%) over the held-out batches v2-v84 with the rules of
    2026-12-04, session of 18:37 (v84's first read 3 of 3, latent CUDA defaults of the public constructors of a vendored
    face-detection library); 201 of 223 findings true or latent (90.1%) over the held-out batches v2-v58 with the rules
    of 2026-12-03, session of 00:16 (v58's first read: 5 of 5, latent CUDA defaults of a project that falls back to the
    CPU elsewhere); 196 of 218 (89.9%) over the held-out batches v2-v55 with the rules of 2026-12-02, session of 21:29
    (v55's first read: 30 of 30, a project's `use_cuda=True` switches beside its `ngpu > 0 and
    torch.cuda.is_available()` scripts; the two false findings of a seed broadcast's CUDA default are not reported
    since); 164 of 188 (87.2%) over v2-v53 with the rules of 2026-12-02 (v53's first read: 0 of 7, a CUDA-only GAN
    project's defaults; v52's: 2 of 2; v51's: 3 of 3; v50's: 2 of 2; v45's: 5 of 5, v47's 3 of 4, v48's 25 of 27; the
    switch `__init__` stores for another method, at its first read: 7 of 8; v39's first read 2 of 2; v41's 7 of 8, the
    false one a GPU notebook, which a notebook read as a program now leaves alone; v43's 2 of 6, the false ones the
    model classes of a project whose every device is a GPU); 99 of 107 (93%) over v2-v34 with the rules of 2026-12-01 (2
    of 5 at v34's first read: a CUDA-only project's defaults); 49 of 50 (98%) over v2-v22 (none in v18, v20, v21 or
    v22); at its first reads 49 of 56 in v2-v15, 0 of 3 in v16, 1 of 1 in v17, 3 of 3 in v19 (84%). The classes of those
    false ones (`impl="cuda"`, a kernel choice; a device only compared; a CUDA-only script's defaults) are no longer
    reported (docs/precision.md). The switch on by default (`cuda=True`, from recall batch 15), over the whole corpus
    when it was added: 28 of 32 true or latent (87%; 17 of them one model zoo's selector); the 4 false ones are GPU-only
    code whose callers all pass the switch or rely on the GPU by design.

    ## What it does
    Flags the default of a function's parameter when it is a CUDA device (`"cuda"`,
    `"cuda:0"`, `torch.device("cuda")`) and the function reads the parameter: `def
    one_hot(x, num_classes, device="cuda")`, `def __call__(self, n, device="cuda")`.

    The same default spelled as a switch is flagged too: a parameter named as a GPU switch
    (`cuda`, `use_cuda`, `gpu`, `use_gpu`, ...) that defaults to `True` and that the function
    uses to turn CUDA on without asking torch whether CUDA is there: the test of an `if` (alone or
    in an `and`, also through a name or `self` attribute the function binds to it: `self.cuda =
    cuda; if self.cuda: self.model.cuda()`) whose body calls `.cuda()` or places on a literal
    CUDA device, or of a conditional expression whose true side is a CUDA device (`"cuda" if gpu
    else "cpu"`). A constructor's switch that `__init__` only stores (`self.use_gpu = use_gpu`) is
    flagged when another method of the class turns CUDA on with the stored attribute the same way
    (`if self.use_gpu: targets = targets.cuda()` in `forward`), without asking torch for CUDA and
    without placing on CUDA unconditionally itself.

    ## Why is this bad?
    The default is the device every caller gets unless it passes another, and it is one that a
    laptop, a CI runner or a CPU-only container does not have. A library function, a loss or a
    data transform written this way works on the author's GPU machine and raises at the first
    call that relies on the default anywhere else, although nothing in it needs a GPU. Where the
    device should come from is usually the input (`x.device`) or the caller.

    ## Example
    ```python
    def one_hot(labels, num_classes, device="cuda"):
        return torch.zeros(len(labels), num_classes, device=device).scatter_(1, labels.view(-1, 1), 1.0)
    ```

    ## Use instead
    ```python
    def one_hot(labels, num_classes, device=None):
        device = labels.device if device is None else device
        return torch.zeros(len(labels), num_classes, device=device).scatter_(1, labels.view(-1, 1), 1.0)
    ```

    ## Fix safety
    None: whether the device should follow an input, the caller or a configured choice is the
    author's decision, and a caller may rely on the CUDA default.

    ## When it does not report
    - a default that is not CUDA (`"cpu"`, `None`, `torch.device("cuda" if ... else "cpu")`);
    - a parameter the function never hands on as a value (an argument, an assigned or returned
      value): one it never reads, only compares (`if device == "cpu":`) or gives only as the device type
      of automatic mixed precision (`torch.autocast(device)`, `GradScaler(device)`), which turns itself
      off without CUDA, or to a builtin that only looks at it (`getattr(torch, device)`, `str(device)`);
    - a parameter neither named as a device (`device`, `dev`, `*_device`) nor used as one
      (`device=impl`, `.to(impl)`, `torch.device(impl)`): `impl="cuda"` picks an implementation;
    - a function that asks for CUDA itself (`torch.cuda.is_available()`, `torch.cuda.device_count()`
      in its body): it decides where the default cannot be met (`if use_gpu and
      torch.cuda.is_available(): x = x.cuda()`);
    - a function that hands tensors to a `torch.distributed` collective (`dist.broadcast(seed, src=0)` after
      `seed = torch.tensor(seed, device=device)`, mmdetection's `init_random_seed`): NCCL, the GPU backend,
      takes CUDA tensors only, so the CUDA default is that backend's need;
    - a switch on by default that turns nothing on in the function (stored, returned, handed on,
      negated: `if not cuda:`), and one off by default (`cuda=False`);
    - CUDA code by name or guard: a function, class or module named for CUDA or the GPU (`def to_gpu`,
      `class CUDAGraphRunner`, `gpu_utils.py`, `torch/cuda/random.py`), one defined under a CUDA test
      or skipped without CUDA, test code of a test module, a module that asserts
      `torch.cuda.is_available()`, and a script (`if __name__ == "__main__":`) or a notebook without a CPU path as
      TDV201 reads it (no `"cpu"` device or option, device fallback, `use_cuda` flag or branch on one):
      a program that never runs without a GPU, whose CUDA defaults are its own choice; likewise a file written
      for GPUs only, as TDV201 reads a library file: it places on CUDA itself somewhere (`x.cuda()`,
      `.to("cuda")`, `device="cuda"` in a call) and nowhere branches on CUDA, chooses the CPU or takes a
      device parameter without a CUDA default (BigGAN's `utils.py`, whose `device='cuda'` defaults sit beside
      `.cuda()` everywhere);
    - lambdas.

    ## The error torch raises
    At the first call that relies on the default, on a CPU-only build of torch:

    ```
    AssertionError: Torch not compiled with CUDA enabled
    ```

    On a CUDA build with no GPU visible:

    ```
    RuntimeError: No CUDA GPUs are available
    ```

    On a GPU machine the default is met, and the value it placed goes on to meet the caller's CPU
    tensors (the fixture's labels, scattered into a target made on the default device):

    ```
    RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
    ```
    """

    CODE = "TDV108"
    NAME = "cuda-default-device"
    SUMMARY = "a parameter whose default device is CUDA (`def f(x, device=\"cuda\")`, a `cuda=True` switch)"
    MESSAGE = (
        "parameter '{name}' defaults to a CUDA device, so every call that omits it fails on a machine "
        "without a GPU; default to None and follow the input (x.device) or the caller's device"
    )
    SWITCH = (
        "parameter '{name}' turns CUDA on by default, so every call that omits it fails on a machine "
        "without a GPU; default to False, or to torch.cuda.is_available()"
    )
    # In the default, or (a switch on by default) in the ``.cuda()`` or CUDA device it turns on:
    # the function's own unit either way.
    NEEDS = {"cuda"}
    # A module that asserts CUDA (``assert torch.cuda.is_available()``) is CUDA code throughout, and so
    # is a script (``if __name__ == "__main__":``) without a CPU path (TDV201's evidence).
    READS = machines.READS | {"__main__"}
    READS_SCOPE = STATEMENT

    def __init__(self, context) -> None:
        super().__init__(context)
        self._defaults: list[tuple[cst.Param, object]] = []
        self._cuda_classes = 0  # open classes named for CUDA
        self._classes: list[_ClassSwitches] = []  # per open class: its ``__init__``'s stored switches
        # A program: a script (``if __name__ == "__main__":``), or a notebook, whose cells are its only callers
        self._script = is_notebook(context.filename)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        super().visit_ClassDef(node)
        self._cuda_classes += bool(CUDA_WORD.search(node.name.value))
        self._classes.append(_ClassSwitches())

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        super().leave_ClassDef(node)
        self._cuda_classes -= bool(CUDA_WORD.search(node.name.value))
        switches = self._classes.pop().switches
        members = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
        methods = [member for member in members if isinstance(member, cst.FunctionDef)
                   and member.name.value != "__init__" and not CUDA_WORD.search(member.name.value)]
        for param, statement, attributes in switches:
            # Another method turns CUDA on with the stored switch, without asking torch for CUDA
            # itself and without needing CUDA whatever the switch says.
            if any(_turns_cuda_on(method.body, attributes, self.names)
                   and not _decides_itself(method.body, self.names) for method in methods):
                self._defaults.append((param, statement))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)  # CudaGuards: a def named for CUDA, skipped without it, a test
        if self.cuda_guarded() or self._cuda_classes or _cuda_file(self.context.filename):
            return
        params = node.params
        every = (*params.posonly_params, *params.params, *params.kwonly_params)
        switches = [param for param in every if _switch_on(param)]
        if switches:
            self._note_switches(node, switches)
        defaults = [param for param in every if param.default is not None and cuda_literal(param.default, self.names)]
        if not defaults:
            return
        handed = _handed_on(node.body, self.names)
        if handed is None:
            return  # it asks for CUDA itself
        if _communicates(node.body, self.names):
            return  # it hands tensors to torch.distributed collectives, which NCCL takes on CUDA only
        used = None
        for param in defaults:
            name = param.name.value
            if name not in handed:
                continue  # never used as a value: unread, compared, or amp's device type
            if not is_device_name(param.name):
                used = _device_uses(node.body, self.names) if used is None else used
                if name not in used:
                    continue  # ``impl="cuda"``: a choice of implementation, not a device
            self._defaults.append((param, self.context.statement))

    def _note_switches(self, node: cst.FunctionDef, switches: list) -> None:
        """``def __init__(self, model, cuda=True)`` whose body turns CUDA on with it (``if cuda:
        model.cuda()``, ``self.cuda = cuda; if self.cuda: ...``, ``"cuda" if cuda else "cpu"``)
        without asking torch whether CUDA is there: a CUDA default spelled as a switch."""
        if _decides_itself(node.body, self.names):
            return
        for param in switches:
            aliases = _aliases(node.body, param.name.value)
            if _turns_cuda_on(node.body, aliases, self.names):
                self._defaults.append((param, self.context.statement))
            elif self._classes and node.name.value == "__init__":
                # ``self.use_gpu = use_gpu`` here, ``if self.use_gpu: loc_t = loc_t.cuda()`` in
                # ``forward``: decided at the class's end, once its methods are seen
                attributes = {alias for alias in aliases if alias.startswith("self.")}
                if attributes:
                    self._classes[-1].switches.append((param, self.context.statement, attributes))

    def visit_If(self, node: cst.If) -> None:
        super().visit_If(node)
        self._script = self._script or is_main_guard(node.test)

    def visit_Call(self, node: cst.Call) -> None:
        self.note_machine_call(node)

    def leave_Module(self, node: cst.Module) -> None:
        super().leave_Module(node)
        if not self._defaults:
            return
        if self.requires_cuda or (self._script and not self.has_cpu_path) or cuda_throughout(self.names):
            # CUDA code throughout: it asserts CUDA, it is a program that never runs without it, or a file
            # that places on CUDA itself and nowhere offers the CPU (its default repeats its own choice)
            return
        for param, statement in self._defaults:
            message = self.MESSAGE if cuda_literal(param.default, self.names) else self.SWITCH
            self.report(param.default, message.format(name=param.name.value), statement=statement)


class _ClassSwitches:
    def __init__(self) -> None:
        # (parameter, statement, the ``self`` attributes ``__init__`` binds to it)
        self.switches: list[tuple] = []


def _cuda_file(filename: Optional[str]) -> bool:
    """A module named for CUDA (``cuda_utils.py``, ``torch/cuda/random.py``): CUDA code by name."""
    if not filename:
        return False
    path = PurePath(filename)
    return bool(CUDA_WORD.search(path.stem) or CUDA_WORD.search(path.parent.name))


def _handed_on(body: cst.BaseSuite, names) -> Optional[set[str]]:
    """The plain names the body hands on as values: arguments of calls (``.to(device)``,
    ``torch.zeros(3, device=device)``, ``helper(x, device)``), values of assignments
    (``self.device = device``) and returns; not a comparison (``device == "cpu"``), a receiver
    (``device.type``), a device type given to automatic mixed precision (``torch.autocast(device)``,
    ``GradScaler(device)``), which turns itself off without CUDA, nor a builtin's argument
    (``getattr(torch, device)``, ``str(device)``). None when the body asks torch
    about CUDA itself."""
    if _asks_cuda(body, names):
        return None
    values: set[int] = set()
    handed: set[str] = set()
    for node in subtree(body):
        if isinstance(node, cst.Call):
            if (last_name(node.func) or "") not in _NOT_PLACING:
                values.update(id(arg.value) for arg in node.args)
        elif isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return)) and node.value is not None:
            values.add(id(node.value))
        elif isinstance(node, cst.Name) and id(node) in values:
            handed.add(node.value)
    return handed


def _communicates(body: cst.BaseSuite, names) -> bool:
    """``dist.broadcast(seed_tensor, src=0)`` in the body: its tensors are made for a collective, and
    NCCL, the GPU backend, takes CUDA tensors only; a CUDA default is that backend's need."""
    return any(
        isinstance(node, cst.Call) and collective_name(names.qualify(node.func)) is not None
        for node in subtree(body)
    )


def _device_uses(body: cst.BaseSuite, names) -> set[str]:
    """Names the body uses as a device: ``device=<name>``, ``.to(<name>)``, ``torch.device(<name>)``."""
    used: set[str] = set()
    for node in subtree(body):
        if not isinstance(node, cst.Call):
            continue
        values = device_targets(node)
        if names.qualify(node.func) == "torch.device" and node.args:
            values.append(node.args[0].value)
        used.update(value.value for value in values if isinstance(value, cst.Name))
    return used


def _switch_on(param: cst.Param) -> bool:
    """``cuda=True``, ``use_gpu=True``: a parameter named as the code's GPU switch, on by default."""
    default = param.default
    return isinstance(default, cst.Name) and default.value == "True" and is_cuda_flag(param.name)


def _asks_cuda(body: cst.BaseSuite, names) -> bool:
    """``torch.cuda.is_available()`` / ``device_count()`` anywhere in the body: it decides for itself."""
    return any(isinstance(node, cst.Call) and names.qualify(node.func) in _ASKS for node in subtree(body))


def _decides_itself(body: cst.BaseSuite, names) -> bool:
    """A body whose switch says nothing of the machine: it asks torch for CUDA itself, or it needs CUDA
    whatever the switch says (``_places_unconditionally``). The one reading for a switch's own function and
    for the methods that test what ``__init__`` stored."""
    return _asks_cuda(body, names) or _places_unconditionally(body, names)


def _aliases(body: cst.BaseSuite, switch: str) -> set[str]:
    """The switch and the names and ``self`` attributes the body binds to it (``self.cuda = cuda``)."""
    aliases = {switch}
    for node in subtree(body):
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name) and node.value.value == switch:
            aliases.update(filter(None, (dotted_name(target.target) for target in node.targets)))
    return aliases


def _turns_cuda_on(body: cst.BaseSuite, aliases: set[str], names) -> bool:
    """A name of the switch (``_aliases``) is the test of an ``if`` whose body places on CUDA
    (``.cuda()``, a literal CUDA device), or picks the CUDA side of a conditional expression
    (``"cuda" if cuda else "cpu"``)."""
    for node in subtree(body):
        if isinstance(node, cst.If) and _tests(node.test, aliases):
            if any(_places_on_cuda(part, names) for part in subtree(node.body)):
                return True
        elif isinstance(node, cst.IfExp) and _tests(node.test, aliases) and cuda_literal(node.body, names):
            return True
    return False


def _places_unconditionally(node: cst.CSTNode, names) -> bool:
    """A ``.cuda()`` or literal CUDA placement outside every ``if`` and conditional expression
    (``samples = samples.cuda(non_blocking=True)`` at the top of the loop): CUDA code, whose
    switch only says where something else is kept."""
    if isinstance(node, (cst.If, cst.IfExp, cst.FunctionDef, cst.Lambda, cst.ClassDef)):
        return False
    if _places_on_cuda(node, names):
        return True
    return any(_places_unconditionally(child, names) for child in node.children)


def _tests(test: cst.BaseExpression, aliases: set) -> bool:
    """``if cuda:``, ``if self.cuda:``, ``if cuda and x.dim() == 4:``; not a negation."""
    while isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        if _tests(test.right, aliases):
            return True
        test = test.left
    return dotted_name(test) in aliases


def _places_on_cuda(node: cst.CSTNode, names) -> bool:
    """``x.cuda()`` (no device named), ``x.to("cuda")``, ``torch.zeros(3, device="cuda")``."""
    if not isinstance(node, cst.Call):
        return False
    if isinstance(node.func, cst.Attribute) and node.func.attr.value == "cuda":
        return is_cuda_call(node)
    return any(cuda_literal(target, names) for target in device_targets(node))
