"""TDV115: a misspelled device API (``torch.cuda.isavalable()``), which raises on every machine."""

from __future__ import annotations

import io
import re
import tokenize
from .._lazy import cst
from ..analysis.device_api import device_slip, misspelled
from ..analysis.vocabulary import factory_name
from ..names import dotted_name
from ..rule import Fix, Rule


class MisspelledDeviceApi(Rule):
    r"""## What it does
    Flags a name read from `torch.cuda`, `torch.mps` or `torch.backends.mps` (under any alias, or
    imported from them) that torch does not have but that is one or two typing slips from one it has:
    `torch.cuda.isavalable()`, `torch.cuda.is_avaliable()`, `torch.cuda.synchronise()`,
    `torch.cuda.device_cout()`, `from torch.cuda import empty_cahce`. Post-hoc, from a held-out fix of
    recall batch 92 (a reading-embedding project whose training script, model script and notebook all
    asked `torch.cuda.isavalable()`).

    Also flags `torch.device` misspelled where it is read from `torch` (`torch.dev("cpu")`,
    `torch.Device(...)`, `torch.devcie`) and the `device=` keyword misspelled in a torch factory call
    (`torch.zeros(n, dev=x.device)`, `torch.ones_like(t, devcie=d)`; the factories of
    TDV502's list, `torch.hann_window` and its kin, and the `*_like` ones): the word cut short (`dev`,
    `devic`), one or two slips after its first three letters (`devices`, `devcie`), or capitalised. Post-hoc,
    from two held-out fixes of recall batches 98 and 99 (a graph-visualisation helper's `torch.zeros(n,
    dev=...)`, which an earlier fix had introduced, and a script whose CPU branch asked `torch.dev("cpu")`).

    ## Why is this bad?
    The module has no such attribute, so the line raises `AttributeError` (an import of it,
    `ImportError`) on every machine, with or without a GPU. When the line is a device check at the top
    of a script, nothing runs at all; when it sits in a rarely taken branch (a resume, an evaluation, a
    fallback), the crash waits for that branch, hours into a run. A factory given a keyword it does not
    take (`dev=`) raises `TypeError` the same way, on every machine.

    ## Example
    ```python
    device = torch.device("cuda" if torch.cuda.isavalable() else "cpu")
    ```

    ## Use instead
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ```

    ## Fix safety
    Unsafe: where one name is closest, the fix writes it (`is_available`; `torch.device`, `device=`). That is what
    the code means, but it changes what the code does: a line that always raised starts to run, and the code after it
    with it. A misspelled import is reported without a fix: its uses in the file would need it too.

    ## When it does not report
    - a name torch 2.13 has, or a submodule (`torch.cuda.comm`, `torch.cuda.nvtx`), or a private name;
    - a name more than two slips from every real one, two mistyped letters of a word of the same length
      (`is_fp16_supported`), a change of digits, or a name of under four letters (but `torch.dev`, above): another
      API, not a slip;
    - a name the file assigns (`torch.cuda.is_fp16_supported = ...`, a patch that installs it) or spells
      in a string (`hasattr(torch.cuda, "is_fp16_supported")`): the code knows the name may be missing;
    - another object's attribute (`self.cuda.isavalable`), and modules other than the three above;
    - `torch.device`, `torch.divide` and words nearer `divide` than `device` (`torch.divde`), a slip in the
      first three letters (`dvice`: the rule's selection keeps code by the words holding `dev`), words that only
      start with `dev` (`dev_id`, `devnull`, `device_ids`), and a misspelled keyword of any call but a torch
      factory (`model.to(dev=d)` of a class that may take it);
    - a name in an annotation Python never evaluates: every annotation of a module that imports `from __future__
      import annotations`, and a local variable's (`d: torch.Device = ...` in a function); a parameter's annotation
      without that import runs when the `def` does and is reported (post-hoc, from torch's own sources, whose
      postponed annotations write `torch.Device`).

    ## The error torch raises
    On every machine, CPU-only build and GPU alike:

    ```
    AttributeError: module 'torch.cuda' has no attribute 'isavalable'
    AttributeError: module 'torch' has no attribute 'dev'
    TypeError: zeros() got an unexpected keyword argument 'dev'
    ```
    """

    CODE = "TDV115"
    NAME = "misspelled-device-api"
    SUMMARY = ("a misspelled `torch.cuda` / `torch.mps` name (`torch.cuda.isavalable()`), `torch.device` or `device=`"
               " that raises on every machine")
    MESSAGE = "{module} has no attribute '{attr}', so this line raises {error} on every machine; {hint}"
    FIX = "unsafe"
    KEYWORD_MESSAGE = (
        "{function}() takes no keyword '{keyword}', so this line raises TypeError on every machine; "
        "did you mean device=?"
    )
    NEEDS = {"cuda", "mps", "*dev"}  # ``*dev``: a slip of ``device`` keeps its start (``dev``, ``devcie``)

    def __init__(self, context) -> None:
        super().__init__(context)
        self._functions = 0  # depth of ``def``s: a local variable's annotation is never evaluated
        self._local_annotation = False  # inside an ``x: T = ...`` of a function
        self._annotations: list[bool] = []  # per open annotation: does Python never evaluate it?
        self._postponed = _POSTPONED.search(context.source) is not None  # ``from __future__ import annotations``

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions += 1

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions -= 1

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._local_annotation = self._functions > 0

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._local_annotation = False

    def visit_Annotation(self, node: cst.Annotation) -> None:
        """``device: torch.Device``: typing that runs nowhere where annotations are postponed, or for a local."""
        self._annotations.append(self._postponed or self._local_annotation)

    def leave_Annotation(self, node: cst.Annotation) -> None:
        self._annotations.pop()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if any(self._annotations):
            return
        qualified = self.names.qualify(node)
        if qualified is None:
            return
        module, _, attr = qualified.rpartition(".")
        if module == "torch" and device_slip(attr) and not self._installed(attr):
            hint = "did you mean torch.device?"
            message = self.MESSAGE.format(module=module, attr=attr, error="AttributeError", hint=hint)
            self.report(node, message, fix=Fix(_renamer("device")) if attr == node.attr.value else None)
            return
        self._check(node, module, attr, "AttributeError", fixable=attr == node.attr.value)

    def visit_Call(self, node: cst.Call) -> None:
        """``torch.zeros(n, dev=x.device)``: a factory takes ``device=``, and no other spelling of it."""
        function = factory_name(self.names, node) or _like_factory(self.names.qualify(node.func))
        if function is None:
            return
        for arg in node.args:
            if arg.keyword is not None and device_slip(arg.keyword.value):
                message = self.KEYWORD_MESSAGE.format(function=function, keyword=arg.keyword.value)
                self.report(arg, message, fix=Fix(_keyword_renamer("device")))

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        module = dotted_name(node.module)
        for alias in node.names:
            if isinstance(alias.name, cst.Name):
                # No fix: the file's later uses of the imported name would need it too.
                self._check(alias.name, module or "", alias.name.value, "ImportError", fixable=False)

    def _check(self, node: cst.CSTNode, module: str, attr: str, error: str, fixable: bool) -> None:
        names = misspelled(module, attr)
        if not names or self._installed(attr):
            return
        alternatives = " or ".join(f"{module}.{name}" for name in names)
        hint = f"did you mean {alternatives}?"
        fix = Fix(_renamer(names[0])) if fixable and len(names) == 1 else None
        self.report(node, self.MESSAGE.format(module=module, attr=attr, error=error, hint=hint), fix=fix)

    def _installed(self, attr: str) -> bool:
        """The file assigns the name or spells it in a string (``hasattr(torch.cuda, "x")``,
        ``patch("torch.cuda.x")``): it may be installed, or is checked for. Comments do not count, nor a
        parameter's annotation and default (``device: torch.Device = None``): an assignment starts its statement."""
        assigned = re.compile(rf"(?:^|[;\n])\s*[\w.]*\.{re.escape(attr)}\s*=(?!=)")
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(self.context.source).readline))
        except (tokenize.TokenError, SyntaxError):
            return assigned.search(self.context.source) is not None
        code = []
        for token in tokens:
            if token.type == tokenize.STRING and re.search(rf"\b{re.escape(attr)}\b", token.string):
                return True
            if token.type in (tokenize.NEWLINE, tokenize.NL):
                code.append("\n")
            elif token.type not in (tokenize.COMMENT, tokenize.STRING):
                code.append(token.string)
        return assigned.search(" ".join(code).replace(" . ", ".")) is not None


_POSTPONED = re.compile(r"^from\s+__future__\s+import\s+[^#\n]*\bannotations\b", re.MULTILINE)


def _like_factory(qualified: "str | None") -> "str | None":
    """``torch.zeros_like`` and its kin, which take ``device=`` too."""
    return qualified if qualified in _LIKE_FACTORIES else None


_LIKE_FACTORIES = frozenset(
    f"torch.{kind}_like" for kind in ("zeros", "ones", "empty", "full", "rand", "randn", "randint")
)


def _keyword_renamer(name: str):
    def rename(node: cst.Arg) -> cst.Arg:
        return node.with_changes(keyword=cst.Name(name))
    return rename


def _renamer(name: str):
    def rename(node: cst.Attribute) -> cst.Attribute:
        return node.with_changes(attr=cst.Name(name))
    return rename
