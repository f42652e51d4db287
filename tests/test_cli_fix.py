"""``--fix`` / ``--diff``: the codemods, byte-faithful atomic writes, idempotence,
and every fixture fixed into valid code whose fixed findings are gone."""

from __future__ import annotations

import ast
import os
import shutil
import stat
from collections import Counter

import pytest

from cli_support import BAD, GOOD, run_cli
from fixture_cases import FIXTURES, all_cases
from flake8_torchdevice.engine import check_source
from flake8_torchdevice.fixes import can_fix, fix_source, fix_source_counted
from flake8_torchdevice.noqa import filter_noqa
from flake8_torchdevice.rules import ALL_RULES

# TDV201's fix on calls laid out every which way (named, so the runs stay about it;
# the module's CPU device is what makes the loads reportable).
LOAD_FIX = ("--extend-select", "TDV201")
MESSY = (
    "import torch; device = 'cpu'  # keep   odd  spacing\n"
    "a = torch.load('a.pt')\n"
    "b = torch.load(\n"
    "    'b.pt',\n"
    "    weights_only=True,\n"
    ")\n"
    "c = torch.load('c.pt', None)   # trailing comment\n"
    "d = torch.load('d.pt')  # noqa: TDV201\n"
    "e = torch.load(torch.load('e.pt'), map_location=None)\n"
    "x=1;y =  2\n"
)
MESSY_FIXED = (
    "import torch; device = 'cpu'  # keep   odd  spacing\n"
    "a = torch.load('a.pt', map_location=\"cpu\")\n"
    "b = torch.load(\n"
    "    'b.pt',\n"
    "    weights_only=True,\n"
    "    map_location=\"cpu\",\n"
    ")\n"
    "c = torch.load('c.pt', \"cpu\")   # trailing comment\n"
    "d = torch.load('d.pt')  # noqa: TDV201\n"
    "e = torch.load(torch.load('e.pt', map_location=\"cpu\"), map_location=\"cpu\")\n"
    "x=1;y =  2\n"
)


def test_fix_rewrites_only_the_reported_calls(tmp_path):
    target = tmp_path / "train.py"
    target.write_text(MESSY, encoding="utf-8")
    result = run_cli("--fix", *LOAD_FIX, "train.py", cwd=tmp_path)
    assert (result.code, result.out) == (0, "")
    assert result.err_lines == ["torchdevice: fixed 5 findings in 1 file"]
    assert target.read_text(encoding="utf-8") == MESSY_FIXED


def test_second_fix_is_a_no_op(tmp_path):
    target = tmp_path / "train.py"
    target.write_text(MESSY, encoding="utf-8")
    first = run_cli("--fix", *LOAD_FIX, "train.py", cwd=tmp_path)
    assert first.err_lines == ["torchdevice: fixed 5 findings in 1 file"]
    before = os.stat(target)
    again = run_cli("--fix", *LOAD_FIX, "train.py", cwd=tmp_path)
    after = os.stat(target)
    assert (again.code, again.out, again.err) == (0, "", "")
    assert (before.st_ino, before.st_mtime_ns) == (after.st_ino, after.st_mtime_ns)


def test_fix_reports_what_it_cannot_fix(tmp_path):
    (tmp_path / "a.py").write_text("import torch; device = 'cpu'\nx = torch.load('a', **kw)\ny = torch.load('b')\n",
                                   encoding="utf-8")
    (tmp_path / "broken.py").write_text("import torch\ntorch.load(\n", encoding="utf-8")
    result = run_cli("--fix", *LOAD_FIX, ".", cwd=tmp_path)
    assert result.code == 1  # the unparsable file remains a problem
    assert "torchdevice: broken.py: syntax error at line 2" in result.err
    assert (tmp_path / "a.py").read_text(encoding="utf-8").endswith("y = torch.load('b', map_location=\"cpu\")\n")


def test_diff_previews_without_writing(tmp_path):
    target = tmp_path / "train.py"
    target.write_text(BAD, encoding="utf-8")
    result = run_cli("--diff", "train.py", cwd=tmp_path)
    assert result.code == 1
    assert result.out == (
        "--- a/train.py\n+++ b/train.py\n@@ -1,2 +1,2 @@\n import torch\n"
        "-scaler = torch.cuda.amp.GradScaler()\n+scaler = torch.amp.GradScaler(\"cuda\")\n"
    )
    assert target.read_text(encoding="utf-8") == BAD
    target.write_text(GOOD, encoding="utf-8")
    assert run_cli("--diff", "train.py", cwd=tmp_path).code == 0


@pytest.mark.parametrize(
    "raw, encoding",
    [
        (BAD.replace("\n", "\r\n").encode(), "crlf"),
        (b"\xef\xbb\xbf" + BAD.encode(), "bom"),
        ("# -*- coding: latin-1 -*-\n# caf\u00e9\n".encode("latin-1") + BAD.encode(), "latin-1"),
        (BAD.encode() + b"# \xe6\xa8\xa1\xe5\x9e\x8b\n\x0c\nz = 1", "utf8-formfeed-no-final-newline"),
    ],
)
def test_fix_keeps_encoding_newlines_and_mode(tmp_path, raw, encoding):
    target = tmp_path / "m.py"
    target.write_bytes(raw)
    target.chmod(0o751)
    assert run_cli("--fix", "m.py", cwd=tmp_path).code == 0
    fixed = target.read_bytes()
    old_call, new_call = b"torch.cuda.amp.GradScaler()", b'torch.amp.GradScaler("cuda")'
    assert fixed == raw.replace(old_call, new_call)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o751
    assert sorted(os.listdir(tmp_path)) == ["m.py"]  # no temporary file left behind


def test_fix_through_a_symlink_keeps_the_link(tmp_path):
    real = tmp_path / "real.py"
    real.write_text(BAD, encoding="utf-8")
    (tmp_path / "link.py").symlink_to(real)
    assert run_cli("--fix", "link.py", cwd=tmp_path).code == 0
    assert (tmp_path / "link.py").is_symlink()
    assert real.read_text(encoding="utf-8") == GOOD


def test_ignored_and_silenced_codes_are_not_fixed(tmp_path):
    target = tmp_path / "m.py"
    target.write_text(BAD, encoding="utf-8")
    assert run_cli("--fix", "--ignore", "TDV701", "m.py", cwd=tmp_path).code == 0
    assert target.read_text(encoding="utf-8") == BAD


def test_stdin_fix_writes_the_fixed_code_to_stdout(tmp_path):
    result = run_cli("--fix", "-", cwd=tmp_path, stdin=BAD.encode())
    assert result.out == GOOD
    assert result.code == 0


UNSAFE = (
    "import torch\n"
    "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
    "def train(model, batch):\n"
    "    model.cuda()\n"
    "    batch = batch.to(device)\n"
)


def test_unsafe_fixes_need_the_flag(tmp_path):
    target = tmp_path / "m.py"
    target.write_text(UNSAFE, encoding="utf-8")
    assert run_cli("--fix", "--extend-select", "TDV101", "m.py", cwd=tmp_path).code == 1  # TDV101 is opt-in
    assert target.read_text(encoding="utf-8") == UNSAFE
    assert run_cli("--fix", "--unsafe-fixes", "--extend-select", "TDV101", "m.py", cwd=tmp_path).code == 0
    assert target.read_text(encoding="utf-8") == UNSAFE.replace("model.cuda()", "model.to(device)")


def test_tdv101_fix_needs_exactly_one_device_name_defined_in_time():
    two = UNSAFE.replace("def train", "cuda_device = 'cuda'\ndef train")
    early = "import torch\nx = torch.zeros(1).cuda()\ndevice = 'cpu'\ny = x.to(device)\n"
    for source in (two, early):
        violations = [v for v in check_source(source, strict=True).violations if v.code == "TDV101"]
        assert violations, source
        assert fix_source(source, violations, unsafe=True) == source


def test_tdv102_fix_assigns_the_result():
    source = "import torch\ndef f(d):\n    x = torch.zeros(2)\n    x.to(d); y = 1\n    return x\n"
    violations = check_source(source, strict=True).violations
    assert [v.code for v in violations] == ["TDV102"]
    assert fix_source(source, violations) == source.replace("    x.to(d); y", "    x = x.to(d); y")


def test_every_rule_that_promises_a_fix_builds_one_and_no_other_rule_does():
    built = set()
    for case in all_cases():
        result = check_source(case.path.read_text(encoding="utf-8"), full=True, keep_reports=True, strict=True)
        for report in result.reports:
            if report.fix is not None:
                built.add(report.rule.CODE)
    assert built == {rule.CODE for rule in ALL_RULES if rule.FIX != "none"}


CASES = [case for case in all_cases() if case.expected]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_fixing_a_fixture_gives_valid_code_and_removes_the_fixed_findings(case):
    source = case.path.read_text(encoding="utf-8")
    before = filter_noqa(source, check_source(source, rules=ALL_RULES, strict=True).violations)
    fixed, applied = fix_source_counted(source, before, unsafe=True)
    ast.parse(fixed)
    after = filter_noqa(fixed, check_source(fixed, rules=ALL_RULES, strict=True).violations)
    lost = Counter(v.code for v in before) - Counter(v.code for v in after)
    gained = Counter(v.code for v in after) - Counter(v.code for v in before)
    assert not gained, f"the fix introduced findings: {gained}"
    assert sum(lost.values()) == applied
    assert all(can_fix(code, unsafe=True) for code in lost)
    assert fix_source(fixed, after, unsafe=True) == fixed  # a second run changes nothing


def test_cli_fix_over_all_fixtures_is_idempotent(tmp_path):
    shutil.copytree(FIXTURES, tmp_path / "fixtures")
    every = ",".join(rule.CODE for rule in ALL_RULES)  # the opt-in codes' fixes too (TDV101, TDV201, ...)
    first = run_cli("--fix", "--unsafe-fixes", "--select", every, "fixtures", cwd=tmp_path)
    assert "fixed" in first.err
    snapshot = {p: p.read_bytes() for p in (tmp_path / "fixtures").rglob("*.py")}
    second = run_cli("--fix", "--unsafe-fixes", "--select", every, "fixtures", cwd=tmp_path)
    assert "fixed" not in second.err and second.out == first.out
    assert snapshot == {p: p.read_bytes() for p in (tmp_path / "fixtures").rglob("*.py")}


def test_a_writable_file_in_a_read_only_directory_is_fixed_in_place(tmp_path, monkeypatch):
    # No temporary file can be made next to it (root can write anywhere, so
    # make mkstemp fail the way a read-only directory would); the file itself
    # is writable, so it is rewritten in place, as black does.
    import tempfile

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    target = tmp_path / "m.py"
    target.write_text(BAD, encoding="utf-8")
    inode = os.stat(target).st_ino
    result = run_cli("--fix", "m.py", cwd=tmp_path)
    assert (result.code, result.err_lines) == (0, ["torchdevice: fixed 1 finding in 1 file"])
    assert target.read_text(encoding="utf-8") == GOOD and os.stat(target).st_ino == inode


@pytest.mark.parametrize(
    "call, fixed",
    [
        ("torch.load(\n    p, weights_only=False\n)",
         "torch.load(\n    p, weights_only=False, map_location=\"cpu\"\n)"),
        ("torch.load(\n    p\n)", "torch.load(\n    p,\n    map_location=\"cpu\"\n)"),
        ("torch.load(p,\n           weights_only=True)",
         "torch.load(p,\n           weights_only=True,\n           map_location=\"cpu\")"),
        ("torch.load(\n    p,  # path\n    weights_only=True  # safe\n)",
         "torch.load(\n    p,  # path\n    weights_only=True,  # safe\n    map_location=\"cpu\"\n)"),
        ("torch.load(p,)", "torch.load(p, map_location=\"cpu\",)"),
    ],
    ids=["shared-line", "one-arg-own-line", "one-per-line", "comments-stay", "trailing-comma"],
)
def test_tdv201_fix_follows_the_call_layout(call, fixed):
    source = f"import torch\np = 'x'; device = 'cpu'\nstate = {call}\n"
    violations = check_source(source, strict=True).violations
    assert fix_source(source, violations) == source.replace(call, fixed)
