"""``torchdevice --add-noqa``: today's findings suppressed where flake8 reads the comment,
never a blanket ``# noqa``, idempotent, the code unchanged, read-only files refused."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from cli_support import BAD, run_cli
from fixture_cases import FIXTURES
from flake8_torchdevice.addnoqa import add_noqa
from flake8_torchdevice.rules import ALL_RULES

EVERY_CODE = ",".join(rule.CODE for rule in ALL_RULES)
ADDED = re.compile(r"torchdevice: added # noqa to (\d+) lines? in (\d+) files?")


def _flake8(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flake8", "--isolated", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300, check=False)


def test_the_fixtures_lint_clean_afterwards_and_keep_their_code(tmp_path):
    copy = tmp_path / "fixtures"
    shutil.copytree(FIXTURES, copy)
    before = {p: p.read_text(encoding="utf-8") for p in copy.rglob("*.py")}
    first = run_cli("--add-noqa", "--select", EVERY_CODE, "fixtures", cwd=tmp_path)
    lines, files = map(int, ADDED.fullmatch(first.err_lines[-1]).groups())
    assert first.code == 0 and first.out == "" and lines > 100 and files > 30, first.err_lines
    for path, text in before.items():
        after = path.read_text(encoding="utf-8")
        assert ast.dump(ast.parse(after)) == ast.dump(ast.parse(text)), path  # same program
        added = [line for line in after.splitlines() if line not in text.splitlines()]
        assert all(re.search(r"# noqa: TDV\d{3}", line) for line in added), (path, added)
        assert not any(re.search(r"# noqa(?!:)", line) for line in added), (path, added)  # never blanket
    again = run_cli("--add-noqa", "--select", EVERY_CODE, "fixtures", cwd=tmp_path)
    assert (again.code, again.err_lines) == (0, ["torchdevice: added # noqa to 0 lines in 0 files"])
    assert run_cli("--select", EVERY_CODE, "fixtures", cwd=tmp_path).code == 0
    flake8 = _flake8(f"--select={EVERY_CODE}", "fixtures", cwd=tmp_path)
    assert (flake8.returncode, flake8.stdout) == (0, "")


def test_an_existing_noqa_gets_the_code_and_other_comments_stay():
    source = "import torch\nx = torch.load(p)  # noqa: E501\ny = torch.load(q)  # keep me\n"
    text, changed = add_noqa(source, [(2, "TDV201"), (3, "TDV201")])
    assert changed == 2
    assert text == "import torch\nx = torch.load(p)  # noqa: E501,TDV201\ny = torch.load(q)  # keep me  # noqa: TDV201\n"
    assert add_noqa(text, [(2, "TDV201")]) == (text, 0)  # present already
    # Two codes on one line, sorted; CRLF kept; a blanket noqa is left alone.
    assert add_noqa("a = 1\r\n", [(1, "TDV701"), (1, "TDV201")]) == ("a = 1  # noqa: TDV201,TDV701\r\n", 1)
    assert add_noqa("a = 1  # noqa\n", [(1, "TDV201")]) == ("a = 1  # noqa\n", 0)


def test_the_comment_goes_where_flake8_reads_it(tmp_path):
    """A finding on the first line of a multi-line string or a backslash continuation:
    flake8 joins those lines, so the comment goes at the end of the last one."""
    source = (
        "import torch\n"
        "state = torch.load('''a\n"
        "b.pt''')\n"
        "other = torch.load('c.pt') + \\\n"
        "    1\n"
        "device = 'cpu'\n"
    )
    (tmp_path / "m.py").write_text(source, encoding="utf-8")
    assert [line for line in run_cli("m.py", cwd=tmp_path).out.splitlines()] != []
    result = run_cli("--add-noqa", "m.py", cwd=tmp_path)
    text = (tmp_path / "m.py").read_text(encoding="utf-8")
    assert result.code == 0 and text.splitlines()[2] == "b.pt''')  # noqa: TDV201"
    assert text.splitlines()[4] == "    1  # noqa: TDV201"
    assert run_cli("m.py", cwd=tmp_path).code == 0
    assert _flake8("--select=TDV", "m.py", cwd=tmp_path).stdout == ""


def test_read_only_files_stdin_and_fix_are_refused(tmp_path):
    target = tmp_path / "ro.py"
    target.write_text(BAD, encoding="utf-8")
    target.chmod(0o444)
    result = run_cli("--add-noqa", "ro.py", cwd=tmp_path)
    assert result.code == 2 and "torchdevice: ro.py: not fixed: the file is read-only" in result.err_lines
    assert target.read_text(encoding="utf-8") == BAD
    assert "ro.py:2:10: TDV701" in result.out  # still reported
    for args in (["--add-noqa", "--fix", "ro.py"], ["--add-noqa", "-"]):
        refused = run_cli(*args, cwd=tmp_path)
        assert refused.code == 2 and len(refused.err_lines) == 1 and "--add-noqa" in refused.err_lines[0], args


def test_notebooks_are_reported_not_edited(tmp_path):
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": ["import torch\n", "scaler = torch.cuda.amp.GradScaler()\n"]}
    text = json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    (tmp_path / "nb.ipynb").write_text(text, encoding="utf-8")
    result = run_cli("--add-noqa", "nb.ipynb", cwd=tmp_path)
    assert result.code == 1 and "TDV701" in result.out
    assert (tmp_path / "nb.ipynb").read_text(encoding="utf-8") == text
