"""TDV115: a misspelled device API (``torch.cuda.isavalable()``), which raises on every machine."""

from __future__ import annotations

import io
import re
import tokenize
from .._lazy import cst
from ..analysis.device_api import misspelled
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

    ## Why is this bad?
    The module has no such attribute, so the line raises `AttributeError` (an import of it,
    `ImportError`) on every machine, with or without a GPU. When the line is a device check at the top
    of a script, nothing runs at all; when it sits in a rarely taken branch (a resume, an evaluation, a
    fallback), the crash waits for that branch, hours into a run.

    ## Example
    ```python
    device = torch.device("cuda" if torch.cuda.isavalable() else "cpu")
    ```

    ## Use instead
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ```

    ## Fix safety
    Unsafe: where one name is closest, the fix writes it (`is_available`). That is what the code means,
    but it changes what the code does: a line that always raised starts to run, and the code after it
    with it. A misspelled import is reported without a fix: its uses in the file would need it too.

    ## When it does not report
    - a name torch 2.13 has, or a submodule (`torch.cuda.comm`, `torch.cuda.nvtx`), or a private name;
    - a name more than two slips from every real one, two mistyped letters of a word of the same length
      (`is_fp16_supported`), a change of digits, or a name of under four letters: another API, not a slip;
    - a name the file assigns (`torch.cuda.is_fp16_supported = ...`, a patch that installs it) or spells
      in a string (`hasattr(torch.cuda, "is_fp16_supported")`): the code knows the name may be missing;
    - another object's attribute (`self.cuda.isavalable`), and modules other than the three above.

    ## The error torch raises
    On every machine, CPU-only build and GPU alike:

    ```
    AttributeError: module 'torch.cuda' has no attribute 'isavalable'
    ```
    """

    CODE = "TDV115"
    NAME = "misspelled-device-api"
    SUMMARY = "a misspelled `torch.cuda` / `torch.mps` name (`torch.cuda.isavalable()`) that raises on every machine"
    MESSAGE = "{module} has no attribute '{attr}', so this line raises {error} on every machine; {hint}"
    FIX = "unsafe"
    NEEDS = {"cuda", "mps"}

    def visit_Attribute(self, node: cst.Attribute) -> None:
        qualified = self.names.qualify(node)
        if qualified is None:
            return
        module, _, attr = qualified.rpartition(".")
        self._check(node, module, attr, "AttributeError", fixable=attr == node.attr.value)

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
        ``patch("torch.cuda.x")``): it may be installed, or is checked for. Comments do not count."""
        assigned = re.compile(rf"\.{re.escape(attr)}\s*=(?!=)")
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(self.context.source).readline))
        except (tokenize.TokenError, SyntaxError):
            return assigned.search(self.context.source) is not None
        code = []
        for token in tokens:
            if token.type == tokenize.STRING and re.search(rf"\b{re.escape(attr)}\b", token.string):
                return True
            if token.type not in (tokenize.COMMENT, tokenize.STRING):
                code.append(token.string)
        return assigned.search(" ".join(code).replace(" . ", ".")) is not None


def _renamer(name: str):
    def rename(node: cst.Attribute) -> cst.Attribute:
        return node.with_changes(attr=cst.Name(name))
    return rename
