"""Every ``.py`` file of the installed torch package (2285 files, 1.2M lines
with torch 2.13) through the engine with ``strict=True`` (the default rules and
TDV101/TDV201 on every file, every rule on every tenth: ``corpus_support``):
zero exceptions. A crash regression net over real code -- and over real
hostile code: torch ships a PEP 695 file that Python 3.11 cannot parse.
"""

from __future__ import annotations

import ast
import warnings

import pytest

from corpus_support import torch_corpus

pytest.importorskip("torch")

# CPU seconds for the slowest single file (~10 s measured for torch's 24k-line
# common_methods_invocations.py on a loaded 2-core machine): a guard against
# super-linear blow-ups, not a benchmark.
FILE_CPU_BOUND = 60.0


@pytest.fixture(scope="module")
def corpus():
    return torch_corpus()


@pytest.mark.slow
def test_no_file_makes_the_engine_raise(corpus):
    assert corpus.files > 2000 and corpus.lines > 1_000_000  # really the whole package
    assert corpus.crashes == [], "\n".join(f"{path}: {why}" for path, why in corpus.crashes)


@pytest.mark.slow
def test_a_file_is_refused_only_when_python_cannot_parse_it(corpus):
    """The engine's message means "Python's own parser rejects it", never
    "LibCST or a rule gave up" on code Python accepts."""
    for path, message in corpus.errors.items():
        assert "\n" not in message
        with open(path, encoding="utf-8") as handle, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(SyntaxError):
                ast.parse(handle.read())
    assert len(corpus.errors) <= 5, corpus.errors


@pytest.mark.slow
def test_no_file_is_pathologically_slow(corpus):
    spent, path = corpus.slowest
    assert spent < FILE_CPU_BOUND, f"{path}: {spent:.1f} CPU s"
