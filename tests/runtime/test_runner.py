"""The proof runner itself, on tiny programs: a wrong claim must be reported as failed."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping

import pytest

from fixture_cases import headers_of

from . import proofs, summary
from .proofs import Claim, Failure, Outcome, judge, parse_claim


@pytest.fixture
def make(tmp_path):
    """Write ``fixtures/TDV999/<name>`` under tmp_path; return (path, fixtures dir)."""
    fixtures = tmp_path / "fixtures"
    (fixtures / "TDV999").mkdir(parents=True)

    def write(name: str, source: str):
        path = fixtures / "TDV999" / name
        path.write_text(textwrap.dedent(source), encoding="utf-8")
        return path, fixtures

    return write


def verdict_of(make, claim: str, source: str, **run):
    path, fixtures = make("case.py", source)
    return judge(parse_claim(claim), proofs.run_program(path, fixtures=fixtures, **run), fixtures)


# -- real programs, real exit statuses ------------------------------------


def test_the_claimed_exception_passes(make):
    verdict = verdict_of(make, "fails ValueError: invalid literal for int()", 'int("x")\n')
    assert verdict.passed, verdict.detail
    assert not verdict.postcondition and not verdict.no_cuda


def test_a_wrong_exception_type_fails(make):
    verdict = verdict_of(make, "fails TypeError: invalid literal for int()", 'int("x")\n')
    assert not verdict.passed
    assert "got ValueError: invalid literal" in verdict.detail


def test_a_wrong_message_fails(make):
    verdict = verdict_of(make, "fails ValueError: could not convert", 'int("x")\n')
    assert not verdict.passed


def test_a_subclass_is_not_the_claimed_type(make):
    source = "import json\njson.loads('{')\n"
    assert not verdict_of(make, "fails ValueError: Expecting", source).passed
    assert verdict_of(make, "fails JSONDecodeError: Expecting", source).passed
    assert verdict_of(make, "fails json.decoder.JSONDecodeError: Expecting", source).passed


def test_a_program_that_runs_does_not_prove_a_failure(make):
    verdict = verdict_of(make, "fails ValueError: x", "print('fine')\n")
    assert not verdict.passed and "ran to completion" in verdict.detail


def test_a_program_that_fails_does_not_prove_it_runs(make):
    verdict = verdict_of(make, "runs", "{}['key']\n")
    assert not verdict.passed and "KeyError" in verdict.detail


def test_an_exception_the_fixture_raises_itself_is_no_proof(make):
    source = 'raise RuntimeError("Expected all tensors")\n'
    verdict = verdict_of(make, "fails RuntimeError: Expected all tensors", source)
    assert not verdict.passed and "not torch's" in verdict.detail


def test_an_assertion_in_the_fixture_is_a_post_condition(make):
    source = """\
        device = "cpu"
        assert device == "meta", f"the move never happened: still on {device}"
    """
    verdict = verdict_of(make, "fails AssertionError: the move never happened", source)
    assert verdict.passed and verdict.postcondition


def test_a_hung_program_times_out(make):
    verdict = verdict_of(make, "runs", "import time\ntime.sleep(30)\n", timeout=1)
    assert not verdict.passed and "timed out" in verdict.detail


def test_programs_run_isolated_with_fixtures_importable(make):
    helper, fixtures = make("_probe_helper.py", "VALUE = 42\n")
    helper.rename(fixtures / "_probe_helper.py")
    source = f"""\
        import os, tempfile
        from _probe_helper import VALUE
        assert VALUE == 42
        assert os.environ["CUDA_VISIBLE_DEVICES"] == ""
        assert os.getcwd() != {str(fixtures)!r} and os.getcwd().startswith(tempfile.gettempdir())
        assert os.listdir(".") == []
    """
    verdict = verdict_of(make, "runs", source)
    assert verdict.passed, verdict.detail


# -- reading tracebacks ---------------------------------------------------


def _traceback(frame_file: str, source: str, last: str) -> str:
    return f'Traceback (most recent call last):\n  File "{frame_file}", line 3, in <module>\n    {source}\n{last}\n'


def _outcome(stderr: str) -> Outcome:
    return Outcome(1, "", stderr, 0.1)


TORCH_FILE = "/site-packages/torch/cuda/__init__.py"
NO_CUDA_CLAIM = parse_claim("fails AssertionError: Torch not compiled with CUDA enabled")


@pytest.mark.parametrize(
    "last",
    [
        "RuntimeError: No CUDA GPUs are available",
        "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU",
        "RuntimeError: Cannot access accelerator device when none is available.",
    ],
)
def test_a_cuda_build_without_gpus_meets_a_no_cuda_claim(tmp_path, last):
    verdict = judge(NO_CUDA_CLAIM, _outcome(_traceback(TORCH_FILE, "raise X", last)), tmp_path)
    assert verdict.passed and verdict.no_cuda


@pytest.mark.parametrize(
    "last",
    [
        "RuntimeError: Expected all tensors to be on the same device",
        "NotImplementedError: Could not run 'aten::nonzero' with arguments from the 'Meta' backend.",
        "AssertionError",
    ],
)
def test_nothing_else_meets_a_no_cuda_claim(tmp_path, last):
    assert not judge(NO_CUDA_CLAIM, _outcome(_traceback(TORCH_FILE, "raise X", last)), tmp_path).passed


def test_meta_not_implemented_is_not_a_device_error(tmp_path):
    claim = parse_claim("fails RuntimeError: Could not run")
    stderr = _traceback("/fixtures/x.py", "x.nonzero()", "NotImplementedError: Could not run 'aten::nonzero'")
    assert not judge(claim, _outcome(stderr), tmp_path).passed


def test_the_last_of_chained_tracebacks_counts():
    stderr = (
        _traceback("/a.py", "f()", "KeyError: 'k'")
        + "\nDuring handling of the above exception, another exception occurred:\n\n"
        + _traceback("/b.py", "g()", "ValueError: second\nmore of the message")
    )
    raised = proofs.final_exception(stderr)
    assert (raised.exc_type, raised.frame_file) == ("ValueError", "/b.py")
    assert raised.message == "second\nmore of the message"


def test_rank_prefixes_of_torch_distributed_are_read_through():
    plain = _traceback(TORCH_FILE, "raise err", "ValueError: bad")
    stderr = "".join(f"[rank0]: {line}\n" for line in plain.splitlines())
    raised = proofs.final_exception(stderr)
    assert (raised.exc_type, raised.message, raised.frame_source) == ("ValueError", "bad", "raise err")


def test_no_traceback_is_no_exception():
    assert proofs.final_exception("Segmentation fault\n") is None
    assert not judge(parse_claim("fails RuntimeError: x"), _outcome("Segmentation fault\n"), None).passed


# -- headers and machines -------------------------------------------------


def test_claims_parse_and_malformed_ones_are_refused():
    assert parse_claim("runs") == Claim("runs")
    assert parse_claim("static — needs two GPUs").outcome == "static"
    assert parse_claim("fails torch.AcceleratorError: CUDA error: invalid device ordinal") == Claim(
        "fails", (Failure("torch.AcceleratorError", "CUDA error: invalid device ordinal"),)
    )
    assert parse_claim("fails A: x | y | B.C: z") == Claim("fails", (Failure("A", "x | y"), Failure("B.C", "z")))
    for bad in ["fails", "fails RuntimeError", "fails RuntimeError:", "crashes", "runs fast", "fails A: x |  B:"]:
        with pytest.raises(ValueError):
            parse_claim(bad)


def test_headers_give_cpu_and_gpu_proofs_but_no_static_ones(tmp_path):
    path = tmp_path / "TDV999" / "case.py"
    text = "# proof: static — needs a GPU\n# proof-gpu 2: fails RuntimeError: boom\n# twin: ok.py\nx = 1\n"
    (found,) = proofs.proofs_of(path, headers_of(text))
    assert (found.rule, found.gpus, found.claim.failures[0].exc_type) == ("TDV999", 2, "RuntimeError")
    assert found.id == "TDV999/case.py:gpu2"
    for bad_key in ["# proof-gpu: runs\n", "# proof-gpu 0: runs\n"]:
        with pytest.raises(ValueError):
            proofs.proofs_of(path, headers_of(bad_key))


def test_gpu_proofs_need_enough_devices():
    assert proofs.gpu_skip_reason(2, 1) == "needs 2 GPUs"
    assert proofs.gpu_skip_reason(1, 0) == "needs 1 GPU"
    assert proofs.gpu_skip_reason(1, 1) is None and proofs.gpu_skip_reason(0, 0) is None


def test_visible_devices_shows_exactly_n(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert (proofs.visible_devices(0), proofs.visible_devices(2)) == ("", "0,1")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5,6")
    assert (proofs.visible_devices(0), proofs.visible_devices(2)) == ("", "3,5")


# -- the closing table ------------------------------------------------------


def test_table_says_what_was_proven_where():
    records = [
        summary.Record("TDV401", 0, "fails", "passed", no_cuda=True),
        summary.Record("TDV401", 0, "runs", "passed"),
        summary.Record("TDV401", 1, "fails", "skipped: needs 1 GPU"),
        summary.Record("TDV501", 0, "fails", "passed", postcondition=True),
        summary.Record("TDV301", 0, "fails", "failed"),
    ]
    table = {row[0]: row[1:] for row in summary.rows(records, ["TDV101"], {"TDV401"})}
    other = "not run (another torch build)"
    assert table["TDV401"] == (
        f"passed (1 fail as claimed, 1 run); {summary.NO_CUDA_NOTE}", other, "skipped: needs 1 GPU", "not run"
    )
    assert table["TDV501"] == ("passed (1 fail as claimed, 0 run); post-condition", other, "none written",
                               "none written")
    assert table["TDV301"][0] == "failed (1 of 1 proofs)"
    assert table["TDV101"] == ("not run", other, "none written", "none written")
    lines = summary.render(summary.rows(records, [], set()))
    assert lines[0].startswith("rule") and "CUDA build, no GPU visible" in lines[0] and len(lines) == 2 + 3 + 2
    assert lines[-2].startswith(summary.NO_CUDA_NOTE + ": ") and lines[-1].startswith("post-condition: ")
    assert len(summary.render(summary.rows(records[-1:], [], set()))) == 2 + 1  # no note without its case


def test_a_cuda_build_fills_its_own_cpu_column():
    records = [
        summary.Record("TDV105", 0, "fails", "passed", no_cuda=True, build=summary.CUDA_BUILD),
        summary.Record("TDV105", 1, "runs", "passed", build=summary.CUDA_BUILD),
    ]
    (row,) = summary.rows(records, [], {"TDV105"})
    assert row == (
        "TDV105", "not run (another torch build)",
        f"passed (1 fail as claimed, 0 run); {summary.NO_CUDA_NOTE}", "passed (1 proofs)", "not run",
    )


def test_fake_cuda_records_fill_their_own_column():
    records = [
        summary.Record("TDV601", 1, "fails", "skipped: needs 1 GPU"),
        summary.Record("TDV601", 1, "fails", "passed", fake=True),
        summary.Record("TDV601", 1, "runs", "passed", fake=True),
    ]
    (row,) = summary.rows(records, [], {"TDV601"})
    assert row[3:] == ("skipped: needs 1 GPU", "passed (2 proofs)")


def test_the_build_is_read_from_torch():
    torch = pytest.importorskip("torch")
    expected = summary.CUDA_BUILD if torch.version.cuda else summary.CPU_ONLY
    assert summary.build_of(torch) == expected


# -- fake CUDA runs of GPU claims -------------------------------------------


def test_a_claim_may_say_why_fake_cuda_cannot_reproduce_it():
    claim = parse_claim("fails RuntimeError: a | ValueError: b [fake CUDA cannot: needs NCCL]")
    assert claim.no_fake == "needs NCCL"
    assert claim.failures == (Failure("RuntimeError", "a"), Failure("ValueError", "b"))
    assert parse_claim("runs [fake CUDA cannot: kernel timing]") == Claim("runs", (), "kernel timing")
    assert parse_claim("runs").no_fake == ""
    with pytest.raises(ValueError):
        parse_claim("runs [fake CUDA cannot: ]")


@pytest.mark.slow
def test_a_program_runs_under_fake_cuda_and_says_so(make):
    pytest.importorskip("torch")
    source = """\
        import torch
        assert torch.cuda.is_available() and torch.cuda.device_count() == 2
        x = torch.ones(3, device="cuda:1")
        print(x.device)
        x + torch.ones(3)
    """
    path, fixtures = make("case.py", source)
    outcome = proofs.run_program(path, gpus=2, fixtures=fixtures, fake=2)
    assert outcome.stdout.strip() == "cuda:1"
    session = proofs.FAKE_SUMMARY.search(outcome.stderr)
    assert session and session["gpus"] == "2" and int(session["placed"]) >= 1
    verdict = judge(parse_claim("fails RuntimeError: found at least two devices, cuda:1 and cpu!"), outcome, fixtures)
    assert verdict.passed, verdict.detail


class _ChangingEnviron(Mapping):
    """An environment another thread changes while a copy of it is taken: the first pass over it
    meets a key that is gone (as pytest's PYTEST_CURRENT_TEST is, between tests). Like
    ``os.environ``, a mapping that ``dict()`` reads through ``keys()`` and ``[]``."""

    def __init__(self, data: dict):
        self._data = data
        self.passes = 0

    def keys(self):
        self.passes += 1
        return [*self._data, "GONE_MEANWHILE"] if self.passes == 1 else list(self._data)

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(self.keys())

    def __len__(self):
        return len(self._data)


def test_a_program_environment_is_copied_whole_while_another_thread_changes_it():
    changing = _ChangingEnviron({"PATH": "/bin", "HOME": "/root"})
    env = proofs._environ(changing)
    assert changing.passes == 2
    assert env == {"PATH": "/bin", "HOME": "/root"}
