"""benchmarks/precision.py on a tiny synthetic corpus: no network, no real sdists."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from bench_support import git, script_module

ROOT = Path(__file__).resolve().parent.parent
P = script_module("precision")

LOADS = """import torch


def resume(path):
    return torch.load(path)


def other(path):
    return torch.load(path)


def third(path):
    return torch.load(path)
"""
SAFE = "import torch\n\n\ndef f(path):\n    return torch.load(path, map_location='cpu')\n"


@pytest.fixture
def corpus(tmp_path, monkeypatch):
    """A cache holding two extracted 'sdists' and the CSVs naming them."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("TDV_REALWORLD_CACHE", str(cache))
    for name, version, files in (("alpha", "1.0", {"alpha/io.py": LOADS, "tests/test_io.py": SAFE}),
                                 ("beta", "2.0", {"beta/ckpt.py": LOADS})):
        top = cache / "src" / f"{name}-{version}" / f"{name}-{version}"
        for rel, text in files.items():
            (top / rel).parent.mkdir(parents=True, exist_ok=True)
            (top / rel).write_text(text)
        (cache / "src" / f"{name}-{version}" / ".complete").write_text("synthetic\n")
    projects = tmp_path / "projects.csv"
    projects.write_text("# comment lines are skipped\nproject,version,split,kind,why\n"
                        "alpha,1.0,tune,library,x\nbeta,2.0,heldout,tests,y\n")
    labels = tmp_path / "labels.csv"
    labels.write_text(",".join(P.LABEL_FIELDS) + "\n"
                      "alpha,1.0,alpha/io.py,5,TDV201,true,plain-load,a\n"
                      "alpha,1.0,alpha/io.py,9,TDV201,latent,public-helper,b\n"
                      "alpha,1.0,alpha/io.py,13,TDV201,false,save-then-load-in-test,c\n"
                      "alpha,1.0,alpha/io.py,99,TDV201,true,gone-one,d\n"
                      "alpha,1.0,alpha/io.py,98,TDV201,false,gone-false,e\n")
    return tmp_path, projects, labels


def _run(capsys, tmp_path, projects, labels, *extra, offline=True):
    argv = ["--offline"] * offline + ["-j", "1", "--projects-csv", str(projects), "--labels-csv", str(labels),
                                      "--baseline-csv", str(tmp_path / "baseline.csv"), *extra]
    status = P.main(argv)
    return status, capsys.readouterr()


def test_precision_arithmetic():
    assert P.precision(Counter(true=1, latent=1, false=2)) == (0.5, 0.25)
    assert P.precision(Counter(deliberate=1)) == (1.0, 1.0)
    assert P.precision(Counter()) == (None, None)


def test_json_report_joins_labels(corpus, capsys):
    tmp_path, projects, labels = corpus
    status, out = _run(capsys, tmp_path, projects, labels, "--json", "--code", "TDV201")
    assert status == 0
    data = json.loads(out.out)
    rows = {(r["split"], r["code"]): r for r in data["table"]}
    tune = rows[("tune", "TDV201")]
    assert (tune["findings"], tune["judged"], tune["true"], tune["latent"], tune["false"]) == (3, 3, 1, 1, 1)
    assert tune["precision"] == pytest.approx(2 / 3) and tune["precision_latent_false"] == pytest.approx(1 / 3)
    assert rows[("heldout", "TDV201")]["findings"] == 3 and rows[("heldout", "TDV201")]["judged"] == 0
    assert rows[("all", "TDV201")]["findings"] == 6
    assert sorted(g["line"] for g in data["gone"]) == [98, 99]
    # no baseline file: every unjudged finding counts as new
    assert {(f["project"], f["line"]) for f in data["new"]} == {("beta", 5), ("beta", 9), ("beta", 13)}
    assert {p["name"]: p["files"] for p in data["projects"]} == {"alpha": 2, "beta": 1}


def test_baseline_makes_only_later_findings_new(corpus, capsys):
    tmp_path, projects, labels = corpus
    assert _run(capsys, tmp_path, projects, labels, "--write-baseline")[0] == 0
    assert len((tmp_path / "baseline.csv").read_text().splitlines()) == 1 + 6
    status, out = _run(capsys, tmp_path, projects, labels, "--json")
    assert json.loads(out.out)["new"] == []


def test_text_report_lists_lost_recall_not_gone_false(corpus, capsys):
    tmp_path, projects, labels = corpus
    status, out = _run(capsys, tmp_path, projects, labels, "--split", "tune")
    assert "LOST alpha alpha/io.py:99 TDV201 [true/gone-one]" in out.out
    assert "gone-false" not in out.out
    assert "heldout" not in out.out.split("precision =")[1]


def test_sample_is_seeded_and_skips_judged(corpus, capsys):
    tmp_path, projects, labels = corpus
    labels.write_text(",".join(P.LABEL_FIELDS) + "\n")
    first = _run(capsys, tmp_path, projects, labels, "--sample", "2", "--seed", "3")[1].out
    again = _run(capsys, tmp_path, projects, labels, "--sample", "2", "--seed", "3")[1].out
    assert first == again and first.count("-- alpha") == 2 and "beta" not in first
    assert ">     5      return torch.load(path)" in first or ">     9" in first or ">    13" in first
    picked = [line.split()[3] for line in first.splitlines() if line.startswith("-- ")]
    judged = picked[0].split(":")
    labels.write_text(",".join(P.LABEL_FIELDS) + f"\nalpha,1.0,{judged[0]},{judged[1]},TDV201,true,x,y\n")
    rest = _run(capsys, tmp_path, projects, labels, "--sample", "2", "--seed", "3")[1].out
    assert [line.split()[3] for line in rest.splitlines() if line.startswith("-- ")] == picked[1:]


def test_bad_verdict_is_one_line(corpus, capsys):
    tmp_path, projects, labels = corpus
    labels.write_text(",".join(P.LABEL_FIELDS) + "\nalpha,1.0,alpha/io.py,5,TDV201,maybe,x,y\n")
    status, out = _run(capsys, tmp_path, projects, labels)
    assert status == 2
    assert out.err.strip().count("\n") == 0 and "verdict must be one of" in out.err


def test_failed_download_is_one_line(corpus, capsys, monkeypatch):
    tmp_path, projects, labels = corpus
    projects.write_text("project,version,split,kind,why\ngamma,9.9,tune,library,x\n")
    monkeypatch.setattr(
        P, "SIMPLE_INDEX", (tmp_path / "no-index" / "{name}").as_uri().replace("%7B", "{").replace("%7D", "}")
    )
    status, out = _run(capsys, tmp_path, projects, labels, offline=False)
    assert status == 1
    assert out.err.splitlines() == [
        line for line in out.err.splitlines() if line.startswith("precision.py: skipped gamma==9.9: ")
    ]
    assert len(out.err.splitlines()) == 1
    status, out = _run(capsys, tmp_path, projects, labels, "--offline")
    assert "is not in the cache" in out.err and "Traceback" not in out.err


def test_file_kind():
    assert P.file_kind("pkg/tests/test_x.py") == "test"
    assert P.file_kind("examples/train.py") == "example"
    assert P.file_kind("fairseq_cli/train.py") == "example"
    assert P.file_kind("pkg/model.py") == "package"


def test_real_corpus_files_are_well_formed():
    projects = P.read_projects()
    assert len(projects) >= 14 and sum(p.split == "heldout" for p in projects) >= 4
    assert len({p.name for p in projects}) == len(projects)
    labels = P.read_labels()  # raises on a bad verdict or a duplicate
    known = {(p.name, p.version) for p in projects}
    assert all((label.project, label.version) in known for label in labels.values())


def test_a_repository_row_is_read_from_its_mirror_at_the_pinned_commit(tmp_path, monkeypatch):
    work = tmp_path / "mirrors" / "someone+scripts" / "repo"
    work.mkdir(parents=True)
    git("init", "-q", cwd=work)
    (work / "train.py").write_text(LOADS, encoding="utf-8")
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": ["import torch\n", "device = 'cpu'; state = torch.load('w.pt')\n"]}
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (work / "demo.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    (work / "notes.txt").write_text("not code", encoding="utf-8")
    git("add", ".", cwd=work)
    git("commit", "-qm", "first", cwd=work)
    pinned = git("rev-parse", "HEAD", cwd=work)
    (work / "train.py").write_text(SAFE, encoding="utf-8")
    git("commit", "-qam", "later", cwd=work)
    monkeypatch.setenv("TDV_MIRRORS", str(tmp_path / "mirrors"))
    project = P.Project("github:someone/scripts", pinned, "tune", "user")
    root = P.project_root(project, tmp_path / "cache", offline=True)
    assert P.python_files(root) == ["demo.ipynb", "train.py"]
    assert (root / "train.py").read_text(encoding="utf-8") == LOADS  # the pinned commit, not the newest
    run = P.lint_project(project, root, tmp_path / "cache", 1, "fp")
    found = sorted((f.path, f.line) for f in run.findings if f.code == "TDV201")
    assert found == [("demo.ipynb", 2), ("train.py", 5), ("train.py", 9), ("train.py", 13)]
    missing = P.Project("github:nobody/absent", pinned, "tune", "user")
    with pytest.raises(P.CorpusError, match="no local mirror"):
        P.project_root(missing, tmp_path / "cache", offline=True)
