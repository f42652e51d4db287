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

from fixture_cases import FIXTURES

from . import closing, proofs, summary, warm
from .closing import RECORDS

FAKE_TEST = "test_gpu_claim_holds_under_fake_cuda"


def fake_id(proof: proofs.Proof) -> str:
    return f"{proof.id}:fake"


@pytest.fixture(scope="session")
def device_count() -> int:
    """CUDA devices on this machine, asked of real torch (never patched)."""
    torch = pytest.importorskip("torch")  # absent on the Pythons without a local torch wheel

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


@pytest.fixture(scope="session")
def torch_build() -> str:
    """The kind of torch build the CPU claims are judged on here, asked of torch itself."""
    return summary.build_of(pytest.importorskip("torch"))


@pytest.fixture(scope="session")
def proof_runs(request, device_count):
    """proof id -> Future of its Outcome, for every proof test selected in this session."""
    wanted = {}  # run id -> (proof, fake devices)
    for item in request.session.items:
        if "proof_runs" not in getattr(item, "fixturenames", ()):
            continue
        proof = item.callspec.params["proof"]
        if item.originalname == FAKE_TEST:
            if not proof.claim.no_fake:
                wanted[fake_id(proof)] = (proof, proof.gpus)
        elif proofs.gpu_skip_reason(proof.gpus, device_count) is None:
            wanted[proof.id] = (proof, 0)
    servers = None if warm.cold() else warm.Pool({**os.environ, **proofs.SHARED_ENV, "CUDA_VISIBLE_DEVICES": ""})

    def run(proof: proofs.Proof, fake: int) -> proofs.Outcome:
        server = servers.server() if servers and (proof.gpus == 0 or fake) else None
        return proofs.run_program(proof.path, proof.gpus, FIXTURES, server=server, fake=fake)

    # A warm program costs ~0.3 s of CPU and each server ~5 s to start: a few suffice.
    cores = os.cpu_count() or 1
    workers = cores + 1 if servers is None else min(4, max(2, cores))
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="proof")
    try:
        yield {pid: pool.submit(run, *job) for pid, job in wanted.items()}
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


def pytest_sessionfinish(session):
    closing.hand_over(session.config)  # under xdist; tests/conftest.py prints the table
