"""The engine's own mechanics: alias resolution, statement selection, no crashes."""

from __future__ import annotations

import ast

import libcst as cst
import pytest

from flake8_torchdevice.engine import check_source
from flake8_torchdevice.names import resolver_from_ast, update_from_cst
from flake8_torchdevice.rules.tdv201 import TorchLoadWithoutMapLocation
from flake8_torchdevice.rule import CLASS, FUNCTION, STATEMENT
from flake8_torchdevice.selection import CONTEXT, LARGE_STATEMENT_LINES, Hit, StatementIndex, compact, lines_to_keep

MEMBER = FUNCTION  # a hit in a function keeps that function (or method) alone


def keep_for(source: str, *hits: tuple[int, str]) -> set:
    return lines_to_keep(StatementIndex(ast.parse(source)), [Hit(line, scope) for line, scope in hits])


def _qualify(source: str, expr: str):
    resolver = resolver_from_ast(ast.parse(source))
    return resolver.qualify(cst.parse_expression(expr))


@pytest.mark.parametrize(
    "source, expr, expected",
    [
        ("import torch as th", "th.load", "torch.load"),
        ("from torch import load as tl", "tl", "torch.load"),
        ("from torch.nn import DataParallel as DP", "DP", "torch.nn.DataParallel"),
        ("import torch.nn.parallel as par", "par.DistributedDataParallel", "torch.nn.parallel.DistributedDataParallel"),
        ("import torch.nn", "torch.nn.DataParallel", "torch.nn.DataParallel"),
        ("import torch\nf = torch.load", "f", "torch.load"),
        ("try:\n    import torch as T\nexcept ImportError:\n    T = None", "T.load", "torch.load"),
        ("import torch\ntorch = make_fake()", "torch.load", None),
        ("try:\n    import torch as T\nexcept ImportError:\n    pass", "T.load", "torch.load"),
        ("from torch import load\ndef load(p): return p", "load", None),
        ("import json", "json.load", None),
        ("from . import torch", "torch.load", None),
        ("from torch import *", "load", None),
        # A star import of the project's own module brings the conventional names the file reads and never binds.
        ("from utils import *\ntorch.load(p)", "torch.load", "torch.load"),
        ("from .common import *\nm = nn.Linear(2, 3)", "nn.DataParallel", "torch.nn.DataParallel"),
        ("from utils import *\nF.relu(nn.Linear(2, 3))", "F.relu", "torch.nn.functional.relu"),
        ("from utils import *\nF.pad(x)", "F.pad", None),  # F without nn: torchvision's transforms use it too
        ("from utils import *\nnp.asarray(x)", "np.asarray", "numpy.asarray"),
        ("from utils import *\nload = torch.load", "load", "torch.load"),
        ("import numpy as np\nfrom utils import *\nnp.asarray(x)", "np.asarray", "numpy.asarray"),
        ("from utils import *\ntorch = backend()\ntorch.load(p)", "torch.load", None),  # the file binds it
        ("from utils import *\ndef f(torch):\n    torch.load(p)", "torch.load", None),
        ("from utils import *\ndef f():\n    global torch\ntorch.load(p)", "torch.load", None),
        ("from torch.nn import *\ntorch.load(p)", "torch.load", None),  # a tracked module's star: its names
        ("from utils import *", "torch.load", None),  # the file never reads torch
        ("import numpy as torch", "torch.load", "numpy.load"),  # NumPy, tracked for TDV603: not torch.load
        ("import torch", "torch.arange(6).view", None),  # a call inside the chain
        ("import torch", "torch.nn.Module", "torch.nn.Module"),
    ],
)
def test_alias_resolution(source, expr, expected):
    assert _qualify(source, expr) == expected


def test_star_import_makes_a_script_a_torch_script():
    """``from utils import *`` is how a script reaches torch: its rules see ``torch.save``/``torch.load``
    and the flow as in a file that imports torch itself, and ``imports_any`` says numpy where ``np`` came so."""
    resolver = resolver_from_ast(ast.parse("from utils import *\nx = np.zeros(3)\n"))
    assert resolver.imports_any(("numpy",)) and not resolver.imports_any(("torch",))
    source = ('from models import *\n\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
              "model = Net().to(device)\nmodel.load_state_dict(torch.load(args.ckpt))\n")
    found = check_source(source, rules=(TorchLoadWithoutMapLocation,), strict=True)
    assert found.error is None and [v.line for v in found.violations] == [5]
    assert check_source(source.replace("from models import *", "from models import Net"),
                        rules=(TorchLoadWithoutMapLocation,), strict=True).violations == []


def test_imports_inside_parsed_code_update_the_map():
    resolver = resolver_from_ast(ast.parse("x = 1"))
    for statement in cst.parse_module("from torch import load as grab\nother = grab\n").body:
        for node in (statement, *getattr(statement, "body", ())):
            update_from_cst(resolver, node)
    assert resolver.resolve_dotted("other") == "torch.load"


SOURCE = '''\
import torch

CONSTANT = 1


class Model(torch.nn.Module):
    size = 3

    def forward(self, x):
        return x

    @staticmethod
    def restore(path):
        return torch.load(path)


def helper():
    return 2
'''


def test_member_scope_keeps_only_the_method_and_its_class_header():
    index = StatementIndex(ast.parse(SOURCE))
    hit = SOURCE.splitlines().index("        return torch.load(path)") + 1
    keep = lines_to_keep(index, [Hit(hit, MEMBER)])
    kept_text, numbers = compact(SOURCE.split("\n"), keep)
    assert "class Model(torch.nn.Module):" in kept_text
    assert "@staticmethod" in kept_text and "return torch.load(path)" in kept_text
    assert "def forward" not in kept_text and "def helper" not in kept_text and "CONSTANT" not in kept_text
    # Each kept line maps back to its original number, columns unchanged.
    assert [SOURCE.split("\n")[n - 1] for n in numbers] == kept_text.split("\n")
    cst.parse_module(kept_text)  # still valid Python


def test_toplevel_scope_keeps_the_whole_class():
    index = StatementIndex(ast.parse(SOURCE))
    hit = SOURCE.splitlines().index("        return torch.load(path)") + 1
    kept_text, _ = compact(SOURCE.split("\n"), lines_to_keep(index, [Hit(hit, CLASS)]))
    assert "def forward" in kept_text and "def helper" not in kept_text


def test_module_level_hit_keeps_all_module_level_code():
    source = "import torch\nmodel = 1\ndef f():\n    pass\nstate = torch.load('x')\n"
    keep = keep_for(source, (5, MEMBER))
    assert keep == {1, 2, 5}


def test_module_level_hit_skips_huge_statements_without_a_hit():
    table = "TABLE = [\n" + "    1,\n" * LARGE_STATEMENT_LINES + "]\n"
    source = "import torch\n" + table + "model = torch.load('x')\n"
    hit = source.count("\n")  # the last line
    keep = keep_for(source, (hit, MEMBER))
    assert keep == {1, hit}
    # ...a hit inside a huge literal table keeps its row, with the lines that open and close it...
    keep = keep_for(source, (3, MEMBER))
    assert keep == {1, 2, 3, hit - 1, hit}
    # ...and a hit inside any other huge statement keeps all of it.
    call = "TABLE = dict(\n" + "    a=1,\n" * LARGE_STATEMENT_LINES + ")\n"
    source = "import torch\n" + call + "model = torch.load('x')\n"
    keep = keep_for(source, (3, MEMBER))
    assert set(range(2, source.count("\n"))) <= keep


def test_reports_land_on_original_positions_after_pruning():
    result = check_source(SOURCE, strict=True)
    assert [(v.code, v.line, v.col) for v in result.violations] == [("TDV201", 14, 15)]
    assert SOURCE.splitlines()[13][15:].startswith("torch.load(")


def test_file_without_needed_words_is_never_given_to_libcst(monkeypatch):
    from flake8_torchdevice import engine

    monkeypatch.setattr(engine, "_analyse", lambda *args: pytest.fail("LibCST stage reached"))
    assert check_source("import torch\nx = torch.save(1, 'a')\n", rules=[TorchLoadWithoutMapLocation]).violations == []


def test_a_syntax_error_is_reported_for_every_file_even_without_torch():
    assert check_source("def (:\n", rules=[TorchLoadWithoutMapLocation]).error.startswith("syntax error at line 1")


def test_syntax_error_is_a_message_not_an_exception():
    result = check_source("import torch\ntorch.load(\n")
    assert result.violations == [] and result.error.startswith("syntax error at line")


def test_form_feed_and_crlf_keep_lines_right():
    source = "import torch; device = 'cpu'\r\n\x0c\r\nx = torch.load('a')\r\n"
    result = check_source(source, strict=True)
    assert [(v.line, v.col) for v in result.violations] == [(3, 4)]


def test_internal_errors_do_not_escape_unless_strict(monkeypatch):
    def boom(self, node):
        raise RuntimeError("rule bug")

    monkeypatch.setattr(TorchLoadWithoutMapLocation, "visit_Call", boom)
    source = "import torch\ntorch.load('x')\n"
    result = check_source(source)
    assert result.violations == [] and "rule bug" in result.error
    with pytest.raises(RuntimeError):
        check_source(source, strict=True)


NESTED = """\
import torch


class Outer:
    class Inner(torch.nn.Module):
        def first(self, path):
            return torch.load(path)

        def second(self):
            return 2

    def outer_method(self):
        return 3
"""


def test_member_scope_descends_into_nested_classes():
    hit = NESTED.splitlines().index('            return torch.load(path)') + 1
    keep = keep_for(NESTED, (hit, MEMBER))
    text, _ = compact(NESTED.split("\n"), keep)
    assert "class Outer:" in text and "class Inner(torch.nn.Module):" in text and "def first" in text
    assert "def second" not in text and "def outer_method" not in text
    cst.parse_module(text)
    assert [v.line for v in check_source(NESTED, strict=True).violations] == [hit]


def test_statement_scope_keeps_only_the_module_level_statement():
    source = "import torch\nA = 1\nx = 'cuda:1'\nB = 2\n"
    assert keep_for(source, (3, STATEMENT)) == {3}
    assert keep_for(source, (3, MEMBER)) == {1, 2, 3, 4}


def test_reports_made_after_the_walk_keep_their_own_statement(monkeypatch):
    """TDV101 reports in leave_Module; each report must name the statement it
    was seen in, or finding its position costs a search of every statement
    (quadratic: 1.5x per line at 50k lines before this)."""
    from flake8_torchdevice import positions

    generated = []
    original = positions._statement_positions

    def recording(module, index, numbers, starts):
        generated.append(index)
        return original(module, index, numbers, starts)

    monkeypatch.setattr(positions, "_statement_positions", recording)
    moves = "".join(f"\n\ndef move_{i}(x, device):\n    return x.to(device)\n" for i in range(5))
    source = "import torch\n\n\ndef first(x):\n    return x.cuda()\n" + moves
    found = check_source(source, strict=True).violations
    assert [(v.line, v.code) for v in found] == [(5, "TDV101")]
    assert generated == [0]  # ``first`` alone (the first parsed statement), not the last then a search


@pytest.mark.parametrize("block", ["if FLAG:", "try:", "match MODE:\n    case 1:"])
def test_defs_nested_in_module_level_blocks_are_module_code(block):
    """A def under a module-level ``if``/``try``/``match`` belongs to that
    statement: a hit in it keeps the statement, and (module code being one
    scope for data flow) all small module-level statements."""
    head = block + "\n"
    indent = " " * (4 * head.count(":"))
    tail = "except ImportError:\n    pass\n" if block == "try:" else ""
    source = head + f"{indent}def f(x):\n{indent}    return x\n" + tail + "y = 1\n"
    body_line = head.count("\n") + 2
    everything = set(range(1, source.count("\n") + 1))
    assert keep_for(source, (body_line, FUNCTION)) == everything
    assert keep_for(source, (source.count("\n"), STATEMENT)) == {source.count("\n")}


def test_a_word_in_a_class_header_keeps_the_header_and_a_body_to_parse():
    source = "import torch\n@requires('cuda')\nclass T:\n    a = 1\n\n    def f(self):\n        return 2\n"
    keep = keep_for(source, (2, STATEMENT))
    text, _ = compact(source.split("\n"), keep)
    assert keep == {2, 3, 4}
    cst.parse_module(text)


def test_context_words_keep_module_and_class_level_guards_only():
    source = (
        "import sys, torch\n"
        "if torch.cuda.device_count() < 2:\n"
        "    sys.exit(0)\n"
        "class T:\n"
        "    pytestmark = skip\n"
        "    def f(self):\n"
        "        return x.cuda()\n"
        "    def g(self):\n"
        "        sys.exit(1)\n"
        "def h():\n"
        "    quit()\n"
    )
    # A context word alone keeps module-level code, not functions or unkept classes...
    assert keep_for(source, (3, CONTEXT), (5, CONTEXT), (9, CONTEXT), (11, CONTEXT)) == {2, 3}
    # ...and the class-level statements of a class that is kept anyway.
    assert keep_for(source, (7, STATEMENT), (5, CONTEXT), (9, CONTEXT)) == {4, 5, 6, 7}


def test_a_rule_whose_groups_meet_in_one_unit_parses_only_such_units(monkeypatch):
    from flake8_torchdevice import engine
    from flake8_torchdevice.rules.tdv103 import ToArgumentsSwapped as Swapped

    assert Swapped.TOGETHER
    apart = "import torch\ndef a(x):\n    return x.to('cuda')\ndef b(x):\n    return x.dtype\n"
    monkeypatch.setattr(engine, "_analyse", lambda *args: pytest.fail("a unit without both groups was parsed"))
    assert check_source(apart, rules=[Swapped], strict=True).violations == []
    monkeypatch.undo()
    together = "import torch\ndef a(x):\n    return x.to(torch.float16, 'cuda')\n"
    assert [v.code for v in check_source(together, rules=[Swapped], strict=True).violations] == ["TDV103"]


def test_definition_groups_meet_with_module_code_and_a_class_init():
    """``TOGETHER = DEFINITION``: a method that only builds a CPU tensor is parsed
    (and judged) with its class's ``__init__`` that places the model; module
    code that places the model is parsed for the function that reads it; a
    top-level definition whose words do not meet the groups with module code's
    is not parsed at all."""
    from flake8_torchdevice.rule import DEFINITION
    from flake8_torchdevice.rules.tdv601 import CpuMeetsPlaced

    assert CpuMeetsPlaced.TOGETHER == DEFINITION
    in_class = (
        "import torch\n\n\nclass P:\n    def __init__(self, device):\n"
        "        self.model = torch.nn.Linear(2, 2).to(device)\n\n"
        "    def predict(self):\n        x = torch.ones(3, 2)\n        return self.model(x)\n"
    )
    assert [(v.code, v.line) for v in check_source(in_class, rules=[CpuMeetsPlaced], strict=True).violations] == [
        ("TDV601", 10)
    ]
    at_module = (
        "import torch\ndevice = 'cuda'\nmodel = torch.nn.Linear(2, 2).to(device)\n\n\n"
        "def predict():\n    return model(torch.ones(3, 2))\n"
    )
    assert [v.line for v in check_source(at_module, rules=[CpuMeetsPlaced], strict=True).violations] == [7]


def test_a_definition_that_cannot_meet_the_groups_is_not_parsed(monkeypatch):
    from flake8_torchdevice import engine
    from flake8_torchdevice.rules.tdv601 import CpuMeetsPlaced

    apart = "import torch\n\n\ndef a(x):\n    return x.to('cuda')\n\n\ndef b():\n    return torch.ones(2)\n"
    monkeypatch.setattr(engine, "_analyse", lambda *args: pytest.fail("a definition without both groups was parsed"))
    assert check_source(apart, rules=[CpuMeetsPlaced], strict=True).violations == []


def test_the_whole_file_run_ignores_needs_so_that_it_can_refute_them():
    """``full=True`` is the reference the equivalence tests hold each rule's
    ``NEEDS`` to: it runs a rule whatever words the file holds, so a finding
    without them shows up as a difference instead of vanishing on both sides."""
    from flake8_torchdevice.rule import Rule

    class EveryCall(Rule):
        CODE = "TDV999"
        NEEDS = {"a_word_no_file_holds"}

        def visit_Call(self, node):
            self.report(node, "a call")

    source = "import torch\n\n\ndef f():\n    return torch.zeros(1)\n"
    assert [v.line for v in check_source(source, rules=[EveryCall], full=True, strict=True).violations] == [5]
    assert check_source(source, rules=[EveryCall], strict=True).violations == []
