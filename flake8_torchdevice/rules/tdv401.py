"""TDV401 / TDV402: a CUDA device ordinal written as a literal.

``"cuda:1"`` fails on every machine with fewer than two GPUs; ``"cuda:0"``
(TDV402, opt-in) pins every process of a distributed job to the same GPU.
One visitor finds both; each rule keeps the ordinals it wants.

Not reported: docstrings and other bare string statements, device strings
that are compared (``t.device == torch.device("cuda:1")``: a check, not a
choice), dict keys (``map_location={"cuda:1": "cuda:0"}`` names where a
checkpoint *was*), ordinals computed at run time, and code behind a
multi-GPU guard (``@skip_if_lt_x_gpu(2)``, ``if torch.cuda.device_count() > 1``),
which addresses a given GPU on purpose.
"""

from __future__ import annotations

import re
from typing import Optional, Union

from .._lazy import cst
from ..analysis.code import code_of, subtree
from ..analysis.guards import is_test_code
from ..rule import STATEMENT, Rule

# A string whose whole raw text is a cuda ordinal: 'cuda:1', r"cuda:1", '''cuda:0'''.
_CUDA_STRING = re.compile(r"[rRuU]?('''|\"\"\"|'|\")cuda:(\d+)\1")
_CUDA_TEXT = re.compile(r"cuda:(\d+)")
# What a multi-GPU guard says: device_count() checks, TEST_MULTIGPU,
# skip_if_lt_x_gpu(2), requires_multi_gpu, num_gpus / n_gpu / gpu_count.
_GUARD_WORDS = r"device_count|multi_?gpu|multi_?device|gpu_?count|\bn(?:um)?_?gpus?\b|_x_gpu|\bgpus?\s*[<>]"
_MULTI_GPU_GUARD = re.compile(_GUARD_WORDS, re.I)
_TORCH_DEVICE = "torch.device"
_CUDA_DEVICE_SETTERS = frozenset({"torch.cuda.set_device", "torch.cuda.device"})


def _int_arg(call: cst.Call, position: Optional[int], keyword: str) -> Optional[cst.Integer]:
    """The int literal passed at ``position`` or as ``keyword``, if any."""
    index = 0
    for arg in call.args:
        if arg.star:
            if arg.star == "*":
                position = None  # later positions are unknown
            continue
        if arg.keyword is None:
            if index == position and isinstance(arg.value, cst.Integer):
                return arg.value
            index += 1
        elif arg.keyword.value == keyword and isinstance(arg.value, cst.Integer):
            return arg.value
    return None


def _is_cuda_type(arg: Optional[cst.Arg]) -> bool:
    return arg is not None and _literal_text(arg.value) == "cuda"


def _literal_text(node: cst.CSTNode) -> Optional[str]:
    """The exact text of a str literal without expressions: a plain string,
    an f-string of text alone, or a joined literal of those (``"cu" "da"``);
    None for bytes and anything computed."""
    if isinstance(node, cst.SimpleString):
        return None if "b" in node.prefix.lower() else node.raw_value
    if isinstance(node, cst.FormattedString):
        return node.parts[0].value if len(node.parts) == 1 and isinstance(node.parts[0], cst.FormattedStringText) else (
            "" if not node.parts else None
        )
    if isinstance(node, cst.ConcatenatedString):
        left, right = _literal_text(node.left), _literal_text(node.right)
        return None if left is None or right is None else left + right
    return None


def _speaks_of_multi_gpu(expr: cst.CSTNode) -> bool:
    """A multi-GPU guard in ``expr``'s code or in its joined string literals
    (``@mark("multi" "_gpu")``)."""
    code = code_of(expr)
    if _MULTI_GPU_GUARD.search(code):
        return True
    if "'" not in code and '"' not in code:
        return False
    for node in subtree(expr):
        if isinstance(node, cst.ConcatenatedString):
            text = _literal_text(node)
            if text is not None and _MULTI_GPU_GUARD.search(text):
                return True
    return False


def _torch_device_ordinal(call: cst.Call) -> Optional[cst.Integer]:
    """``torch.device(1)``, ``torch.device("cuda", 1)``, ``torch.device(type="cuda", index=1)``."""
    positional = [a for a in call.args if a.keyword is None and not a.star]
    keywords = {a.keyword.value: a for a in call.args if a.keyword is not None}
    if len(positional) == 1 and not keywords and isinstance(positional[0].value, cst.Integer):
        return positional[0].value
    kind = positional[0] if positional else keywords.get("type")
    if not _is_cuda_type(kind):
        return None
    index = positional[1] if len(positional) > 1 else keywords.get("index")
    return index.value if index is not None and isinstance(index.value, cst.Integer) else None


class HardCodedOrdinal(Rule):
    """Shared visitor; subclasses choose the ordinals they report."""

    FIX = "none"
    # A literal is judged on its own: module-level hits need no module-level
    # data flow (torch's _torch_docs.py parsed 14,028 of 14,520 lines without this).
    SCOPE = STATEMENT

    # "cuda:1", f"cuda:1", .cuda(1), .to(1), torch.device(1), set_device(1), device=1.
    NEEDS = {"cuda", ".to", "device", "set_device"}

    @staticmethod
    def wants(ordinal: int) -> bool:
        raise NotImplementedError

    def __init__(self, context) -> None:
        super().__init__(context)
        self._not_a_choice: set[int] = set()  # ids of literals that only name a device
        self._checks: list[int] = []  # ids of open comparisons and assert calls
        self._guarded = [False]  # per def/class frame: inside multi-GPU-only code

    # -- where a literal is not a device choice ------------------------------
    def visit_Expr(self, node: cst.Expr) -> None:
        # Docstrings and other bare strings: text, not code.
        if isinstance(node.value, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
            self._not_a_choice.add(id(node.value))

    def visit_ConcatenatedString(self, node: cst.ConcatenatedString) -> None:
        # Judged as one string ("cu" "da:1" is "cuda:1"; "cuda:1" "0" is not),
        # never part by part.
        self._not_a_choice.update((id(node.left), id(node.right)))
        text = _literal_text(node)
        match = _CUDA_TEXT.fullmatch(text) if text is not None else None
        if match:
            self._consider(node, int(match.group(1)))

    def visit_Dict(self, node: cst.Dict) -> None:
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                self._not_a_choice.add(id(element.key))

    # Inside a comparison or an assert call a device is checked, not chosen:
    # ``t.device == torch.device("cuda:1")``, ``assertEqual(t.device, torch.device(1))``.
    def visit_Comparison(self, node: cst.Comparison) -> None:
        self._checks.append(id(node))

    def leave_Comparison(self, node: cst.Comparison) -> None:
        self._checks.pop()

    def leave_Call(self, node: cst.Call) -> None:
        if self._checks and self._checks[-1] == id(node):
            self._checks.pop()

    # -- multi-GPU guards --------------------------------------------------
    def _push_frame(self, decorators) -> None:
        said = any(_speaks_of_multi_gpu(d.decorator) for d in decorators)
        self._guarded.append(self._guarded[-1] or said)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._push_frame(node.decorators)
        name = node.name.value
        if _MULTI_GPU_GUARD.search(name) or is_test_code(name, self.context.is_test):  # a guard-like helper
            self._guarded[-1] = True

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._guarded.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._push_frame(node.decorators)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._guarded.pop()

    def _guard_test(self, test: cst.BaseExpression) -> None:
        # A guard covers its branches and, as an early exit
        # (``if device_count() < 2: skip``), the rest of the function.
        if not self._guarded[-1] and _speaks_of_multi_gpu(test):
            self._guarded[-1] = True

    def visit_If(self, node: cst.If) -> None:
        self._guard_test(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._guard_test(node.test)

    def visit_Assert(self, node: cst.Assert) -> None:
        self._guard_test(node.test)

    # -- the literals --------------------------------------------------------
    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        match = _CUDA_STRING.fullmatch(node.value)
        if match:
            self._consider(node, int(match.group(2)))

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        text = _literal_text(node)
        match = _CUDA_TEXT.fullmatch(text) if text is not None else None
        if match:
            self._consider(node, int(match.group(1)))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        callee = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
        if isinstance(callee, str) and callee.lower().startswith("assert"):
            self._checks.append(id(node))
        literal = self._ordinal_argument(node)
        if literal is not None:
            self._consider(literal, literal.evaluated_value)

    def _ordinal_argument(self, call: cst.Call) -> Optional[cst.Integer]:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("cuda", "to"):
            return _int_arg(call, 0, "device")  # x.cuda(1), x.to(1), x.to(device=1)
        qualified = self.names.qualify(func)
        if qualified is None or not qualified.startswith("torch."):
            return None
        if qualified == _TORCH_DEVICE:
            return _torch_device_ordinal(call)
        if qualified in _CUDA_DEVICE_SETTERS:
            return _int_arg(call, 0, "device")
        return _int_arg(call, None, "device")  # torch.zeros(2, device=1)

    def _consider(self, node: Union[cst.BaseString, cst.Integer], ordinal) -> None:
        if not isinstance(ordinal, int) or not self.wants(ordinal):
            return
        if self._checks or self._guarded[-1] or id(node) in self._not_a_choice:
            return
        self.report(node, self.MESSAGE)


class HardCodedCudaOrdinal(HardCodedOrdinal):
    r"""## What it does
    Flags a CUDA device ordinal of 1 or more written as a literal:

    - a string whose whole value is `cuda:N` (`"cuda:1"`, `f"cuda:2"`), wherever it is
      used: `.to("cuda:1")`, `device="cuda:1"`, `map_location="cuda:1"`, an assignment;
    - `torch.device("cuda", N)`, `torch.device(type="cuda", index=N)`, `torch.device(N)`;
    - `.cuda(N)` and `.cuda(device=N)`; `.to(N)` and `.to(device=N)`;
    - `torch.cuda.set_device(N)` and `torch.cuda.device(N)`;
    - `device=N` passed to any torch call (`torch.zeros(2, device=1)`, `nn.Linear(..., device=1)`).

    The report points at the literal. Not flagged: `"cuda"`, ordinals computed at run
    time (`f"cuda:{rank}"`, `torch.device("cuda", local_rank)`), docstrings, comments and
    other bare strings, device strings that are compared (`t.device == torch.device("cuda:1")`),
    dict keys (`map_location={"cuda:1": "cpu"}` names where a checkpoint was saved), and
    code behind a multi-GPU guard: a decorator or an `if`/`assert`/conditional expression
    that mentions `device_count`, `multi_gpu`/`TEST_MULTIGPU`, `skip_if_lt_x_gpu`,
    `num_gpus`/`n_gpu`/`gpu_count`. Ordinal 0 is TDV402 (off by default).

    ## Why is this bad?
    An ordinal of 1 or more assumes a machine with at least that many GPUs. The script
    fails on every one-GPU workstation, every CPU-only CI runner, and inside a job whose
    scheduler exposes a single GPU (`CUDA_VISIBLE_DEVICES=3` makes that GPU `cuda:0`).
    Under `torchrun`, the device of each process is given by `LOCAL_RANK`; a literal
    puts every process on the same GPU.

    ## Example
    ```python
    model = model.to("cuda:1")
    ```

    ## Use instead
    ```python
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")
    model = model.to(device)
    ```

    ## Fix safety
    No fix is offered: which device was meant (a configured one, `LOCAL_RANK`, the
    current device) is a decision about the program, not a rewrite.

    ## When it does not report
    - `"cuda"`, ordinals computed at run time (`f"cuda:{rank}"`, `torch.device("cuda", local_rank)`);
    - docstrings, comments and other bare strings; strings that only contain an ordinal (`"worker1/cuda:1"`);
    - device strings compared or asserted (`t.device == torch.device("cuda:1")`, `assertEqual(...)`), dict keys (`map_location={"cuda:1": "cpu"}`);
    - code behind a multi-GPU guard: a decorator, function name or `if`/`assert` test that mentions `device_count`, `multi_gpu`, `skip_if_lt_x_gpu`, `num_gpus`, `gpu_count` (joined literals such as `"multi" "_gpu"` count);
    - test code: `test*` functions and private `_helpers` of a test module.

    ## The error torch raises
    On a machine with one GPU:

    ```
    torch.AcceleratorError: CUDA error: invalid device ordinal
    ```

    On a CPU-only machine (CPU build of torch 2.13), `.to("cuda:1")`:

    ```
    AssertionError: Torch not compiled with CUDA enabled
    ```

    and `.cuda(1)`:

    ```
    RuntimeError: Cannot access accelerator device when none is available.
    ```
    """

    CODE = "TDV401"
    NAME = "hard-coded-cuda-ordinal"
    SUMMARY = 'a literal CUDA ordinal >= 1 (`"cuda:1"`, `.cuda(1)`, `set_device(1)`, `device=1`)'
    MESSAGE = (
        "hard-coded CUDA device ordinal >= 1 fails with 'invalid device ordinal' on a "
        "machine with fewer GPUs; take the device from configuration or LOCAL_RANK"
    )

    @staticmethod
    def wants(ordinal: int) -> bool:
        return ordinal >= 1
