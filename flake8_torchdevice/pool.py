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
from concurrent.futures import TimeoutError as FutureTimeout
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


def _chunk(function: Callable[[T], R], items: Sequence[T]) -> list[R]:
    return [function(item) for item in items]


def _wait(future):
    """``future.result()``, waking every 0.1 s: a SIGINT handled on another
    thread only sets a flag, which a main thread blocked on a lock never sees."""
    while True:
        try:
            return future.result(timeout=0.1)
        except FutureTimeout:
            continue


def _stop(pool: ProcessPoolExecutor) -> None:
    """Kill the workers now; queued work is dropped, not waited for.

    Futures are left as they are: cancelling them races with the pool's
    manager thread, which then prints an InvalidStateError traceback.
    """
    with _sigint_blocked():  # a second Ctrl-C must not interrupt the cleanup
        terminate = getattr(pool, "terminate_workers", None)  # Python 3.14+
        if terminate is not None:
            terminate()
        else:
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                process.terminate()
        pool.shutdown(wait=False)


def ordered_map(function: Callable[[T], R], items: Sequence[T], jobs: int, chunksize: int = 1) -> list[R]:
    """``[function(i) for i in items]`` in ``jobs`` processes, in input order.

    A worker that dies (OOM killer, a crash) raises ``BrokenProcessPool``.
    """
    chunks = [items[i:i + chunksize] for i in range(0, len(items), chunksize)]
    with _sigint_blocked():  # the first submit forks the workers (fork context)
        pool = ProcessPoolExecutor(max_workers=jobs, initializer=_ignore_sigint)
        try:
            futures = [pool.submit(_chunk, function, chunk) for chunk in chunks[:1]]
        except BaseException:
            _stop(pool)
            raise
    try:
        futures += [pool.submit(_chunk, function, chunk) for chunk in chunks[1:]]
        results = [result for future in futures for result in _wait(future)]
    except BaseException:  # KeyboardInterrupt above all: do not wait for queued work
        _stop(pool)
        raise
    pool.shutdown(wait=True)
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
