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
        _cell("Some *markdown* with th.cuda.amp.GradScaler()", kind="markdown"),
        _cell(["files = !ls *.pt\n", "th.cuda.amp.GradScaler?\n", "for f in files:\n",
               "    %time th.cuda.amp.GradScaler()\n", "    state = th.cuda.amp.GradScaler()"]),
        _cell(["%%bash\n", "python -c 'import torch; torch.cuda.amp.GradScaler()'"]),
        _cell(["%%time\n", "state = th.cuda.amp.GradScaler()  # noqa: TDV701\n", "again = th.cuda.amp.GradScaler()"]),
        _cell("w = th.amp.GradScaler('cuda')"),  # source as one string
    )
    result = _lint(tmp_path, text)
    assert result.code == 1 and result.err == ""
    prefixes = [line.split(": TDV", 1)[0] for line in result.out.splitlines()]
    assert prefixes == ["nb.ipynb:cell_2:5:13", "nb.ipynb:cell_4:3:9"]  # the markdown cell is not counted


def test_a_shell_escape_continued_by_backslashes_is_masked_whole(tmp_path):
    """IPython runs ``!pip install a \\`` and the lines its backslashes continue as one shell command."""
    text = _notebook(
        _cell(["import torch\n", "!python train.py \\\n", "    --epochs 5 \\\n", "    --lr 1e-4\n",
               "scaler = torch.cuda.amp.GradScaler()"]),
        _cell(["if True:\n", "    %run -i train.py \\\n", "        --fast\n", "    x = 1 + \\\n", "        2\n",
               "    torch.cuda.amp.GradScaler()"]),  # a Python continuation stays Python
    )
    result = _lint(tmp_path, text)
    assert result.err == ""
    prefixes = [line.split(": TDV", 1)[0] for line in result.out.splitlines()]
    assert prefixes == ["nb.ipynb:cell_1:5:10", "nb.ipynb:cell_2:6:5"]


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
    text = _notebook(_cell(["import torch\n", "torch.cuda.amp.GradScaler()"]))
    result = run_cli("-", "--stdin-filename", "analysis.ipynb", cwd=tmp_path, stdin=text.encode())
    assert result.out.startswith("analysis.ipynb:cell_1:2:1: TDV701 ")


FIXABLE = [
    _cell("# Title\nwith torch.cuda.amp.GradScaler() in prose", kind="markdown"),
    _cell(["import torch\n", "!pip install torch\n", "a = torch.cuda.amp.GradScaler()  # caf\u00e9\n", "%time b = 1"]),
    _cell(["%%bash\n", "python -c 'torch.cuda.amp.GradScaler()'"]),
    _cell("c = torch.cuda.amp.GradScaler()\nd = 2"),  # source as one string
]


def _without_sources(text):
    data = json.loads(text)
    for cell in data["cells"]:
        cell.pop("source")
    return data


def test_fix_rewrites_only_the_fixed_lines_of_code_cells(tmp_path):
    text = _notebook(*FIXABLE)
    text = text.replace('"metadata": {}', '"metadata": {"tags": ["kept"], "odd": "\\u00e9"}', 1)
    result = _lint(tmp_path, text, "--fix")
    assert (result.code, result.out, result.err_lines) == (0, "", ["torchdevice: fixed 2 findings in 1 file"])
    fixed = (tmp_path / "nb.ipynb").read_text(encoding="utf-8")
    changed = [(a, b) for a, b in zip(text.splitlines(), fixed.splitlines()) if a != b]
    assert len(text.splitlines()) == len(fixed.splitlines()) and len(changed) == 2
    assert changed[0][1].strip() == '"a = torch.amp.GradScaler(\\"cuda\\")  # caf\u00e9\\n",'
    assert _without_sources(fixed) == _without_sources(text)  # outputs, metadata, magics untouched
    sources = ["".join(c["source"]) for c in json.loads(fixed)["cells"]]
    assert sources[1].startswith("import torch\n!pip install torch\n") and sources[1].endswith("%time b = 1")
    assert sources[3] == "c = torch.amp.GradScaler(\"cuda\")\nd = 2"
    again = _lint(tmp_path, fixed, "--fix")
    assert (again.code, again.out, again.err) == (0, "", "")
    assert (tmp_path / "nb.ipynb").read_text(encoding="utf-8") == fixed


def test_diff_shows_the_notebook_change_and_writes_nothing(tmp_path):
    text = _notebook(*FIXABLE)
    result = _lint(tmp_path, text, "--diff")
    assert result.code == 1 and result.err == ""
    assert result.out.startswith("--- a/nb.ipynb\n+++ b/nb.ipynb\n")
    assert result.out.count("\n+ ") == 2 and 'torch.amp.GradScaler(\\"cuda\\")' in result.out
    assert (tmp_path / "nb.ipynb").read_text(encoding="utf-8") == text


def test_fix_of_a_notebook_from_stdin_writes_it_to_stdout(tmp_path):
    text = _notebook(_cell(["import torch\n", "torch.cuda.amp.GradScaler()"]))
    result = run_cli("--fix", "-", "--stdin-filename", "nb.ipynb", cwd=tmp_path, stdin=text.encode())
    assert result.code == 0
    assert json.loads(result.out)["cells"][0]["source"][1] == 'torch.amp.GradScaler("cuda")'


def test_a_read_only_notebook_is_not_fixed(tmp_path):
    text = _notebook(_cell(["import torch\n", "torch.cuda.amp.GradScaler()"]))
    (tmp_path / "nb.ipynb").write_text(text, encoding="utf-8")
    (tmp_path / "nb.ipynb").chmod(0o444)
    result = run_cli("--fix", "nb.ipynb", cwd=tmp_path)
    assert (result.code, result.err_lines) == (2, ["torchdevice: nb.ipynb: not fixed: the file is read-only"])
    assert result.out.startswith("nb.ipynb:cell_1:2:1: TDV701")
    assert (tmp_path / "nb.ipynb").read_text(encoding="utf-8") == text


def test_a_broken_cell_does_not_hide_the_other_cells(tmp_path):
    text = _notebook(
        _cell(["import torch\n", "a = torch.cuda.amp.GradScaler()"]),
        _cell(["def broken(:\n", "    torch.cuda.amp.GradScaler()"]),
        _cell("note", kind="markdown"),
        _cell(["c = torch.cuda.amp.GradScaler()"]),  # uses the import of cell 1
    )
    result = _lint(tmp_path, text)
    assert result.code == 1
    assert len(result.err_lines) == 1
    assert result.err_lines[0].startswith("torchdevice: nb.ipynb:cell_2: syntax error at line 1")
    assert [line.split(": TDV")[0] for line in result.out.splitlines()] == [
        "nb.ipynb:cell_1:2:5", "nb.ipynb:cell_3:1:5"
    ]


def test_locations_and_cell_numbers_equal_nbqa_flake8s(tmp_path):
    nbqa = Path(sys.executable).parent / "nbqa"
    if not nbqa.exists():
        pytest.skip("nbqa is not installed (it is in the test extras)")
    text = _notebook(
        _cell("# Title", kind="markdown"),
        _cell(["import torch\n", "first = torch.cuda.amp.GradScaler()\n"]),
        _cell("text", kind="raw"),
        _cell(["%%bash\n", "echo hi\n"]),
        _cell("more *markdown*", kind="markdown"),
        _cell(["x = 1\n", "\n", "second = torch.cuda.amp.GradScaler()\n"]),
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
    text = _notebook(_cell(["import torch\n", "torch.cuda.amp.GradScaler()"]))
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "nb-checkpoint.ipynb").write_text(text, encoding="utf-8")
    (tmp_path / "nb.ipynb").write_text(text, encoding="utf-8")
    result = run_cli(".", cwd=tmp_path)
    assert [line.split(":", 1)[0] for line in result.out.splitlines()] == ["nb.ipynb"]


def test_a_cells_last_value_is_displayed_and_left_alone_by_fix(tmp_path):
    text = _notebook(
        _cell(["import torch\n", "device = torch.device('cpu')\n", "a = torch.randn(3)\n", "a.to(device)"]),
        _cell(["b = torch.ones(2)\n", "b.to(device)\n", "print(b)"]),
    )
    result = _lint(tmp_path, text, "--select", "TDV102")
    assert result.code == 1 and [line.split(": ")[0] for line in result.out.splitlines()] == ["nb.ipynb:cell_2:2:1"]
    fixed = _lint(tmp_path, text, "--select", "TDV102", "--fix")
    assert fixed.code == 0, fixed.out + fixed.err
    sources = ["".join(cell["source"]) for cell in json.loads((tmp_path / "nb.ipynb").read_text())["cells"]]
    assert sources[0].endswith("\na.to(device)") and "b = b.to(device)\n" in sources[1]
