"""Jupyter notebooks: code cells are linted as one module, IPython syntax is
masked, and findings are reported as ``nb.ipynb:cell N:line:col``."""

from __future__ import annotations

import json

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
    assert prefixes == ["nb.ipynb:cell 3:5:13", "nb.ipynb:cell 5:3:9"]


def test_syntax_error_names_the_cell(tmp_path):
    text = _notebook(_cell("import torch"), _cell(["x = 1\n", "torch.load(\n"]))
    result = _lint(tmp_path, text)
    assert result.code == 1
    assert len(result.err_lines) == 1
    assert result.err_lines[0].startswith("torchdevice: nb.ipynb:cell 2: syntax error at line 2")


def test_not_a_notebook_is_a_one_line_io_error(tmp_path):
    for text in ["{not json", json.dumps({"cells": 3}), json.dumps([1, 2])]:
        result = _lint(tmp_path, text)
        assert result.code == 2, text
        assert len(result.err_lines) == 1 and result.err_lines[0].startswith("torchdevice: nb.ipynb: not a")


def test_notebook_from_stdin(tmp_path):
    text = _notebook(_cell(["import torch\n", "torch.load('x')"]))
    result = run_cli("-", "--stdin-filename", "analysis.ipynb", cwd=tmp_path, stdin=text.encode())
    assert result.out.startswith("analysis.ipynb:cell 1:2:1: TDV201 ")


def test_fix_leaves_notebooks_untouched(tmp_path):
    text = _notebook(_cell(["import torch\n", "torch.load('x')"]))
    result = _lint(tmp_path, text, "--fix")
    assert result.code == 1
    assert (tmp_path / "nb.ipynb").read_text(encoding="utf-8") == text


def test_directory_walk_finds_notebooks_but_skips_checkpoints(tmp_path):
    text = _notebook(_cell(["import torch\n", "torch.load('x')"]))
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "nb-checkpoint.ipynb").write_text(text, encoding="utf-8")
    (tmp_path / "nb.ipynb").write_text(text, encoding="utf-8")
    result = run_cli(".", cwd=tmp_path)
    assert [line.split(":", 1)[0] for line in result.out.splitlines()] == ["nb.ipynb"]
