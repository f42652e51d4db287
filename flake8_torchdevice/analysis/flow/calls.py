"""Calls: factories, moves, loads, torch functions, module calls and methods."""

from __future__ import annotations

from typing import Optional

from ..._lazy import cst
from ..code import MODULE_RETURNING_SELF, argument, code_of, is_constant, last_name, string_value
from ..device_helpers import returns_host_values
from ..layers import layer_state
from ..still_modules import moves_inputs, still_class, still_method
from ..vocabulary import CTC_FUNCTIONS, factory_name, reduces_all
from .arrays import array_rank, numpy_only
from .call_kinds import (
    GRADIENT_FUNCTIONS, batch_helper, chosen_to_stay, ctc_shaped, device_check_off, forced_numpy, helper_result,
    image_to_tensor, is_ctc, is_numpy_array, is_plot, keeps_zero_dim, module_attribute, moves_its_contents,
    names_a_loss, on_purpose, reads_as_array, tokenized,
)
from .callers import cpu_result, placed_helper_result, tuple_result
from .facts import key_of
from .methods import method_of
from .opaque import opaque_answer, opaque_result
from .values import (
    BATCH, CPU, DEVICE, FRAMEWORK, INPUT, LIST, LOSS, MOVED, NUMPY, OBJECT, PLACED, SIBLING, Meet, Value,
    appended_items, placed_result,
)
from .layers import is_cpu_layer, moved_layer
from .words import (
    ARRAY_KEEPING_METHODS, COLLECTIVES, COMBINE_FUNCS, COMBINE_METHODS, DEFAULT_DEVICE_SETTERS,
    DEVICE_CHECKED_COMPARISONS, DISTRIBUTED_PARALLEL, FRAMEWORK_CALLS, KEEPING_METHODS, SCALAR_BUILTINS,
    SCALAR_METHODS, STACKING, SUBMODULE_NAMES, TENSOR_MEMBERS, collective_name, moves_its_inputs,
)


class Calls:
    """Mixin of the flow walk (``analysis._Analysis``)."""

    def call(self, call: cst.Call, env: dict) -> Optional[Value]:
        escaped = self.escape(call, env)
        result = self._call(call, env)
        for name in escaped:
            env.pop(name, None)  # ``train(model)`` may move it
        return result

    def _call(self, call: cst.Call, env: dict) -> Optional[Value]:
        qualified = self.names.qualify(call.func) or ""
        if qualified and factory_name(self.names, call):
            return self.factory(call, qualified, env)
        if qualified == "torch.load":
            return self.load(call, env)
        if qualified == "torch.Tensor.cpu" and call.args:  # ``Tensor.cpu(x)``: the unbound method, ``x.cpu()``
            receiver = self.ev(call.args[0].value, env)
            zero = receiver.zero if receiver is not None and receiver.kind in (CPU, PLACED) else True
            return Value(CPU, call, zero=zero)
        if tokenized(call):
            for arg in call.args:
                self.ev(arg.value, env)
            return Value(CPU, call.func, factory=True)  # a tokenizer's or processor's tensors: on the CPU
        if image_to_tensor(call, qualified, self.names):
            for arg in call.args:
                self.ev(arg.value, env)
            return Value(CPU, call.func, factory=True)  # torchvision converts an image on the CPU
        if moves_its_inputs(call, qualified):
            return self.data_parallel(call, env)
        if qualified in DISTRIBUTED_PARALLEL:
            return self.distributed_wrapper(call, env)
        if layer_state(qualified) == "module" or self.library_model(call, qualified):
            return self.built_layer(call, qualified, env)
        if isinstance(call.func, cst.Name) and call.func.value not in env and still_class(self.names, call.func.value):
            return self.built_still_module(call, env)
        if qualified in DEFAULT_DEVICE_SETTERS:
            self.default_device = True  # every later factory without device= lands there
            for arg in call.args:
                self.ev(arg.value, env)
            return None
        collective = collective_name(qualified)
        if self.nccl and collective is not None:
            self.collective(call, collective, env)
            return None
        if qualified == "torch.onnx.export":
            args = [self.ev(arg.value, env) for arg in call.args]
            model = args[0] if args else None
            if model is not None and model.kind in (PLACED, MOVED) and len(call.args) > 1:
                for value in self.flat(call.args[1].value, env):
                    self.meet(call, value, model.derived(PLACED), module=True)
            return None
        if qualified == "torch.device":
            for arg in call.args:
                self.ev(arg.value, env)
            first = call.args[0].value if call.args else None
            text = string_value(first) if first is not None else None
            return Value(DEVICE, call, zero=text is not None and text.startswith("cpu"))
        if qualified.startswith("torch.") and not qualified.startswith("torch.nn.") or qualified.startswith(
            "torch.nn.functional."
        ) or qualified in STACKING:
            return self.torch_function(call, qualified, env)
        if qualified.startswith("torch.nn.") and qualified.endswith("Loss"):
            return self.built_loss(call, qualified, env)
        if is_numpy_array(call.func, self.names):
            values = [self.ev(arg.value, env) for arg in call.args]
            if values and values[0] is not None and values[0].kind == PLACED and not values[0].unpacked:
                self.record_numpy(call, values[0])  # not a module's unpacked answer: maybe a Python list
            elif values and values[0] is not None and values[0].kind == LIST and values[0].items \
                    and values[0].items[0].kind == PLACED:
                self.record_numpy(call, values[0].items[0])  # a list of placed tensors: each one converted
            return Value(NUMPY, call)
        if reads_as_array(qualified):
            values = [self.ev(arg.value, env) for arg in call.args]
            # A module's attribute (``np.int32(model.r)``) or a callable's answer may be no tensor.
            placed = [value for arg, value in zip(call.args, values) if value is not None and value.kind == PLACED
                      and not value.guessed and not module_attribute(arg.value)]
            if placed:
                self.record_numpy(call, placed[0])  # it converts its arguments with np.asarray
            array = Value(NUMPY, call)
            array.rank = array_rank(call, qualified)
            return array
        if is_plot(call.func, qualified, self.names):
            values = [self.ev(arg.value, env) for arg in call.args]
            placed = [value for value in values if value is not None and value.kind == PLACED and not value.opaque]
            if placed:
                self.record_numpy(call, placed[0])  # matplotlib reads its data with np.asarray
            return None
        if isinstance(call.func, cst.Attribute) and key_of(call.func) not in env:
            if not self.kept_callable(call.func):
                return self.method(call, call.func, env)
            callee = Value(INPUT, code_of(call.func))  # decided below as a callable parameter is
        else:
            callee = self.ev(call.func, env)
        args = [(arg, self.ev(arg.value, env)) for arg in call.args]
        if self.index is not None and isinstance(call.func, cst.Name):
            self.note_foreign_call(call, env)
        if (self.index is not None or self.top_level) and isinstance(call.func, cst.Name) and any(
            v is not None and (v.kind in (PLACED, MOVED) or is_cpu_layer(v)) for _, v in args
        ):  # a placed value, or a CPU module (``train(net, loader)`` of ``net = Net()``, the one call of it)
            self.flow.calls.append((call.func.value, args))  # ``evaluate(model, loader)`` (flow/callers.py too)
            self.handed_numpys(call, args)
        name = last_name(call.func) or ""
        if name in SCALAR_BUILTINS:
            return None
        helped = batch_helper(call, [v for _, v in args], self.names)
        if helped is not None and callee is None:
            return helped
        if callee is None and isinstance(call.func, cst.Name):
            helped = helper_result(self.names, call, args) or cpu_result(self, call.func.value) \
                or placed_helper_result(self, call.func.value) or tuple_result(self, call.func.value)
            if helped is not None:
                return helped
        if callee is None and any(value is not None and value.scatters for _, value in args):
            # ``TSN(batch_size, nn.DataParallel(net))``: a module built around a scattering wrapper hands
            # its forward's input to it, so a CPU input is scattered for it as well.
            wrapper = Value(OBJECT, call.func)
            wrapper.scatters = True
            return wrapper
        if is_cpu_layer(callee):
            return self.cpu_layer_call(call, callee, args)
        if callee is not None and callee.kind in (PLACED, MOVED):
            if is_ctc(callee) or (names_a_loss(name) and ctc_shaped(call, callee)):
                # ``criterion = nn.CTCLoss().to(device)``, or a loss of another library called with
                # CTC's four tensors (warp-ctc's ``CTCLoss().cuda()`` takes CPU labels and lengths)
                return placed_result([v for _, v in args])
            return self.module_call(call, callee, args)
        if callee is not None and callee.kind == LOSS or names_a_loss(name):
            if not ctc_shaped(call, callee):
                self.combine_all(call, [v for _, v in args])
            if callee is None and isinstance(call.func, cst.Name) and returns_host_values(self.names, name):
                return None  # ``estimate_loss(split, model)`` of this file returns ``np.mean(losses)``
            return placed_result([v for _, v in args])
        if isinstance(call.func, cst.Name) and name in getattr(self.names, "_classes", {}):
            # An instance of a class of this file: it may move what it is given, unless its code never moves.
            return Value(OBJECT, name, local=moves_inputs(self.names, name))
        if callee is not None and callee.kind in (INPUT, OBJECT):
            result = placed_result([v for _, v in args])  # a module given placed inputs answers on their device
            module = key_of(call.func)
            if result is not None and callee.kind == INPUT and module is not None and self.is_module_param(module):
                # ... and is on it: a parameter module (or one the object keeps, ``self.network.train()``) that
                # ran on a placed input is placed from here on.
                env[module] = Value(MOVED, module, param=True)
            elif result is not None:
                result.guessed = True  # any callable: maybe no tensor (``true_result_fn(x)``)
            return result
        if callee is None:
            return opaque_result(self.names, call, args)
        return None

    def collective(self, call: cst.Call, name: str, env: dict) -> None:
        """``dist.all_reduce(total)`` in a file that starts NCCL: a CPU tensor meets a
        communicator that serves CUDA tensors only (even a 0-dim one). A ``group`` may be a
        Gloo group for CPU tensors: then nothing is known."""
        tensors, group = COLLECTIVES[name]
        positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
        values = [self.ev(arg.value, env) for arg in call.args]
        if len(positional) > group or any(arg.keyword is not None and arg.keyword.value == "group"
                                          for arg in call.args):
            return
        nccl = Value(PLACED, f"the NCCL collective {name}")
        for position in tensors:
            if position < len(positional):
                value = values[call.args.index(positional[position])]
                if value is not None and value.kind == CPU and not self.mute:
                    self.flow.meets.append(Meet(call, value, nccl, self.index))

    def module_call(self, call, module: Value, args) -> Value:
        """A placed module called: each CPU argument meets it. A module of a
        class of this file may move what it gets itself, but not a loader
        element: loops move their batches."""
        placed = module.derived(PLACED, label=module.label)
        for arg, value in args:
            if value is None or on_purpose(arg) or module.scatters or chosen_to_stay(arg, value, args):
                continue
            for part in _parts(arg, value):
                if not (module.local and part.kind != SIBLING):
                    self.meet(call, part, placed, module=True)
        param = module.param or any(v is not None and (v.param or v.kind == INPUT) for _, v in args)
        result = Value(PLACED, f"{module.label}(...)", param=param)
        result.outputs = True
        return result

    def method(self, call: cst.Call, func: cst.Attribute, env: dict) -> Optional[Value]:
        receiver = self.ev(func.value, env)
        method = func.attr.value
        args = [self.ev(arg.value, env) for arg in call.args]
        if isinstance(func.value, cst.Name) and func.value.value == "self" and self.cls is not None:
            return self.own_method(call, method, args)
        if method in FRAMEWORK_CALLS and not isinstance(func.value, cst.Name) or (
            method in FRAMEWORK_CALLS and receiver is None
        ):
            return Value(FRAMEWORK, call)
        if receiver is not None and receiver.kind == BATCH:
            if isinstance(func.value, cst.Name) and moves_its_contents(call, method, args):
                # Its elements may be on the device from here on. A project's own method (``batch.to_torch_(device)``)
                # may also have moved the parts taken from it before, objects the batch shares (``src = batch.src``);
                # a container's ``.to()`` / ``.cuda()`` (PyG's ``Data.to``) rebinds its tensors: those stay behind.
                env.pop(func.value.value, None)
                if method not in ("to", "cuda"):
                    loop = receiver.loop
                    for name in [name for name, value in env.items() if value.kind == SIBLING and value.loop is loop]:
                        env.pop(name)
            return None  # batch.to(device) may move a container in place
        if method in ("to", "cuda"):
            if receiver is not None and receiver.kind == LOSS and receiver.empty:
                return receiver  # ``nn.CrossEntropyLoss().cuda()`` holds no tensor: its inputs meet wherever they are
            moved = self.move(call, receiver, method, args, env)
            root = moved_layer(func.value)
            if root is not None and is_cpu_layer(env.get(root)) and (moved is None or moved.kind != CPU):
                env.pop(root)  # ``m = net.cuda()``, ``net.eval().cuda()``: the module itself moved
            return moved
        if method == "type_as":  # the argument's type, device included: ``torch.zeros(3).type_as(x)``
            other = args[0] if args else None
            return other.derived(zero=receiver.zero if receiver is not None else True) \
                if other is not None and other.kind in (CPU, PLACED) else None
        if method == "cpu":
            if receiver is not None and receiver.kind == SIBLING:
                return None
            zero = receiver.zero if receiver is not None and receiver.kind in (CPU, PLACED) else True
            return Value(CPU, call, zero=zero)
        if method == "backward" and args and receiver is not None:  # ``out.backward(gradient)``
            self.meet(call, receiver, args[0])
            return None
        if method == "numpy":
            if receiver is not None and receiver.kind == PLACED and not forced_numpy(call) \
                    and not self.is_container(func.value):
                self.record_numpy(call, receiver, method=True)
            return Value(NUMPY, call)
        if receiver is None:
            helped = batch_helper(call, args, self.names)
            if helped is None and isinstance(func.value, cst.Name):  # ``models.support_to_scalar(out, n)``
                return opaque_result(self.names, call, list(zip(call.args, args)))
            return helped
        if receiver.kind == NUMPY and method in ARRAY_KEEPING_METHODS:
            return Value(NUMPY, call)  # ``np.fromfile(p).reshape(-1, 4)``: still an array
        if receiver.kind == LIST:
            receiver.items = appended_items(receiver.items, method, args)
            return None
        if receiver.kind == SIBLING:
            if method in TENSOR_MEMBERS:
                receiver.evidence = True
                if method in COMBINE_METHODS:
                    for value in args:
                        self.meet(call, receiver, value)
                return receiver if method in KEEPING_METHODS else None
            return None
        if receiver.kind == MOVED and method in MODULE_RETURNING_SELF:
            return receiver
        if method == "forward" and receiver.kind in (INPUT, OBJECT):  # ``model.forward(x)`` is ``model(x)``
            return placed_result(args)
        if receiver.kind in (PLACED, MOVED) and method in ("generate", "forward"):
            if numpy_only(call, args):
                # ``net.voxel_generator.generate(points)`` of a NumPy point cloud: no torch module takes
                # arrays, so this is some helper object's method, whose answer is its own (post-hoc, from
                # a held-out notebook's NumPy voxelizer kept on a placed network)
                return None
            return self.module_call(call, receiver, list(zip(call.args, args)))  # runs the model on its inputs
        if receiver.kind in (PLACED, MOVED) and not receiver.local and method in SUBMODULE_NAMES:
            return self.module_call(call, receiver, list(zip(call.args, args)))  # ``ddpm.model(x)``: a submodule
        if receiver.kind in (PLACED, MOVED) and not receiver.local and method not in TENSOR_MEMBERS \
                and still_method(self.names, method):
            return self.module_call(call, receiver, list(zip(call.args, args)))  # ``vae.decode(z)``
        if is_cpu_layer(receiver) and not receiver.loss and method not in TENSOR_MEMBERS \
                and still_method(self.names, method):
            return self.cpu_layer_call(call, receiver, list(zip(call.args, args)))  # ``net.decode(z)``
        if receiver.kind == MOVED and method not in SCALAR_METHODS:
            return opaque_answer(receiver, method)  # ``model.initial_inference(obs)``: on the model's device
        if receiver.kind not in (CPU, PLACED):
            return None
        if method in SCALAR_METHODS:
            return None
        if method in COMBINE_METHODS:
            for value in args:
                self.meet(call, receiver, value)
        if method not in KEEPING_METHODS:
            return opaque_answer(receiver, method) if receiver.kind == PLACED else None
        if reduces_all(call, method, operands=0):
            # ``x.norm()`` is 0-dim wherever it lives; its ``.cpu()`` mixes with the device legally.
            return receiver.derived(zero=True)
        return receiver

    def own_method(self, call: cst.Call, method: str, args: list) -> Optional[Value]:
        """``self.m(...)``: a method of this class. What placed values it is handed is noted
        for ``m``'s own walk; what it returns is placed when every return of ``m`` is."""
        if any(v is not None and v.kind in (PLACED, MOVED) for v in args):
            self.flow.method_calls.append((method, list(zip(call.args, args))))
            return self.returned(call, method, args)
        return None

    def kept_callable(self, func: cst.BaseExpression) -> bool:
        """``self.criterion`` / ``self.model`` in ``self.criterion(out, y)``: no method of this class
        but a callable the object keeps (a model, a loss its caller gave ``__init__``)."""
        return isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self" \
            and self.cls is not None and method_of(self.cls, func.attr.value) is None

    def torch_function(self, call: cst.Call, qualified: str, env: dict) -> Optional[Value]:
        if qualified in GRADIENT_FUNCTIONS:
            self.gradients(call, GRADIENT_FUNCTIONS[qualified], env)
            return None
        values = []
        for arg in call.args:
            if arg.keyword is not None and is_constant(arg.value):
                continue  # ``dim=1``, ``batch_first=True``: an option, no tensor
            values.extend(self.flat(arg.value, env))
        if qualified in CTC_FUNCTIONS:
            pass  # CTC takes its targets and lengths on the CPU too
        elif qualified in COMBINE_FUNCS or qualified.startswith("torch.nn.functional."):
            self.combine_all(call, values)
        elif qualified in DEVICE_CHECKED_COMPARISONS and not device_check_off(call):
            self.combine_all(call, values)
        if qualified.startswith("torch.autograd.") and qualified.endswith("Variable") and values:
            return values[0]  # Variable(x) wraps x where it lives
        if any(v is not None and v.kind == PLACED for v in values):
            result = placed_result(values)
            result.zero = keeps_zero_dim(call, qualified, values)
            return result
        cpu = [v for v in values if v is not None and v.kind == CPU]
        if cpu and len(cpu) == len(values):
            zero = all(v.zero for v in cpu) or reduces_all(call, qualified.rpartition(".")[2], operands=1)
            return Value(CPU, cpu[0].label, zero=zero and qualified not in STACKING, factory=cpu[0].factory)
        return None

    def gradients(self, call: cst.Call, where: tuple, env: dict) -> None:
        """``torch.autograd.grad(out, x, grad_outputs)`` / ``torch.autograd.backward(out,
        grad_tensors)``: each gradient must live where its output does."""
        (out_at, out_name), (grad_at, grad_name) = where
        outputs, grads = argument(call, out_at, out_name), argument(call, grad_at, grad_name)
        for arg in call.args:
            if arg is not grads and arg is not outputs:
                self.ev(arg.value, env)
        if outputs is None or grads is None:
            return
        for output, grad in zip(self.flat(outputs.value, env), self.flat(grads.value, env)):
            self.meet(call, output, grad)

    def flat(self, expr, env: dict) -> list:
        if isinstance(expr, (cst.List, cst.Tuple)):
            return [self.ev(e.value, env) for e in expr.elements]
        value = self.ev(expr, env)
        if value is not None and value.kind == LIST:
            return list(value.items) if value.items else [None]  # ``torch.cat(distances)``
        return [value]

    def combine_all(self, node, values) -> None:
        for i, a in enumerate(values):
            for b in values[i + 1:]:
                self.meet(node, a, b)


def _parts(arg: "cst.Arg", value: Value) -> list:
    """The tensors an argument hands a module: ``lstm(x, (h0, c0))``, ``detector([image])`` give
    each tensor of the tuple or list (named ``state[0]`` where the argument is a name)."""
    if value.kind != LIST:
        return [value]
    if isinstance(arg.value, cst.Name):
        return [part.derived(label=f"{arg.value.value}[{i}]") for i, part in enumerate(value.items or ())]
    return list(value.items or ())


# Where the outputs and the gradients handed with them are: (position, keyword) of each.
