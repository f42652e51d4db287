"""Rule pages are read through ruledocs.rule_page, from docs/rules/ in a source
tree and from the package data of an installed wheel."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

from fixture_cases import ROOT
from flake8_torchdevice.ruledocs import UnknownRule, rule_page
from flake8_torchdevice.rules import ALL_RULES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def test_every_rule_has_its_page():
    for rule in ALL_RULES:
        page = rule_page(rule.CODE)
        assert page == (ROOT / "docs" / "rules" / f"{rule.CODE}.md").read_text(encoding="utf-8")
        assert page.startswith(f"# {rule.CODE}")


@pytest.mark.parametrize("code", ["TDV999", "tdv201", "../README", ""])
def test_unknown_codes_raise(code):
    with pytest.raises(UnknownRule):
        rule_page(code)


def test_the_package_list_names_every_package():
    listed = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"]
    found = {
        ".".join(path.parent.relative_to(ROOT).parts)
        for path in (ROOT / "flake8_torchdevice").rglob("__init__.py")
    }
    assert found | {"flake8_torchdevice.rule_docs"} == set(listed)


@pytest.mark.slow
def test_the_wheel_ships_the_pages_and_reads_them_there(tmp_path):
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(ROOT)],
        capture_output=True, text=True, timeout=300,
    )
    assert built.returncode == 0, built.stderr
    [wheel] = tmp_path.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {f"flake8_torchdevice/rule_docs/{rule.CODE}.md" for rule in ALL_RULES} <= set(names)
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
