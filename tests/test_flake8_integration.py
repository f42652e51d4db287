"""The plugin through the real ``flake8`` command, as users run it."""

from __future__ import annotations

import re

from flake8_torchdevice import __version__

BAD = "import torch\n\nscaler = torch.cuda.amp.GradScaler()\n"  # TDV701, on by default


def _write(tmp_path, text, name="train.py"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_on_by_default_and_column_points_at_the_call(tmp_path, flake8):
    path = _write(tmp_path, BAD)
    result = flake8("--isolated", str(path))
    assert result.returncode == 1
    assert f"{path}:3:10: TDV701 torch.cuda.amp.GradScaler is deprecated" in result.stdout
    # flake8 prints col + 1: column 10 is the "t" of torch.cuda.amp.GradScaler.
    assert BAD.splitlines()[2][9:].startswith("torch.cuda.amp.GradScaler(")


def test_select_e_drops_tdv_and_extend_select_restores_it(tmp_path, flake8):
    path = _write(tmp_path, BAD)
    dropped = flake8("--isolated", "--select=E", str(path))
    assert dropped.returncode == 0 and "TDV" not in dropped.stdout
    restored = flake8("--isolated", "--select=E", "--extend-select=TDV", str(path))
    assert restored.returncode == 1 and "TDV701" in restored.stdout


def test_noqa_with_the_code_silences_only_that_code(tmp_path, flake8):
    text = (
        "import torch\nimport os\nstate = torch.cuda.amp.GradScaler()  # noqa: TDV701\n"
        "other = torch.cuda.amp.GradScaler()  # noqa: E501\n"
    )
    path = _write(tmp_path, text)
    result = flake8("--isolated", "--select=TDV,F", str(path))
    codes = re.findall(r":(\d+):\d+: (\w+)", result.stdout)
    assert ("4", "TDV701") in codes
    assert ("3", "TDV701") not in codes
    assert ("2", "F401") in codes


def test_multiline_call_is_reported_on_its_first_line(tmp_path, flake8):
    text = (
        "import torch\nstate = torch.cuda.amp.GradScaler(  # noqa: TDV701\n    2.0,\n    enabled=True,\n)\n"
        "x = torch.cuda.amp.GradScaler(\n    2.0,\n)\n"
    )
    result = flake8("--isolated", "--select=TDV", str(_write(tmp_path, text)))
    assert re.findall(r":(\d+):(\d+): TDV701", result.stdout) == [("6", "5")]


def test_stdin_with_display_name(flake8):
    result = flake8("--isolated", "--select=TDV", "-", "--stdin-display-name", "editor/buffer.py", input=BAD)
    assert result.returncode == 1
    assert result.stdout.startswith("editor/buffer.py:3:10: TDV701")


def test_stdin_is_what_is_checked_not_the_file_on_disk(tmp_path, flake8):
    on_disk = _write(tmp_path, "x = 1\n")
    result = flake8("--isolated", "--select=TDV", "-", "--stdin-display-name", str(on_disk), input=BAD)
    assert "TDV701" in result.stdout


def test_syntax_error_gives_e999_and_no_traceback(tmp_path, flake8):
    path = _write(tmp_path, "import torch\ndef f(:\n    torch.load('x')\n")
    result = flake8("--isolated", str(path))
    assert "E999" in result.stdout
    assert "Traceback" not in result.stderr and "TDV" not in result.stdout


def test_version_lists_the_plugin(flake8):
    result = flake8("--version")
    assert f"flake8-torchdevice: {__version__}" in result.stdout


def test_clean_file_exits_zero(tmp_path, flake8):
    path = _write(tmp_path, "import torch\nscaler = torch.amp.GradScaler('cuda')\n")
    result = flake8("--isolated", "--select=TDV", str(path))
    assert (result.returncode, result.stdout) == (0, "")


def test_tdv101_and_tdv201_by_default_tdv105_only_when_named(tmp_path, flake8):
    """TDV101 and TDV201 decide on the module's evidence and are on by default; TDV105
    is opt-in for its held-out precision (docs/precision.md): ``TDV`` keeps it off."""
    text = (
        "import torch\nstate = torch.load('a')\n"  # TDV201: the module has a CPU device
        "device = torch.device('cpu')\nx = torch.zeros(1).cuda()\ny = x.to(device)\n"  # TDV101 on line 4
        "torch.cuda.synchronize()\n"  # TDV105 on line 6
    )
    path = _write(tmp_path, text)
    default = [("2", "9", "TDV201"), ("4", "5", "TDV101")]
    for options in ([], ["--select=TDV"], ["--extend-select=TDV"], ["--select=TDV1,TDV2"]):
        result = flake8("--isolated", *options, str(path))
        assert re.findall(r":(\d+):(\d+): (TDV\d+)", result.stdout) == default, options
    named = flake8("--isolated", "--extend-select=TDV105", str(path))
    assert named.returncode == 1
    assert re.findall(r":(\d+):(\d+): (TDV\d+)", named.stdout) == default + [("6", "1", "TDV105")]


def test_a_test_file_by_its_name_alone_is_a_test_file_for_flake8_and_the_cli(tmp_path, flake8):
    """No pytest/unittest import: only the name says it is a test module, and
    test code may address a given GPU (TDV401 exempts it) -- both front ends."""
    from cli_support import run_cli

    text = "import torch\n\n\ndef test_moves_model():\n    return torch.nn.Linear(2, 2).to('cuda:1')\n"
    for name, expected in (("test_gpu.py", 0), ("train.py", 1)):
        path = _write(tmp_path, text, name)
        assert flake8("--isolated", "--select=TDV401", str(path)).returncode == expected, name
        assert run_cli("--select", "TDV401", name, cwd=tmp_path).code == expected, name


def _rules_flake8_runs(monkeypatch, *argv: str) -> set:
    """The codes whose rules the plugin runs under these flake8 options
    (flake8's own option parsing, which hands them to ``parse_options``)."""
    from flake8.options.parse_args import parse_args

    from flake8_torchdevice.plugin import TorchDeviceChecker

    monkeypatch.setattr(TorchDeviceChecker, "_rules", TorchDeviceChecker._rules)  # restored afterwards
    parse_args(["--isolated", *argv])
    return {rule.CODE for rule in TorchDeviceChecker._rules}


def test_a_code_flake8_ignores_everywhere_is_not_computed(monkeypatch):
    assert "TDV701" in _rules_flake8_runs(monkeypatch)
    assert "TDV701" not in _rules_flake8_runs(monkeypatch, "--extend-ignore=TDV701")
    assert not {"TDV401", "TDV402"} & _rules_flake8_runs(monkeypatch, "--extend-ignore=TDV4")
    # flake8's own precedence: both explicit, the longer prefix wins, so TDV701 is still shown
    assert _rules_flake8_runs(monkeypatch, "--extend-ignore=TDV", "--extend-select=TDV701") == {"TDV701"}


def test_ignoring_a_code_changes_no_output_but_its_own(tmp_path, flake8):
    text = BAD + "\n\ndef f(x):\n    x.to('cuda:1')\n"  # TDV701 and TDV401 (and TDV102)
    path = _write(tmp_path, text)
    everything = flake8("--isolated", str(path)).stdout.splitlines()
    without = flake8("--isolated", "--extend-ignore=TDV401", str(path)).stdout.splitlines()
    assert any("TDV401" in line for line in everything)
    assert without == [line for line in everything if "TDV401" not in line]
