"""Micro-benchmarks of the engine on fixed files (pytest-benchmark).

The normal test run passes ``--benchmark-disable`` (pyproject addopts): each
benchmarked call then runs once, as a plain test of its result. Measure with

    python -m pytest tests/test_benchmark.py --benchmark-enable --benchmark-autosave
    python -m pytest tests/test_benchmark.py --benchmark-enable --benchmark-compare

(saved runs go to .benchmarks/, which git ignores). No test here asserts a time.
"""

from __future__ import annotations

import pytest
from bench_support import bench_module

from flake8_torchdevice.engine import check_source

pytest.importorskip("pytest_benchmark")

BENCH = bench_module()
# ~1k lines in which every function and class meets a trigger: the worst case.
DENSE = BENCH.scaling_source(1000)
# ~1k lines of ordinary code that mentions torch but meets no trigger: what
# most files of a project cost (text scans only).
QUIET = "import torch\n\n\n" + "".join(
    f"def helper_{i}(values):\n"
    "    total = 0\n"
    "    for value in values:\n"
    "        if value % 2:\n"
    "            total += value * 3\n"
    "        else:\n"
    "            total -= value // 2\n"
    '    return {"total": total, "count": len(values), "kind": torch.float32}\n\n\n'
    for i in range(100)
)


def _codes(source: str) -> list[str]:
    return [v.code for v in check_source(source, strict=True).violations]


def test_engine_on_a_dense_file(benchmark):
    found = benchmark(_codes, DENSE)
    # Every repeated chunk reports the same findings: the count is a multiple
    # of one chunk's, and no chunk is lost or doubled by the pruning.
    one = _codes(BENCH.HEADER + BENCH.CHUNK.format(i=0))
    chunks = DENSE.count("def train_")
    assert one and len(found) == len(one) * chunks
    assert sorted(set(found)) == sorted(set(one))


def test_engine_on_a_quiet_file(benchmark):
    assert benchmark(_codes, QUIET) == []
