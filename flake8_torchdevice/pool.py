"""An ordered parallel map that Ctrl-C stops at once, without worker tracebacks.

Ctrl-C in a terminal sends SIGINT to every process of the foreground group,
workers included: they ignore it (the parent decides), and the parent kills
them instead of waiting for their queued work. SIGINT is blocked while the
workers are forked, so none can receive it before its initializer ran; the
parent then gets the pending signal as soon as it unblocks it.
"""

from __future__ import annotations

import signal
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")

_MASKABLE = hasattr(signal, "pthread_sigmask")


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if _MASKABLE:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


@contextmanager
def _sigint_blocked() -> Iterator[None]:
    if not _MASKABLE:
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _start_workers(pool: ProcessPoolExecutor, count: int) -> None:
    """Fork every worker now, while SIGINT is blocked (they start lazily)."""
    for future in [pool.submit(int) for _ in range(count)]:
        future.result()


def _stop(pool: ProcessPoolExecutor) -> None:
    """Kill the workers now; queued work is dropped, not waited for."""
    with _sigint_blocked():  # a second Ctrl-C must not interrupt the cleanup
        terminate = getattr(pool, "terminate_workers", None)  # Python 3.14+
        if terminate is not None:
            terminate()
        else:
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                process.terminate()
        pool.shutdown(wait=False, cancel_futures=True)


def ordered_map(function: Callable[[T], R], items: Sequence[T], jobs: int, chunksize: int = 1) -> list[R]:
    """``[function(i) for i in items]`` in ``jobs`` processes, in input order."""
    with _sigint_blocked():
        pool = ProcessPoolExecutor(max_workers=jobs, initializer=_ignore_sigint)
        try:
            _start_workers(pool, jobs)
        except BaseException:
            _stop(pool)
            raise
    try:
        results = list(pool.map(function, items, chunksize=chunksize))
    except BaseException:  # KeyboardInterrupt above all: do not wait for queued work
        _stop(pool)
        raise
    pool.shutdown(wait=True)
    return results
