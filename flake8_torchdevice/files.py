"""Finding the files to lint, and reading/writing them byte-faithfully.

Reading keeps what a fix must write back: the encoding (PEP 263 cookie or
UTF-8 BOM, via ``tokenize.detect_encoding``) and the newlines (the text is
decoded without newline translation, so CRLF stays CRLF).
"""

from __future__ import annotations

import fnmatch
import io
import os
import stat
import tempfile
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

SUFFIXES = (".py", ".pyi", ".ipynb")
# Directories never worth linting; virtualenvs are also found by pyvenv.cfg.
SKIP_DIRS = (
    ".git", ".hg", ".svn", ".bzr", "CVS", "__pycache__", ".tox", ".nox", ".venv", "venv",
    ".eggs", "*.egg-info", ".mypy_cache", ".pytest_cache", ".ruff_cache", "build", "dist",
    "node_modules", "site-packages", "__pypackages__", ".ipynb_checkpoints",
)


class ReadError(Exception):
    """A file that cannot be read; the message is one line."""


@dataclass
class SourceFile:
    text: str
    encoding: str  # "utf-8-sig" when the file starts with a BOM


class Excluder:
    """flake8-style patterns: matched against the name and the absolute path."""

    def __init__(self, patterns: Iterable[str], base: Path) -> None:
        self.patterns = [
            os.path.abspath(os.path.join(base, p)) if "/" in p else p for p in patterns
        ]

    def __call__(self, path: str) -> bool:
        name, absolute = os.path.basename(path.rstrip("/")), os.path.abspath(path)
        return any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(absolute, p) for p in self.patterns)


def _is_venv(directory: str) -> bool:
    return os.path.isfile(os.path.join(directory, "pyvenv.cfg"))


def discover(paths: Sequence[str], excluded: Excluder, errors: list) -> list[str]:
    """Files to lint, in a stable order. Missing paths go to ``errors``."""
    skip = Excluder(SKIP_DIRS, Path.cwd())
    found: list[str] = []
    for path in paths:
        if path == "-":
            found.append(path)
        elif excluded(path):
            continue
        elif os.path.isdir(path):
            found.extend(sorted(_walk(path, excluded, skip)))
        elif os.path.lexists(path):
            found.append(path)  # named explicitly: lint whatever its suffix
        else:
            errors.append(f"{path}: {_missing_reason(path)}")
    return list(dict.fromkeys(found))


def _missing_reason(path: str) -> str:
    try:
        os.stat(path)
    except OSError as exc:
        return exc.strerror or "cannot access"
    return "cannot access"


def _walk(root: str, excluded: Excluder, skip: Excluder) -> Iterator[str]:
    for folder, dirs, files in os.walk(root):
        dirs[:] = [
            d for d in dirs
            if not skip(d) and not excluded(os.path.join(folder, d)) and not _is_venv(os.path.join(folder, d))
        ]
        for name in files:
            full = os.path.join(folder, name)
            # A dangling symlink found by walking is skipped, as ruff does;
            # named on the command line it is still an error.
            if name.endswith(SUFFIXES) and not excluded(full) and os.path.exists(full):
                yield full


def read_bytes(path: str, name: str = "") -> bytes:
    """Read a regular file; FIFOs and devices are refused (they could block).
    Errors name the file ``name`` (the path as findings show it)."""
    name = name or path
    try:
        mode = os.stat(path).st_mode
        if stat.S_ISDIR(mode):
            raise ReadError(f"{name}: is a directory")
        if not stat.S_ISREG(mode):
            raise ReadError(f"{name}: not a regular file")
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise ReadError(f"{name}: {exc.strerror or exc}") from None


def decode(data: bytes, name: str) -> SourceFile:
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        if "invalid or missing encoding declaration" not in exc.msg:
            raise ReadError(f"{name}: cannot decode: {exc.msg.splitlines()[0]}") from None
        encoding = "utf-8"  # no cookie, and the first lines are not UTF-8: say where
    try:
        return SourceFile(data.decode(encoding), encoding)
    except LookupError as exc:
        raise ReadError(f"{name}: cannot decode: {exc}") from None
    except UnicodeDecodeError as exc:
        if b"\0" in data:  # undecodable with NUL bytes: an image, a .pyc, ...
            raise ReadError(f"{name}: cannot decode: binary file (contains NUL bytes)") from None
        line = data.count(b"\n", 0, exc.start) + 1
        label = "UTF-8" if encoding.startswith("utf-8") else encoding
        raise ReadError(
            f"{name}: cannot decode as {label}: {exc.reason} (byte 0x{data[exc.start]:02x} on line {line})"
        ) from None


class WriteError(Exception):
    """A file that --fix must not or cannot write; the message is one line."""


def writable(path: str, name: str) -> os.stat_result:
    """The file's status, if the user may write it; else ``WriteError``.

    A file without any write bit (``chmod a-w``, 0444) is refused even for
    root, who could write it: read-only is the user's decision, as for ruff.
    """
    info = os.stat(path)
    if not info.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise WriteError(f"{name}: not fixed: the file is read-only")
    if not os.access(path, os.W_OK):
        raise WriteError(f"{name}: not fixed: no permission to write it")
    return info


def write_atomic(path: str, source: SourceFile, name: str = "") -> None:
    """Replace ``path`` with ``source``: same encoding, newlines, mode, owner.

    Normally a new file renamed over the old one (never half-written). When a
    rename would break hard links or could not keep the owner and group (the
    user may write a file someone else owns), the file is rewritten in place.
    """
    data = source.text.encode(source.encoding)
    target = os.path.realpath(path)  # keep a symlink a symlink
    info = writable(target, name or path)
    if info.st_nlink > 1 or not _replace(target, data, info):
        _overwrite(target, data)


def _replace(target: str, data: bytes, info: os.stat_result) -> bool:
    """Write a temporary file and rename it over ``target``; False if that
    would change the owner or group (nothing is written then)."""
    try:
        handle, temp = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".torchdevice-", suffix=".tmp")
    except PermissionError:  # a writable file in a read-only directory
        return False
    try:
        try:
            if hasattr(os, "chown"):  # POSIX
                os.chown(temp, info.st_uid, info.st_gid)
        except PermissionError:
            os.close(handle)
            os.unlink(temp)
            return False
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, stat.S_IMODE(info.st_mode))
        os.replace(temp, target)
        return True
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise


def _overwrite(target: str, data: bytes) -> None:
    with open(target, "r+b") as out:
        out.write(data)
        out.truncate()
        out.flush()
        os.fsync(out.fileno())
