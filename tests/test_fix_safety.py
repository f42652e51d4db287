"""``--fix`` never loses code: for every fixture and every torch source file
with a fixable finding (``tests/torch_fixable_files.txt``, which the corpus test
keeps true; those under ``FIX_FILE_LINES`` lines; in memory and on temporary copies), the fixed text
parses, only the reported lines change, and a second run is a no-op; writes
are atomic: a write that fails or is killed midway leaves the original.
"""

from __future__ import annotations

import ast
import difflib
import errno
import os
import shutil
import signal
import subprocess
import time
import warnings

import pytest

from cli_support import SCRIPT, run_cli
from corpus_support import CORPUS_RULES, fixable_sources
from fixture_cases import all_cases
from flake8_torchdevice import files
from flake8_torchdevice.engine import check_source
from flake8_torchdevice.fixes import can_fix, fix_source_counted
from flake8_torchdevice.noqa import filter_noqa
from flake8_torchdevice.rules import ALL_RULES


DEFAULT_RULES = [rule for rule in ALL_RULES if rule.DEFAULT_ENABLED]


_FOUND: dict = {}  # (source, codes) -> findings: the safe and unsafe runs share each original's


def _findings(source: str, rules=DEFAULT_RULES):
    """What the CLI hands the fixer: the findings of the selected rules (by
    default those on by default), minus ``# noqa``."""
    key = (source, tuple(rule.CODE for rule in rules))
    if key not in _FOUND:
        _FOUND[key] = tuple(filter_noqa(source, check_source(source, rules=rules, strict=True).violations))
    return list(_FOUND[key])


def _parse(text: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's sources have invalid escapes
        ast.parse(text)


def _changed_lines_outside(source: str, fixed: str, spans) -> list:
    """Original lines (1-based) that changed although no fixed finding covers
    them; an insertion counts against the lines on both sides of it."""
    allowed = {line for start, end in spans for line in range(start, end + 1)}
    old, new = source.splitlines(keepends=True), fixed.splitlines(keepends=True)
    outside = []
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        touched = range(i1 + 1, i2 + 1) if i2 > i1 else (i1, i1 + 1)
        outside += [line for line in touched if line not in allowed]
    return outside


def check_fix(source: str, unsafe: bool, rules=CORPUS_RULES) -> int:
    """Fix ``source`` as the CLI does with ``rules`` selected (by default the
    rules on by default and the opt-in TDV101 and TDV201, as over the torch
    corpus) and check the promises; returns the number applied."""
    before = _findings(source, rules)
    fixable = [v for v in before if can_fix(v.code, unsafe)]
    fixed, applied = fix_source_counted(source, before, unsafe)
    if not applied:
        assert fixed == source
        return 0
    _parse(fixed)
    assert _changed_lines_outside(source, fixed, [(v.line, v.end_line or v.line) for v in fixable]) == []
    after = _findings(fixed, rules)
    assert len([v for v in after if can_fix(v.code, unsafe)]) == len(fixable) - applied
    assert fix_source_counted(fixed, after, unsafe) == (fixed, 0)  # a second run is a no-op
    return applied


@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
def test_every_fixture(unsafe):
    applied = sum(check_fix(case.path.read_text(encoding="utf-8"), unsafe) for case in all_cases())
    assert applied >= (10 if unsafe else 5)  # the fixtures really exercise the fixers


# The fixers' promises hold per finding, whatever the file's size: torch's 11,000-line
# distributed_test.py (three fixes, the fixers of the smaller files) cost 40 CPU s of CI's
# ten minutes here, more than all the other files together; the corpus test still reads it.
FIX_FILE_LINES = 5000


@pytest.mark.slow
@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
def test_every_torch_file_with_a_fixable_finding(unsafe):
    pytest.importorskip("torch")
    sources = [source for source in fixable_sources() if source.count("\n") < FIX_FILE_LINES]
    applied = [check_fix(source, unsafe) for source in sources]
    assert len(sources) >= 5 and sum(applied) >= 5, (len(sources), applied)


# -- atomic writes ------------------------------------------------------------------

BAD = "import torch\n\nscaler = torch.cuda.amp.GradScaler()\n"  # TDV701, on by default, a safe fix


class _HalfThenFail:
    """A file object that writes half of the data, then fails like a full disk."""

    def __init__(self, real, exc: BaseException) -> None:
        self.real, self.exc = real, exc

    def write(self, data: bytes) -> int:
        self.real.write(data[: len(data) // 2])
        self.real.flush()
        raise self.exc

    def __getattr__(self, name):
        return getattr(self.real, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.real.close()


def _fail_midway(monkeypatch, exc: BaseException) -> None:
    real_fdopen = os.fdopen
    monkeypatch.setattr(files.os, "fdopen", lambda *a, **k: _HalfThenFail(real_fdopen(*a, **k), exc))


@pytest.mark.parametrize(
    "exc", [OSError(errno.ENOSPC, "No space left on device"), KeyboardInterrupt()], ids=["disk_full", "interrupt"]
)
def test_a_write_failing_midway_leaves_the_original(tmp_path, monkeypatch, exc):
    target = tmp_path / "train.py"
    target.write_bytes(BAD.encode())
    _fail_midway(monkeypatch, exc)
    with pytest.raises(type(exc)):
        files.write_atomic(str(target), files.SourceFile("x = 1\n" * 1000, "utf-8"))
    assert target.read_bytes() == BAD.encode()
    assert os.listdir(tmp_path) == ["train.py"]  # no temporary file left behind


def test_a_failing_rename_leaves_the_original(tmp_path, monkeypatch):
    target = tmp_path / "train.py"
    target.write_bytes(BAD.encode())

    def refuse(*args):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(files.os, "replace", refuse)
    with pytest.raises(OSError):
        files.write_atomic(str(target), files.SourceFile("x = 1\n", "utf-8"))
    assert target.read_bytes() == BAD.encode() and os.listdir(tmp_path) == ["train.py"]


def test_cli_fix_with_a_full_disk_is_one_line_and_keeps_the_file(tmp_path, monkeypatch):
    target = tmp_path / "train.py"
    target.write_bytes(BAD.encode())
    _fail_midway(monkeypatch, OSError(errno.ENOSPC, "No space left on device"))
    result = run_cli("--fix", "train.py", cwd=tmp_path)
    assert result.code == 2
    assert result.err_lines == ["torchdevice: train.py: No space left on device"]
    assert target.read_bytes() == BAD.encode() and os.listdir(tmp_path) == ["train.py"]


@pytest.mark.slow
def test_killing_the_cli_during_fix_never_leaves_a_partial_file(tmp_path):
    """SIGKILL at spread-out moments of a real ``--fix`` run: the file is
    always the whole original or the whole fixed text."""
    body = "".join(f"def f{i}():\n    return torch.cuda.amp.GradScaler()\n\n\n" for i in range(1000))
    original = ("import torch\n\n\n" + body).encode()
    fixed = original.replace(b"torch.cuda.amp.GradScaler()", b'torch.amp.GradScaler("cuda")')
    target = tmp_path / "big.py"
    target.write_bytes(original)
    start = time.monotonic()
    subprocess.run([*SCRIPT, "--isolated", "--fix", "big.py"], cwd=tmp_path, capture_output=True, timeout=600)
    duration = time.monotonic() - start
    assert target.read_bytes() == fixed  # the uninterrupted run fixes every call
    outcomes = set()
    for step in range(1, 5):
        target.write_bytes(original)
        process = subprocess.Popen(
            [*SCRIPT, "--isolated", "--fix", "big.py"],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(duration * step / 5)
        process.send_signal(signal.SIGKILL)
        process.wait()
        data = target.read_bytes()
        assert data in (original, fixed), f"partial file after a kill at {step}/5 of the run"
        outcomes.add(data == fixed)
    for leftover in tmp_path.glob(".torchdevice-*"):  # a kill cannot clean up; never the target itself
        leftover.unlink()
    assert outcomes  # at least one interrupted run checked


# -- concurrency ----------------------------------------------------------------------


# Enough files for the process pool; torch's largest fixable files (4,400 and
# 11,000 lines) only make the run longer, not the race more likely.
TREE_FILE_LINES = 2000
# The fixtures of the rules that promise a fix (127 of 333 files): the files a fix may
# write; the others only add lint time to CI's ten minutes.
FIXING_CODES = frozenset(rule.CODE for rule in ALL_RULES if rule.FIX != "none")


def _tree(tmp_path):
    """The fixtures of the rules that fix, plus the torch files with fixable findings of
    under ``TREE_FILE_LINES`` lines."""
    root = tmp_path / "tree"
    fixtures = all_cases()[0].path.parent.parent
    for code in sorted(FIXING_CODES):
        if (fixtures / code).is_dir():
            shutil.copytree(fixtures / code, root / "fixtures" / code)
    assert len(list(root.rglob("*.py"))) > 100
    for index, source in enumerate(fixable_sources()):
        if source.count("\n") < TREE_FILE_LINES:
            (root / f"t{index:02d}.py").write_text(source, encoding="utf-8")
    assert len(list(root.glob("t*.py"))) >= 4
    return root


def _start(root, *args):
    return subprocess.Popen(
        [*SCRIPT, "--isolated", "--select=TDV", *args, "."], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


@pytest.mark.slow
def test_two_parallel_runs_with_jobs_give_identical_output(tmp_path):
    pytest.importorskip("torch")
    root = _tree(tmp_path)
    serial = subprocess.run([*SCRIPT, "--isolated", "--select=TDV", "-j1", "."], cwd=root, capture_output=True)
    runs = [_start(root, "-j2"), _start(root, "-j2")]
    outputs = [run.communicate(timeout=600) + (run.returncode,) for run in runs]
    assert outputs[0] == outputs[1] == (serial.stdout, serial.stderr, serial.returncode)
    assert serial.returncode == 1 and serial.stdout.count(b"\n") > 20


@pytest.mark.slow
def test_two_parallel_fix_runs_leave_each_file_fixed_once(tmp_path):
    """Temporary copies of the fixing rules' fixtures and of every torch file with a fixable
    finding, fixed by two ``--fix -j2`` runs at once: both read the originals
    and write the same text; atomic replacement means the tree ends fixed as
    the fixer computes it, without temp files; a third run changes nothing."""
    pytest.importorskip("torch")
    root = _tree(tmp_path)
    originals = {path: path.read_text(encoding="utf-8") for path in root.rglob("*.py")}
    expected = {path: fix_source_counted(text, _findings(text), unsafe=True)[0] for path, text in originals.items()}
    runs = [_start(root, "-j2", "--fix", "--unsafe-fixes"), _start(root, "-j2", "--fix", "--unsafe-fixes")]
    for run in runs:
        run.communicate(timeout=600)
        assert run.returncode in (0, 1)
    assert {path: path.read_text(encoding="utf-8") for path in originals} == expected
    assert sum(expected[path] != originals[path] for path in originals) >= 10
    assert not list(root.rglob(".torchdevice-*"))
    again = subprocess.run([*SCRIPT, "--isolated", "--select=TDV", "--fix", "--unsafe-fixes", "-j1", "."], cwd=root,
                           capture_output=True, timeout=600)
    assert b"fixed" not in again.stderr and b"Traceback" not in again.stderr  # a second --fix writes nothing
    assert {path: path.read_text(encoding="utf-8") for path in originals} == expected
