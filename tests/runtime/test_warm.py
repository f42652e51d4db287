"""The warm start runs a program as ``python file.py`` would: same exit status, output, traceback."""

from __future__ import annotations

import os
import textwrap

import pytest

from . import proofs, warm

# Each program ends a different way; all print what a script sees of itself.
ENDINGS = {
    "normal": "",
    "exit_3": "sys.exit(3)",
    "exit_message": "sys.exit('stopped: no GPU')",
    "exit_none": "raise SystemExit",
    "uncaught": "{}['missing']",
    "chained": "try:\n    int('x')\nexcept ValueError as error:\n    raise KeyError('k') from error",
    "custom_hook": "sys.excepthook = lambda *a: print('hooked', a[0].__name__, file=sys.stderr)\n1 / 0",
    "thread": "threading.Thread(target=lambda: (time.sleep(0.2), print('thread done'))).start()",
}

PRELUDE = """\
import atexit, os, sys, tempfile, threading, time
atexit.register(lambda: print("atexit ran"))
print(__name__, os.path.basename(sys.argv[0]), sys.path[0] == os.path.dirname(os.path.abspath(__file__)))
print(os.getcwd() == tempfile.gettempdir(), os.environ["CUDA_VISIBLE_DEVICES"] == "", "_helper" in sys.modules)
import _helper
print(_helper.VALUE, flush=True)
"""


@pytest.fixture(scope="module")
def server():
    pytest.importorskip("torch")  # the server imports torch before its first fork
    started = warm.Server({**os.environ, **proofs.SHARED_ENV, "CUDA_VISIBLE_DEVICES": ""})
    yield started
    started.close()


def _program(tmp_path, ending: str):
    fixtures = tmp_path / "fixtures"
    (fixtures / "TDV999").mkdir(parents=True)
    (fixtures / "_helper.py").write_text("VALUE = 'helper imported'\n")
    path = fixtures / "TDV999" / "program.py"
    path.write_text(PRELUDE + textwrap.dedent(ending) + "\n")
    return path, fixtures


def _trimmed(stderr: str) -> list[str]:
    # A fresh interpreter that imports torch warns about numpy; the server did that already.
    return [line for line in stderr.splitlines() if "numpy" not in line.lower() and "_conversion_method" not in line]


@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_warm_and_fresh_runs_agree(server, tmp_path, ending):
    path, fixtures = _program(tmp_path, ENDINGS[ending])
    fresh = proofs.run_program(path, fixtures=fixtures)
    warmed = proofs.run_program(path, fixtures=fixtures, server=server)
    assert fresh.stdout.startswith("__main__ program.py True\nTrue True False\nhelper imported\n"), fresh.stdout
    assert (warmed.returncode, warmed.stdout) == (fresh.returncode, fresh.stdout)
    fresh_exc, warm_exc = proofs.final_exception(fresh.stderr), proofs.final_exception(warmed.stderr)
    assert (warm_exc and (warm_exc.exc_type, warm_exc.message, warm_exc.frame_source)) == (
        fresh_exc and (fresh_exc.exc_type, fresh_exc.message, fresh_exc.frame_source)
    )
    if not fresh_exc:
        assert _trimmed(warmed.stderr) == _trimmed(fresh.stderr)


def test_a_hung_program_is_killed_and_the_server_goes_on(server, tmp_path):
    path, fixtures = _program(tmp_path, "time.sleep(60)")
    assert proofs.run_program(path, fixtures=fixtures, server=server, timeout=1).returncode is None
    path.write_text("print('next')\n")
    assert proofs.run_program(path, fixtures=fixtures, server=server).stdout == "next\n"


DDP_PROGRAM = """\
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
DistributedDataParallel(nn.Linear(2, 2), device_ids=[0])
"""


def test_a_torch_failure_reads_the_same_both_ways(server, tmp_path):
    """A ValueError from inside DDP, printed by torch.distributed's rank-prefixing excepthook."""
    path, fixtures = _program(tmp_path, "")
    path.write_text(DDP_PROGRAM)
    fresh = proofs.run_program(path, fixtures=fixtures)
    warmed = proofs.run_program(path, fixtures=fixtures, server=server)
    assert "[rank0]: ValueError: DistributedDataParallel device_ids" in fresh.stderr
    fresh_exc, warm_exc = proofs.final_exception(fresh.stderr), proofs.final_exception(warmed.stderr)
    assert fresh_exc.exc_type == "ValueError" and "device_ids [0]" in fresh_exc.message
    assert (warmed.returncode, warm_exc) == (fresh.returncode, fresh_exc)


def test_cold_mode_is_chosen_by_the_environment(monkeypatch):
    monkeypatch.setenv("TDV_PROOFS_COLD", "1")
    assert warm.cold()
    monkeypatch.setenv("TDV_PROOFS_COLD", "0")
    assert not warm.cold()
