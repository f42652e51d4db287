"""Which ``torch.nn`` classes hold state (parameters or buffers) once built.

Measured on torch 2.13: a layer not listed here (activations, dropout,
pooling, padding, losses, ``Flatten``, ``Upsample``, ``Identity``) holds
nothing, so leaving it unregistered loses nothing on ``.to(device)``.
Containers count as stateful: they hold whatever layers they are given.
"""

from __future__ import annotations

from .._lazy import cst
from .code import is_constant

STATEFUL_LAYERS = frozenset(
    """Linear Bilinear LazyLinear Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d
    ConvTranspose3d LazyConv1d LazyConv2d LazyConv3d LazyConvTranspose1d LazyConvTranspose2d
    LazyConvTranspose3d BatchNorm1d BatchNorm2d BatchNorm3d LazyBatchNorm1d LazyBatchNorm2d
    LazyBatchNorm3d SyncBatchNorm InstanceNorm1d InstanceNorm2d InstanceNorm3d
    LazyInstanceNorm1d LazyInstanceNorm2d LazyInstanceNorm3d GroupNorm LayerNorm RMSNorm
    Embedding EmbeddingBag RNN LSTM GRU RNNCell LSTMCell GRUCell MultiheadAttention PReLU
    Transformer TransformerEncoder TransformerDecoder TransformerEncoderLayer
    TransformerDecoderLayer AdaptiveLogSoftmaxWithLoss LinearCrossEntropyLoss Sequential ModuleList ModuleDict
    ParameterList ParameterDict""".split()
)
PARAMETERS = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
# The words a finding of TDV503 cannot do without: a stateful layer or a Parameter.
STATE_WORDS = STATEFUL_LAYERS | {"Parameter"}


def layer_state(qualified: str) -> str:
    """"parameter", "module" (holds state), "free" (a torch.nn module that
    holds none) or "" (not a torch.nn class) for a qualified callee."""
    if qualified in PARAMETERS:
        return "parameter"
    head, _, last = qualified.rpartition(".")
    if not (head == "torch.nn" or head.startswith("torch.nn.modules")) or not last[:1].isupper():
        return ""
    return "module" if last in STATEFUL_LAYERS else "free"


def holds_no_tensor(qualified: str, args) -> bool:
    """``nn.CrossEntropyLoss()`` / ``nn.MSELoss(reduction="sum")``: a torch.nn loss built from literals only keeps no
    tensor (its one state, ``weight`` / ``pos_weight``, is a tensor argument), so moving it moves nothing."""
    return (layer_state(qualified) == "free" and qualified.endswith("Loss")
            and all(not arg.star and is_constant(arg.value) for arg in args))


def built_without_tensor(names, expr) -> bool:
    """``nn.CrossEntropyLoss()`` as the receiver of a move: a loss built from literals, which the move leaves as it
    is (``.cuda(3)`` / ``.to("cuda:1")`` of it touch no device and run on a CPU-only build of torch)."""
    return isinstance(expr, cst.Call) and holds_no_tensor(names.qualify(expr.func) or "", expr.args)


# torchvision's model families: a builder there (``resnet18``, ``detection.fasterrcnn_resnet50_fpn``,
# ``get_model``) returns a new module on the CPU; ``feature_extraction`` and ``_utils`` wrap a given one.
_TORCHVISION_FAMILIES = frozenset({"", "detection", "segmentation", "video", "optical_flow", "quantization"})
_NOT_BUILDERS = frozenset({"get_model_weights", "get_weight", "list_models", "get_model_builder"})


def torchvision_builder(qualified: str, keywords) -> bool:
    """Is the call a torchvision model builder (``torchvision.models.resnet18(weights=...)``,
    ``models.detection.fasterrcnn_resnet50_fpn()``, ``models.get_model("vit_b_16")``)? It builds
    on the CPU, as ``nn.Linear`` does: torchvision places nothing. ``keywords``: the call's keyword
    names, None where ``**`` may pass any (a default device's ``device=`` then, in principle)."""
    parts = qualified.split(".")
    if keywords is None or parts[:2] != ["torchvision", "models"]:
        return False
    family, name = ".".join(parts[2:-1]), parts[-1]
    return family in _TORCHVISION_FAMILIES and name[:1].islower() and name not in _NOT_BUILDERS


# Keywords of ``from_pretrained`` that place the weights while loading them (Accelerate's device map,
# bitsandbytes' quantisation, tensor parallelism): the model is not on the CPU then.
_PLACING_KEYWORDS = frozenset(
    {"device_map", "load_in_8bit", "load_in_4bit", "quantization_config", "tp_plan", "device"}
)


def hf_model_class(dotted: str, hf_names, keywords) -> bool:
    """Is ``dotted`` (a callee) ``<model class>.from_pretrained`` of Hugging Face transformers, under a name
    module code imports from it (``AutoModelForCausalLM.from_pretrained``, ``transformers.BertModel.from_pretrained``)?
    A model class names ``Model`` or ``For`` (not a tokenizer's, processor's nor config's). Called without a
    keyword that places it, it loads onto the CPU. ``hf_names``: local name -> the transformers name it is
    bound to (``names.hf_names``); ``keywords``: as for ``torchvision_builder``."""
    parts = dotted.split(".")
    if keywords is None or len(parts) < 2 or parts[-1] != "from_pretrained" or parts[0] not in hf_names:
        return False
    cls = parts[-2] if len(parts) > 2 else hf_names[parts[0]]  # ``tf.BertModel`` / ``Auto`` bound to a class
    return ("Model" in cls or "For" in cls) and not _PLACING_KEYWORDS & set(keywords)
