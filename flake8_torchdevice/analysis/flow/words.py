"""The words of the device flow: which members and functions keep, combine or drop a device."""

from __future__ import annotations

import re
from typing import Optional

from ...words import joined_words
from ..code import code_of
from ..devices import DEFAULT_DEVICE_SETTERS
from ..vocabulary import PARALLEL_WRAPPERS, PRODUCT_METHODS, PRODUCT_OPS, wrapper_names_a_gpu

# Reading these gives no device-bound tensor.
META_ATTRS = frozenset("shape dtype ndim is_cuda requires_grad grad_fn layout names is_sparse".split())
SCALAR_METHODS = frozenset(
    """size dim numel nelement item tolist stride element_size data_ptr is_contiguous get_device
    equal is_floating_point is_complex storage_offset numpy keys items values __len__""".split()
)
SCALAR_BUILTINS = frozenset(
    """len int float bool str isinstance hasattr getattr range enumerate zip print min max sum abs
    round type id repr sorted list tuple dict set any all iter next format""".split()
)
# Tensor members: using one on a loader element says it is a tensor.
TENSOR_MEMBERS = frozenset(
    """shape ndim size dim numel view reshape permute transpose t unsqueeze squeeze expand flatten
    contiguous detach float long int half double bool byte sum mean max min argmax argmin abs
    exp log sqrt pow clamp softmax log_softmax sigmoid masked_fill index_select gather eq ne lt le
    gt ge squeeze_ unsqueeze_ type_as view_as numel""".split()
)
# torch functions whose tensor arguments must share one device.
COMBINE_FUNCS = frozenset(
    f"torch.{n}"
    for n in """cat concat concatenate stack hstack vstack dstack column_stack where add sub
    subtract mul multiply div divide maximum minimum eq ne lt le gt ge matmul mm bmm dot einsum
    masked_select gather index_select logical_and logical_or bitwise_and bitwise_or atan2 lerp
    cdist outer allclose isclose stft istft""".split()
) | frozenset(f"torch.{n}" for n in PRODUCT_OPS)
# torch functions that stack their tensors along a new dimension: the result has one at least,
# even where every input is 0-dim (``torch.stack([torch.tensor(t) for t in tokens])``).
STACKING = frozenset(
    f"torch.{n}" for n in "stack hstack vstack dstack column_stack row_stack nn.utils.rnn.pad_sequence".split()
)
# torch's test comparisons check that both sides are on one device (``check_device=True`` by default):
# "The values for attribute 'device' do not match: cuda:0 != cpu."
DEVICE_CHECKED_COMPARISONS = frozenset({"torch.testing.assert_close", "torch.testing.assert_allclose"})
# torchvision's image conversions: a new CPU tensor (a class is called on the image once built).
IMAGE_TO_TENSOR_CLASSES = frozenset({"torchvision.transforms.ToTensor", "torchvision.transforms.PILToTensor"})
IMAGE_TO_TENSOR_FUNCTIONS = frozenset(
    f"torchvision.transforms.functional.{name}" for name in ("to_tensor", "pil_to_tensor")
)
COMBINE_METHODS = frozenset(
    """add sub mul div true_divide floor_divide remainder fmod pow eq ne lt le gt ge maximum
    minimum matmul mm bmm dot masked_fill masked_select where logical_and logical_or atan2 lerp
    outer index_select gather take take_along_dim scatter scatter_add index_add index_copy
    index_fill masked_scatter isclose allclose stft istft""".split()
) | PRODUCT_METHODS
# Keep the receiver's device (tensor methods and module methods alike).
KEEPING_METHODS = frozenset(
    """detach clone contiguous float double half bfloat16 long int bool byte view reshape permute
    transpose t unsqueeze squeeze flatten expand expand_as repeat view_as reshape_as narrow flip
    roll abs exp log sqrt sigmoid tanh relu softmax log_softmax clamp argmax argmin sum mean prod
    max min amax amin norm std var cumsum masked_fill eval train requires_grad_ squeeze_
    unsqueeze_ index_select gather add sub mul div pow matmul mm bmm eq ne lt le gt ge
    round floor ceil neg sign square T mT""".split()
)
# Holders of a run's chosen device (``args.device``, ``cfg.device``, ``accelerator.device``): an
# option a user sets to CUDA on a GPU machine, so a device that may be CUDA.
OPTION_HOLDERS = re.compile(
    r"(?i)^(\w*_)?(args|argv|opts?|options?|cfg|conf|config|hparams|hp|flags|settings)$|^(accelerator|fabric)$"
)
# After DEFAULT_DEVICE_SETTERS a factory without device= lands on the default device (not known
# to be the CPU); the flow reads them anywhere in the file.
DEFAULT_DEVICE_WORDS = frozenset(name.rpartition(".")[2] for name in DEFAULT_DEVICE_SETTERS)
# torch.distributed collectives: (positions of their tensor arguments, position of ``group``).
# Over NCCL every tensor must be a CUDA tensor.
COLLECTIVES = {
    "all_reduce": ((0,), 2), "broadcast": ((0,), 2), "reduce": ((0,), 3), "all_gather": ((1,), 2),
    "all_gather_into_tensor": ((0, 1), 2), "reduce_scatter_tensor": ((0, 1), 3),
    "all_to_all_single": ((0, 1), 4), "gather": ((0,), 3), "scatter": ((0,), 3),
    "send": ((0,), 2), "recv": ((0,), 2), "isend": ((0,), 2), "irecv": ((0,), 2),
}
COLLECTIVE_WORDS = frozenset(name + "(" for name in COLLECTIVES)


def collective_name(qualified: Optional[str]) -> Optional[str]:
    """``"broadcast"`` for ``torch.distributed.broadcast``: the collective a call makes, or None."""
    prefix = "torch.distributed."
    if qualified is None or not qualified.startswith(prefix):
        return None
    name = qualified[len(prefix):]
    return name if name in COLLECTIVES else None


_NCCL_LITERAL = re.compile(r"""["']nccl["']""")


def starts_nccl(source: str) -> bool:
    """Does the file start an NCCL group: ``init_process_group("nccl")``, a ``--dist-backend``
    defaulting to "nccl", ``"nccl" if torch.cuda.is_available() else "gloo"``?"""
    if "init_process_group" not in source:
        return False
    return _NCCL_LITERAL.search(source) is not None or any(word == "nccl" for _, word in joined_words(source))


# A skip whose test excludes NCCL (``@skip_if(BACKEND == "nccl", "Nccl does not support CPU tensors")``).
_SKIPS_NCCL = re.compile(r"""==\s*["']nccl["']|["']nccl["']\s*==|\bin\s*[\(\[{][^)\]}]*["']nccl["']""")


def skips_nccl(node) -> bool:
    """Is the function (a ``cst.FunctionDef``) decorated with a skip whose test excludes NCCL? Its collectives
    never meet an NCCL group: torch's own distributed tests skip their CPU-tensor cases that way."""
    for decorator in node.decorators:
        text = code_of(decorator.decorator)
        if "skip" in text.lower() and _SKIPS_NCCL.search(text):
            return True
    return False


# Lightning's step hooks: its Trainer has moved ``batch`` to the module's device before it
# calls one (a task's ``validation_step(model, batch, batch_idx)`` called from them too).
LIGHTNING_STEPS = frozenset("training_step validation_step test_step predict_step".split())
LIGHTNING_PACKAGES = ("lightning", "pytorch_lightning")
# matplotlib calls that turn their data into NumPy arrays (``np.asarray``): a device tensor fails.
PLOT_METHODS = frozenset(
    """plot imshow scatter hist hist2d bar barh fill_between errorbar semilogx semilogy loglog
    stem pcolormesh pcolor contour contourf matshow boxplot violinplot hexbin stairs stackplot""".split()
)
PLOT_WORDS = frozenset("." + name + "(" for name in PLOT_METHODS)
# Calls whose results a framework places (Accelerate, Fabric).
FRAMEWORK_CALLS = frozenset("prepare prepare_data_loader setup_dataloaders setup prepare_model".split())
# Arguments kept on the CPU on purpose (pack_padded_sequence lengths), or named as a batch's
# metadata a model is handed beside its tensors (``model(data_in, data_info)``: file names, paths).
CPU_ON_PURPOSE = ("len", "length", "lens", "seq_len", "sizes", "info", "meta", "name", "path")
# What data loaders are called: a loop over one of these names (or over
# ``DataLoader(...)``) is a loop over CPU batches.
LOADER_WORDS = frozenset(
    """loader dataloader data_loader DataLoader train_loader val_loader valid_loader
    validation_loader test_loader eval_loader trainloader testloader valloader
    train_dataloader val_dataloader valid_dataloader test_dataloader eval_dataloader
    train_dl val_dl valid_dl test_dl dl""".split()
)
# ``nn.DataParallel`` scatters a forward's inputs to its devices: a CPU input is moved for it.
DATA_PARALLEL = frozenset(name for name, kind in PARALLEL_WRAPPERS.items() if kind == "DataParallel")
# ``DistributedDataParallel(model, device_ids=[rank])`` moves a forward's inputs to that device too.
DISTRIBUTED_PARALLEL = frozenset(name for name, kind in PARALLEL_WRAPPERS.items() if kind == "DistributedDataParallel")


def moves_its_inputs(call, qualified: str) -> bool:
    """A wrapper that moves what its forward is given: ``DataParallel(model)``, or ``DistributedDataParallel``
    given ``device_ids`` (its second positional argument or the keyword)."""
    if qualified in DATA_PARALLEL:
        return True
    return qualified in DISTRIBUTED_PARALLEL and wrapper_names_a_gpu(call, ("device_ids",))


# NumPy array methods whose answer is an array again (``np.fromfile(p).reshape(-1, 4)``).
ARRAY_KEEPING_METHODS = frozenset("reshape astype copy squeeze transpose flatten ravel swapaxes".split())
# Attributes that name a module's submodule: a placed module's ``ddpm.model(x)`` runs that submodule, on its device
# (a tensor has no such attribute to call).
SUBMODULE_NAMES = frozenset(
    "model module net network encoder decoder backbone unet vae generator discriminator".split()
)
# Builtins that only look at what they are given (``print(model)``): they move no module.
LOOKING_BUILTINS = frozenset({"print", "str", "repr", "len", "isinstance", "type", "id", "hasattr"})
# Methods that only trace or describe a model they are handed (TensorBoard's ``writer.add_graph(model, x)``).
LOOKING_METHODS = frozenset({"add_graph"})
# Loops over these wrappers yield what they wrap.
WRAPPERS = frozenset("enumerate tqdm iter".split())
DEVICE_TYPES = frozenset("cpu cuda mps xpu meta hpu npu xla".split())
DTYPES = frozenset(
    """float float16 float32 float64 half double bfloat16 int int8 int16 int32 int64 long short
    uint8 bool complex64 complex128 cfloat cdouble""".split()
)
