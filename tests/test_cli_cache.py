"""The standalone command's result cache (issue 24): a second run over unchanged files reads
the results kept by the first; a changed file, selection or linter is linted again."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import BAD, run_cli
from flake8_torchdevice import cache

LOAD = 'import torch\ndevice = "cpu"\nstate = torch.load("ckpt.pt")\n'  # TDV201 at 3:8


def _entries(root: Path) -> list[Path]:
    return sorted((root / cache.DIRECTORY).rglob("*.json"))


def _poison(root: Path, message: str) -> None:
    """Rewrite every kept result: a run that prints ``message`` read the cache."""
    for entry in _entries(root):
        stored = json.loads(entry.read_text(encoding="utf-8"))
        for finding in stored["findings"]:
            finding["message"] = message
        entry.write_text(json.dumps(stored), encoding="utf-8")


def _project(tmp_path: Path) -> Path:
    (tmp_path / "amp.py").write_text(BAD, encoding="utf-8")
    (tmp_path / "load.py").write_text(LOAD, encoding="utf-8")
    return tmp_path


def test_a_second_run_reads_the_kept_results(tmp_path):
    root = _project(tmp_path)
    first = run_cli(".", cwd=root)
    assert first.code == 1 and "amp.py:2:10: TDV701" in first.out and "load.py:3:9: TDV201" in first.out
    assert len(_entries(root)) == 2
    assert (root / cache.DIRECTORY / ".gitignore").read_text() == "*\n"
    tag = (root / cache.DIRECTORY / "CACHEDIR.TAG").read_text()
    assert tag.startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert run_cli(".", cwd=root).out == first.out
    _poison(root, "kept")
    assert run_cli(".", cwd=root).out.count("kept") == 2


def test_a_changed_file_is_linted_again(tmp_path):
    root = _project(tmp_path)
    run_cli(".", cwd=root)
    _poison(root, "kept")
    (root / "load.py").write_text(LOAD.replace('torch.load("ckpt.pt")', 'torch.load("ckpt.pt", map_location="cpu")'),
                                  encoding="utf-8")
    again = run_cli(".", cwd=root)
    assert "load.py" not in again.out and "amp.py:2:10: TDV701 kept" in again.out


def test_a_changed_selection_is_linted_again(tmp_path):
    root = _project(tmp_path)
    assert "TDV201" not in run_cli("--select", "TDV701", ".", cwd=root).out
    _poison(root, "kept")
    only_load = run_cli("--select", "TDV201", ".", cwd=root)
    assert "load.py:3:9: TDV201 torch.load() without map_location" in only_load.out and "kept" not in only_load.out
    assert run_cli("--select", "TDV701", ".", cwd=root).out.count("kept") == 1


def test_the_key_holds_everything_that_decides_a_result():
    salt = cache.salt(["TDV201", "TDV701"], False)
    assert salt == cache.salt(["TDV701", "TDV201"], False)
    other_codes, unsafe = cache.salt(["TDV201"], False), cache.salt(["TDV201", "TDV701"], True)
    keys = {
        cache.key(salt, "a.py", b"x"), cache.key(salt, "test_a.py", b"x"), cache.key(salt, "a.py", b"y"),
        cache.key(other_codes, "a.py", b"x"), cache.key(unsafe, "a.py", b"x"),
    }
    assert len(keys) == 5
    assert cache.code_fingerprint() in salt


def test_no_cache_and_writing_modes_keep_nothing(tmp_path):
    root = _project(tmp_path)
    run_cli("--no-cache", ".", cwd=root)
    assert not (root / cache.DIRECTORY).exists()
    run_cli("--diff", ".", cwd=root)
    run_cli("--fix", ".", cwd=root)
    assert not (root / cache.DIRECTORY).exists()


def test_fix_lints_afresh_even_with_results_kept(tmp_path):
    root = _project(tmp_path)
    run_cli(".", cwd=root)
    _poison(root, "kept")
    fixed = run_cli("--fix", "amp.py", cwd=root)
    assert "kept" not in fixed.out and "torch.amp.GradScaler" in (root / "amp.py").read_text()


def test_a_broken_entry_or_an_unusable_directory_is_a_miss_not_an_error(tmp_path):
    root = _project(tmp_path)
    first = run_cli(".", cwd=root)
    for entry in _entries(root):
        entry.write_text("{not json", encoding="utf-8")
    assert run_cli(".", cwd=root).out == first.out
    for entry in _entries(root):
        entry.write_text('{"findings": [{"bogus": 1}], "problems": []}', encoding="utf-8")
    assert run_cli(".", cwd=root).out == first.out
    blocked = root / "file-not-dir"
    blocked.write_text("", encoding="utf-8")
    run = run_cli("--cache-dir", str(blocked / "cache"), ".", cwd=root)
    assert run.code == 1 and run.out == first.out and run.err == ""
