"""Speed work that must not change results, and the scaling check.

- The word scan (one literal first, word boundaries checked in Python) finds
  what a plain ``\b`` regex finds, and every attribute name that Python's
  tokenizer sees after a dot.
- Parsing only the kept lines still reports at the file's own positions.
- Time per line stays flat as a file grows (no quadratic step): a ratio of
  CPU times in one process, with a bound loose enough for a loaded machine
  (measured 1.0-1.3x; a quadratic step would give ~8x here). The 1k/10k/50k
  figures come from ``python benchmarks/run.py --scaling``.
"""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_support import bench_module

from flake8_torchdevice.engine import check_source
from flake8_torchdevice import words


# Texts built from the pieces that matter to the scans: names, their
# prefixes and suffixes, word characters, dots, assignment, comments, lines.
PIECES = ["load", "torch", "myself", "self", "x", "_", "1", ".", " ", "\t", "\n", "=", "as", "(", "#", "f"]
texts = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(texts)
def test_word_offsets_equal_a_word_boundary_regex(text):
    for word in ("load", "self", "torch"):
        fast = [o for o in words.offsets(text, word)]
        slow = [m.start() for m in re.finditer(rf"\b{word}\b", text)]
        assert fast == slow
        assert (word in words.identifiers(text)) == bool(slow)


ATTRIBUTE_PIECES = ["x", "load", ".", " ", "\\\n", "(", ")", "#c\n", "\n", "to", "f"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(ATTRIBUTE_PIECES), max_size=16).map("".join))
def test_attribute_words_cover_every_attribute_the_tokenizer_sees(text):
    import io
    import tokenize

    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text + "\n").readline))
    except (tokenize.TokenError, SyntaxError):
        return
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    significant = [t for t in tokens if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT)]
    for before, token in zip(significant, significant[1:]):
        if before.string == "." and token.type == tokenize.NAME:
            offset = starts[token.start[0] - 1] + token.start[1]
            assert offset in set(words.offsets(text, "." + token.string)), (text, offset)


POSITIONS = '''\
import torch; device = "cpu"
# a comment above everything


CONSTANT = 3


@decorator(
    torch.load("a.pt"),  # 9: decorator argument
)
def decorated():
    pass


class Model(torch.nn.Module):
    """Docstring."""

    def first(self):
        return 1

    # a comment between members
    @staticmethod
    def restore(path):
        x = 1; state = torch.load(path)  # 24: after a semicolon
        return state

    def last(self):
        return 2


def helper():
    return 2


value = torch.load(  # 35: module-level, multi-line
    "b.pt",
)
'''


def test_reports_land_on_the_files_own_lines_and_columns():
    found = [(v.line, v.col) for v in check_source(POSITIONS, rules=None, strict=True).violations if v.code == "TDV201"]
    lines = POSITIONS.split("\n")
    expected = []
    for number, text in enumerate(lines, start=1):
        marker = re.search(r"# (\d+):", text)
        if marker:
            assert int(marker.group(1)) == number, "fix the test's own line markers"
            expected.append((number, text.index("torch.load")))
    assert found == expected


def _cpu_per_line(source: str, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        check_source(source, strict=True)
        best = min(best, time.process_time() - start)
    return best / source.count("\n")


@pytest.mark.slow
def test_time_per_line_stays_flat_as_a_file_grows():
    bench = bench_module()
    small, large = bench.scaling_source(500), bench.scaling_source(4000)
    _cpu_per_line(small, 1)  # warm caches and imports
    ratio = _cpu_per_line(large, 2) / _cpu_per_line(small, 4)
    assert ratio < 2.5, f"per-line time grew {ratio:.2f}x from 500 to 4000 lines"
