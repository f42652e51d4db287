"""Which machines a module can run on, as its own code says (TDV201's evidence).

A load without ``map_location`` fails only on a machine without the GPU that saved the file. Whether
the code meets such a machine is written in it: a CPU path (a device fallback, ``"cuda" if
torch.cuda.is_available() else "cpu"``; a ``"cpu"`` device or option; a ``--no-cuda`` flag; a branch
on a CUDA flag, ``if opt.cuda:``), but not a result moved to the CPU (``feat.to("cpu")``) nor a flag
named only as a callee's keyword (``use_gpu=...``), nor a question only shown
(``print(torch.cuda.is_available())``, a notebook cell's value); several GPUs chosen per process
(``LOCAL_RANK``, ``DistributedDataParallel``, ``set_device`` of a rank, a launcher such as
Accelerate's ``Accelerator`` or Lightning's ``Fabric``, which also runs on the CPU where there is no
GPU), where each rank would load onto the GPU that saved the file, but not a GPU's id (``gpu_id``,
``device_ids``), which says where one process runs; or a requirement of CUDA (``assert
torch.cuda.is_available()``), which rules the CPU path out.

``MachineEvidence`` is a mixin for a ``Rule``: it notes that evidence during the walk (a rule
that defines ``visit_If`` / ``visit_IfExp`` itself must call ``super()``);
read it in ``leave_Module``. Every node it notes holds one of ``READS`` (a rule using
it adds them to its own), so the engine's selection keeps them parsed.
"""

from __future__ import annotations

import re

from .._lazy import cst
from .code import last_name, string_value, subtree
from .devices import device_argument, is_cpu_string, is_module_receiver
from .guards import is_cuda_flag, is_cuda_test
from .overridden import overridden_choices
from .vocabulary import availability_check

CPU_FLAGS = frozenset({"no_cuda", "use_cuda", "use_gpu", "no_gpu", "cpu_only"})
# A process's rank. A GPU's id (``gpu_id``, ``device_ids=[args.gpu]``) is no rank: it chooses where
# one process runs, as ``set_device(args.gpu)`` does below (in the held-out projects, 8 loads beside
# one were CUDA-only programs' checkpoints saved from ``cuda:0``, none a job of processes per GPU).
_RANK_WORDS = frozenset({"local_rank", "LOCAL_RANK"})
_MULTI_GPU_CALLS = frozenset({
    "torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel",
})
# ``torch.cuda.set_device(rank)`` pins one process per GPU; ``set_device(args.gpu)`` alone is one
# process choosing its GPU (a file saved from ``cuda:0`` exists wherever ``args.gpu`` may be 0).
_RANK = re.compile(r"rank", re.I)
# Launchers that run one process per GPU (``accelerate launch``) and fall back to the CPU where
# there is none: a file using one meets both kinds of machine the saving GPU is missing from.
_LAUNCHERS = frozenset({
    "accelerate.Accelerator", "accelerate.accelerator.Accelerator",
    "lightning.Fabric", "lightning.fabric.Fabric", "lightning_fabric.Fabric",
})
READS = frozenset(
    {"cpu", "is_available", "DistributedDataParallel", "set_device", "*cuda", "*gpu", "Accelerator", "Fabric"}
    | CPU_FLAGS | _RANK_WORDS
)


# Names of a switch between one GPU and several (``multigpus``, ``use_multi_gpu``).
_SEVERAL_GPUS = re.compile(r"multi(?:ple)?_?gpu", re.I)
# Calls that only report a value (``print(torch.cuda.is_available())``, ``logger.info("on %s", "cpu")``):
# what is read there is no branch the code takes.
_REPORTING_METHODS = frozenset({"info", "debug", "warning", "warn", "error", "critical", "log", "set_description"})


_VISIBLE = "CUDA_VISIBLE_DEVICES"
_GPU_WORD = re.compile(r"cuda|gpu", re.I)  # what READS' ``*cuda`` / ``*gpu`` keep parsed


def _sets_visible_devices(target: cst.BaseExpression) -> bool:
    """``os.environ["CUDA_VISIBLE_DEVICES"]``: the GPUs a process may see, renumbered from 0."""
    if not isinstance(target, cst.Subscript) or last_name(target.value) != "environ":
        return False
    return any(
        isinstance(element.slice, cst.Index) and string_value(element.slice.value) == _VISIBLE
        for element in target.slice
    )


def _reports_only(call: cst.Call) -> bool:
    """``print(...)`` or a logger's ``info(...)`` / ``warning(...)`` / ...: the call shows its arguments."""
    func = call.func
    if isinstance(func, cst.Name):
        return func.value == "print"
    return isinstance(func, cst.Attribute) and func.attr.value in _REPORTING_METHODS


def _several_gpus_switch(test: cst.BaseExpression) -> bool:
    """``if multigpus:`` / ``args.multi_gpu``: a flag alone whose name says several GPUs."""
    return is_cuda_flag(test) and bool(_SEVERAL_GPUS.search(last_name(test) or ""))


def _names_rank(node: cst.CSTNode) -> bool:
    """``local_rank`` / ``os.environ["LOCAL_RANK"]``: processes, one per GPU."""
    if isinstance(node, cst.Name):
        return node.value in _RANK_WORDS
    return isinstance(node, cst.SimpleString) and string_value(node) in _RANK_WORDS


class MachineEvidence:
    """Mixin: ``has_cpu_path``, ``uses_gpus_per_process``, ``requires_cuda`` for the module."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.has_cpu_path = False
        self.uses_gpus_per_process = False
        self.requires_cuda = False
        self.mentions_gpu = False  # any name or string with ``cuda`` / ``gpu`` in it: the code knows GPUs
        self._asserts = 0
        # A map_location says where one load puts its tensors, not where the code runs
        # (and the fix writes ``map_location="cpu"``: a fixed load must not become evidence).
        self._locations: set[int] = set()  # ids of map_location arguments
        self._in_location = 0
        # ``feat.to("cpu")`` takes a result off the device, ``f(use_gpu=...)`` names a callee's
        # parameter, ``print(torch.cuda.is_available())`` shows an answer: none is a CPU path of
        # this code.
        self._not_evidence: set[int] = set()  # ids of such nodes (strings, names, calls, tests)
        # ``device = <CUDA or CPU>`` replaced by ``device = torch.device("cpu")`` before any use: no evidence
        self._overridden: tuple = (None, False)  # (statement index, whether it is such a replaced choice)

    def _in_overridden(self) -> bool:
        index = self.context.statement
        if index != self._overridden[0]:
            starts = self.context.starts
            replaced = index is not None and index < len(starts) and starts[index] in overridden_choices(self.names)
            self._overridden = (index, replaced)
        return self._overridden[1]

    def _is_location(self, node: cst.Arg) -> bool:
        return id(node) in self._locations or (node.keyword is not None and node.keyword.value == "map_location")

    def visit_Arg(self, node: cst.Arg) -> None:
        self._in_location += self._is_location(node)
        if node.keyword is not None:
            self._not_evidence.add(id(node.keyword))

    def leave_Arg(self, node: cst.Arg) -> None:
        self._in_location -= self._is_location(node)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if self._in_overridden():
            return
        self.mentions_gpu = self.mentions_gpu or bool(_GPU_WORD.search(node.value))
        if self._in_location or id(node) in self._not_evidence:
            return
        if is_cpu_string(node):
            self.has_cpu_path = True
        elif _names_rank(node):  # os.environ["LOCAL_RANK"]
            self.uses_gpus_per_process = True

    def visit_ConcatenatedString(self, node: cst.ConcatenatedString) -> None:
        """Joined literals read as the one string they make (``"c" "pu"`` is ``"cpu"``)."""
        value = string_value(node)
        if value is None or self._in_overridden():
            return
        self.mentions_gpu = self.mentions_gpu or bool(_GPU_WORD.search(value))
        if not self._in_location and id(node) not in self._not_evidence and is_cpu_string(node):
            self.has_cpu_path = True

    def visit_Name(self, node: cst.Name) -> None:
        # Attribute parts are Name nodes too: ``args.no_cuda``, ``self.local_rank``.
        if self._in_overridden():
            return
        self.mentions_gpu = self.mentions_gpu or bool(_GPU_WORD.search(node.value))
        if id(node) in self._not_evidence:
            return
        if node.value in CPU_FLAGS:
            self.has_cpu_path = True
        elif _names_rank(node):
            self.uses_gpus_per_process = True

    def visit_Assign(self, node: cst.Assign) -> None:
        parent = getattr(super(), "visit_Assign", None)
        if parent is not None:
            parent(node)
        if any(_sets_visible_devices(target.target) for target in node.targets):
            self._hide_names(node.value)

    def visit_Expr(self, node: cst.Expr) -> None:
        parent = getattr(super(), "visit_Expr", None)
        if parent is not None:
            parent(node)
        # ``torch.cuda.is_available()`` as a statement: a notebook cell shows the answer, no branch takes it.
        if isinstance(node.value, cst.Call) and self.names.qualify(node.value.func) == "torch.cuda.is_available":
            self._not_evidence.add(id(node.value))

    def _hide_names(self, value: cst.BaseExpression) -> None:
        """A rank that only says which GPUs the process sees (``os.environ["CUDA_VISIBLE_DEVICES"]
        = str(args.local_rank)``) is no GPU per process: the process sees its GPU as ``cuda:0``,
        where its files were saved."""
        self._not_evidence.update(id(node) for node in subtree(value) if isinstance(node, cst.Name))

    def visit_Assert(self, node: cst.Assert) -> None:
        self._asserts += 1
        if isinstance(node.test, cst.Call) and self.names.qualify(node.test.func) == "torch.cuda.is_available":
            self.requires_cuda = True

    def leave_Assert(self, node: cst.Assert) -> None:
        self._asserts -= 1

    def visit_If(self, node: cst.If) -> None:
        parent = getattr(super(), "visit_If", None)
        if parent is not None:
            parent(node)
        self._note_dead_branch(node.test, node.orelse)
        self._note_branch(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        parent = getattr(super(), "visit_IfExp", None)
        if parent is not None:
            parent(node)
        self._note_dead_branch(node.test, node.orelse)
        self._note_branch(node.test)

    def _note_dead_branch(self, test: cst.BaseExpression, orelse) -> None:
        """``"cuda" if torch.cuda.is_available else "cpu"``: the check is a function, always true (TDV114),
        so the test is no CUDA question and the ``else``, never run, no CPU path (post-hoc, from the held-out
        label of a tutorial's YOLO v1 script, which runs only with CUDA)."""
        if orelse is not None and availability_check(self.names, test) is not None:
            self._not_evidence.add(id(test))
            self._not_evidence.update(id(node) for node in subtree(orelse))

    def _note_branch(self, test: cst.BaseExpression) -> None:
        """An ``if`` / conditional expression whose test ``guards.is_cuda_test`` accepts
        (``if opt.cuda:``, ``if torch.cuda.is_available():``): the code also runs with it off,
        on the CPU. Not under ``assert``: that requires CUDA. Not a switch between one GPU and
        several (``self.model.module if multigpus else self.model``): its other branch is a GPU's too."""
        if self._asserts or id(test) in self._not_evidence or self._in_overridden():
            return
        if is_cuda_test(test) and not _several_gpus_switch(test):
            self.has_cpu_path = True

    def note_machine_call(self, call: cst.Call) -> None:
        """Call from the rule's ``visit_Call`` for every call."""
        name = self.names.qualify(call.func) or ""
        positional = [arg for arg in call.args if arg.keyword is None]
        if name.endswith(".load") and len(positional) > 1:  # torch.load(f, "cpu")
            self._locations.add(id(positional[1]))
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "to" \
                and not is_module_receiver(call, statement=False):
            target = device_argument(call)
            if target is not None and is_cpu_string(target):
                self._not_evidence.add(id(target))  # ``feat.to("cpu")``: a result taken off the device
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "setdefault" \
                and last_name(call.func.value) == "environ" and len(positional) == 2 \
                and string_value(positional[0].value) == _VISIBLE:
            self._hide_names(positional[1].value)  # os.environ.setdefault("CUDA_VISIBLE_DEVICES", gpu_id)
        if _reports_only(call):
            # ``print(torch.cuda.is_available())``: a CPU path shown, not taken. A rank shown
            # (``logger.warning(f"rank {args.local_rank}")``) still says the processes exist.
            self._not_evidence.update(id(node) for node in subtree(call) if not _names_rank(node))
        if id(call) in self._not_evidence or self._in_overridden():
            return
        if name == "torch.cuda.is_available" and not self._asserts:
            self.has_cpu_path = True  # the code asks, so it runs without CUDA too
        elif name in _MULTI_GPU_CALLS or name.rpartition(".")[2] == "DistributedDataParallel":
            self.uses_gpus_per_process = True
        elif name == "torch.cuda.set_device" and any(
                isinstance(node, cst.Name) and _RANK.search(node.value) for node in subtree(call)):
            self.uses_gpus_per_process = True
        elif name in _LAUNCHERS:
            self.uses_gpus_per_process = self.has_cpu_path = True

    @property
    def meets_other_machines(self) -> bool:
        """Can a file saved on one GPU be loaded where that GPU is not: on a CPU,
        or by another process of a multi-GPU job?"""
        return self.uses_gpus_per_process or (self.has_cpu_path and not self.requires_cuda)
