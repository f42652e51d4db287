"""TDV103: ``.to(dtype, device)``: the arguments in the wrong order."""

from __future__ import annotations

from .._lazy import cst
from ..analysis.devices import is_device_expression
from ..rule import Fix, Rule

# torch's dtypes by their torch-only names. ``torch.float``, ``torch.int`` and
# ``torch.bool`` are left out: their words are in nearly every unit of code,
# which would all be parsed for this rule.
DTYPES = frozenset(
    """float16 float32 float64 bfloat16 half double long short cfloat cdouble chalf
    complex32 complex64 complex128 int8 int16 int32 int64 uint8 uint16 uint32 uint64
    float8_e4m3fn float8_e5m2 float8_e4m3fnuz float8_e5m2fnuz""".split()
)


class ToArgumentsSwapped(Rule):
    r"""## What it does
    Flags a `.to(...)` call whose first positional argument is a dtype and whose second
    positional argument is a device: `x.to(torch.float16, "cuda")`,
    `model.to(torch.bfloat16, device)`, `x.to(y.dtype, torch.device("cpu"))`. A dtype is a
    torch dtype under any alias (`torch.float16`, `th.half`, `from torch import bfloat16`;
    spelled by its own name, so not `torch.float` / `torch.int` / `torch.bool`) or a name or
    attribute called `dtype` (`dtype`, `x.dtype`, `self.dtype`); a device is what TDV101
    calls one: a device string, a `torch.device(...)` call, or a name ending in `device`.

    ## Why is this bad?
    `Tensor.to()` and `Module.to()` take the device first: `to(device, dtype, non_blocking,
    copy)`, or `to(dtype, non_blocking, copy)`. With a dtype first, the second positional
    argument is `non_blocking`, and a device there matches no signature: the call raises
    `TypeError` on every machine, before anything moves.

    ## Example
    ```python
    model = model.to(torch.bfloat16, device)
    inputs = inputs.to(torch.float16, "cuda")
    ```

    ## Use instead
    ```python
    model = model.to(device, torch.bfloat16)
    inputs = inputs.to("cuda", torch.float16)  # or .to(device="cuda", dtype=torch.float16)
    ```

    ## Fix safety
    Safe. The fix swaps the two arguments and changes nothing else; the call raised
    before, and now does what the arguments say.

    ## When it does not report
    - `x.to(torch.float16, True)`: the second argument is `non_blocking`, which is legal;
    - `x.to(device, dtype)`, keywords (`x.to(dtype=..., device=...)`), a single argument;
    - a first argument that is not known to be a dtype (`x.to(a, b)`, `x.to(torch.float, d)`),
      or a second that is not known to be a device.

    ## The error torch raises
    On every machine, for tensors and modules alike:

    ```
    TypeError: to() received an invalid combination of arguments - got (torch.dtype, str), but expected one of:
    ```

    With a `torch.device` second:

    ```
    TypeError: to() received an invalid combination of arguments - got (torch.dtype, torch.device), but expected one of:
    ```
    """

    CODE = "TDV103"
    NAME = "to-arguments-swapped"
    SUMMARY = "`.to(dtype, device)`: dtype and device in the wrong order"
    MESSAGE = ".to() takes the device first: .to(dtype, device) raises TypeError; swap them: .to(device, dtype)"
    FIX = "safe"
    # Every finding's first argument spells a dtype by one of these words.
    # The ``.to(...)`` call holds both: its dtype argument and the ``.to``.
    NEEDS = [DTYPES | {"dtype"}, {".to("}]
    TOGETHER = True

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "to"):
            return
        positional = [arg for arg in node.args if arg.keyword is None]
        if len(positional) < 2 or any(arg.star for arg in positional[:2]):
            return
        first, second = positional[0].value, positional[1].value
        if self._is_dtype(first) and is_device_expression(second, self.names):
            self.report(node, fix=Fix(_swapped))

    def _is_dtype(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, (cst.Name, cst.Attribute)):
            last = expr.attr.value if isinstance(expr, cst.Attribute) else expr.value
            if last == "dtype":
                return True
            name = self.names.qualify(expr) or ""
            return name.startswith("torch.") and name[len("torch."):] in DTYPES
        return False


def _swapped(call: cst.Call) -> cst.Call:
    """The first two positional arguments' values exchanged, commas kept."""
    args = list(call.args)
    i, j = [index for index, arg in enumerate(args) if arg.keyword is None][:2]
    args[i], args[j] = args[i].with_changes(value=args[j].value), args[j].with_changes(value=args[i].value)
    return call.with_changes(args=args)
