"""``reparse.ParseCache``: the parts it joins are the text exactly, and checking
through it gives the same verdicts as one whole parse, edit after edit."""

from __future__ import annotations

import ast

import libcst as cst
import pytest

from fixture_cases import all_cases
from flake8_torchdevice.engine import check_source
from flake8_torchdevice.reparse import ParseCache
from flake8_torchdevice.selection import statement_start

CASES = all_cases()


def _findings(source: str, parts=None) -> list:
    result = check_source(source, parts=parts, strict=True)
    return [(v.line, v.col, v.code, v.message) for v in result.violations], result.error


def _parsed(cache: ParseCache, source: str) -> cst.Module:
    tree = ast.parse(source)
    lines = source.split("\n")
    return cache.parse("\n".join(lines), [statement_start(stmt) - 1 for stmt in tree.body])


@pytest.mark.exhaustive
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_every_fixture_joins_to_its_text_and_checks_alike(case):
    source = case.path.read_text(encoding="utf-8")
    cache = ParseCache()
    assert _parsed(cache, source).code == source
    assert _findings(source, cache) == _findings(source)
    assert _findings(source, cache) == _findings(source)  # the second time from the cache


def test_an_edit_sequence_checks_like_fresh_parses():
    cache = ParseCache()
    base = (CASES[0].path.read_text(encoding="utf-8"))
    edits = [
        base,
        base + "\n\ndef added(x):\n    return x.cuda()\n",
        base.replace("import torch", "import torch  # a comment", 1),
        "# only a comment\n\n" + base,
        base + "\n# trailing comment, no statement after it\n",
    ]
    for text in edits:
        assert _findings(text, cache) == _findings(text), text[:60]


@pytest.mark.parametrize("source", [
    "def f():\n  return 1\n\n\ndef g():\n    return 2\n",  # parts disagree on the indent unit
    "import torch\r\nx = torch.load('a')\r\ndevice = 'cpu'\r\n",  # CRLF
    "x = 1\n\n\n\n# a comment between parts\ndef f():\n    pass\n",
    "class A:\n    x = 1\n\n    def f(self):\n        return 2\n# end\n",
])
def test_conventions_and_comments_between_parts_keep_the_text(source):
    assert _parsed(ParseCache(), source).code == source


def test_a_part_that_does_not_parse_alone_falls_back_to_the_whole_text():
    cache = ParseCache()
    source = "x = (1,\n     2)\ny = 3\n"
    # A start inside the first statement splits it: the whole text is parsed instead.
    assert cache.parse(source.rstrip("\n"), [0, 1, 2]).code == source.rstrip("\n")
