"""``python -m flake8_torchdevice.fakecuda [--devices N] [--saved-on-missing-gpu] script.py [args]``:
run a script (or ``-m module``) as if the machine had N GPUs."""

from __future__ import annotations

import argparse
import os
import runpy
import sys


def parse(argv):
    parser = argparse.ArgumentParser(
        prog="python -m flake8_torchdevice.fakecuda",
        description="Run a PyTorch script on the CPU as if the machine had GPUs: device mistakes fail "
        "with torch's CUDA messages.",
    )
    parser.add_argument("--devices", type=int, default=1, metavar="N", help="how many GPUs to pretend (default 1)")
    parser.add_argument("--saved-on-missing-gpu", action="store_true",
                        help="torch.load without map_location of a CUDA-saved file fails as on a machine "
                        "without that GPU")
    parser.add_argument("--summary", action="store_true",
                        help="at exit, print to stderr how many tensors were placed on the pretended GPUs")
    parser.add_argument("-m", dest="module", metavar="MODULE", help="run a module, as python -m does")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script and its arguments")
    options = parser.parse_args(argv)
    if options.devices < 1:
        parser.error("--devices must be at least 1")
    if not options.module and not options.args:
        parser.error("give a script to run, or -m MODULE")
    return options


def main(argv=None) -> int:
    options = parse(sys.argv[1:] if argv is None else argv)
    if not options.module and not os.path.isfile(options.args[0]):
        print(f"python -m flake8_torchdevice.fakecuda: no such file: {options.args[0]}", file=sys.stderr)
        return 2
    from ._session import fake_cuda

    try:
        with fake_cuda(options.devices, saved_on_missing_gpu=options.saved_on_missing_gpu):
            _run(options)
    finally:
        if options.summary:
            from ._tags import PLACED

            print(f"fake CUDA: {options.devices} GPU(s) pretended, {PLACED[0]} tensor placements", file=sys.stderr)
    return 0


def _run(options) -> None:
    """As ``python script.py`` / ``python -m module`` would: argv, sys.path[0], ``__main__``."""
    if options.module:
        sys.argv = [options.module, *options.args]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(options.module, run_name="__main__", alter_sys=True)
    else:
        script = options.args[0]
        sys.argv = list(options.args)
        sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
        runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("python -m flake8_torchdevice.fakecuda: interrupted", file=sys.stderr)
        sys.exit(130)
