"""One engine run over every ``.py`` file of the installed torch package,
shared by the corpus test and the fix-safety test (computed once per session):
the rules on by default over every file (what users run) and TDV101 and TDV201
(opt-in for their precision, not their cost; the fix-safety test meets their
fixes here), every rule (the other opt-in ones too) over every tenth file, to
keep CI inside its budget.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from flake8_torchdevice.engine import check_source
from flake8_torchdevice.fixes import can_fix
from flake8_torchdevice.rules import ALL_RULES

DEFAULT_RULES = tuple(rule for rule in ALL_RULES if rule.DEFAULT_ENABLED)
# Off by default since their held-out precision was measured (docs/precision.md);
# they were on over every file before, and the corpus keeps them there.
ALSO_ON_EVERY_FILE = frozenset({"TDV101", "TDV201"})
CORPUS_RULES = tuple(rule for rule in ALL_RULES if rule.DEFAULT_ENABLED or rule.CODE in ALSO_ON_EVERY_FILE)
EVERY_RULE_STEP = 10


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


def torch_root() -> Path:
    import torch  # a test dependency; the caller skips without it

    return Path(torch.__file__).parent


@lru_cache(maxsize=None)
def torch_corpus() -> CorpusRun:
    run = CorpusRun()
    start_all = time.process_time()
    for number, path in enumerate(sorted(torch_root().rglob("*.py"))):
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
