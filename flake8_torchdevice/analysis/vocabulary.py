"""The torch vocabulary every rule shares: tensor factories and their reading.

A factory creates a new tensor on the default device (the CPU) unless it is
given ``device=``. ``*_like`` factories and ``Tensor.new_*`` methods inherit
the device of their input and are deliberately absent.
"""

from __future__ import annotations

from typing import Optional

from .._lazy import cst
from .code import code_of
from ..rule import is_none

# torch.<name>(...) creates a CPU tensor without device=.
FACTORY_NAMES = frozenset(
    """zeros ones empty full tensor as_tensor asarray arange range linspace logspace
    eye rand randn randint randperm from_numpy empty_strided scalar_tensor
    tril_indices triu_indices frombuffer Tensor FloatTensor DoubleTensor HalfTensor
    BFloat16Tensor LongTensor IntTensor ShortTensor CharTensor ByteTensor BoolTensor
    hann_window hamming_window blackman_window bartlett_window kaiser_window""".split()
)
QUALIFIED_FACTORIES = frozenset(f"torch.{name}" for name in FACTORY_NAMES)
# Predicates of a device's presence: tested as a truth value uncalled, each is a function, always true (TDV114).
AVAILABILITY_CHECKS = frozenset({
    "torch.cuda.is_available", "torch.cuda.is_bf16_supported", "torch.backends.cuda.is_built",
    "torch.backends.cudnn.is_available", "torch.backends.mps.is_available", "torch.backends.mps.is_built",
    "torch.mps.is_available", "torch.xpu.is_available", "torch.mtia.is_available",
    "torch.distributed.is_available",
})
# Device queries that answer a number: used as one uncalled (``batch * torch.cuda.device_count``), each is a function.
DEVICE_COUNT_QUERIES = frozenset({
    "torch.cuda.device_count", "torch.cuda.current_device", "torch.xpu.device_count", "torch.xpu.current_device",
    "torch.mps.device_count", "torch.mtia.device_count", "torch.accelerator.device_count",
    "torch.accelerator.current_device_index",
})
# These copy their data argument, and keep its device when it is a tensor.
# Matrix products and fused multiply-adds: functions and tensor methods whose tensor operands must share one
# device, as ``matmul``'s do (the flow's and the factory walk's meeting vocabularies both hold them).
PRODUCT_OPS = frozenset(
    "mv addmm addmv addbmm baddbmm addcmul addcdiv tensordot inner kron vdot hypot copysign xlogy fmax fmin".split()
)
PRODUCT_METHODS = PRODUCT_OPS - {"tensordot"}  # ``torch.tensordot`` has no tensor method
DATA_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor", "torch.asarray"})
# The typed legacy constructors: ``torch.LongTensor(...)`` builds CPU tensors only; its CUDA twin,
# ``torch.cuda.LongTensor(...)``, builds them on the current GPU, as ``.cuda()`` would place them.
LEGACY_KINDS = ("", "Float", "Double", "Half", "BFloat16", "Byte", "Char", "Short", "Int", "Long", "Bool")
CUDA_LEGACY_CONSTRUCTORS = frozenset(f"torch.cuda.{kind}Tensor" for kind in LEGACY_KINDS if kind)
# Reductions: over every element (no dim) they give a 0-dim tensor, which mixes with any device.
REDUCTIONS = frozenset(
    "sum mean prod max min amax amin norm all any median std var logsumexp argmax argmin count_nonzero".split()
)
# Methods that move a tensor (or leave no tensor) right after it is made.
MOVED_OR_CONVERTED = frozenset({"to", "type_as", "cuda", "item", "tolist"})


def passes_device(call: "cst.Call") -> bool:
    """Does the factory call choose its device? ``device=`` or ``out=``, a
    ``**kwargs`` that may carry either, or any argument that speaks of a
    device (``torch.zeros(n, **like(x.device))``): then it is no CPU tensor
    for sure, and rules stay silent."""
    for arg in call.args:
        if arg.star == "**" or (arg.keyword is not None and arg.keyword.value in ("device", "out")):
            return True
    return any("device" in code_of(arg) for arg in call.args)


def availability_check(names, expr: "cst.BaseExpression") -> Optional[str]:
    """The qualified name of the device-availability check ``expr`` names (not calls), if it is one."""
    return _named_query(names, expr, AVAILABILITY_CHECKS)


def device_count_query(names, expr: "cst.BaseExpression") -> Optional[str]:
    """The qualified name of the device-count query ``expr`` names (not calls), if it is one."""
    return _named_query(names, expr, DEVICE_COUNT_QUERIES)


def _named_query(names, expr: "cst.BaseExpression", queries: frozenset) -> Optional[str]:
    """The qualified name of the one of ``queries`` that ``expr`` names (a name or an attribute), if any."""
    if not isinstance(expr, (cst.Attribute, cst.Name)):
        return None
    name = names.qualify(expr)
    return name if name in queries else None


def factory_name(names, call: cst.Call) -> Optional[str]:
    """``torch.zeros`` etc. if ``call`` is a torch factory call, else None."""
    func = call.func
    while isinstance(func, cst.Attribute):
        func = func.value
    if not isinstance(func, cst.Name):
        return None  # torch.zeros(3).float: the resolver would read it as torch.zeros.float
    qualified = names.qualify(call.func)
    return qualified if qualified in QUALIFIED_FACTORIES else None


def is_zero_dim(qualified: str, call: cst.Call) -> bool:
    """A factory call that surely makes a 0-dim tensor: ``torch.tensor(1.0)``,
    ``torch.zeros(())``, ``torch.full((), v)``, ``torch.scalar_tensor(v)``."""
    if qualified == "torch.scalar_tensor":
        return True
    if not call.args or call.args[0].keyword is not None:
        return False
    first = call.args[0].value
    if qualified in DATA_FACTORIES:
        return _is_scalar_literal(first)
    if qualified in {"torch.zeros", "torch.ones", "torch.empty", "torch.full", "torch.rand", "torch.randn"}:
        return isinstance(first, (cst.Tuple, cst.List)) and not first.elements
    return False


def maybe_zero_dim(qualified: str, call: cst.Call) -> bool:
    """0-dim, or data whose shape we cannot see (``torch.tensor(scale)``,
    ``torch.tensor(cfg.WEIGHT)``): precision first, both count as 0-dim."""
    return unseen_shape(qualified, call) or is_zero_dim(qualified, call)


def unseen_shape(qualified: str, call: cst.Call) -> bool:
    """``torch.tensor(tokens)``: data whose shape the code does not show."""
    if qualified in DATA_FACTORIES and call.args and call.args[0].keyword is None:
        data = call.args[0].value
        return not isinstance(data, (cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp)) and not _is_scalar_literal(
            data
        )
    return False


def _is_scalar_literal(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.Name):
        return expr.value in {"True", "False"}
    if isinstance(expr, cst.UnaryOperation):
        return _is_scalar_literal(expr.expression)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name):
        return expr.func.value in {"float", "int", "bool"}  # float("inf")
    return False


# torch.nn.functional's losses: their inputs are a model's outputs and their targets.
FUNCTIONAL_LOSSES = frozenset(
    f"torch.nn.functional.{name}"
    for name in """cross_entropy nll_loss mse_loss l1_loss smooth_l1_loss huber_loss binary_cross_entropy
    binary_cross_entropy_with_logits kl_div poisson_nll_loss gaussian_nll_loss cosine_embedding_loss
    hinge_embedding_loss margin_ranking_loss multilabel_margin_loss multilabel_soft_margin_loss
    multi_margin_loss soft_margin_loss triplet_margin_loss triplet_margin_with_distance_loss ctc_loss""".split()
)
# CTC takes its targets and lengths on the CPU (cuDNN's even requires them there).
CTC_FUNCTIONS = frozenset({"torch.nn.functional.ctc_loss", "torch.ctc_loss"})


def reduces_all(call: "cst.Call", name: str, operands: int) -> bool:
    """``t.sum()`` / ``torch.max(t)``: a reduction over every element is 0-dim. ``operands``: the
    tensors passed positionally (0 for a method, 1 for torch's function); one more positional
    argument, or ``dim=`` / ``axis=``, reduces along a dimension."""
    if name not in REDUCTIONS:
        return False
    positional = sum(arg.keyword is None and not arg.star for arg in call.args)
    if positional != operands or any(arg.star for arg in call.args):
        return False
    return not any(arg.keyword is not None and arg.keyword.value in ("dim", "axis") for arg in call.args)


# The module wrappers of data parallelism, by qualified name: which kind each is. TDV301/TDV303
# decide their placement; the device flow reads DataParallel's scatter of a forward's inputs.
PARALLEL_WRAPPERS = {
    "torch.nn.DataParallel": "DataParallel",
    "torch.nn.parallel.DataParallel": "DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel": "DataParallel",
    "torch.nn.parallel.DistributedDataParallel": "DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel": "DistributedDataParallel",
}


# The device arguments of a wrapper's constructor, by keyword and by position (the module is the first).
_WRAPPER_DEVICE_ARGUMENTS = {"device_ids": 2, "output_device": 3}


def wrapper_names_a_gpu(call: "cst.Call", arguments=("device_ids", "output_device")) -> bool:
    """Is one of ``arguments`` (``device_ids`` / ``output_device``) given to a parallel wrapper's constructor, by
    keyword or position, and not None? ``*args`` / ``**kwargs`` may or may not carry them: no sign either way."""
    positions = {_WRAPPER_DEVICE_ARGUMENTS[name] for name in arguments}
    positional = 0
    for arg in call.args:
        if arg.star:
            continue
        if arg.keyword is None:
            positional += 1
            if positional in positions and not is_none(arg.value):
                return True
        elif arg.keyword.value in arguments and not is_none(arg.value):
            return True
    return False
