"""TDV109: a command-line switch for CUDA that the command line cannot turn off."""

from __future__ import annotations

import re
from typing import Optional

from .._lazy import cst
from ..analysis.cli_options import hands_options_away
from ..analysis.code import argument, string_value
from ..rule import STATEMENT, Rule

# The option names a CUDA switch: ``--cuda``, ``--gpu``, ``--use-cuda``, ``--use_gpu``,
# ``--gpu_mode``, ``--with-cuda``; not ``--gpus``, ``--gpu-ids``, ``--no-cuda``, ``--cuda-device``.
_SWITCH = re.compile(r"(?:use|with|enable|on)?_?(?:cuda|gpu)(?:_?mode)?")
# A destination that says the opposite (``dest="no_cuda"``): the switch is a negative one.
_NEGATIVE = re.compile(r"(?:no|not|disable|without|skip|cpu)(?:_|$)|.*cpu")
# Parsers whose ``type=bool`` reads "false" as False (Lightning's CLI is built on jsonargparse).
_BOOL_AWARE = ("jsonargparse",)
_MESSAGES = {
    "type": (
        "type=bool makes every value given true ('{option} False' is True), so this CUDA switch "
        "cannot be turned off from the command line; use action='store_true' (or "
        "argparse.BooleanOptionalAction for --{name}/--no-{name})"
    ),
    "store_false": (
        "action='store_false' makes '{option}' turn CUDA off, so CUDA is on unless the flag is given "
        "and a run without a GPU fails by default; use action='store_true', or name the flag "
        "--no-{name} with dest='{dest}'"
    ),
    "always": (
        "action='store_true' with default=True: '{option}' is always on, so a run without a GPU "
        "cannot turn CUDA off; drop default=True, or use argparse.BooleanOptionalAction"
    ),
}


class CudaSwitchStuckOn(Rule):
    r"""**On by default.** Precision on held-out user code: 54 of 54 findings true or latent over the held-out
    batches v2-v88 with the rules of 2026-12-04, session of 18:37 (v88's first read 1 of 1, `--use_cuda` with
    `type=bool`); 13 of 13 over v2-v22 (4 of 4 at v22's first read). Its first read was 9 of 11: the two false ones
    were switches nothing reads, which it now leaves alone, so those projects are tune evidence for it since
    (docs/precision.md).

    ## What it does
    Flags an `argparse` option that switches CUDA on (`--cuda`, `--gpu`, `--use-cuda`,
    `--use_gpu`, `--gpu_mode`) where the command line cannot switch it off:
    - `type=bool`: argparse calls `bool("False")`, which is `True`: every value given turns
      the switch on, so `--cuda False` asks for CUDA;
    - `action="store_false"`: giving `--cuda` turns CUDA *off*, so CUDA is on for every run
      that does not give it, the opposite of what the flag's name says;
    - `action="store_true"` with `default=True`: the switch is on whatever is given.

    ## Why is this bad?
    The switch exists so that the script can run where there is no GPU: a laptop, a CI runner,
    a CPU-only container. With any of these three forms that run asks for CUDA anyway (by
    default, or even when the user writes `--cuda False`), and the first `.cuda()` the switch
    guards fails. The script's own `if args.cuda:` guards look right, so the mistake hides in
    the parser.

    ## Example
    ```python
    parser.add_argument("--cuda", action="store_false", help="use CUDA")
    parser.add_argument("--gpu", type=bool, default=True)
    ```

    ## Use instead
    ```python
    parser.add_argument("--cuda", action="store_true", help="use CUDA")
    parser.add_argument("--gpu", action=argparse.BooleanOptionalAction, default=True)
    ```

    ## Fix safety
    None: each fix changes the command line the script accepts (`--cuda False` becomes an
    error under `store_true`), and whether CUDA should be on by default is the author's choice.

    ## When it does not report
    - a negative switch (`--no-cuda`, `--cpu`, `--disable-gpu`, or `dest="no_cuda"`): stuck on, it
      keeps the run on the CPU, which works everywhere;
    - options that are not switches: `--gpu 0` (`type=int`), `--gpus`, `--gpu-ids`, `--device`;
    - a switch with its own string-to-bool parser (`type=str2bool`, `type=lambda s: s == "true"`),
      `action="store_true"` without `default=True`, or `argparse.BooleanOptionalAction`;
    - a switch this file never reads as a value (`args.cuda`, `opt.use_gpu`, `cuda=params.cuda`) and
      whose parsed options it never hands whole to code imported from another module (`GAN(args)`,
      `utils.get_network(args)`), which may read it: a switch nothing reads switches nothing;
    - files that import `jsonargparse`, whose `type=bool` reads `false` as False.

    ## The error torch raises
    On a machine without a GPU, where the switch guards a `.cuda()` (a CPU-only build of torch):

    ```
    AssertionError: Torch not compiled with CUDA enabled
    ```

    On a CUDA build with no GPU visible:

    ```
    RuntimeError: No CUDA GPUs are available
    ```
    """

    CODE = "TDV109"
    NAME = "cuda-switch-stuck-on"
    SUMMARY = "a command-line CUDA switch that cannot be turned off (`type=bool`, `store_false` on `--cuda`)"
    MESSAGE = _MESSAGES["type"]
    NEEDS = [{".add_argument("}, {"*cuda", "*gpu"}]
    SCOPE = STATEMENT
    # Where the file reads the switch (``if args.cuda:``): every such read names CUDA or the GPU.
    READS = frozenset({"*cuda", "*gpu"})
    READS_SCOPE = STATEMENT

    def __init__(self, context) -> None:
        super().__init__(context)
        self._called: set[int] = set()  # ids of called functions: ``model.cuda()`` reads no switch
        self._read: set[str] = set()  # attribute names read as values: ``args.cuda``
        self._stuck: list[tuple] = []  # (call, its destination, message, statement)

    def visit_Call(self, node: cst.Call) -> None:
        self._called.add(id(node.func))
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "add_argument"):
            return
        option = _switch_option(node)
        if option is None or self.names.imports_any(_BOOL_AWARE):
            return
        dest = _keyword_string(node, "dest")
        if dest is not None and _NEGATIVE.match(_normal(dest)):
            return
        form = _stuck_form(node, self.names)
        if form is not None:
            name = option.lstrip("-")
            dest = _normal(dest or name)
            message = _MESSAGES[form].format(option=option, name=name, dest=dest)
            self._stuck.append((node, dest, message, self.context.statement))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        # ``args.cuda`` as a value; not ``torch.cuda`` (a module: ``torch.cuda.is_available()``).
        if id(node) not in self._called and self.names.qualify(node) is None:
            self._read.add(node.attr.value)

    def leave_Module(self, node: cst.Module) -> None:
        handed = None  # asked once, and only for a switch the file does not read itself
        for call, dest, message, statement in self._stuck:
            if dest not in self._read and handed is None:
                handed = hands_options_away(self.context.source)
            if dest in self._read or handed:
                self.report(call, message, statement=statement)


def _normal(name: str) -> str:
    return name.lstrip("-").replace("-", "_").lower()


def _switch_option(call: cst.Call) -> Optional[str]:
    """The option string that names a CUDA switch (``"--cuda"``), if every option string does."""
    options = []
    for arg in call.args:
        if arg.keyword is not None or arg.star:
            break
        text = string_value(arg.value)
        if text is None or not text.startswith("-"):
            return None  # a positional argument, or a name made at run time
        options.append(text)
    if not options or not all(_SWITCH.fullmatch(_normal(text)) for text in options):
        return None
    return max(options, key=len)


def _keyword(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    arg = argument(call, None, name)
    return None if arg is None else arg.value


def _keyword_string(call: cst.Call, name: str) -> Optional[str]:
    value = _keyword(call, name)
    return None if value is None else string_value(value)


def _stuck_form(call: cst.Call, names) -> Optional[str]:
    """Which of the three forms ``call`` is: ``"type"``, ``"store_false"``, ``"always"``, or None."""
    kind = _keyword(call, "type")
    if isinstance(kind, cst.Name) and kind.value == "bool" and names.qualify(kind) in (None, "bool"):
        return "type"
    action = _keyword_string(call, "action")
    if action == "store_false":
        return "store_false"
    default = _keyword(call, "default")
    if action == "store_true" and isinstance(default, cst.Name) and default.value == "True":
        return "always"
    return None
