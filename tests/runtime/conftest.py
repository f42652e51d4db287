"""Runtime proofs: run the selected fixture programs side by side, print what was proven.

Each program is its own process (a fork of a warm server that imported torch
once, see warm.py; ``TDV_PROOFS_COLD=1``: a fresh ``python``). All selected
proofs start on a thread pool when the first proof test asks, and each test
then waits for its own.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from fixture_cases import FIXTURES, all_cases
from flake8_torchdevice.rules import ALL_RULES

from . import proofs, summary, warm

RECORDS = pytest.StashKey[list]()


@pytest.fixture(scope="session")
def device_count() -> int:
    """CUDA devices on this machine, asked of real torch (never patched)."""
    torch = pytest.importorskip("torch")  # absent on the Pythons without a local torch wheel

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


@pytest.fixture(scope="session")
def proof_runs(request, device_count):
    """proof id -> Future of its Outcome, for every proof test selected in this session."""
    wanted = {}
    for item in request.session.items:
        if "proof_runs" not in getattr(item, "fixturenames", ()):
            continue
        proof = item.callspec.params["proof"]
        if proofs.gpu_skip_reason(proof.gpus, device_count) is None:
            wanted[proof.id] = proof
    servers = None if warm.cold() else warm.Pool({**os.environ, **proofs.SHARED_ENV, "CUDA_VISIBLE_DEVICES": ""})

    def run(proof: proofs.Proof) -> proofs.Outcome:
        server = servers.server() if servers and proof.gpus == 0 else None
        return proofs.run_program(proof.path, proof.gpus, FIXTURES, server=server)

    # A warm program costs ~0.3 s of CPU and each server ~5 s to start: a few suffice.
    cores = os.cpu_count() or 1
    workers = cores + 1 if servers is None else min(4, max(2, cores))
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="proof")
    try:
        yield {pid: pool.submit(run, proof) for pid, proof in wanted.items()}
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # a run stopped early (-x) starts no more programs
        if servers:
            servers.close()


@pytest.fixture
def record(request):
    """Record one proof's fate for the closing table."""

    def add(item: summary.Record) -> None:
        request.config.stash.setdefault(RECORDS, []).append(item)

    return add


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    records = config.stash.get(RECORDS, [])
    if not records:
        return
    all_proofs, _ = proofs.collect(all_cases())
    gpu_declared = {p.rule for p in all_proofs if p.gpus > 0}
    rules = [rule.CODE for rule in ALL_RULES]
    terminalreporter.write_sep("=", "runtime proofs (real torch, nothing mocked)")
    for line in summary.render(summary.rows(records, rules, gpu_declared)):
        terminalreporter.write_line(line)
