"""Jupyter notebooks: code cells are linted as one module, IPython syntax is
masked, and findings are reported as ``nb.ipynb:cell_N:line:col`` with nbqa's
cell numbers (code cells only)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli_support import run_cli


def _cell(source, kind="code"):
    cell = {"cell_type": kind, "metadata": {}, "source": source}
    if kind == "code":
        cell.update(outputs=[], execution_count=None)
    return cell


def _notebook(*cells) -> str:
    return json.dumps({"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)


def _lint(tmp_path, text, *args):
    (tmp_path / "nb.ipynb").write_text(text, encoding="utf-8")
    return run_cli("nb.ipynb", *args, cwd=tmp_path)


def test_cells_magics_and_numbering(tmp_path):
    text = _notebook(
        _cell(["import torch as th\n", "!pip install torch\n", "%load_ext autoreload"]),
        _cell("Some *markdown* with th.load(x)", kind="markdown"),
        _cell(["files = !ls *.pt\n", "th.load?\n", "for f in files:\n", "    %time th.load(f)\n",
               "    state = th.load(f)"]),
        _cell(["%%bash\n", "python -c 'import torch; torch.load(1)'"]),
        _cell(["%%time\n", "state = th.load('a.pt')  # noqa: TDV201\n", "again = th.load('a.pt')"]),
        _cell("w = th.load('b.pt', map_location='cpu')"),  # source as one string
    )
    result = _lint(tmp_path, text)
    assert result.code == 1 and result.err == ""
    prefixes = [line.split(": TDV", 1)[0] for line in result.out.splitlines()]
    assert prefixes == ["nb.ipynb:cell_2:5:13", "nb.ipynb:cell_4:3:9"]  # the markdown cell is not counted


def test_syntax_error_names_the_cell(tmp_path):
    text = _notebook(_cell("import torch"), _cell(["x = 1\n", "torch.load(\n"]))
    result = _lint(tmp_path, text)
    assert result.code == 1
    assert len(result.err_lines) == 1
    assert result.err_lines[0].startswith("torchdevice: nb.ipynb:cell_2: syntax error at line 2")


def test_not_a_notebook_is_a_one_line_io_error(tmp_path):
    for text in ["{not json", json.dumps({"cells": 3}), json.dumps([1, 2])]:
        result = _lint(tmp_path, text)
        assert result.code == 2, text
        assert len(result.err_lines) == 1 and result.err_lines[0].startswith("torchdevice: nb.ipynb: not a")


def test_notebook_from_stdin(tmp_path):
    text = _notebook(_cell(["import torch\n", "torch.load('x')"]))
    result = run_cli("-", "--stdin-filename", "analysis.ipynb", cwd=tmp_path, stdin=text.encode())
    assert result.out.startswith("analysis.ipynb:cell_1:2:1: TDV201 ")


@pytest.mark.parametrize("option", ["--fix", "--diff"])
def test_fix_says_it_does_not_rewrite_notebooks(tmp_path, option):
    text = _notebook(_cell(["import torch\n", "torch.load('x')"]))
    result = _lint(tmp_path, text, option)
    assert result.code == (1 if option == "--fix" else 0)  # --diff: 1 only when a diff is printed
    assert result.err_lines == ["torchdevice: nb.ipynb: not fixed: --fix and --diff do not rewrite notebooks"]
    assert (tmp_path / "nb.ipynb").read_text(encoding="utf-8") == text
    clean = _lint(tmp_path, _notebook(_cell("x = 1")), option)  # nothing to fix: nothing to say
    assert (clean.code, clean.err) == (0, "")


def test_a_broken_cell_does_not_hide_the_other_cells(tmp_path):
    text = _notebook(
        _cell(["import torch\n", "a = torch.load('a')"]),
        _cell(["def broken(:\n", "    torch.load('b')"]),
        _cell("note", kind="markdown"),
        _cell(["c = torch.load('c')"]),  # uses the import of cell 1
    )
    result = _lint(tmp_path, text)
    assert result.code == 1
    assert len(result.err_lines) == 1
    assert result.err_lines[0].startswith("torchdevice: nb.ipynb:cell_2: syntax error at line 1")
    assert [line.split(": TDV")[0] for line in result.out.splitlines()] == ["nb.ipynb:cell_1:2:5", "nb.ipynb:cell_3:1:5"]


def test_locations_and_cell_numbers_equal_nbqa_flake8s(tmp_path):
    nbqa = Path(sys.executable).parent / "nbqa"
    if not nbqa.exists():
        pytest.skip("nbqa is not installed (it is in the test extras)")
    text = _notebook(
        _cell("# Title", kind="markdown"),
        _cell(["import torch\n", "first = torch.load('a')\n"]),
        _cell("text", kind="raw"),
        _cell(["%%bash\n", "echo hi\n"]),
        _cell("more *markdown*", kind="markdown"),
        _cell(["x = 1\n", "\n", "second = torch.load('b')\n"]),
    )
    (tmp_path / "nb.ipynb").write_text(text, encoding="utf-8")
    env = {**os.environ, "PATH": f"{nbqa.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    theirs = subprocess.run([str(nbqa), "flake8", "nb.ipynb", "--isolated", "--select=TDV"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120, env=env)
    assert theirs.returncode == 1, theirs.stderr
    ours = _lint(tmp_path, text)
    assert ours.out.splitlines() == theirs.stdout.splitlines()
    assert len(ours.out.splitlines()) == 2


def test_directory_walk_finds_notebooks_but_skips_checkpoints(tmp_path):
    text = _notebook(_cell(["import torch\n", "torch.load('x')"]))
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "nb-checkpoint.ipynb").write_text(text, encoding="utf-8")
    (tmp_path / "nb.ipynb").write_text(text, encoding="utf-8")
    result = run_cli(".", cwd=tmp_path)
    assert [line.split(":", 1)[0] for line in result.out.splitlines()] == ["nb.ipynb"]
