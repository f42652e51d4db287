"""TDV106: a device string torch cannot parse (``"gpu:0"``, ``"CUDA"``, ``"cuda0"``)."""

from __future__ import annotations

import re
from typing import Optional

from .._lazy import cst
from ..analysis.code import argument, string_value, subtree
from ..analysis.device_options import device_option_reads
from ..rule import Fix, Rule

# The device types of torch's parser (torch 2.13's message lists them), lower case.
_TYPES = frozenset(
    "cpu cuda ipu xpu mkldnn opengl opencl ideep hip ve fpga maia xla lazy vulkan mps meta hpu mtia "
    "privateuseone".split()
)
# Where a backend renames ``privateuseone`` (torch_npu's "npu", ...) any lower-case word may be
# a type; what is reported never is: a GPU by its generic name, a common type in capitals, a
# common type glued to its index. Each is a word the selection can look for (NEEDS).
_COMMON = ("cuda", "cpu", "xpu", "mps", "hpu", "meta", "xla", "ipu")
_CAPITALISED = frozenset(spelling for kind in _COMMON for spelling in (kind.upper(), kind.capitalize()))
_GLUED = re.compile(r"(cuda|cpu|xpu|mps|hpu)(\d+)")
# A space in a device string (``"cuda: 0"``, ``"cpu "``) of these types is reported: each is a
# word the selection can look for.
_SPACED_TYPES = frozenset(("cuda", "cpu", "gpu", "mps", "xpu"))
_SPACED_WORDS = frozenset(f"*{kind}" for kind in _SPACED_TYPES)
_GLUED_WORDS = frozenset(f"*{kind}{digit}" for kind in ("cuda", "cpu", "xpu", "mps", "hpu") for digit in range(10))


class InvalidDeviceType(Rule):
    r"""## What it does
    Flags a string that names a device torch cannot parse, where torch reads it as a device:
    the first argument (or `type=`) of `torch.device(...)`, the first argument (or
    `device=`) of `.to(...)`, and the `device=` keyword of any `torch` function
    (`torch.zeros(3, device="GPU")`). The device type is the part before `:`; it is reported
    when it is
    - `gpu` in any case (`"gpu"`, `"gpu:0"`, `"GPU"`): torch calls NVIDIA and AMD GPUs `cuda`;
    - a common type in capitals (`"CUDA"`, `"Cuda"`, `"CPU"`, `"Cpu"`, `"MPS"`, `"XPU"`, ...);
    - a common type glued to its index (`"cuda0"`, `"cpu1"`);
    - a string with a space in it, of the types `cuda`, `cpu`, `gpu`, `mps`, `xpu` (`"cuda: 0"`, `"cpu "`).

    The leading text of a template counts when it holds the type: `"gpu:%d" % rank`,
    `"gpu:{}".format(rank)`, `f"gpu:{rank}"`.

    Also the default of a script's `--device` option (`parser.add_argument("--device", default="gpu")`, with no
    `choices=` and no converter but `type=str`) when the file hands the option to torch as a device
    (`model.to(args.device)`, `torch.device(args.device)`, `device=args.device`) and never rebinds it: every run
    without the option fails. Reported at the default (post-hoc, from recall batch 103's `policy.to(args.device)`;
    the recall list counts it as found away from that fix, which changed the use).

    ## Why is this bad?
    The string is parsed when the line runs, on every machine. Code that picks the GPU only
    when one is there (`if torch.cuda.is_available(): device = torch.device("gpu:0")`) passes
    every CPU test and CI run, and fails the first time it runs on a GPU machine.

    ## Example
    ```python
    if gpu >= 0 and torch.cuda.is_available():
        device = torch.device("gpu:%d" % gpu)
    ```

    ## Use instead
    ```python
    if gpu >= 0 and torch.cuda.is_available():
        device = torch.device("cuda:%d" % gpu)
    ```

    ## Fix safety
    Safe, for a plain string literal: `"gpu"` becomes `"cuda"`, `"CUDA"` becomes `"cuda"`,
    `"Cpu"` becomes `"cpu"`, `"cpu1"` becomes `"cpu:1"`, `"cpu "` becomes `"cpu"`. The call always raised, so no working
    behaviour changes. Templates (f-strings, `%`, `.format`) get no fix, nor does a string whose
    meaning names a CUDA index (`"gpu:1"`, `"cuda0"`): the ordinal it would hard-code is the
    author's choice (TDV401, TDV402).

    ## When it does not report
    - a lower-case word torch does not know (`"npu"`, `"musa"`): a backend may register it
      under that name (`torch.utils.rename_privateuse1_backend`);
    - other misspellings torch also rejects, which no word of the source gives away cheaply: an
      index that is not a number (`"cuda:x"`), a template glued to its index (`f"cuda{rank}"`),
      mixed case (`"cUDA"`);
    - strings that are not read as a device (`args.device = "gpu"`, `"GPU"` as a label), and names or attributes
      that hold a string; an option's default where the option is not named `--device`, lists its `choices`, has a
      converter of the script's own (`type=pick_device`), is rebound before use (`args.device = torch.device(...)`)
      or is never handed to torch as a device (`use_gpu = args.device == "gpu"`);
    - a template whose type is itself a placeholder (`f"{kind}:{rank}"`).

    ## The error torch raises
    On every machine:

    ```
    RuntimeError: Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, lazy, vulkan, mps, meta, hpu, mtia, privateuseone device type at start of device string: gpu
    ```

    For a type glued to its index: `RuntimeError: Invalid device string: 'cuda0'`; for a space,
    `RuntimeError: Invalid device string: 'cuda: 0'`.
    """  # noqa: E501 -- quotes torch's error message verbatim

    CODE = "TDV106"
    NAME = "invalid-device-type"
    SUMMARY = 'a device string torch cannot parse (`"gpu:0"`, `"CUDA"`, `"cuda0"`)'
    MESSAGE = "{text!r} is no torch device: {why}; torch raises when this line runs, on every machine"
    FIX = "safe"
    # Every finding is a string holding one of these words, in a device position (``device``,
    # ``.to(``) of the same function or statement.
    NEEDS = [{"*gpu"} | _CAPITALISED | _GLUED_WORDS | _SPACED_WORDS, {"device", ".to("}]
    TOGETHER = True

    OPTION_MESSAGE = (
        "{text!r}, the default of --device, is no torch device: {why}; the option reaches torch as a device at line "
        "{line}, which raises whenever the option is not given"
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        qualified = self.names.qualify(func) or ""
        if isinstance(func, cst.Attribute) and func.attr.value == "add_argument":
            self._check_option(node)
        elif qualified == "torch.device":
            self._check(argument(node, 0, "type"))
        elif isinstance(func, cst.Attribute) and func.attr.value == "to":
            self._check(argument(node, 0, "device"))
        elif qualified.startswith("torch."):
            self._check(argument(node, None, "device"))

    def _check(self, arg: Optional[cst.Arg]) -> None:
        if arg is None:
            return
        literal = _leading_text(arg.value)
        if literal is None:
            return
        text, whole = literal
        why, fixed = _diagnose(text, whole)
        if why is None:
            return
        fix = None
        # A CUDA index in the meant string is a hard-coded ordinal (TDV401/TDV402): the author's call.
        if whole and fixed is not None and isinstance(arg.value, cst.SimpleString) and not fixed.startswith("cuda:"):
            new = f"{arg.value.prefix}{arg.value.quote}{fixed}{arg.value.quote}"
            fix = Fix(lambda node: node.with_changes(value=new) if isinstance(node, cst.SimpleString) else node)
        shown = text if whole else text + "..."  # the literal start of a template
        self.report(arg.value, self.MESSAGE.format(text=shown, why=why), fix=fix)

    def _check_option(self, call: cst.Call) -> None:
        """``parser.add_argument("--device", default="gpu")`` whose ``args.device`` the file hands to torch as a
        device, and never rebinds: the default is read as written (post-hoc, from recall batch 103's
        ``policy.to(args.device)``). Only an option named ``--device``: the word the selection keeps it by."""
        flags = [_literal(arg.value) for arg in call.args if arg.keyword is None]  # ``"--de" "vice"`` too
        if "--device" not in flags or any(arg.keyword and arg.keyword.value in ("choices", "dest")
                                          for arg in call.args):
            return
        kind = argument(call, None, "type")
        if kind is not None and not (isinstance(kind.value, cst.Name) and kind.value.value == "str"):
            return  # a converter of the script's own may map the default
        default = argument(call, None, "default")
        text = _literal(default.value) if default is not None else None
        why = _diagnose(text, True)[0] if text is not None else None
        if why is None:
            return
        lines = device_option_reads(self.names).get("device")
        if lines:
            self.report(default.value, self.OPTION_MESSAGE.format(text=text, why=why, line=lines[0]))


def _leading_text(expr: cst.BaseExpression) -> Optional[tuple[str, bool]]:
    """The literal text a device expression starts with, and whether that is all of it:
    ``"gpu:0"`` -> ("gpu:0", True); ``"gpu:%d" % n``, ``"gpu:{}".format(n)``,
    ``f"gpu:{n}"`` -> ("gpu:", False)."""
    text = _literal(expr)
    if text is not None:
        return text, True
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Modulo):
        text = _literal(expr.left)
        return (text.split("%", 1)[0], False) if text is not None else None
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "format":
        text = _literal(expr.func.value)
        return (text.split("{", 1)[0], False) if text is not None else None
    if isinstance(expr, cst.FormattedString) and expr.parts and isinstance(expr.parts[0], cst.FormattedStringText):
        return expr.parts[0].value, len(expr.parts) == 1
    return None


def _literal(expr: cst.BaseExpression) -> Optional[str]:
    """The text of a plain string or of joined plain strings (``"gp" "u:0"``)."""
    if isinstance(expr, cst.SimpleString):
        return string_value(expr)
    if isinstance(expr, cst.ConcatenatedString) and not any(isinstance(n, cst.FormattedString) for n in subtree(expr)):
        return string_value(expr)
    return None


def _diagnose(text: str, whole: bool) -> tuple[Optional[str], Optional[str]]:
    """Why ``text`` (the whole device string, or the literal start of a template) cannot be a
    device, and the string that was meant; (None, None) when it may be one."""
    if any(char.isspace() for char in text):
        meant = "".join(text.split())
        if meant.partition(":")[0].lower() not in _SPACED_TYPES:
            return None, None
        _, corrected = _diagnose(meant, whole)
        return "a device string holds no spaces", corrected or meant
    kind, colon, index = text.partition(":")
    if kind.lower() == "gpu":
        return 'torch calls a GPU "cuda"', "cuda" + colon + index
    if kind in _CAPITALISED:
        return f'device types are lower case ("{kind.lower()}")', kind.lower() + colon + index
    glued = _GLUED.fullmatch(kind)
    if glued and not colon and whole:
        return f'the type and its index need a colon ("{glued[1]}:{glued[2]}")', f"{glued[1]}:{glued[2]}"
    return None, None
