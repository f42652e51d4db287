"""A warm start for the programs of CPU proofs: fork them from a process that imported torch.

Importing torch costs about 2.3 s of CPU, nearly all of what most fixture
programs cost (those using meta tensors or DDP also import ``torch._dynamo``,
2 s more); forty programs paid it forty times. A *server* process imports torch
once (with the environment of a CPU proof: no CUDA devices visible, one
OpenMP thread) and forks one child per program. The child changes to the
program's temp directory, takes its environment, and runs the file as
``__main__`` the way ``python file.py`` does: ``sys.argv``, ``sys.path[0]``, an
uncaught exception printed by ``sys.excepthook`` and exit status 1,
``SystemExit``, non-daemon threads and ``atexit`` as usual; only the modules
are not torn down at exit. Nothing in torch is touched; it is only already
imported. ``TDV_PROOFS_COLD=1`` runs every program as a fresh
``python file.py`` instead (and GPU proofs always run that way).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

_SERVER = r"""
import atexit, gc, json, os, runpy, signal, sys, tempfile, threading, time, traceback
import torch  # noqa: F401  (paid once, here)
import torch._dynamo  # noqa: F401  (meta tensors, DDP and others import it lazily: 800 modules)

gc.freeze()  # a child's collections then leave the server's objects (and their pages) alone


def run_child(request):
    os.setsid()  # its own process group: a timeout kills grandchildren too
    streams = ((0, os.devnull, os.O_RDONLY), (1, request["stdout"], os.O_WRONLY), (2, request["stderr"], os.O_WRONLY))
    for fd, name, flags in streams:
        os.dup2(os.open(name, flags), fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile.tempdir = None
    sys.argv = [request["path"]]
    sys.path[0:1] = [os.path.dirname(request["path"]), *request["pythonpath"]]
    try:
        if request["fake"]:  # what `python -m flake8_torchdevice.fakecuda --devices N --summary path` does
            from flake8_torchdevice.fakecuda.__main__ import main
            code = main(["--devices", str(request["fake"]), "--summary", request["path"]])
        else:
            runpy.run_path(request["path"], run_name="__main__")
            code = 0
    except SystemExit as stop:
        code = exit_code(stop.code)
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    # What the interpreter does at exit, less tearing down the modules torch
    # brought in (about 2 s a program, and nothing a proof looks at).
    getattr(threading, "_shutdown", lambda: None)()
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def exit_code(code):
    if code is None or isinstance(code, int):
        return code or 0
    print(code, file=sys.stderr)
    return 1


def wait(pid, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.killpg(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


for line in sys.stdin:
    request = json.loads(line)
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        try:
            run_child(request)  # leaves by os._exit
        finally:  # a broken set-up must not leave a second server reading requests
            traceback.print_exc()
            os._exit(70)
    sys.stdout.write(json.dumps({"returncode": wait(pid, request["timeout"])}) + "\n")
    sys.stdout.flush()
"""


def cold() -> bool:
    return os.environ.get("TDV_PROOFS_COLD", "") not in ("", "0")


class Server:
    """One torch-importing process that runs programs one at a time, each in a fork."""

    def __init__(self, env: dict):
        self.process = subprocess.Popen(
            [sys.executable, "-c", _SERVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
        )

    def run(self, path: Path, root: str, cwd: str, env: dict, pythonpath: list, timeout: float,
            fake: int = 0) -> tuple:
        """(returncode or None at the timeout, stdout, stderr) of one program; output files go in ``root``."""
        out, err = os.path.join(root, "stdout"), os.path.join(root, "stderr")
        for name in (out, err):
            open(name, "w").close()
        request = dict(path=str(path), cwd=cwd, env=env, pythonpath=pythonpath, timeout=timeout, stdout=out, stderr=err,
                       fake=fake)
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        reply = self.process.stdout.readline()
        if not reply:
            raise RuntimeError(f"the warm-start server died (exit {self.process.wait()})")
        texts = [Path(name).read_text(errors="replace") for name in (out, err)]
        return (json.loads(reply)["returncode"], *texts)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)


class Pool:
    """One server per calling thread, started on first use."""

    def __init__(self, env: dict):
        self.env = env
        self.local = threading.local()
        self.servers: list[Server] = []
        self.lock = threading.Lock()

    def server(self) -> Server:
        if not hasattr(self.local, "server"):
            self.local.server = Server(self.env)
            with self.lock:
                self.servers.append(self.local.server)
        return self.local.server

    def close(self) -> None:
        for server in self.servers:
            server.close()
