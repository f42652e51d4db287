"""benchmarks/recall.py on a tiny synthetic mirror: a fix is found where it was made."""

from __future__ import annotations

import pytest

from bench_support import git, script_module

R = script_module("recall")

BEFORE = """import torch


def resume(path):
    return torch.load(path)


def load_other(path):
    return torch.load(path)
"""
FIXED = "torch.load(path, map_location='cpu')\n\n\ndef load_other"
AFTER = BEFORE.replace("torch.load(path)\n\n\ndef load_other", FIXED)


def _mirror(tmp_path, name="ckpt.py", renamed=None):
    """A repository whose second commit fixes the load (and renames the file to ``renamed``)."""
    work = tmp_path / "mirrors" / "someone+trainer" / "repo"
    work.mkdir(parents=True)
    git("init", "-q", cwd=work)
    (work / name).write_text(BEFORE, encoding="utf-8")
    git("add", ".", cwd=work)
    git("commit", "-qm", "first", cwd=work)
    if renamed:
        git("mv", name, renamed, cwd=work)
    (work / (renamed or name)).write_text(AFTER, encoding="utf-8")
    git("commit", "-qam", "fix: map_location", cwd=work)
    return git("rev-parse", "HEAD", cwd=work)


def test_a_fix_is_found_at_its_lines_and_its_finding_disappears(tmp_path, monkeypatch):
    commit = _mirror(tmp_path)
    monkeypatch.setenv("TDV_MIRRORS", str(tmp_path / "mirrors"))
    fix = R.Fix("someone/trainer", commit, "ckpt.py", "load-without-map-location", True, "tune", "")
    result = R.evaluate(fix, default_codes={"TDV201"})
    assert result.error is None and result.lines == [(5, 5)]
    assert result.found_by == ["TDV201"] and result.disappeared == [(5, "TDV201")]
    assert (9, "TDV201") in result.after  # the unfixed load is still reported, not counted for this fix
    unselected = R.evaluate(fix, default_codes=set())
    assert unselected.found_by == [] and unselected.found_by_any == ["TDV201"]
    s = R.summary([result], None)
    assert (s["visible"], s["found_default"], s["classes"]) == (1, 1, {"load-without-map-location": (1, 1, 1)})


def test_a_finding_the_fix_removes_away_from_its_lines_is_counted_apart(tmp_path, monkeypatch):
    # The fix changes line 3; the finding it removes is at line 10: not found at the fix, and listed
    # as gone elsewhere (the secondary figure), for default codes only.
    work = tmp_path / "mirrors" / "someone+script" / "repo"
    work.mkdir(parents=True)
    git("init", "-q", cwd=work)
    before = 'import torch\n\nDEVICE = "cuda" if torch.cuda.is_available() else "cpu"\n' + "\n" * 5 + (
        'def restore():\n    return torch.load("model.pt")\n')
    (work / "run.py").write_text(before, encoding="utf-8")
    git("add", ".", cwd=work)
    git("commit", "-qm", "first", cwd=work)
    (work / "run.py").write_text(before.replace('"cuda" if torch.cuda.is_available() else "cpu"', '"cuda"'))
    git("commit", "-qam", "second", cwd=work)
    monkeypatch.setenv("TDV_MIRRORS", str(tmp_path / "mirrors"))
    fix = R.Fix("someone/script", git("rev-parse", "HEAD", cwd=work), "run.py", "k", True, "tune", "")
    result = R.evaluate(fix, default_codes={"TDV201"})
    assert result.lines == [(3, 3)] and result.before == [(10, "TDV201")] and result.after == []
    assert result.found_by == [] and result.gone_elsewhere == [(10, "TDV201")]
    assert R.summary([result], None)["found_elsewhere"] == 1
    assert R.evaluate(fix, default_codes=set()).gone_elsewhere == []


def test_an_insertion_counts_the_lines_around_it():
    assert R.changed_lines("@@ -12,0 +13,2 @@\n@@ -20,2 +22 @@\n") == [(12, 13), (20, 21)]
    assert R.near(16, [(12, 13)]) and not R.near(17, [(12, 13)])


def test_a_missing_mirror_is_one_error_line(tmp_path, monkeypatch):
    monkeypatch.setenv("TDV_MIRRORS", str(tmp_path))
    result = R.evaluate(R.Fix("nobody/absent", "0" * 40, "x.py", "k", True, "tune", ""), set())
    assert "no local mirror of nobody/absent" in result.error


def test_the_corpus_file_reads_and_keeps_a_third_aside():
    fixes = R.read_fixes()
    assert len(fixes) >= 40 and len({f.id for f in fixes}) == len(fixes)
    first = [f for f in fixes if f.split in ("tune", "heldout")]  # batch 2 is held out whole
    held = [f for f in first if f.split == "heldout"]
    assert len(held) == -(-len(first) // 3)
    assert {f.split for f in fixes} == set(R.SPLITS)  # every declared batch has rows, no row another batch
    # Batches 3 on came from candidate lists fixed before they were read: every row is one of them
    # (a commit of a listed repository; from batch 25 on, a listed bug report's repository).
    for split in R.SPLITS[R.SPLITS.index("heldout3"):]:
        listing = f"candidates{split.removeprefix('heldout')}.csv"
        listed = [line for line in (R.HERE / "bugs" / listing).read_text().splitlines() if not line.startswith("#")]
        candidates = {tuple(line.split(",")) for line in listed[1:]}
        batch = [f for f in fixes if f.split == split]
        if listed[0] == "repo,thread":
            assert batch and all(f.repo in {repo for repo, _ in candidates} for f in batch)
        else:
            assert listed[0] == "repo,commit"
            assert batch and all((f.repo, f.commit) in candidates for f in batch)


def test_the_lines_column_keeps_only_the_device_fixs_hunks(tmp_path, monkeypatch):
    """A commit that also changes unrelated code names its device fix's lines: a finding
    next to another hunk (here the load at line 5) no longer counts."""
    commit = _mirror(tmp_path)
    monkeypatch.setenv("TDV_MIRRORS", str(tmp_path / "mirrors"))
    fix = R.Fix("someone/trainer", commit, "ckpt.py", "load-without-map-location", True, "tune", "", only=(5,))
    assert R.evaluate(fix, default_codes={"TDV201"}).found_by == ["TDV201"]
    elsewhere = R.Fix("someone/trainer", commit, "ckpt.py", "k", True, "tune", "", only=(40,))
    assert "no hunk of the fix holds line (40,)" in R.evaluate(elsewhere, default_codes={"TDV201"}).error
    listing = tmp_path / "fixes.csv"
    listing.write_text("repo,commit,path,class,visible,split,note,lines\n"
                       f"someone/trainer,{commit},ckpt.py,k,yes,tune,\"a note, with a comma\",5;9\n"
                       f"someone/trainer,{commit},ckpt.py,k,yes,tune,plain\n", encoding="utf-8")
    assert [f.only for f in R.read_fixes(listing)] == [(5, 9), ()]
    listing.write_text("repo,commit,path,class,visible,split,note,lines\nsomeone/trainer,c,p,k,yes,tune,n,five\n",
                       encoding="utf-8")
    with pytest.raises(R.CorpusError, match="lines is 'N' or 'N;M'"):
        R.read_fixes(listing)


def test_a_fix_that_renames_its_file_is_read_on_both_sides(tmp_path, monkeypatch):
    """``old.py>new.py``: the file before the fix under its old name, after it under the new one,
    and the fix's lines numbered on the old side (the rename alone changes none)."""
    commit = _mirror(tmp_path, "generate.py", renamed="main.py")
    monkeypatch.setenv("TDV_MIRRORS", str(tmp_path / "mirrors"))
    fix = R.Fix("someone/trainer", commit, "generate.py>main.py", "load-without-map-location", True, "tune", "")
    assert fix.paths == ("generate.py", "main.py")
    result = R.evaluate(fix, default_codes={"TDV201"})
    assert result.error is None and result.lines == [(5, 5)]
    assert result.found_by == ["TDV201"] and result.disappeared == [(5, "TDV201")]


def _notebook(*cells: str) -> str:
    """An nbformat-4 notebook of these code cells, one JSON string per source line, as Jupyter writes it."""
    import json

    body = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
             "source": cell.splitlines(keepends=True)} for cell in cells]
    return json.dumps({"cells": body, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


def test_a_notebooks_findings_are_numbered_by_the_lines_of_its_file(tmp_path, monkeypatch):
    work = tmp_path / "mirrors" / "someone+trainer" / "repo"
    work.mkdir(parents=True)
    git("init", "-q", cwd=work)
    first = "import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
    load = "model = torch.nn.Linear(2, 2).to(device)\nmodel.load_state_dict(torch.load('model.pt'))\n"
    (work / "demo.ipynb").write_text(_notebook(first, load), encoding="utf-8")
    git("add", ".", cwd=work)
    git("commit", "-qm", "first", cwd=work)
    fixed = load.replace("'model.pt')", "'model.pt', map_location='cpu')")
    (work / "demo.ipynb").write_text(_notebook(first, fixed), encoding="utf-8")
    git("commit", "-qam", "fix: map_location", cwd=work)
    monkeypatch.setenv("TDV_MIRRORS", str(tmp_path / "mirrors"))
    fix = R.Fix("someone/trainer", git("rev-parse", "HEAD", cwd=work), "demo.ipynb",
                "load-without-map-location", True, "tune", "")
    result = R.evaluate(fix, default_codes={"TDV201"})
    text = (work / "demo.ipynb").read_text(encoding="utf-8").splitlines()
    load_line = next(number for number, line in enumerate(text, 1) if "torch.load" in line)
    assert load_line > 2  # the cell's line 1 is far down the JSON, not the joined cells' line 2
    assert result.error is None and result.lines == [(load_line, load_line)]
    assert result.found_by == ["TDV201"] and result.disappeared == [(load_line, "TDV201")]
