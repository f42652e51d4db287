"""An ordered parallel map that Ctrl-C stops at once, without worker tracebacks.

Ctrl-C in a terminal sends SIGINT to every process of the foreground group,
workers included: they ignore it (the parent decides), and the parent kills
them instead of waiting for their queued work. SIGINT is blocked while the
workers are forked, so none can receive it before its initializer ran; the
parent then gets the pending signal as soon as it unblocks it.
"""

from __future__ import annotations

import multiprocessing
import signal
from concurrent.futures.process import BrokenProcessPool
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


def _workers(pool) -> set:
    return {process.pid for process in getattr(pool, "_pool", ())}


def _died(pool, started: set) -> bool:
    """A worker killed from outside (OOM, a crash) loses its task for good;
    the pool replaces only dead workers, so a new pid means one died."""
    return not _workers(pool) <= started


def _stop(pool) -> None:
    """Kill the workers now; queued work is dropped, not waited for."""
    with _sigint_blocked():  # a second Ctrl-C must not interrupt the cleanup
        pool.terminate()


def ordered_map(function: Callable[[T], R], items: Sequence[T], jobs: int, chunksize: int = 1) -> list[R]:
    """``[function(i) for i in items]`` in ``jobs`` processes, in input order.

    Raises ``BrokenProcessPool`` if a worker dies (the caller may go serial).
    """
    with _sigint_blocked():
        pool = multiprocessing.Pool(jobs, initializer=_ignore_sigint)  # forks every worker now
    try:
        started = _workers(pool)
        pending = pool.map_async(function, items, chunksize=chunksize)
        while not pending.ready():
            pending.wait(0.2)
            if _died(pool, started):
                raise BrokenProcessPool("a worker process died")
        results = pending.get()
    except BaseException:  # KeyboardInterrupt above all: do not wait for queued work
        _stop(pool)
        raise
    pool.close()
    pool.join()
    return results


def serial_map(function: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``[function(i) for i in items]``; a Ctrl-C that the work swallowed
    (code that catches broad exceptions turns one into an internal error)
    still stops the loop after the current item."""
    pressed = []

    def handler(signum, frame):
        pressed.append(signum)
        raise KeyboardInterrupt

    try:
        old = signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread: no handler of our own
        return [function(item) for item in items]
    try:
        results = []
        for item in items:
            results.append(function(item))
            if pressed:
                raise KeyboardInterrupt
        return results
    finally:
        signal.signal(signal.SIGINT, old)
