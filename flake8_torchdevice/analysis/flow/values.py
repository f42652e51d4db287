"""What the device flow knows of a value, and how two paths' knowledge merges."""

from __future__ import annotations

from typing import Optional

from ..code import code_of


CPU, PLACED, MOVED, SIBLING, BATCH, LOSS, OBJECT, INPUT, FRAMEWORK, DEVICE, NUMPY, LIST, TUPLE = (
    "cpu placed moved sibling batch loss object input framework device numpy list tuple".split()
)


class Value:
    __slots__ = (
        "kind", "_label", "zero", "unseen", "layer", "factory", "param", "local", "loop", "evidence", "ctc", "spread",
        "items", "guessed", "rank", "scatters", "loss", "empty", "outputs", "unpacked", "moved_from", "opaque", "parts",
    )

    def __init__(self, kind, label="", zero=False, factory=False, param=False, local=False, loop=None):
        self.kind = kind
        self._label = label  # text, or the node whose code it is (generated when read: few are)
        self.zero = zero  # maybe 0-dim: mixes with any device legally
        self.unseen = False  # 0-dim only because its data's shape is unseen (torch.tensor(tokens))
        self.layer = False  # a torch.nn layer this scope built on the CPU (flow/layers.py)
        self.factory = factory  # a CPU factory result (TDV502's domain when it meets an input)
        self.param = param  # derived from a function parameter
        self.local = local  # a module of a class defined in this file (its forward may move inputs)
        self.loop = loop  # the loader loop of a SIBLING / BATCH
        self.evidence = False  # a SIBLING used as a tensor
        self.ctc = False  # a CTC loss: its targets and lengths may stay on the CPU
        self.spread = False  # a batch a framework placed: each element it unpacks into is placed too
        self.items: Optional[list] = None  # a LIST's appended values while all are placed (None: unknown)
        # The result of calling something not shown to be a module (a parameter, an object) with placed
        # values: on their device if it is a tensor, but maybe no tensor at all (a metric's NumPy value).
        self.guessed = False
        # The answer of an imported function handed a placed tensor, or of a method the flow does not read
        # (``flow/opaque.py``: 0, or which of the two): placed only for a ``.numpy()`` read, where the code
        # itself treats it as a tensor.
        self.opaque = 0
        self.rank: Optional[int] = None  # a NUMPY array's number of dimensions, where its shape is written out
        self.scatters = False  # a module wrapped in ``nn.DataParallel``: it moves a forward's inputs to its devices
        self.loss = False  # a CPU layer that is a loss given a CPU class weight (flow/layers.py)
        self.empty = False  # a LOSS built from literals: it holds no tensor, so a move leaves it where it is
        self.outputs = False  # a placed module's answer (flow/calls.py ``module_call``)
        # An element unpacked from one: on the module's device if it is a tensor, but maybe none (``ner_out, decoded,
        # loss = model(x)`` with ``decoded`` a CRF's Python lists), so ``np.array`` of it says nothing.
        self.unpacked = False
        self.moved_from: Optional["Loop"] = None  # a loader element moved to a device: the loop it came from
        self.parts: Optional[list] = None  # a TUPLE's values, one per position (``flow/callers.tuple_result``)

    @property
    def label(self) -> str:
        if not isinstance(self._label, str):
            self._label = code_of(self._label)
        return self._label

    def derived(self, kind=None, label=None, zero=None):
        copy = Value(kind or self.kind, self._label if label is None else label,
                     self.zero if zero is None else zero, self.factory, self.param, self.local, self.loop)
        copy.evidence = self.evidence
        copy.unseen = self.unseen and copy.zero
        copy.layer = self.layer and copy.kind == CPU
        copy.loss = self.loss and copy.layer
        copy.empty = self.empty and copy.kind == LOSS
        copy.ctc = self.ctc
        copy.spread = self.spread
        copy.guessed = self.guessed
        copy.opaque = self.opaque
        copy.scatters = self.scatters
        copy.outputs = self.outputs
        copy.unpacked = self.unpacked
        copy.moved_from = self.moved_from
        return copy


BOUND = Value("bound")  # a local name bound to something unknown (not a free name)


class Loop:
    __slots__ = ("moved", "elements", "stored", "unshown")

    def __init__(self, unshown: bool = False) -> None:
        # Its loader is one this file does not show being built (a parameter, an attribute, a loader
        # class of the project's own): only a moved element shows that its batches are on the CPU.
        self.unshown = unshown
        self.moved: list = []  # labels of elements moved with .to / .cuda
        self.elements: dict = {}  # label -> Value, to share tensor evidence
        # A batch's keys a store rebound (``batch["x"] = batch["x"].to(device)``): label -> the
        # value stored (None: unknown); ``ANY_KEY`` once a computed key rebinds them all
        # (``for k, v in batch.items(): batch[k] = to_var(v)``).
        self.stored: dict = {}


ANY_KEY = "*"


class Meet:
    __slots__ = ("node", "cpu", "placed", "statement")

    def __init__(self, node, cpu: Optional[Value], placed: Value, statement: Optional[int] = None) -> None:
        self.node, self.cpu, self.placed, self.statement = node, cpu, placed, statement


class Flow:
    """What one scope proves: the meetings found in it."""

    __slots__ = ("meets", "siblings", "numpys", "env", "default_device", "calls", "foreign_calls", "shown_calls",
                 "method_calls", "returns", "return_parts", "branches")

    def __init__(self) -> None:
        self.meets: list = []  # Meet: a CPU value and a placed value (TDV601)
        self.siblings: list = []  # Meet: a loader element left behind (TDV602)
        self.numpys: list = []  # Meet(node, None, placed): NumPy of a placed tensor (TDV603)
        self.env: dict = {}  # name -> Value at the scope's end (the facts other scopes read)
        self.default_device = False  # the scope called ``torch.set_default_device(...)`` or the like
        self.calls: list = []  # (name, [(Arg, Value)]): module code's calls of plain names given a placed value
        # (name, [(index, Arg)]): module code's calls of plain names given a loader another module built
        self.foreign_calls: list = []
        self.shown_calls: list = []  # the same, given a loader module code builds with torch's ``DataLoader``
        self.method_calls: list = []  # (name, [(Arg, Value)]): ``self.name(...)`` calls given a placed value
        self.returns: list = []  # the Value (or None) of each ``return``
        self.return_parts: list = []  # for each ``return``, its tuple's Values (``return x, y``), or None
        self.branches: dict = {}  # in ``__init__``: flag test -> ``flags.branch_fact`` of its ``if``


def same(a: Optional[Value], b: Optional[Value]) -> bool:
    if a is None or b is None or a.kind != b.kind:
        return False
    if a.kind in (CPU, DEVICE):
        return a.zero == b.zero
    if a.kind == LIST:
        return a is b
    return a.loop is b.loop and a.local == b.local and a.scatters == b.scatters


def either(a: Optional[Value], b: Optional[Value]) -> Optional[Value]:
    """The value of ``a if c else b``: what both agree on, or the placed one;
    a device that is CUDA on either side may be CUDA."""
    if same(a, b):
        return a
    for one, other in ((a, b), (b, a)):
        if one is not None and one.kind in (PLACED, MOVED):
            return one
        if one is not None and other is not None and one.kind == DEVICE == other.kind and not one.zero:
            return one
    return None


def merge(a: dict, b: dict) -> dict:
    """What two paths agree on; a value placed on either path is placed (it
    may be CUDA: on a GPU machine that path runs and crashes where it meets a
    CPU value)."""
    merged = {name: value for name, value in a.items() if name in b and (value is b[name] or same(value, b[name]))}
    for one, other in ((a, b), (b, a)):
        for name, value in one.items():
            if name not in merged and value.kind in (PLACED, MOVED):
                rival = other.get(name)
                if value.scatters and rival is not None and rival.kind in (PLACED, MOVED) and not rival.scatters:
                    continue  # the path without the wrapper (one GPU, ``if n_gpu > 1:``) meets CPU inputs
                merged[name] = value
    return merged


def combined(left: Optional[Value], right: Optional[Value]) -> Optional[Value]:
    """The result of an out-of-place op of two operands."""
    values = [left, right]
    placed = [v for v in values if v is not None and v.kind == PLACED]
    if placed:
        return placed_result(values)
    if left is not None and right is not None and left.kind == CPU and right.kind == CPU:
        return left.derived(zero=left.zero and right.zero)
    return None


def placed_result(values) -> Optional[Value]:
    placed = [v for v in values if v is not None and v.kind == PLACED]
    if not placed:
        return None
    param = any(v is not None and (v.param or v.kind == INPUT) for v in values)
    result = Value(PLACED, placed[0].label, param=param)
    if all(v.opaque for v in placed):  # still only a guessed answer (flow/opaque.py)
        result.opaque = max(v.opaque for v in placed)
        result.guessed = True
    return result


def appended_items(items: Optional[list], method: str, args: list) -> Optional[list]:
    """A LIST's items after ``.<method>(*args)``: followed while only placed tensors (or tuples of them,
    ``items.append((x.to(device), y.to(device)))``, a dataset built sample by sample) are appended."""
    value = args[0] if method == "append" and len(args) == 1 else None
    if items is None or value is None:
        return None
    if value.kind == PLACED:
        return items + [value]
    # A tuple or list of placed tensors, each shown to be one: not a module's unpacked answer, which may be a
    # dict of Python numbers (``loss, msg = criterion(...)``, then ``row.append(msg[key])``).
    if value.kind == LIST and value.items and all(_tensor(item) for item in value.items):
        return items + value.items
    return None


def _tensor(value: Value) -> bool:
    return value.kind == PLACED and not value.unpacked and not value.guessed and not value.opaque
