"""Property-based fuzzing of the engine (hypothesis + hypothesmith).

1. Generated programs never make the engine raise (``strict=True``). Bare
   hypothesmith output almost never mentions torch, so no rule would run:
   each program gets its identifiers renamed to torch-ish names (an identifier
   for an identifier keeps it valid Python) and a probe that triggers every
   rule at module level, so the generated module-level code is parsed and
   walked by every rule.
2. Findings are stable under formatting: each fixture, re-indented, with
   extra parentheses and with comment lines inserted, gives the same
   (code, line) set, lines counted without the inserted comments.

CI runs a bounded number of examples; ``TDV_FUZZ_EXAMPLES=5000 pytest
tests/test_fuzz.py`` runs a longer search (and adds LibCST-based programs).
"""

from __future__ import annotations

import io
import keyword
import os
import random
import tokenize
import warnings

import hypothesmith
import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fixture_cases import all_cases
from flake8_torchdevice.engine import check_source

pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")  # hypothesmith compiles odd programs

EXAMPLES = int(os.environ.get("TDV_FUZZ_EXAMPLES", "60"))
LONG = "TDV_FUZZ_EXAMPLES" in os.environ
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,  # no .hypothesis/ folder in the tree
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

# Names the rules' triggers and visitors care about.
TORCHISH = (
    "torch", "nn", "load", "cuda", "to", "device", "cpu", "DataParallel", "DistributedDataParallel",
    "Module", "self", "zeros", "ones", "tensor", "empty", "randn", "arange", "register_buffer",
    "map_location", "is_available", "set_device", "torchmetrics", "Metric", "model", "x", "module",
)
PROBE = '''
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel


def _tdv_probe(model, path, x):
    state = torch.load(path)
    model = nn.DataParallel(model).cuda()
    y = torch.zeros(3, device="cuda:1")
    x.cuda(0)
    if torch.cuda.is_available():
        x = x.to("cuda")
    return DistributedDataParallel(model, device_ids=[0]), state, y


class _TdvModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.total = torch.zeros(1)

    def forward(self, x):
        self.total += x.sum()
        return x.cuda()


state = torch.load(path)
model = nn.DataParallel(model).cuda()
'''


def rename_identifiers(source: str, rng: random.Random) -> str:
    """Replace every identifier with a torch-ish one, consistently; leaves
    keywords (and soft keywords, which tokenize reports as NAME) alone."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return source
    mapping: dict = {}
    lines = source.splitlines(keepends=True)
    edits = []
    for tok in tokens:
        if tok.type == tokenize.NAME and not keyword.iskeyword(tok.string) and not keyword.issoftkeyword(tok.string):
            new = mapping.setdefault(tok.string, rng.choice(TORCHISH))
            edits.append((tok.start, tok.end, new))
    for (row, col), (end_row, end_col), new in reversed(edits):
        if row != end_row:
            continue
        line = lines[row - 1]
        lines[row - 1] = line[:col] + new + line[end_col:]
    return "".join(lines)


def _program_strategy():
    grammar = hypothesmith.from_grammar()
    return st.one_of(grammar, hypothesmith.from_node()) if LONG else grammar


@pytest.mark.slow
@FUZZ
@given(program=_program_strategy(), seed=st.integers(0, 2**32 - 1))
def test_generated_programs_never_make_the_engine_raise(program, seed):
    renamed = rename_identifiers(program, random.Random(seed))
    for source in (program, renamed, "import torch\n" + renamed + "\n" + PROBE, PROBE + "\n" + renamed):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings from ast.parse of odd programs
            result = check_source(source, strict=True)
        assert result.error is None or "\n" not in result.error


# -- formatting stability -----------------------------------------------------------

MARK = "# tdv-fuzz: inserted"


class _Reformat(cst.CSTTransformer):
    """Re-indent every block, parenthesise some calls and arguments, insert
    comment lines before some statements and inside some bracketed lists."""

    def __init__(self, rng: random.Random, indent, parens: float, comments: float) -> None:
        super().__init__()
        self.rng, self.indent, self.parens, self.comments = rng, indent, parens, comments

    def _chance(self, p: float) -> bool:
        return p > 0 and self.rng.random() < p

    def _comment(self) -> cst.EmptyLine:
        return cst.EmptyLine(indent=True, comment=cst.Comment(MARK))

    def leave_IndentedBlock(self, original, updated):
        return updated.with_changes(indent=self.indent) if self.indent is not None else updated

    def leave_Call(self, original, updated):
        if self._chance(self.parens):
            return updated.with_changes(lpar=[cst.LeftParen(), *updated.lpar], rpar=[*updated.rpar, cst.RightParen()])
        return updated

    def leave_Arg(self, original, updated):
        if not updated.star and self._chance(self.parens):
            value = updated.value
            return updated.with_changes(
                value=value.with_changes(lpar=[cst.LeftParen(), *value.lpar], rpar=[*value.rpar, cst.RightParen()])
            )
        return updated

    def leave_Comma(self, original, updated):
        after = updated.whitespace_after
        if isinstance(after, cst.ParenthesizedWhitespace) and self._chance(self.comments):
            lines = [*after.empty_lines, self._comment()]
            return updated.with_changes(whitespace_after=after.with_changes(empty_lines=lines))
        return updated

    def _statement(self, original, updated):
        if self._chance(self.comments):
            return updated.with_changes(leading_lines=[*updated.leading_lines, self._comment()])
        return updated

    leave_SimpleStatementLine = leave_FunctionDef = leave_ClassDef = leave_If = leave_For = leave_While = _statement
    leave_With = leave_Try = _statement


def _relative(violations, text: str) -> set:
    """(code, line) with inserted comment lines not counted."""
    inserted, shift = [], 0
    for line in text.split("\n"):
        shift += line.strip() == MARK
        inserted.append(shift)
    return {(v.code, v.line - inserted[v.line - 1]) for v in violations}


CASES = [case for case in all_cases() if case.expected]


@pytest.mark.slow
@FUZZ
@given(
    case=st.sampled_from(CASES),
    indent=st.sampled_from([None, "  ", "   ", "        ", "\t"]),
    parens=st.sampled_from([0.0, 0.3, 1.0]),
    comments=st.sampled_from([0.0, 0.3, 1.0]),
    seed=st.integers(0, 2**32 - 1),
)
def test_findings_are_stable_under_formatting(case, indent, parens, comments, seed):
    source = case.path.read_text(encoding="utf-8")
    module = cst.parse_module(source)
    text = module.visit(_Reformat(random.Random(seed), indent, parens, comments)).code
    before = check_source(source, strict=True)
    after = check_source(text, strict=True)
    assert before.error is None and after.error is None, after.error
    assert _relative(after.violations, text) == {(v.code, v.line) for v in before.violations}


def test_the_reformatter_really_changes_the_text():
    """Guard against a property that holds because nothing changed."""
    source = "def f(p):\n    return g(a,\n             b)\n"
    text = cst.parse_module(source).visit(_Reformat(random.Random(0), "\t", 1.0, 1.0)).code
    assert text.count(MARK) == 3 and "\treturn" in text and "((a)" in text
    assert _relative([], text) == set()


def test_renaming_keeps_programs_valid():
    program = "def f(a, *b, c=1, **d):\n    return [a for a in b if c] + f'{d}'\nmatch = 1\n"
    renamed = rename_identifiers(program, random.Random(1))
    compile(renamed, "<renamed>", "exec")
    assert "def f(" not in renamed and "return [" in renamed and "match = 1" in renamed  # soft keywords stay


# -- Parentheses the formatting property once found the rules blind to ---------


def test_parenthesised_discarded_move_is_reported():
    source = "import torch\n\n\ndef f():\n    x = torch.zeros(3)\n    (x.to('cuda'))\n"
    assert [(v.code, v.line) for v in check_source(source, strict=True).violations] == [("TDV102", 6)]


def test_parenthesised_local_base_class_is_seen():
    source = (
        "import torch\nfrom torch.nn import Module as Base\n\n\nclass A((Base)):\n    pass\n\n\n"
        "class B(A):\n    def __init__(self):\n        super().__init__()\n        self.t = torch.zeros(2)\n\n"
        "    def forward(self, x):\n        return x * self.t\n"
    )
    assert [(v.code, v.line) for v in check_source(source, strict=True).violations] == [("TDV501", 12)]
