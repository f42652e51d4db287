"""Rule pages come through ruledocs.rule_page: the generated docs/rules/ text,
in a source tree and in an installed wheel alike."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

from fixture_cases import ROOT
from flake8_torchdevice.ruledocs import UnknownRule, rule_page
from flake8_torchdevice.rules import ALL_RULES


def test_every_rule_has_its_page():
    for rule in ALL_RULES:
        page = rule_page(rule.CODE)
        assert page == (ROOT / "docs" / "rules" / f"{rule.CODE}.md").read_text(encoding="utf-8")
        assert page.startswith(f"# {rule.CODE}")


@pytest.mark.parametrize("code", ["TDV999", "tdv201", "../README", ""])
def test_unknown_codes_raise(code):
    with pytest.raises(UnknownRule):
        rule_page(code)


@pytest.mark.slow
def test_the_installed_wheel_shows_the_same_pages(tmp_path):
    built = subprocess.run(
        [
            sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
            "-w", str(tmp_path), str(ROOT),
        ],
        capture_output=True, text=True, timeout=300,
    )
    assert built.returncode == 0, built.stderr
    [wheel] = tmp_path.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "flake8_torchdevice/analysis/guards.py" in names  # every subpackage ships
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)  # an install, without pip's bookkeeping
    code = (
        "import flake8_torchdevice.ruledocs as r; "
        f"assert r.__file__.startswith({str(target)!r}), r.__file__; "
        "sys.stdout.write(r.rule_page('TDV201'))"
    )
    read = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(target)!r}); {code}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert read.returncode == 0, read.stderr
    assert read.stdout == rule_page("TDV201")
