"""The standalone command's result cache: a file's findings, kept by what decides them.

A result is stored under the hash of everything that can change it: the file's bytes,
the name it is reported under (a test file is judged by its name), the selected codes,
whether unsafe fixes count as fixable, and the linter's own code (a fingerprint of
every module of this package, so a new version or an edited rule never reads an old
result). A read-only pass only: ``--fix``, ``--diff`` and ``--add-noqa`` write files
and always lint. The cache is best effort: a directory that cannot be made, an entry
that cannot be read or written, or one that does not decode is a miss, never an error.

Like ruff's ``.ruff_cache``, the directory (``.torchdevice_cache`` beside the
``pyproject.toml`` in use, else in the working directory) holds a ``.gitignore`` of
``*`` and a ``CACHEDIR.TAG``, so that git and backup tools leave it alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Optional

FORMAT = "1"
DIRECTORY = ".torchdevice_cache"
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# flake8-torchdevice's result cache (safe to delete)\n"


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A hash of this package's own modules: results of other code never match."""
    package = Path(__file__).resolve().parent
    digest = hashlib.sha256(FORMAT.encode())
    for path in sorted(package.rglob("*.py")):
        if "fakecuda" in path.parts:  # torch-only; never decides a finding
            continue
        digest.update(str(path.relative_to(package)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def salt(codes, unsafe_fixes: bool) -> str:
    """What every key of one run shares: the linter's code and the selection."""
    return f"{code_fingerprint()}|{','.join(sorted(codes))}|{int(unsafe_fixes)}"


def key(run_salt: str, display: str, data: bytes) -> str:
    digest = hashlib.sha256(run_salt.encode())
    digest.update(b"\0" + display.encode("utf-8", "surrogateescape") + b"\0")
    digest.update(data)
    return digest.hexdigest()


def prepare(directory: Path) -> Optional[str]:
    """``directory``, made if need be, ready for entries; None where it cannot be."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for name, text in ((".gitignore", "*\n"), ("CACHEDIR.TAG", _TAG)):
            marker = directory / name
            if not marker.exists():
                marker.write_text(text, encoding="utf-8")
    except OSError:
        return None
    return str(directory)


def _entry(directory: str, digest: str) -> str:
    return os.path.join(directory, FORMAT, digest[:2], digest[2:] + ".json")


def load(directory: str, digest: str) -> Optional[dict]:
    try:
        with open(_entry(directory, digest), encoding="utf-8") as handle:
            stored = json.load(handle)
    except (OSError, ValueError):
        return None
    return stored if isinstance(stored, dict) else None


def store(directory: str, digest: str, result: dict) -> None:
    path = _entry(directory, digest)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(result, out, separators=(",", ":"))
            os.replace(temporary, path)  # a reader sees the whole entry or none
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError:
        pass
