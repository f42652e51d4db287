"""Every fixture's ``# proof:`` claims, executed on real torch, and their bookkeeping.

- each declared proof: the program fails exactly as claimed, or runs;
- each failing program has a fixed twin that runs on the same machine;
- each rule has at least one such pair on a machine without CUDA;
- each claimed message is quoted by the rule's doc page;
- each GPU claim holds under fake CUDA on this machine, or says why it cannot.
"""

from __future__ import annotations

import re

import pytest

from fixture_cases import FIXTURES, ROOT, all_cases
from flake8_torchdevice.rules import ALL_RULES

from . import proofs
from .conftest import fake_id
from .summary import Record

CASES = all_cases()
PROOFS, PROBLEMS = proofs.collect(CASES)
FAILING = [p for p in PROOFS if p.claim.outcome == "fails"]
DOCS = ROOT / "docs" / "rules"
ERROR_SECTION = "## The error torch raises"


def _param(proof: proofs.Proof, runs_it: bool = False):
    """Only the test that runs a GPU proof needs the GPUs (marker ``gpu``); the bookkeeping does not."""
    return pytest.param(proof, id=proof.id, marks=[pytest.mark.gpu] if proof.gpus and runs_it else [])


def _claims(path, gpus: int) -> list[proofs.Claim]:
    return [p.claim for p in PROOFS if p.path == path and p.gpus == gpus]


@pytest.mark.parametrize("proof", [_param(p, runs_it=True) for p in PROOFS])
def test_proof(proof, proof_runs, device_count, torch_build, record):
    fate = dict(rule=proof.rule, gpus=proof.gpus, outcome=proof.claim.outcome, build=torch_build)
    reason = proofs.gpu_skip_reason(proof.gpus, device_count)
    if reason:
        record(Record(**fate, status=f"skipped: {reason}"))
        pytest.skip(reason)
    verdict = proofs.judge(proof.claim, proof_runs[proof.id].result(), FIXTURES)
    status = "passed" if verdict.passed else "failed"
    record(Record(**fate, status=status, postcondition=verdict.postcondition, no_cuda=verdict.no_cuda))
    assert verdict.passed, f"{proof.id}: {verdict.detail}"


GPU_CLAIMS = [p for p in PROOFS if p.gpus > 0]


@pytest.mark.parametrize("proof", [pytest.param(p, id=f"{p.id}:fake") for p in GPU_CLAIMS])
def test_gpu_claim_holds_under_fake_cuda(proof, proof_runs, torch_build, record):
    """The GPU column, checked on every CI machine: the claim under ``fakecuda --devices N``."""
    fate = dict(rule=proof.rule, gpus=proof.gpus, outcome=proof.claim.outcome, build=torch_build, fake=True)
    if proof.claim.no_fake:
        record(Record(**fate, status=f"skipped: fake CUDA cannot ({proof.claim.no_fake})"))
        pytest.skip(f"fake CUDA cannot reproduce this claim: {proof.claim.no_fake}")
    outcome = proof_runs[fake_id(proof)].result()
    session = proofs.FAKE_SUMMARY.search(outcome.stderr)
    assert session and int(session["gpus"]) == proof.gpus, f"{proof.id}: no fake CUDA session ran: {outcome.stderr}"
    verdict = proofs.judge(proof.claim, outcome, FIXTURES)
    record(Record(**fate, status="passed" if verdict.passed else "failed"))
    assert verdict.passed, f"{proof.id} under fake CUDA: {verdict.detail}"


def test_proof_headers_are_well_formed():
    assert PROBLEMS == []


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_fixture_says_what_running_it_proves(case):
    cpu = case.header("proof")
    assert len(cpu) == 1, f"{case.id}: want exactly one '# proof:' line (runs / fails ... / static — reason)"


TWINNED = [c for c in CASES if c.header("twin")]


@pytest.mark.parametrize("case", TWINNED, ids=lambda c: c.id)
def test_twin_exists_and_runs_where_the_original_fails(case):
    (name,) = case.header("twin")
    twin = case.path.parent / name
    assert twin.is_file(), f"{case.id}: twin {name} does not exist"
    assert any(p.path == twin and p.claim.outcome == "runs" for p in PROOFS), f"{name} must claim 'runs'"
    for proof in [p for p in FAILING if p.path == case.path]:
        assert "runs" in [claim.outcome for claim in _claims(twin, proof.gpus)], (
            f"{twin.name} must claim 'runs' where {case.id} fails ({proof.id})"
        )


@pytest.mark.parametrize("proof", [_param(p) for p in FAILING])
def test_failing_program_has_a_twin(proof):
    case = next(c for c in CASES if c.path == proof.path)
    assert case.header("twin"), f"{proof.id}: give this failing program a fixed twin ('# twin: name.py')"


def _cpu_pairs(rule: str) -> list[str]:
    pairs = []
    for proof in FAILING:
        case = next(c for c in CASES if c.path == proof.path)
        if proof.rule == rule and proof.gpus == 0 and case.header("twin"):
            twin = proof.path.parent / case.header("twin")[0]
            if proofs.Claim("runs") in _claims(twin, 0):
                pairs.append(f"{proof.path.name} -> {twin.name}")
    return pairs


@pytest.mark.parametrize("rule", [r.CODE for r in ALL_RULES])
def test_rule_has_a_failing_program_and_a_twin_that_runs_without_cuda(rule):
    assert _cpu_pairs(rule), (
        f"{rule}: add fixtures/{rule}/<bad>.py with '# proof: fails ExcType: message' and "
        "'# twin: <good>.py', the twin with '# proof: runs'"
    )


def _normalized(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _body(path) -> str:
    """The program without its leading comment block (where the claims themselves are)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next((i for i, line in enumerate(lines) if not line.startswith("#")), len(lines))
    return "\n".join(lines[start:])


def _error_section(doc: str) -> str:
    return doc.split(ERROR_SECTION, 1)[1].split("\n## ", 1)[0] if ERROR_SECTION in doc else ""


@pytest.mark.parametrize("proof", [_param(p) for p in FAILING])
def test_rule_doc_quotes_what_the_proof_observes(proof):
    page = DOCS / f"{proof.rule}.md"
    assert page.is_file(), f"{proof.rule}: no doc page {page.name}"
    doc = page.read_text(encoding="utf-8")
    for failure in proof.claim.failures:  # each build's wording of the mistake
        wanted = _normalized(failure.substring)
        if wanted in _normalized(_error_section(doc)):
            continue
        # A post-condition is the fixture's own assertion message, not torch's:
        # the doc may quote it outside the error section.
        own = failure.exc_type == "AssertionError" and failure.substring in _body(proof.path)
        assert own and wanted in _normalized(doc), (
            f"{page.name} must quote {failure.substring!r} under {ERROR_SECTION!r} ({proof.id} observes it)"
        )
