"""``--fix`` writes only what the user may write, and keeps owner, group, mode,
inode and hard links. Permission cases run the console script as an
unprivileged user (``setpriv`` when the tests run as root, who may write
anything; as themselves otherwise)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile

import pytest

from cli_support import BAD, GOOD, SCRIPT, run_cli

pytestmark = pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")

NOBODY = 65534


@pytest.fixture
def shared_dir():
    """A directory every user may write in (pytest's tmp_path is root's only)."""
    folder = tempfile.mkdtemp(prefix="tdv-perm-")
    os.chmod(folder, 0o777)
    yield folder
    shutil.rmtree(folder)


def _as_user(cwd: str, *args: str) -> subprocess.CompletedProcess:
    prefix = []
    if os.getuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: cannot drop privileges")
        prefix = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        reachable = subprocess.run([*prefix, *SCRIPT, "--version"], cwd=cwd, capture_output=True, timeout=60)
        if reachable.returncode != 0:  # an interpreter or checkout under a 0700 directory
            pytest.skip(f"an unprivileged user cannot run {SCRIPT[0]} here")
    return subprocess.run([*prefix, *SCRIPT, *args], cwd=cwd, capture_output=True, timeout=60, text=True)


def _file(folder: str, name: str, mode: int, owner: int) -> str:
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as out:
        out.write(BAD)
    if os.getuid() == 0:
        os.chown(path, owner, owner)
    os.chmod(path, mode)
    return path


def _identity(path: str) -> tuple:
    info = os.stat(path)
    return info.st_ino, info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)


def _me() -> int:
    return NOBODY if os.getuid() == 0 else os.getuid()


def test_a_read_only_file_is_refused_and_the_others_are_fixed(shared_dir):
    read_only = _file(shared_dir, "ro.py", 0o444, _me())
    other = _file(shared_dir, "other.py", 0o644, _me())
    before = _identity(read_only)
    result = _as_user(shared_dir, "--fix", ".")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "torchdevice: ro.py: not fixed: the file is read-only",
        "torchdevice: fixed 1 finding in 1 file",
    ]
    assert result.stdout.startswith("ro.py:2:10: TDV701 ")  # its finding is still reported
    assert open(read_only, encoding="utf-8").read() == BAD and _identity(read_only) == before
    assert open(other, encoding="utf-8").read() == GOOD


@pytest.mark.skipif(os.name != "posix" or not hasattr(os, "getuid") or os.getuid() != 0,
                    reason="needs root to make a file another user owns")
def test_a_file_the_user_may_not_write_is_refused_even_in_a_writable_directory(shared_dir):
    theirs = _file(shared_dir, "theirs.py", 0o644, 0)  # root's; the directory lets anyone rename
    before = _identity(theirs)
    result = _as_user(shared_dir, "--fix", "theirs.py")
    assert result.returncode == 2
    assert result.stderr.splitlines() == ["torchdevice: theirs.py: not fixed: no permission to write it"]
    assert open(theirs, encoding="utf-8").read() == BAD and _identity(theirs) == before


@pytest.mark.skipif(os.name != "posix" or not hasattr(os, "getuid") or os.getuid() != 0,
                    reason="needs root to make a file another user owns")
def test_a_writable_file_owned_by_someone_else_keeps_its_owner(shared_dir):
    theirs = _file(shared_dir, "shared.py", 0o666, 0)
    before = _identity(theirs)
    result = _as_user(shared_dir, "--fix", "shared.py")
    assert (result.returncode, result.stderr) == (0, "torchdevice: fixed 1 finding in 1 file\n")
    assert open(theirs, encoding="utf-8").read() == GOOD
    assert _identity(theirs) == before  # same inode, owner root, group root, 0666


def test_root_does_not_write_a_read_only_file_either(tmp_path):
    target = tmp_path / "ro.py"
    target.write_text(BAD, encoding="utf-8")
    target.chmod(0o444)
    result = run_cli("--fix", "ro.py", cwd=tmp_path)
    assert (result.code, result.err_lines) == (2, ["torchdevice: ro.py: not fixed: the file is read-only"])
    assert target.read_text(encoding="utf-8") == BAD


def test_hard_links_survive_a_fix(tmp_path):
    target = tmp_path / "a.py"
    target.write_text(BAD, encoding="utf-8")
    os.link(target, tmp_path / "b.py")
    before = _identity(str(target))
    result = run_cli("--fix", "a.py", cwd=tmp_path)
    assert result.code == 0
    assert (tmp_path / "b.py").read_text(encoding="utf-8") == GOOD  # one file, two names
    assert _identity(str(target)) == before and os.stat(target).st_nlink == 2


@pytest.mark.skipif(os.name != "posix" or not hasattr(os, "getuid") or os.getuid() != 0,
                    reason="needs root to give a file to another user")
def test_owner_group_and_mode_are_kept_when_the_file_is_replaced(tmp_path):
    target = tmp_path / "m.py"
    target.write_text(BAD, encoding="utf-8")
    os.chown(target, NOBODY, NOBODY)
    target.chmod(0o640)
    result = run_cli("--fix", "m.py", cwd=tmp_path)
    assert result.code == 0 and target.read_text(encoding="utf-8") == GOOD
    info = os.stat(target)
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (NOBODY, NOBODY, 0o640)
