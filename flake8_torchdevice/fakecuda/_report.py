"""The note under a fake-CUDA failure: the user's line where the devices met, and the
TDV rule that reports that line (or, where the linter is silent there, the rule whose
page explains this kind of failure)."""

from __future__ import annotations

import linecache
import os
import sys
from functools import lru_cache
from typing import Optional

_HERE = os.path.dirname(os.path.abspath(__file__))
_SKIP = (_HERE,)


def _torch_dir() -> str:
    import torch

    return os.path.dirname(os.path.abspath(torch.__file__))


def user_frame():
    """The innermost frame outside torch and fake CUDA: the line the user wrote."""
    skip = (*_SKIP, _torch_dir())
    frame = sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not path.startswith(skip) and not frame.f_code.co_filename.startswith("<frozen"):
            return frame
        frame = frame.f_back
    return None


@lru_cache(maxsize=64)
def _findings(path: str, mtime: float) -> tuple:
    """(line, code) of every finding of every rule in the file at ``path``."""
    try:
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
        from flake8_torchdevice.engine import check_source
    except (OSError, UnicodeDecodeError, ImportError):
        return ()
    result = check_source(source, filename=path)
    return tuple((v.line, v.code) for v in result.violations)


def rule_at(path: str, line: int) -> Optional[str]:
    """The TDV code the linter reports on ``line`` of ``path``, if any."""
    try:
        mtime = os.stat(path).st_mtime
    except OSError:
        return None
    return next((code for at, code in _findings(path, mtime) if at == line), None)


def note_for(kind: str) -> str:
    frame = user_frame()
    if frame is None:
        return f"fake CUDA: see {kind} in flake8-torchdevice's docs/rules/{kind}.md"
    path, line = frame.f_code.co_filename, frame.f_lineno
    source = linecache.getline(path, line).strip()
    found = rule_at(path, line)
    where = f"fake CUDA: {path}:{line}: {source}"
    if found:
        return f"{where}\n  flake8-torchdevice reports this line as {found} (docs/rules/{found}.md)"
    return f"{where}\n  the mistake is explained by {kind} (docs/rules/{kind}.md)"


def explain(error: BaseException, kind: str) -> BaseException:
    """``error`` with a note naming the user's line and the rule page for it."""
    note = note_for(kind)
    if hasattr(error, "add_note"):
        error.add_note(note)
    elif error.args:  # Python 3.10: no notes; the message keeps torch's text first
        error.args = (f"{error.args[0]}\n{note}", *error.args[1:])
    return error
