"""Entry point of the ``torchdevice`` command.

Kept tiny: everything else is imported inside ``main``'s ``try``, so that a
Ctrl-C while the program is still loading gives the same one line and exit
status 130 as one during the run, never a traceback.
"""

from __future__ import annotations

import os
import sys

PROG = "torchdevice"


def main(argv: "Sequence[str] | None" = None) -> int:  # noqa: F821 - no typing import at startup
    try:
        from .command import execute

        return execute(argv)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        if argv is None:  # the program itself (the console script): end now
            _exit_now(130)
        return 130
    except BrokenPipeError:
        sys.stderr.close()  # the reader went away (e.g. | head): not our error
        return 1


def _exit_now(status: int) -> None:
    """Skip the interpreter's exit handlers: after Ctrl-C they would join the
    process pool's threads (seconds). Any worker still alive is killed first:
    it would keep stdout/stderr pipes open and its caller waiting."""
    multiprocessing = sys.modules.get("multiprocessing")
    for child in multiprocessing.active_children() if multiprocessing else ():
        child.kill()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


if __name__ == "__main__":
    sys.exit(main())
