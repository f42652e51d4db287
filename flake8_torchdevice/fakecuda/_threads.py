"""Threads started during a fake-CUDA session run under it too (torch-function modes are
per thread): each new thread enters the session's mode before its first line runs."""

from __future__ import annotations

import sys
import threading


def install(make_mode):
    """Make each thread started from now on enter ``make_mode()``; returns the undo."""
    before = threading.getprofile() if hasattr(threading, "getprofile") else None

    def enter(frame, event, arg):
        sys.setprofile(before)
        make_mode().__enter__()  # lives as long as the thread
        if before is not None:
            return before(frame, event, arg)
        return None

    threading.setprofile(enter)
    return lambda: threading.setprofile(before)
