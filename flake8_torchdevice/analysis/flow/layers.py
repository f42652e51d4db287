"""Layers a function builds: ``nn.Linear(4, 2)`` holds its weights on the CPU until the code
moves it, so a placed tensor given to it meets CPU weights.

So does a module of a same-file class whose code names no move nor device (``Net()``, where
``class Net(nn.Module)`` builds ``nn.Linear`` layers; ``still_modules``). Only what the function
itself proves counts. A layer made elsewhere (``__init__``, module code)
follows its owner's ``.to()``, so no layer fact crosses scopes, except a module-level one that
no code of the file moves (``flow/untouched.py``); one handed to another call
(``train(model)``, ``trainer.fit(model)``) or bound to a second name (``self.model = model``)
may be moved there, so it is unknown from then on.
"""

from __future__ import annotations

from typing import Optional

from ..._lazy import cst
from ...names import dotted_name
from ..code import argument, call_keywords, module_chain_root, subtree
from ..layers import hf_model_class, holds_no_tensor, layer_state, torchvision_builder
from ..project_models import project_model
from .values import CPU, LOSS, MOVED, OBJECT, PLACED, Value, placed_result
from .words import LOOKING_BUILTINS, LOOKING_METHODS

CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict"})
# Losses whose first parameter is the class weight (``nn.CrossEntropyLoss(w)``); others take it by keyword.
WEIGHT_FIRST = frozenset({"CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "MultiLabelSoftMarginLoss"})


class Layers:
    """Mixin of the flow walk (``analysis._Analysis``)."""

    def built_layer(self, call: "cst.Call", qualified: str, env: dict) -> Optional[Value]:
        """``nn.Linear(4, 2)`` (a CPU layer), ``nn.Linear(4, 2, device=d)`` (where ``d`` is), or
        None: a default device set, a container of what is not known to be CPU layers."""
        values = [self.ev(arg.value, env) for arg in call.args]
        device = argument(call, None, "device")
        if device is not None:
            where = self.device_argument(call, device, values, env)
            return Value(PLACED, call.func) if where == PLACED else cpu_layer(call) if where == CPU else None
        if self.default_device:
            return None  # built on the default device the code set
        if qualified.rpartition(".")[2] in CONTAINERS:
            parts = [(arg, value) for arg, value in zip(call.args, values) if not self._stateless(arg)]
            if not parts or any(arg.star or not is_cpu_layer(value) for arg, value in parts):
                return None
        return cpu_layer(call)

    def library_model(self, call: "cst.Call", qualified: str) -> bool:
        """A model torchvision or Hugging Face transformers builds on the CPU (``analysis/layers.py``);
        the keywords are read only for a call named like one."""
        if qualified.startswith("torchvision.models."):
            return torchvision_builder(qualified, call_keywords(call))
        hf_names = self.names.hf_names
        func = call.func
        if not hf_names or not (isinstance(func, cst.Attribute) and func.attr.value == "from_pretrained"):
            return False
        return hf_model_class(dotted_name(func) or "", hf_names, call_keywords(call))

    def built_loss(self, call: "cst.Call", qualified: str, env: dict) -> Value:
        """A loss module. ``nn.CrossEntropyLoss(weight=w)``, ``nn.BCEWithLogitsLoss(pos_weight=w)``
        keep ``w`` as a buffer: with ``w`` a CPU tensor of one dimension or more, the loss is a CPU
        layer, as ``nn.Linear`` is, until the code moves it (a 0-dim weight mixes with any device)."""
        name = qualified.rpartition(".")[2]
        weights = {id(arg) for arg in (argument(call, 0 if name in WEIGHT_FIRST else None, "weight"),
                                       argument(call, None, "pos_weight")) if arg is not None}
        cpu_weight = False
        for arg in call.args:
            value = self.ev(arg.value, env)
            if id(arg) in weights and value is not None and value.kind == CPU and not value.zero and not value.layer:
                cpu_weight = True
        if cpu_weight and not self.default_device:
            loss = cpu_layer(call)
            loss.loss = True
            return loss
        loss = Value(LOSS, call.func)
        loss.ctc = name == "CTCLoss"
        loss.empty = holds_no_tensor(qualified, call.args)
        return loss

    def built_still_module(self, call: "cst.Call", env: dict) -> Optional[Value]:
        """``Net()`` of a same-file module class whose code names no move nor device: its
        weights are on the CPU, as ``nn.Linear``'s, until the code moves it."""
        for arg in call.args:
            self.ev(arg.value, env)
        return None if self.default_device else cpu_layer(call)

    def project_model(self, node: "cst.Assign", env: dict, wrapped: bool = False) -> bool:
        """``net = vgg16_bn()`` of a constructor imported from the project's own package, for a name the file
        reads as a module with weights (``analysis/project_models.py``): built on the CPU, as ``Net()`` of a
        still class of the file is, until the code moves it; not where the code set a default device, nor one
        given a module or tensor the walk knows (``ModelMeta(model=model)``: a wrapper runs where that is).
        ``wrapped``: the model ``nn.DataParallel`` is given in the call."""
        targets, value = node.targets, node.value
        if wrapped:  # ``nn.DataParallel(vgg16_bn())``: the model it wraps
            value = value.args[0].value if isinstance(value, cst.Call) and value.args else None
        if self.default_device or len(targets) != 1 or not isinstance(targets[0].target, cst.Name) or \
                not isinstance(value, cst.Call):
            return False
        if not project_model(self.names, value, targets[0].target.value, self.context.source):
            return False  # first: its gate is a cached scan of the text, this walk of the arguments is not
        return not any(isinstance(node, cst.Name) and _holds_a_module(env.get(node.value))
                       for arg in value.args for node in subtree(arg.value))  # also in a call: ``W(torch.compile(m))``

    def _stateless(self, arg: "cst.Arg") -> bool:
        """``nn.ReLU()`` in a container: a torch.nn layer that holds no state."""
        value = arg.value
        return isinstance(value, cst.Call) and layer_state(self.names.qualify(value.func) or "") == "free"

    def cpu_layer_call(self, call: "cst.Call", layer: Value, args) -> Optional[Value]:
        """A CPU layer called: each placed argument meets its weights (and, a loss's, each other)."""
        for arg, value in args:
            if value is not None and value.kind == PLACED and not arg.keyword:
                self.meet(call, layer, value)
        if layer.loss:
            self.combine_all(call, [value for _, value in args])
            return placed_result([value for _, value in args])
        if args and all(value is not None and value.kind == CPU for _, value in args):
            return Value(CPU, f"{layer.label}(...)")
        return None

    def data_parallel(self, call: "cst.Call", env: dict) -> Value:
        """``nn.DataParallel(model)``: the module it wraps, which scatters what it is given to its
        devices before each forward: a CPU input, a loader element left behind included, is no
        mistake there."""
        values = [self.ev(arg.value, env) for arg in call.args]
        inner = values[0] if values else None
        # A placed module stays placed, and a CPU one built in the call stays on the CPU (the wrapper's forward
        # wants it on ``device_ids[0]``; without GPUs it is the module itself); any other is only known to be a
        # module: it shares the wrapped module's parameters, which an in-place ``model.to(device)`` moves later
        # (``statements.small`` keeps ``model = nn.DataParallel(model)``, where no other name holds the module).
        built = is_cpu_layer(inner) and bool(call.args) and isinstance(call.args[0].value, cst.Call)
        wrapper = inner.derived() if inner is not None and inner.kind == PLACED or built else Value(OBJECT, call.func)
        wrapper.scatters = True
        return wrapper

    def distributed_wrapper(self, call: "cst.Call", env: dict) -> Optional[Value]:
        """``DistributedDataParallel(model)`` without ``device_ids``: its forward hands the module what it is
        given, unmoved (torch moves inputs only to ``device_ids[0]``), so the wrapper is called as the module
        is: a placed one meets a CPU input, and a module of a class of this file that moves its inputs
        itself (``x.to(self.dev0)`` in a model-parallel ``forward``) takes a loader's CPU batch (post-hoc,
        from v134's first read). Any other module is unknown, as before, and so is a wrapper given ``**options``,
        which may carry ``device_ids``."""
        values = [self.ev(arg.value, env) for arg in call.args]
        if any(arg.star for arg in call.args):
            return None
        inner = values[0] if values and call.args[0].keyword is None else None
        if inner is not None and (inner.kind == PLACED or inner.kind == OBJECT and inner.local):
            return inner.derived()
        return None

    def escape(self, call: "cst.Call", env: dict) -> list:
        """The CPU layers ``call`` is handed (``train(model)``): another function may move them (not a builtin
        that only looks at them, ``print(model)``, ``writer.add_graph(model, x)``)."""
        func = call.func
        if isinstance(func, cst.Name) and func.value in LOOKING_BUILTINS or \
                isinstance(func, cst.Attribute) and func.attr.value in LOOKING_METHODS:
            return []
        return [
            arg.value.value for arg in call.args
            if isinstance(arg.value, cst.Name) and is_cpu_layer(env.get(arg.value.value))
        ]


def _holds_a_module(value: Optional[Value]) -> bool:
    """A placed or moved value, or a module the walk knows of (a CPU layer, an object): what a wrapper runs on."""
    return value is not None and (value.kind in (PLACED, MOVED, OBJECT) or is_cpu_layer(value))


def is_cpu_layer(value: Optional[Value]) -> bool:
    return value is not None and value.kind == CPU and value.layer


def cpu_layer(call: "cst.Call") -> Value:
    value = Value(CPU, call.func)
    value.layer = True
    return value


def moved_layer(receiver: "cst.BaseExpression") -> Optional[str]:
    """The name whose module a ``.to()`` / ``.cuda()`` of ``receiver`` moves in place: ``net`` of
    ``net.cuda()`` and of ``net.eval().cuda()`` (through methods that return the module)."""
    receiver = module_chain_root(receiver)
    return receiver.value if isinstance(receiver, cst.Name) else None
