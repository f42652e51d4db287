"""Ctrl-C: one line on stderr, exit status 130, at once, at any moment of a run.

A real terminal sends SIGINT to the whole foreground process group, workers
included; the tests do the same (``killpg`` on a new session). The moments are
found by watching the process tree (Linux ``/proc``), not guessed with sleeps.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_support import SCRIPT

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")

BODY = "import torch\n" + "".join(
    f"def f{i}(x, device):\n    y = torch.zeros(3)\n    x.to(device)\n    return x + y, torch.load('c{i}.pt')\n"
    for i in range(60)
)
LIMIT_S = 1.0  # from the signal to the exit of the command


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("big")
    for package in range(8):
        (root / f"p{package}").mkdir()
        for module in range(25):
            (root / f"p{package}" / f"m{module}.py").write_text(BODY, encoding="utf-8")
    return root


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _loaded_libcst(pid: int) -> bool:
    try:
        return "libcst" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def _wait(condition, process, timeout=60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert process.poll() is None, "the run ended before the moment to interrupt it"
        assert time.monotonic() < deadline, "the moment to interrupt never came"
        time.sleep(0.002)


def _interrupt(process) -> tuple[float, str]:
    start = time.monotonic()
    os.killpg(process.pid, signal.SIGINT)
    try:
        _, err = process.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        os.kill(process.pid, signal.SIGABRT)  # PYTHONFAULTHANDLER: the stacks, for the report
        time.sleep(1)
        os.killpg(process.pid, signal.SIGKILL)  # workers too: leave no orphans
        _, err = process.communicate(timeout=5)
        raise AssertionError(err.decode()[-4000:])
    return time.monotonic() - start, err.decode()


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _start(tree, jobs: int):
    return subprocess.Popen(
        # --no-cache: every run parses; none may skip the files an earlier run of the module stored
        [*SCRIPT, f"-j{jobs}", "--no-cache", "."], cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True, env={**os.environ, "PYTHONFAULTHANDLER": "1"}, preexec_fn=_as_from_a_terminal,
    )


def _as_from_a_terminal() -> None:
    """A command typed in a terminal starts with SIGINT at its default and unblocked. A child
    inherits both from the test process, which a shell without job control started in the
    background (``pytest &``) with SIGINT ignored: Python then keeps ignoring it, and the Ctrl-C
    under test is lost."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


MOMENTS = {
    "first-worker-forked": lambda p: len(_children(p.pid)) >= 1,
    "pool-started": lambda p: len(_children(p.pid)) >= 2,
    "workers-parsing": lambda p: any(_loaded_libcst(c) for c in _children(p.pid)),
}


@pytest.mark.slow
@pytest.mark.parametrize("moment", MOMENTS)
def test_ctrl_c_with_workers_is_one_line_and_quick(tree, moment):
    for _ in range(3):
        process = _start(tree, jobs=2)
        _wait(lambda process=process: MOMENTS[moment](process), process)
        workers = _children(process.pid)
        elapsed, err = _interrupt(process)
        assert process.returncode == 130, err
        assert err.splitlines() == ["torchdevice: interrupted"], err
        assert elapsed < LIMIT_S, f"took {elapsed:.2f} s"
        deadline = time.monotonic() + 2
        while not all(_gone(pid) for pid in workers):
            assert time.monotonic() < deadline, "workers outlived the command"
            time.sleep(0.01)


@pytest.mark.slow
@pytest.mark.parametrize("after_s", [0.0, 0.2, 0.5])
def test_ctrl_c_in_a_single_process_run(tree, after_s):
    process = _start(tree, jobs=1)
    _wait(lambda: _loaded_libcst(process.pid), process)  # the first file is being parsed
    time.sleep(after_s)
    elapsed, err = _interrupt(process)
    assert (process.returncode, err.splitlines()) == (130, ["torchdevice: interrupted"]), err
    assert elapsed < LIMIT_S


def test_ctrl_c_while_the_program_is_loading(tree):
    # Signals before our code runs are Python's own; from ``cli.main`` on they are
    # ours, including while the modules that do the work are still being imported.
    code = (
        "import os, signal, sys\n"
        "class Hook:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'flake8_torchdevice.runner':\n"
        "            os.kill(os.getpid(), signal.SIGINT)\n"
        "sys.meta_path.insert(0, Hook())\n"
        "from flake8_torchdevice.cli import main\n"
        "sys.exit(main(['.']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tree, capture_output=True, timeout=60, preexec_fn=_as_from_a_terminal
    )
    assert (done.returncode, done.stderr.decode().splitlines()) == (130, ["torchdevice: interrupted"])


def _exit_on_three(value: int) -> int:
    if value == 3:
        os._exit(1)  # as a worker killed by the OOM killer would
    return value * 2


def test_a_dead_worker_is_reported_not_waited_for_forever():
    from concurrent.futures.process import BrokenProcessPool

    from flake8_torchdevice.pool import ordered_map

    assert ordered_map(_exit_on_three, [1, 2, 4, 5], jobs=2) == [2, 4, 8, 10]
    start = time.monotonic()
    with pytest.raises(BrokenProcessPool):
        ordered_map(_exit_on_three, list(range(8)), jobs=2)
    assert time.monotonic() - start < 10
