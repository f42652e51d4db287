"""Run fixture programs on real torch and judge them against their ``# proof:`` headers.

A proof is one claim about one fixture on one kind of machine:

- ``# proof: runs`` / ``# proof: fails ExcType: substring`` hold on a machine
  without CUDA. On a GPU machine the program still runs without CUDA: the
  devices are hidden from it with ``CUDA_VISIBLE_DEVICES=""`` (the driver then
  reports none; nothing in torch is patched).
- ``# proof-gpu N: ...`` holds with exactly N CUDA devices visible (the first N);
  with fewer on the machine it is skipped: "needs N GPUs".
- ``# proof: static — reason`` is never run and is not a proof.
- Every ``proof-gpu N`` claim is also judged on a machine without CUDA under fake
  CUDA (``python -m flake8_torchdevice.fakecuda --devices N``): it must hold there
  too, unless the claim ends ``[fake CUDA cannot: reason]``.

Each program runs as ``python fixture.py`` in a fresh temporary directory
with ``fixtures/`` on ``PYTHONPATH``; the verdict comes from its exit status
and the last traceback on its stderr.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

TIMEOUT_S = 90.0

# Every way torch says "this process has no usable CUDA": the CPU build, the
# CPU build with an explicit ordinal, a CUDA build without a driver or without
# visible devices. A claim naming one is met by any of them (a GPU machine runs
# the CPU proofs on a CUDA build with the devices hidden), and by nothing else.
NO_CUDA = (
    ("AssertionError", "Torch not compiled with CUDA enabled"),
    ("RuntimeError", "Cannot access accelerator device when none is available"),
    ("RuntimeError", "Found no NVIDIA driver"),
    ("RuntimeError", "No CUDA GPUs are available"),
)

_CLAIM = re.compile(r"^(?:(?P<runs>runs)|fails\s+(?P<failures>\S.*?)|(?P<static>static)\b.*)\s*$")
_FAILURE = re.compile(r"^(?P<exc>[A-Za-z_][\w.]*):\s*(?P<text>\S.*?)\s*$")
# "fails A: one message | B: another": the alternatives a claim accepts, where torch's
# builds word the same mistake differently. A "|" starts an alternative only before
# "ExcType:", so a message may still contain one.
_ALTERNATIVE = re.compile(r"\s+\|\s+(?=[A-Za-z_][\w.]*:)")
_NO_FAKE = re.compile(r"\s*\[fake CUDA cannot:\s*(?P<why>[^\]]*\S)\s*\]\s*$")
_GPU_KEY = re.compile(r"^proof-gpu\s+(?P<n>[1-9]\d*)$")
_FRAME = re.compile(r'^  File "(?P<file>[^"]+)", line \d+')
_RANK_PREFIX = re.compile(r"^\[rank\d+\]: ")


@dataclass(frozen=True)
class Failure:
    """One failure a claim accepts: the exception's type and a substring of its message."""

    exc_type: str
    substring: str

    def text(self) -> str:
        return f"{self.exc_type}: {self.substring}"


@dataclass(frozen=True)
class Claim:
    outcome: str  # "runs" | "fails" | "static"
    failures: tuple = ()  # of Failure, for "fails": any one of them is met
    no_fake: str = ""  # why fake CUDA cannot reproduce this GPU claim ("": it can)

    def text(self) -> str:
        if self.outcome != "fails":
            return self.outcome
        return "fails " + " | ".join(f.text() for f in self.failures)


def parse_claim(value: str) -> Claim:
    """``runs`` / ``fails ExcType: substring [| ExcType: substring ...]`` / ``static — reason``,
    optionally ending ``[fake CUDA cannot: reason]``."""
    no_fake = _NO_FAKE.search(value)
    if no_fake:
        claim = parse_claim(value[: no_fake.start()])
        return Claim(claim.outcome, claim.failures, no_fake["why"])
    match = _CLAIM.match(value.strip())
    if not match:
        raise ValueError(f"malformed proof claim {value!r}: want 'runs', 'fails ExcType: substring' or 'static ...'")
    if match["runs"]:
        return Claim("runs")
    if match["static"]:
        return Claim("static")
    failures = []
    for part in _ALTERNATIVE.split(match["failures"]):
        failure = _FAILURE.match(part)
        if not failure:
            raise ValueError(f"malformed proof claim {value!r}: {part!r} is not 'ExcType: substring'")
        failures.append(Failure(failure["exc"], failure["text"]))
    return Claim("fails", tuple(failures))


@dataclass(frozen=True)
class Proof:
    path: Path  # the fixture program
    rule: str  # its directory: TDVnnn
    gpus: int  # 0: a machine without CUDA; N: exactly N CUDA devices visible
    claim: Claim

    @property
    def id(self) -> str:
        where = "cpu" if self.gpus == 0 else f"gpu{self.gpus}"
        return f"{self.rule}/{self.path.name}:{where}"


def proofs_of(path: Path, headers) -> list[Proof]:
    """The executable proofs declared by one fixture's ``(key, value)`` headers."""
    found = []
    for key, value in headers:
        if key == "proof":
            gpus = 0
        elif key.startswith("proof-gpu"):
            match = _GPU_KEY.match(key)
            if not match:
                raise ValueError(f"{path.name}: malformed header key {key!r}: want 'proof-gpu N'")
            gpus = int(match["n"])
        else:
            continue
        claim = parse_claim(value)
        if claim.outcome != "static":
            found.append(Proof(path, path.parent.name, gpus, claim))
    return found


# -- running -------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    returncode: Optional[int]  # None: killed at the timeout
    stdout: str
    stderr: str
    seconds: float


def visible_devices(gpus: int) -> str:
    """CUDA_VISIBLE_DEVICES that shows exactly the first ``gpus`` devices ("" hides all)."""
    current = os.environ.get("CUDA_VISIBLE_DEVICES")
    pool = [d for d in current.split(",") if d.strip()] if current else [str(i) for i in range(gpus)]
    return ",".join(pool[:gpus])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def program_env(gpus: int, fixtures: Path, tmp: str) -> dict:
    """The environment of one program: ours, plus what makes its run isolated and repeatable."""
    env = _environ()
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(fixtures), env.get("PYTHONPATH", "")) if p)
    env["CUDA_VISIBLE_DEVICES"] = visible_devices(gpus)
    env["TMPDIR"] = tmp  # checkpoints made with tempfile vanish with the directory
    env.update(SHARED_ENV)
    # One-process groups in programs that run side by side must not share a port.
    env["MASTER_ADDR"], env["MASTER_PORT"] = "127.0.0.1", str(_free_port())
    return env


def _environ(environ=None) -> dict:
    """A copy of ``os.environ`` taken from a worker thread: pytest's main thread sets and removes
    ``PYTEST_CURRENT_TEST`` meanwhile, so one pass over it may meet a key that is gone (KeyError) or a
    change of size (RuntimeError); a later pass gets a consistent copy."""
    environ = os.environ if environ is None else environ
    while True:
        try:
            return dict(environ)
        except (KeyError, RuntimeError):
            continue


# Set for every program, and for the warm-start server before it imports torch.
SHARED_ENV = {
    "PYTHONDONTWRITEBYTECODE": "1",
    "OMP_NUM_THREADS": "1",  # the programs run side by side; tiny tensors need no thread pool
}


def run_program(path: Path, gpus: int = 0, fixtures: Optional[Path] = None, timeout: float = TIMEOUT_S,
                server=None, fake: int = 0) -> Outcome:
    """Run ``python path`` in a fresh temp dir, ``fixtures`` on PYTHONPATH, ``gpus`` CUDA devices visible.

    ``fake`` > 0: no device visible, and the program runs under fake CUDA with that many
    pretended GPUs. ``server`` (a ``warm.Server``) runs a program that needs no real GPU as a
    fork of a process that has imported torch already; otherwise it is a fresh ``python path``.
    """
    fixtures = fixtures or path.parent.parent
    with tempfile.TemporaryDirectory(prefix="tdv-proof-") as root:
        work = os.path.join(root, "work")  # the program's cwd and TMPDIR: empty at the start
        os.mkdir(work)
        env = program_env(0 if fake else gpus, fixtures, work)
        started = time.monotonic()
        if server is not None and (gpus == 0 or fake):
            code, out, err = server.run(path, root, work, env, [str(fixtures)], timeout, fake=fake)
        else:
            code, out, err = _fresh(path, work, env, timeout, fake)
        return Outcome(code, out, err, time.monotonic() - started)


def fake_command(path: Path, devices: int) -> list[str]:
    """The command that runs ``path`` under fake CUDA, reporting at exit that it did."""
    return [sys.executable, "-m", "flake8_torchdevice.fakecuda", "--devices", str(devices), "--summary", str(path)]


FAKE_SUMMARY = re.compile(r"^fake CUDA: (?P<gpus>\d+) GPU\(s\) pretended, (?P<placed>\d+) tensor placements$", re.M)


def _fresh(path: Path, cwd: str, env: dict, timeout: float, fake: int = 0) -> tuple:
    command = fake_command(path, fake) if fake else [sys.executable, str(path)]
    process = subprocess.Popen(
        command, cwd=cwd, env=env, text=True,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True,  # a timeout kills its children too
    )
    try:
        out, err = process.communicate(timeout=timeout)
        return process.returncode, out, err
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        return None, out, err


# -- judging -------------------------------------------------------------


@dataclass(frozen=True)
class Raised:
    exc_type: str  # as Python printed it: "RuntimeError", "torch.AcceleratorError"
    message: str  # every line after "Type: " to the end of stderr
    frame_file: str  # where the last frame of the traceback is
    frame_source: str  # that frame's source line, stripped


def final_exception(stderr: str) -> Optional[Raised]:
    """The exception that ended the program, from the last traceback on stderr."""
    # torch.distributed's excepthook prefixes every line with "[rankN]: ".
    lines = [_RANK_PREFIX.sub("", line) for line in stderr.splitlines()]
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last):")]
    if not starts:
        return None
    frame_file, frame_source = "", ""
    for i in range(starts[-1] + 1, len(lines)):
        line = lines[i]
        frame = _FRAME.match(line)
        if frame:
            frame_file = frame["file"]
            following = lines[i + 1] if i + 1 < len(lines) else ""
            frame_source = following.strip() if following.startswith("    ") else ""
        elif line and not line[0].isspace():  # "Type: message", or "Type" alone
            exc_type, _, first = line.partition(":")
            message = "\n".join([first.strip(), *lines[i + 1:]]).strip()
            return Raised(exc_type, message, frame_file, frame_source)
    return None


def _same_type(claimed: str, printed: str) -> bool:
    # Exactly the class: "AcceleratorError" names torch.AcceleratorError, but
    # "RuntimeError" does not stand for its subclasses.
    return printed == claimed or printed.rsplit(".", 1)[-1] == claimed


def names_no_cuda(failure: Failure) -> bool:
    """Whether a claimed failure is one of torch's "no usable CUDA here" failures."""
    return any(
        kind == failure.exc_type and (failure.substring in msg or msg in failure.substring) for kind, msg in NO_CUDA
    )


def claims_no_cuda(claim: Claim) -> bool:
    """Whether every failure a claim accepts is only the absence of CUDA."""
    return claim.outcome == "fails" and all(names_no_cuda(f) for f in claim.failures)


def raised_no_cuda(raised: Raised) -> bool:
    """Whether an observed exception is one of torch's "no usable CUDA here" failures."""
    return any(_same_type(kind, raised.exc_type) and msg in raised.message for kind, msg in NO_CUDA)


@dataclass(frozen=True)
class Verdict:
    passed: bool
    detail: str
    postcondition: bool = False  # the program's own assert observed the bug
    no_cuda: bool = False  # what was shown is only the absence of CUDA


def judge(claim: Claim, outcome: Outcome, fixtures: Path) -> Verdict:
    """Whether ``outcome`` is exactly what ``claim`` says."""
    if outcome.returncode is None:
        return Verdict(False, f"timed out after {outcome.seconds:.0f} s")
    raised = final_exception(outcome.stderr)
    code = outcome.returncode
    if claim.outcome == "runs":
        if code == 0:
            return Verdict(True, "ran to completion")
        return Verdict(False, f"claimed to run, but exited {code}: {_describe(raised, outcome)}")
    if code == 0:
        return Verdict(False, f"claimed {claim.text()!r}, but the program ran to completion")
    if raised is None:
        return Verdict(False, f"claimed {claim.text()!r}, but exit {code} without a traceback: {_tail(outcome.stderr)}")
    return _judge_failure(claim, raised, fixtures)


def _judge_failure(claim: Claim, raised: Raised, fixtures: Path) -> Verdict:
    own_code = _inside(raised.frame_file, fixtures)
    if own_code and raised.frame_source.startswith("raise"):
        return Verdict(False, f"the fixture raised {raised.exc_type} itself ({raised.frame_source!r}): not torch's")
    got = f"{raised.exc_type}: {_first(raised.message)}"
    met = next((f for f in claim.failures if _meets(f, raised)), None)
    if met is None:
        return Verdict(False, f"claimed {claim.text()!r}, got {got}")
    postcondition = own_code and raised.exc_type == "AssertionError" and raised.frame_source.startswith("assert")
    return Verdict(True, got, postcondition=postcondition, no_cuda=names_no_cuda(met))


def _meets(failure: Failure, raised: Raised) -> bool:
    """The exception is the claimed one, or both are torch's "no usable CUDA here"."""
    if _same_type(failure.exc_type, raised.exc_type) and failure.substring in raised.message:
        return True
    return names_no_cuda(failure) and raised_no_cuda(raised)


def _inside(file: str, folder: Path) -> bool:
    try:
        return Path(file).resolve().is_relative_to(folder.resolve())
    except (OSError, ValueError):
        return False


def _first(message: str, width: int = 160) -> str:
    line = message.splitlines()[0] if message else ""
    return line if len(line) <= width else line[: width - 3] + "..."


def _tail(text: str, lines: int = 5) -> str:
    return " | ".join(text.strip().splitlines()[-lines:]) or "(no stderr)"


def _describe(raised: Optional[Raised], outcome: Outcome) -> str:
    return f"{raised.exc_type}: {_first(raised.message)}" if raised else _tail(outcome.stderr)


def gpu_skip_reason(gpus: int, device_count: int) -> Optional[str]:
    """Why a proof cannot run on a machine with ``device_count`` CUDA devices, or None."""
    if gpus <= device_count:
        return None
    return "needs 1 GPU" if gpus == 1 else f"needs {gpus} GPUs"


# -- the catalogue -------------------------------------------------------


def collect(cases) -> tuple[list[Proof], list[str]]:
    """Every executable proof of every fixture case, and the header problems found."""
    proofs, problems = [], []
    for case in cases:
        try:
            proofs.extend(proofs_of(case.path, case.headers))
        except ValueError as error:
            problems.append(f"{case.id}: {error}")
    return proofs, problems
