"""One engine run over an eighth of the ``.py`` files of the installed torch package,
shared by the corpus test and the fix-safety test (computed once per session):
the rules on by default over every file (what users run; TDV101 and TDV201 among
them), every rule (the opt-in ones too) over every tenth file. Which eighth turns
with the day (UTC): the whole package every eight days, and all of it in
``benchmarks/equivalence.py``; CI's time budget cannot hold all of it each run.

The fix-safety test needs every torch file with a fixable finding (of its size), not an eighth:
``FIXABLE_LIST`` names them (paths inside torch 2.13.0), and the corpus test checks
that today's eighth finds exactly the listed files of that eighth, so the list cannot
go stale for more than eight days. ``python tests/corpus_support.py --write`` runs the
whole package and rewrites it.
"""

from __future__ import annotations

import datetime
import sys
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from flake8_torchdevice.engine import check_source
from flake8_torchdevice.fixes import can_fix
from flake8_torchdevice.rules import ALL_RULES

DEFAULT_RULES = tuple(rule for rule in ALL_RULES if rule.DEFAULT_ENABLED)
# On over every file whatever their default (they were opt-in once; the corpus kept them).
ALSO_ON_EVERY_FILE = frozenset({"TDV101", "TDV201"})
CORPUS_RULES = tuple(rule for rule in ALL_RULES if rule.DEFAULT_ENABLED or rule.CODE in ALSO_ON_EVERY_FILE)
EVERY_RULE_STEP = 10
PARTS = 8  # the corpus test reads one part a day (the heaviest 168 k lines; in sixths, 262 k)
FIXABLE_LIST = Path(__file__).with_name("torch_fixable_files.txt")


@dataclass
class CorpusRun:
    files: int = 0
    lines: int = 0
    cpu_seconds: float = 0.0
    slowest: tuple = (0.0, "")  # (CPU seconds, path)
    crashes: list = field(default_factory=list)  # (path, "ExcType: message")
    errors: dict = field(default_factory=dict)  # path -> the engine's one-line message
    findings: dict = field(default_factory=dict)  # code -> count
    fixable: list = field(default_factory=list)  # (path, source, violations) with a fixable finding
    part: int = 0  # which of the PARTS parts was read


def torch_root() -> Path:
    import torch  # a test dependency; the caller skips without it

    return Path(torch.__file__).parent


def day_offset(step: int) -> int:
    """Which of ``step`` shares of the package today (UTC) reads: the same all day, each in turn."""
    return datetime.date.today().toordinal() % step


def todays_part() -> int:
    return day_offset(PARTS)


@lru_cache(maxsize=None)
def torch_files() -> tuple:
    """Every ``.py`` file of the installed torch package, in a fixed order."""
    return tuple(sorted(torch_root().rglob("*.py")))


@lru_cache(maxsize=None)
def torch_corpus(part: "int | None" = None) -> CorpusRun:
    """Today's part (``part=None``), one given part, or the whole package (``part=-1``)."""
    run = CorpusRun(part=todays_part() if part is None else part)
    start_all = time.process_time()
    for number, path in enumerate(torch_files()):
        if run.part >= 0 and number % PARTS != run.part:
            continue
        rules = ALL_RULES if number % EVERY_RULE_STEP == 0 else CORPUS_RULES
        source = path.read_bytes().decode("utf-8")
        run.files += 1
        run.lines += source.count("\n")
        start = time.process_time()
        try:
            result = check_source(source, rules=rules, strict=True)
        except Exception as exc:  # noqa: BLE001 - collected and reported together
            run.crashes.append((str(path), f"{type(exc).__name__}: {exc}"[:300]))
            continue
        spent = time.process_time() - start
        run.slowest = max(run.slowest, (spent, str(path)))
        if result.error:
            run.errors[str(path)] = result.error
        for violation in result.violations:
            run.findings[violation.code] = run.findings.get(violation.code, 0) + 1
        if any(can_fix(v.code, unsafe=True) for v in result.violations):
            run.fixable.append((str(path), source, tuple(result.violations)))
    run.cpu_seconds = time.process_time() - start_all
    return run


def listed_fixable() -> list:
    """The listed torch files with a fixable finding, relative to the torch package."""
    lines = FIXABLE_LIST.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line and not line.startswith("#")]


def listed_in_part(part: int) -> set:
    index = {path.relative_to(torch_root()).as_posix(): n for n, path in enumerate(torch_files())}
    return {name for name in listed_fixable() if name in index and index[name] % PARTS == part}


def fixable_sources() -> list:
    """The source of every listed file: what the fix-safety test fixes."""
    return [(torch_root() / name).read_bytes().decode("utf-8") for name in listed_fixable()]


def _write_list() -> None:
    import torch

    run = torch_corpus(-1)
    names = sorted(Path(path).relative_to(torch_root()).as_posix() for path, _, _ in run.fixable)
    header = (f"# torch {torch.__version__}: files with a finding --fix can fix (safe or unsafe), with the corpus's\n"
              "# rules (tests/corpus_support.py). Rewritten by: python tests/corpus_support.py --write\n")
    FIXABLE_LIST.write_text(header + "".join(f"{name}\n" for name in names), encoding="utf-8")
    print(f"{len(names)} files, {run.files} read, {run.cpu_seconds:.0f} CPU s")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/corpus_support.py --write")
    _write_list()
