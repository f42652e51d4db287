"""An eighth of the ``.py`` files of the installed torch package a day (the whole
2,285 files, 1.2M lines of torch 2.13, every eight days; ``corpus_support``) through
the engine with ``strict=True``, the default rules on every file and every rule on
every tenth: zero exceptions. A crash regression net over real code -- and over real
hostile code: torch ships a PEP 695 file that Python 3.11 cannot parse. The part also
checks the list of torch files with a fixable finding that the fix-safety test fixes.
"""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import pytest

from corpus_support import PARTS, listed_in_part, torch_corpus, torch_files, torch_root

pytest.importorskip("torch")

# CPU seconds for the slowest single file (~10 s measured for torch's 24k-line
# common_methods_invocations.py on a loaded 2-core machine): a guard against
# super-linear blow-ups, not a benchmark.
FILE_CPU_BOUND = 60.0


@pytest.fixture(scope="module")
def corpus():
    return torch_corpus()


# A part is really an eighth of the package: the parts differ in lines (138-168 k of torch 2.13's 1.2 M), so
# the bound on lines is half of an even share.
PART_FILES, PART_LINES = 2000 // PARTS, 600_000 // PARTS


def test_every_part_is_a_real_share_of_the_package():
    """Each day's part clears the bounds the corpus test asks of the part it reads (a part too small for
    them would fail on its day only)."""
    sizes = [[0, 0] for _ in range(PARTS)]
    for number, path in enumerate(torch_files()):
        sizes[number % PARTS][0] += 1
        sizes[number % PARTS][1] += path.read_bytes().count(b"\n")
    assert all(files > PART_FILES and lines > PART_LINES for files, lines in sizes), sizes


@pytest.mark.slow
def test_no_file_makes_the_engine_raise(corpus):
    assert corpus.files > PART_FILES and corpus.lines > PART_LINES  # really an eighth of the package
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


@pytest.mark.slow
def test_the_fixable_list_holds_exactly_the_fixable_files_of_this_part(corpus):
    """The fix-safety test fixes the listed files; the part read today must find the same
    ones (rewrite the list with ``python tests/corpus_support.py --write`` if a rule changed)."""
    found = {Path(path).relative_to(torch_root()).as_posix() for path, _, _ in corpus.fixable}
    assert found == listed_in_part(corpus.part)
