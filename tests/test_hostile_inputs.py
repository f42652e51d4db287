"""Hostile inputs: every file yields findings or a one-line message, never a
traceback, within a time bound -- through the engine, the plugin under the
real ``flake8`` command, and the ``torchdevice`` command.

Each case states the exact TDV201 positions (line, 1-based column as both
commands print them), so newline, BOM, tab and encoding handling is checked
to the column, not just "does not crash". TDV201 is opt-in (its precision,
docs/precision.md), so the plugin and both commands are run with it selected.
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import sys
import time
import tokenize
from dataclasses import dataclass

import pytest

from cli_support import run_process
from conftest import run_flake8
from flake8_torchdevice.engine import check_source
from flake8_torchdevice.plugin import TorchDeviceChecker

# What every front end is given: the plugin's own rules plus the opt-in TDV201.
EXTEND_SELECT = "TDV201"

# CPU seconds one engine call may take on one hostile input (the slowest,
# 1000 nested conditional expressions, takes ~2 s; CPU time, so a loaded
# machine does not make the test flaky).
ENGINE_CPU_BOUND = 15.0


@dataclass(frozen=True)
class Hostile:
    name: str
    data: bytes
    found: tuple = ()  # ((line, col), ...) of TDV201; col as flake8 prints it
    problem: str = ""  # part of the one-line message when it cannot be analysed
    e999: bool = False  # ast rejects it: flake8 says E999, the engine says why
    readable: bool = True  # False: the CLI refuses to decode it (exit 2)
    under_flake8: bool = True  # False: flake8's own pyflakes crashes first
    silenced: tuple = ()  # found by the engine, dropped by ``# noqa`` in both commands
    # Deep nesting: either ``found``, or no finding and this message (LibCST's
    # recursion limit is the engine's business, not the contract).
    or_problem: str = ""

    def check(self, found: set, message) -> None:
        """``found``: what was reported; ``message``: the one-line problem or None."""
        if self.or_problem and message is not None:
            assert self.or_problem in message and "\n" not in message and not found, (self.name, message)
        elif self.problem:
            assert message is not None and self.problem in message and "\n" not in message, (self.name, message)
            assert found == set(), self.name
        else:
            assert message is None, (self.name, message)
            assert found == set(self.found), self.name


LOAD = b"torch.load(p)"
# TDV201 reports where the code can meet a machine without the saving GPU: every program
# below chooses the CPU on its import line (``device = 'cpu'``), which keeps its lines.
IMPORT_TEXT = "import torch; device = 'cpu'"
IMPORT = IMPORT_TEXT.encode()
# PEP 695 (type parameters, ``type`` statements) and PEP 701 (f-strings) parse from 3.12 on.
NEW_SYNTAX = sys.version_info >= (3, 12)
# Python 3.10's compile() raises ValueError, not SyntaxError, on a NUL byte: flake8
# itself crashes on such a file there, before any plugin runs.
NUL_CRASHES_FLAKE8 = sys.version_info < (3, 11)


def _new_syntax(name: str, data: bytes, error_line: int, found: tuple) -> Hostile:
    """Valid Python from 3.12 on, where the linter must report in it; E999 before."""
    if NEW_SYNTAX:
        return Hostile(name, data, found=found)
    return Hostile(name, data, problem=f"line {error_line}", e999=True)


CASES = [
    Hostile("syntax_error", IMPORT + b"\ndef f(:\n    torch.load(p)\n", problem="syntax error at line 2", e999=True),
    # LibCST 1.9 rejects a parenthesised annotated target that ast accepts:
    # where that statement is parsed the file gets a message; elsewhere the
    # rest of the file is still checked.
    Hostile(
        "libcst_rejects_here", IMPORT + b"\n(x): int = 1\nstate = torch.load(p)\n", problem="LibCST cannot parse"
    ),
    Hostile(
        "libcst_rejects_elsewhere",
        IMPORT + b"\n\n\ndef a():\n    (x): int = 1\n\n\ndef b(p):\n    return torch.load(p)\n",
        found=((9, 12),),
    ),
    # LibCST accepts these, Python 3.10's and 3.11's ast do not (PEP 695, PEP 701);
    # no Python accepts the 4300-digit int, the unknown \N{} name or the NUL byte.
    _new_syntax("pep695_def", IMPORT + b"\n\n\ndef f[T](x: T) -> T:\n    return torch.load(x)\n", 4, ((5, 12),)),
    _new_syntax("pep695_type", IMPORT + b"\ntype Path = str\nstate = torch.load(p)\n", 2, ((3, 9),)),
    _new_syntax("pep701", IMPORT + b"\nmsg = f\"{'a' + f\"{torch.load(p)}\"}\"\n", 2, ((2, 19),)),
    Hostile("long_int", IMPORT + b"\nn = " + b"9" * 5000 + b"\nstate = torch.load(p)\n", problem="4300", e999=True),
    Hostile(
        "bad_unicode_name",
        IMPORT + b"\ns = '\\N{NO SUCH NAME}'\nstate = torch.load(p)\n",
        problem="line 2",
        e999=True,
    ),
    Hostile(
        "nul_byte",
        IMPORT + b"\nstate = torch.load(p)  # \x00\n",
        problem="null bytes",
        e999=True,
        under_flake8=not NUL_CRASHES_FLAKE8,
    ),
    Hostile("non_utf8", IMPORT + b"\n# caf\xe9\nstate = torch.load(p)\n", found=((3, 9),), readable=False),
    Hostile(
        "latin1_cookie",
        b"# -*- coding: latin-1 -*-\nimport torch; device = 'cpu'\nname = 'caf\xe9'; state = torch.load(p)\n",
        found=((3, 24),),
    ),
    Hostile("utf8_bom", b"\xef\xbb\xbfimport torch; device = 'cpu'; state = torch.load(p)\n", found=((1, 39),)),
    Hostile("crlf", IMPORT + b"\r\n\r\ndef f(p):\r\n    return torch.load(p)\r\n", found=((4, 12),)),
    Hostile("cr_only", IMPORT + b"\r\rdef f(p):\r    return torch.load(p)\r", found=((4, 12),)),
    Hostile(
        "mixed_newlines",
        IMPORT + b"\r\nx = 1\ry = 2\n\ndef f(p):\r\n    return torch.load(p)\r\nz = torch.load(p)\n",
        found=((6, 12), (7, 5)),
    ),
    Hostile("tabs", IMPORT + b"\nif True:\n\tstate = torch.load(p)\n", found=((3, 10),)),
    Hostile("form_feeds", IMPORT + b"\n\x0c\ndef f(p):\n\x0c    return 1 \x0c+ torch.load(p)\n", found=((4, 18),)),
    # U+2028 and \x0c are line breaks to str.splitlines, not to Python.
    Hostile(
        "line_separators_in_strings",
        (IMPORT_TEXT + "\nsep = '\u2028\x0c'; a = torch.load(p)  # noqa: TDV201\nb = torch.load(p)\n").encode(),
        found=((3, 5),),
        silenced=((2, 17),),
    ),
    Hostile("non_ascii_before", (IMPORT_TEXT + "\nnom = 'é€😀'; state = torch.load(p)\n").encode(), found=((2, 22),)),
    Hostile("empty", b""),
    Hostile("only_comment_no_newline", b"# torch.load(p)"),
    Hostile("no_final_newline", IMPORT + b"\nstate = torch.load(p)", found=((2, 9),)),
    Hostile(
        "match_statement",
        IMPORT + b"\nmatch cmd:\n    case 'load':\n        state = torch.load(p)\n"
        b"    case _:\n        pass\nmatch = 1\n",
        found=((4, 17),),
    ),
    Hostile(
        "deep_parens_1000",
        IMPORT + b"\nx = " + b"(" * 1000 + LOAD + b")" * 1000 + b"\n",
        problem="nested",
        e999=True,
    ),
    Hostile("deep_not_300", IMPORT + b"\nx = " + b"not " * 300 + LOAD + b"\n", found=((2, 1205),)),
    # ast accepts 199 nested brackets (its limit), LibCST's recursive passes may
    # run out of stack: the finding or a message, never a RecursionError.
    Hostile(
        "deep_list_199",
        IMPORT + b"\nx = " + b"[" * 199 + LOAD + b"]" * 199 + b"\n",
        found=((2, 204),),
        or_problem="nested too deeply",
    ),
    Hostile(
        "deep_not_1000",
        IMPORT + b"\nx = " + b"not " * 1000 + LOAD + b"\n",
        found=((2, 4005),),
        or_problem="nested too deeply",
        under_flake8=False,  # pyflakes raises RecursionError on it, before any TDV code matters
    ),
]
IDS = [case.name for case in CASES]


def _text(data: bytes) -> str:
    """Decode as flake8 does: the PEP 263 / BOM encoding, else latin-1."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError):
        return data.decode("latin-1")


def _positions(violations) -> set:
    return {(v.line, v.col + 1) for v in violations}


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_engine(case):
    start = time.process_time()
    result = check_source(_text(case.data), strict=True)
    assert time.process_time() - start < ENGINE_CPU_BOUND
    found = _positions(result.violations)
    case.check(found - set(case.silenced), result.error)
    assert set(case.silenced) <= found or result.error


def test_engine_given_a_bom_in_the_text():
    """A caller that decoded with plain utf-8 passes the BOM on: it is not a
    character of line 1 (Python and both commands ignore it)."""
    result = check_source("\ufeffimport torch; device = 'cpu'; state = torch.load(p)\n", strict=True)
    assert (result.error, _positions(result.violations)) == (None, {(1, 39)})


@pytest.fixture
def plugin_with_tdv201(monkeypatch):
    """The plugin as flake8 sets it up under ``--extend-select=TDV201`` (restored afterwards)."""
    monkeypatch.setattr(TorchDeviceChecker, "_rules", TorchDeviceChecker._rules)
    TorchDeviceChecker.parse_options(argparse.Namespace(select=None, extend_select=[EXTEND_SELECT]))
    assert "TDV201" in {rule.CODE for rule in TorchDeviceChecker._rules}
    return TorchDeviceChecker


@pytest.mark.parametrize("case", [c for c in CASES if not c.e999], ids=lambda c: c.name)
def test_plugin_with_flake8s_tree(case, plugin_with_tdv201):
    """What flake8 hands the plugin: its ast tree and the decoded lines."""
    text = _text(case.data).removeprefix("\ufeff")
    lines = io.StringIO(text, newline=None).readlines()  # universal newlines, as flake8 reads files
    checker = plugin_with_tdv201(ast.parse("".join(lines)), lines)
    found = {(line, col + 1) for line, col, message, _ in checker.run() if message.startswith("TDV201")}
    if case.or_problem and not found:
        return  # the engine gave up with its message (checked in test_engine)
    assert found == {*case.found, *case.silenced}


LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>[A-Z]+\d+) ")


@pytest.fixture(scope="module")
def hostile_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    for case in CASES:
        (folder / f"{case.name}.py").write_bytes(case.data)
    return folder


def _by_file(output: str) -> dict:
    found: dict = {}
    for line in output.splitlines():
        match = LINE.match(line)
        assert match, f"not a finding line: {line!r}"
        name = match["path"].replace("\\", "/").rsplit("/", 1)[-1][: -len(".py")]
        found.setdefault(name, set()).add((int(match["line"]), int(match["col"]), match["code"]))
    return found


@pytest.mark.slow
def test_flake8(hostile_dir):
    # one option: a repeated --extend-exclude keeps only its last value
    skipped = "--extend-exclude=" + ",".join(f"{c.name}.py" for c in CASES if not c.under_flake8)
    start = time.monotonic()
    result = run_flake8("--isolated", f"--select=TDV,{EXTEND_SELECT},E999", "-j1", skipped, str(hostile_dir))
    assert time.monotonic() - start < 300
    assert result.returncode == 1 and result.stderr == "", result.stderr
    found = _by_file(result.stdout)
    for case in CASES:
        if not case.under_flake8:
            assert case.name not in found
        elif case.e999:
            assert {code for _, _, code in found[case.name]} == {"E999"}, case.name
        elif not (case.or_problem and case.name not in found):  # the plugin stays silent when it gives up
            assert found.get(case.name, set()) == {(line, col, "TDV201") for line, col in case.found}, case.name


def test_flake8_on_a_nul_byte(tmp_path):
    """E999 where compile() raises SyntaxError; on 3.10 flake8's own ast.parse
    raises ValueError first (upstream behaviour, not this plugin's)."""
    path = tmp_path / "nul.py"
    path.write_bytes(IMPORT + b"\nstate = torch.load(p)  # \x00\n")
    result = run_flake8("--isolated", "--select=TDV,E999", "-j1", str(path))
    if NUL_CRASHES_FLAKE8:
        assert result.returncode != 0 and result.stdout == ""
        assert "ValueError: source code string cannot contain null bytes" in result.stderr
        assert "flake8_torchdevice" not in result.stderr  # the crash is not in the plugin
    else:
        assert (result.returncode, result.stderr) == (1, "")
        assert result.stdout.startswith(f"{path}:1:1: E999 SyntaxError:") and "null bytes" in result.stdout


@pytest.mark.slow
def test_cli(hostile_dir):
    start = time.monotonic()
    result = run_process("--isolated", "--extend-select", EXTEND_SELECT, "-j1", ".", cwd=hostile_dir, timeout=300)
    assert time.monotonic() - start < 300
    out, err = result.stdout.decode(), result.stderr.decode()
    assert result.returncode == 2, err  # 2: the non-UTF-8 file cannot be decoded
    assert "Traceback" not in err
    messages = {}
    for line in err.splitlines():
        match = re.match(r"torchdevice: (?:\./)?(\w+)\.py: (.+)$", line)
        assert match, f"not a one-line message: {line!r}"
        messages[match[1]] = match[2]
    found = _by_file(out)
    for case in CASES:
        if not case.readable:
            assert "cannot decode" in messages[case.name] and case.name not in found
            continue
        reported = {(line, col) for line, col, code in found.get(case.name, set()) if code == "TDV201"}
        case.check(reported, messages.get(case.name))


# -- deep nesting, engine and plugin directly -------------------------------------

DEEP = {
    "not": "not " * 1000 + "torch.load(p)",
    "unary_minus": "-" * 1000 + "torch.load(p)",
    "lambda": "lambda: " * 1000 + "torch.load(p)",
    "conditional": "torch.load(p) if a else " * 1000 + "0",
    "attribute_chain": "torch.load(p)" + ".a" * 1000,
    "call_chain": "torch.load(p)" + "()" * 1000,
    "subscript_chain": "torch.load(p)" + "[0]" * 1000,
    "binary_left": " + ".join(["torch.load(p)"] * 1000),
    "nested_lists": "[" * 199 + "torch.load(p)" + "]" * 199,
    "parens_over_limit": "(" * 1000 + "torch.load(p)" + ")" * 1000,
}


@pytest.mark.parametrize("form", sorted(DEEP))
def test_deep_nesting_never_raises(form, plugin_with_tdv201):
    source = IMPORT_TEXT + "\nx = " + DEEP[form] + "\n"
    start = time.process_time()
    result = check_source(source, strict=True)
    assert time.process_time() - start < ENGINE_CPU_BOUND
    column = source.splitlines()[1].index("torch.load")
    if result.error is None:
        assert (2, column) in {(v.line, v.col) for v in result.violations}
    else:
        assert result.error in (
            "file is nested too deeply to analyse",
            "syntax error at line 2: too many nested parentheses",
        )
    try:
        tree = ast.parse(source)
    except (SyntaxError, RecursionError):
        return  # flake8 reports E999 and never calls the plugin
    list(plugin_with_tdv201(tree, source.splitlines(keepends=True)).run())


@pytest.mark.slow
def test_five_megabyte_file():
    """5 MB of functions with one finding at module level and one in a
    function near the end: exact positions, and a CPU bound relative to
    ``ast.parse`` of the same text (what flake8 pays before any plugin)."""
    block = "def f{i}(x):\n    y = x + 1\n    return y * 2\n\n\n"
    body = "".join(block.format(i=i) for i in range(5 * 2**20 // len(block.format(i=50000))))
    source = IMPORT_TEXT + "\n" + body + "def g(p):\n    return torch.load(p)\n\n\nstate = torch.load(p)\n"
    assert len(source) > 5 * 10**6
    last = source.count("\n")
    start = time.process_time()
    tree = ast.parse(source)
    parse_cpu = time.process_time() - start
    start = time.process_time()
    result = check_source(source, tree=tree, strict=True)
    engine_cpu = time.process_time() - start
    assert [(v.line, v.col) for v in result.violations] == [(last - 3, 11), (last, 8)]
    assert engine_cpu < max(2.0, 1.0 * parse_cpu), (engine_cpu, parse_cpu)
