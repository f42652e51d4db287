"""What kind of call, callee or argument the flow's call walk (``calls.Calls``) is looking at:
predicates over the syntax and the values, with no walk state."""

from __future__ import annotations

from typing import Optional

from ..._lazy import cst
from ..code import argument, code_of, last_name, string_value
from ..device_helpers import keeps_device, parameters_given
from ..still_modules import function_moves
from ..devices import is_device_name
from .values import DEVICE, INPUT, PLACED, SIBLING, Value
from .words import (
    CPU_ON_PURPOSE, IMAGE_TO_TENSOR_CLASSES, IMAGE_TO_TENSOR_FUNCTIONS, KEEPING_METHODS, PLOT_METHODS,
)


GRADIENT_FUNCTIONS = {
    "torch.autograd.grad": ((0, "outputs"), (2, "grad_outputs")),
    "torch.autograd.backward": ((0, "tensors"), (1, "grad_tensors")),
}
# CTC takes its targets and lengths on the CPU as well as on the device of the
# log-probabilities (cuDNN's CTC even requires CPU lengths): its arguments do not meet.


def image_to_tensor(call: cst.Call, qualified: str, names) -> bool:
    """``transforms.ToTensor()(image)``, ``TF.to_tensor(image)``, ``pil_to_tensor(image)``: a new
    CPU tensor made from a PIL image or an array."""
    if isinstance(call.func, cst.Call):
        qualified = names.qualify(call.func.func) or ""
        return qualified in IMAGE_TO_TENSOR_CLASSES
    return qualified in IMAGE_TO_TENSOR_FUNCTIONS


def tokenized(call: cst.Call) -> bool:
    """``tokenizer(text, return_tensors="pt")``, ``tokenizer.encode(..., return_tensors="pt")``, a
    processor's ``(images=..., return_tensors="pt")``: PyTorch tensors made on the CPU."""
    tensors = argument(call, None, "return_tensors")
    return tensors is not None and string_value(tensors.value) == "pt"


def device_check_off(call: cst.Call) -> bool:
    """``assert_close(a, b, check_device=False)``, a flag whose value is unknown, or ``**options`` that may
    carry one: no device check known."""
    if any(arg.star == "**" for arg in call.args):
        return True
    flag = argument(call, None, "check_device")
    return flag is not None and not (isinstance(flag.value, cst.Name) and flag.value.value == "True")


def keeps_zero_dim(call: cst.Call, qualified: str, values: list) -> bool:
    """``torch.clamp(norm, max=m)``: an elementwise function of one 0-dim tensor
    (its keywords are bounds, not operands) is 0-dim too."""
    positional = [arg for arg in call.args if arg.keyword is None]
    first = values[0] if values else None
    return (
        len(positional) == 1 and first is not None and first.zero
        and qualified.rpartition(".")[2] in KEEPING_METHODS
    )


def is_ctc(callee: Optional[Value]) -> bool:
    """An ``nn.CTCLoss``, moved or not."""
    return callee is not None and callee.ctc


def names_a_loss(name: str) -> bool:
    """``criterion``, ``ctc_loss``, ``self.loss_fn``: a name that says loss."""
    return "loss" in name.lower() or "criterion" in name.lower()


def ctc_shaped(call: cst.Call, callee: Optional[Value]) -> bool:
    """A CTC loss call: a CTC loss, or any loss called with four positional
    arguments (log_probs, targets, input_lengths, target_lengths): no other loss
    of torch takes four tensors."""
    return is_ctc(callee) or sum(arg.keyword is None and not arg.star for arg in call.args) == 4


def batch_helper(call: cst.Call, values: list, names) -> Optional[Value]:
    """``normalize_batch(x)`` of a loader element: a helper given one batch
    element answers where the element lives (the CPU), unless its name says it
    moves it (``to_device(x)``, ``prepare(x)``) or it is a function of this file
    whose code may move it (``flatten(x)`` returning ``to_var(x.view(-1))``)."""
    if len(values) != 1 or values[0] is None or values[0].kind != SIBLING or call.args[0].keyword is not None:
        return None
    name = (last_name(call.func) or "").lower()
    if any(word in name for word in _MOVING_HELPERS) or name.startswith("to"):
        return None
    if isinstance(call.func, cst.Name) and function_moves(names, call.func.value):
        return None
    return values[0]


_MOVING_HELPERS = ("device", "cuda", "gpu", "move", "prepare", "place", "transfer", "send", "load")


def is_numpy_array(func, names) -> bool:
    """``np.asarray`` / ``numpy.array`` (NumPy imported in this file)."""
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value in ("asarray", "array")
        and isinstance(func.value, cst.Name)
        and func.value.value in ("np", "numpy")
        and names.imports_any(("numpy",))
    )


def reads_as_array(qualified: str) -> bool:
    """A NumPy function (``np.isnan(t)``, ``np.mean(t)``, ``np.save(f, t)``) or a scikit-learn
    metric (``metrics.f1_score(y, pred)``): each reads its tensors through ``__array__``, which a
    device tensor refuses. Not ``np.float64(t)``, a ``float`` that calls ``t.item()``."""
    if qualified.startswith("numpy."):
        return qualified not in NUMPY_FLOATS and qualified not in NUMPY_TENSOR_METHODS
    return qualified.startswith("sklearn.metrics.")


def module_attribute(expr) -> bool:
    """``model.r``: an attribute that is no tensor member (``x.data``, ``x.T``, ``x.grad`` are)."""
    return isinstance(expr, cst.Attribute) and expr.attr.value not in TENSOR_ATTRIBUTES


TENSOR_ATTRIBUTES = frozenset({"data", "grad", "T", "mT", "H", "real", "imag"})
# NumPy's float64 is a Python float: it reads a one-element tensor with __float__, wherever it is; so do the
# aliases of Python's own types that NumPy kept until 1.24 (``np.float(acc)`` is ``float(acc)``).
NUMPY_FLOATS = frozenset({"numpy.float64", "numpy.double", "numpy.float_", "numpy.float", "numpy.int", "numpy.bool",
                          "numpy.complex", "numpy.long", "numpy.object", "numpy.str", "numpy.unicode"})


# NumPy functions that call the object's own method or attribute and keep what it answers (``np.squeeze(t)`` is
# ``t.squeeze()``, a tensor on its device); the others that try a method fall back to ``np.asarray`` when torch's
# signature differs (``np.transpose(t)``, ``np.argmax(t)``, ``np.clip(t, 0, 1)``), checked on torch 2.13.
NUMPY_TENSOR_METHODS = frozenset({"numpy.squeeze", "numpy.swapaxes", "numpy.nonzero", "numpy.shape", "numpy.ndim"})


def is_plot(func, qualified: str, names) -> bool:
    """``plt.plot(...)``, ``ax.imshow(...)`` (matplotlib imported in this file)."""
    if qualified.startswith("matplotlib."):
        return qualified.rpartition(".")[2] in PLOT_METHODS
    return isinstance(func, cst.Attribute) and func.attr.value in PLOT_METHODS and names.imports_any(("matplotlib",))


def on_purpose(arg: cst.Arg) -> bool:
    """``lengths`` for ``pack_padded_sequence``: kept on the CPU on purpose; ``data_info`` /
    ``file_names`` beside a model's tensors: a batch's metadata, no tensor."""
    words = [arg.keyword.value if arg.keyword is not None else "", code_of(arg.value)]
    return any(w in word.lower() for word in words for w in CPU_ON_PURPOSE)


def forced_numpy(call: cst.Call) -> bool:
    force = argument(call, 0, "force")
    return force is not None and not (isinstance(force.value, cst.Name) and force.value.value == "False")


def helper_result(names, call: cst.Call, args: list) -> Optional[Value]:
    """``reduce_mean(out, gt)`` of this file's ``def reduce_mean(a, b): return torch.abs(a - b).mean()``:
    placed when each of its returns is computed from a parameter this call gives a placed value
    (``analysis.device_helpers``); else unknown."""
    node = names.definition(call.func.value)
    returns = keeps_device(names, call.func.value)
    if not returns or any(arg.star for arg, _ in args):
        return None
    positional = sum(arg.keyword is None for arg, _ in args)
    given = parameters_given(node, positional, [arg.keyword.value for arg, _ in args if arg.keyword is not None])
    if given is None:
        return None
    placed = {param for param, (_, value) in zip(given, args)
              if value is not None and value.kind == PLACED and not value.guessed}
    if not all(used & placed for used in returns):
        return None
    param = any(value is not None and (value.param or value.kind == INPUT) for _, value in args)
    return Value(PLACED, f"{call.func.value}(...)", param=param)


def moves_its_contents(call: cst.Call, method: str, args: list) -> bool:
    """``batch.to_torch_(device)``, ``data.to(device)``, ``batch.cuda()``: a loader batch's own method
    handed a device that may be CUDA (or named CUDA): it may move what the container holds in place
    (PyG's ``Data.to``, a project's batch class)."""
    if method == "cuda":
        return True
    for arg, value in zip(call.args, args):
        if value is not None and value.kind == DEVICE:
            if not value.zero:
                return True
        elif is_device_name(arg.value):
            return True
    return False


def chosen_to_stay(arg: "cst.Arg", value: Value, args) -> bool:
    """A loader element handed to a module beside a sibling the loop moved (``x = batch["image"].to(device)``;
    ``model(x, crops=batch["crop"])``): the loop chose which elements the module gets on the device, as it keeps
    ``pack_padded_sequence``'s lengths, crop coordinates or graph offsets on the CPU. Not the labels
    (``model(ids, mask, label_ids)``, ``model(x, labels=y)``): the module computes its loss from them and its
    output, on its device (post-hoc, from recall batch 104's evaluation loop)."""
    if value.kind != SIBLING or _is_label(arg, value):
        return False
    return any(other is not None and other.kind == PLACED and other.moved_from is value.loop for _, other in args)


# The names a training loop gives the targets it hands a model that computes its own loss.
_LABEL_NAMES = frozenset({"label", "labels", "label_ids", "labels_ids", "target", "targets"})


def _is_label(arg: "cst.Arg", value: Value) -> bool:
    keyword = arg.keyword.value if arg.keyword is not None else None
    return keyword in _LABEL_NAMES or (keyword is None and value.label in _LABEL_NAMES)
