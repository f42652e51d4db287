"""Recall on real device bugs: lint each file as it was before its fix, and after.

    python benchmarks/recall.py                 # the table, every miss, per split
    python benchmarks/recall.py --split heldout
    python benchmarks/recall.py --json

The corpus is ``benchmarks/bugs/fixes.csv`` (repository, fixing commit, file, class,
whether the mistake is visible in that file alone). Each file is read from a local
mirror of its repository (``$TDV_MIRRORS``, default /work/.mirror, made by the search
tool's fetch) at the commit's parent ("before") and at the commit ("after"); nothing
fetched is committed. The fix's lines are the old side of ``git diff -U0``. A fix that
also renamed its file names both, ``old.py>new.py``.

A fix counts as FOUND when a finding of a default-on code lies on a line the fix
changed, or within ``NEAR`` lines of one (a fix that inserts ``x = x.to(device)``
changes no old line: the mistake is reported where the value is used, next to it).
Recall is over the fixes whose mistake is visible in the file alone. A finding that
is reported before the fix and no longer after it "disappears with the fix".
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import subprocess
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional, Sequence

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
FIXES_CSV = HERE / "bugs" / "fixes.csv"
NEAR = 3
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", re.M)

if str(REPO) not in sys.path:  # run from a clone without installing
    sys.path.insert(0, str(REPO))

from benchmarks.mirrors import git_dir  # noqa: E402 - needs the clone on sys.path

# tune, the first held-out third (2026-11-25), and batches 2-86, quoted separately (batches 16, 20, 24,
# 55, 71, 80 and 82 kept no fix).
_EMPTY_BATCHES = (16, 20, 24, 55, 71, 80, 82, 96)
SPLITS = ("tune", "heldout", *(f"heldout{number}" for number in range(2, 113) if number not in _EMPTY_BATCHES))


class CorpusError(Exception):
    """A fix that cannot be read: one line for the user."""


@dataclass(frozen=True)
class Fix:
    repo: str
    commit: str
    path: str
    klass: str
    visible: bool
    split: str
    note: str
    # Old-side lines of the device fix when the commit also changes other things: only the
    # diff's hunks that hold one of them count (empty: every hunk).
    only: tuple = ()

    @property
    def id(self) -> str:
        return f"{self.repo}@{self.commit[:12]}:{self.path}"

    @property
    def paths(self) -> tuple[str, str]:
        """The file before and after the fix: ``old.py>new.py`` when the fix also renamed it."""
        before, _, after = self.path.partition(">")
        return before, after or before


@dataclass
class Result:
    fix: Fix
    lines: list  # (first, last) old-side line ranges the fix changed
    before: list = field(default_factory=list)  # (line, code) of every finding before the fix
    after: Optional[list] = field(default_factory=list)  # None: the fixed file does not parse
    found_by: list = field(default_factory=list)  # default codes reported at the fix
    found_by_any: list = field(default_factory=list)  # any code, opt-in ones too
    disappeared: list = field(default_factory=list)  # (line, code) reported before, gone after
    # (line, code) of a default code's finding farther from the fix that the fix removes too: the
    # mistake reported where it shows (``vgg(x)``) rather than where it was mended (``x.to(device)``).
    # A secondary figure; ``found_by`` alone is what this page calls found.
    gone_elsewhere: list = field(default_factory=list)
    error: Optional[str] = None


def read_fixes(path: Path = FIXES_CSV) -> list[Fix]:
    with open(path, newline="", encoding="utf-8") as handle:
        rows = [line for line in handle if line.strip() and not line.lstrip().startswith("#")]
    fixes = []
    for row in csv.DictReader(rows):
        if row["visible"] not in ("yes", "no") or row["split"] not in SPLITS:
            raise CorpusError(f"{path}: {row['repo']}@{row['commit']}: visible yes/no, split {'/'.join(SPLITS)}")
        fixes.append(Fix(row["repo"], row["commit"], row["path"], row["class"], row["visible"] == "yes",
                         row["split"], row["note"], _only(row.get("lines"), path, row)))
    return fixes


def _only(text: Optional[str], path: Path, row: dict) -> tuple:
    """``"139"`` or ``"12;40"``: the old-side lines of the device fix, or () for all."""
    if not text:
        return ()
    try:
        return tuple(int(part) for part in text.split(";"))
    except ValueError:
        raise CorpusError(f"{path}: {row['repo']}@{row['commit']}: lines is 'N' or 'N;M', not {text!r}") from None


def _git(repo: str, *args: str) -> str:
    where = git_dir(repo)
    if not (where / "HEAD").exists():
        raise CorpusError(f"no local mirror of {repo} at {where} (fetch it with the search tool)")
    done = subprocess.run(["git", "--git-dir", str(where), *args], capture_output=True, text=True, errors="replace")
    if done.returncode != 0:
        raise CorpusError(f"{repo}: git {args[0]}: {done.stderr.strip().splitlines()[-1] if done.stderr else '?'}")
    return done.stdout


def changed_lines(diff: str) -> list[tuple[int, int]]:
    """Old-side (first, last) ranges of a -U0 diff; an insertion after line n is (n, n + 1)."""
    ranges = []
    for match in _HUNK.finditer(diff):
        start, count = int(match[1]), int(match[2]) if match[2] is not None else 1
        ranges.append((start, start + count - 1) if count else (start, start + 1))
    return ranges


def findings(source: str, path: str, codes: Optional[set] = None) -> list[tuple[int, str]]:
    """(line, code) of each finding; a notebook's are linted on its joined code cells and numbered by the
    lines of the .ipynb file, as the fix's diff numbers them."""
    from flake8_torchdevice.engine import check_source

    if path.endswith(".ipynb"):
        from flake8_torchdevice.notebooks import NotebookError, file_lines, virtual_module

        try:
            module = virtual_module(source, path)
        except NotebookError as exc:
            raise CorpusError(f"not analysed: {exc}") from None
        result = check_source(module.source, filename=path, cells=module.cells())
        places = file_lines(source)
        line_of = lambda line: places.get(module.place(line), line)  # noqa: E731
    else:
        result = check_source(source, filename=path)  # test modules are known by their path too
        line_of = lambda line: line  # noqa: E731
    if result.error:
        raise CorpusError(f"not analysed: {result.error}")
    return sorted((line_of(v.line), v.code) for v in result.violations if codes is None or v.code in codes)


def near(line: int, ranges: Sequence[tuple[int, int]]) -> bool:
    return any(first - NEAR <= line <= last + NEAR for first, last in ranges)


def evaluate(fix: Fix, default_codes: set) -> Result:
    try:
        old, new = fix.paths
        before = _git(fix.repo, "show", f"{fix.commit}^:{old}")
        after = _git(fix.repo, "show", f"{fix.commit}:{new}")
        # -M: a renamed file's hunks are numbered on the old side, as an unrenamed one's are.
        ranges = changed_lines(_git(fix.repo, "diff", "-U0", "-M", f"{fix.commit}^", fix.commit, "--", *{old, new}))
        if fix.only:
            ranges = [(first, last) for first, last in ranges if any(first <= n <= last for n in fix.only)]
            if not ranges:
                raise CorpusError(f"{fix.id}: no hunk of the fix holds line {fix.only}")
        result = Result(fix, ranges, findings(before, old))
    except CorpusError as exc:
        return Result(fix, [], error=str(exc))
    try:
        result.after = findings(after, new)
    except CorpusError:  # a fix may itself not parse (yolov7 45f2c1fe): nothing can be said to disappear
        result.after = None
    at_fix = [(line, code) for line, code in result.before if near(line, ranges)]
    result.found_by = sorted({code for _, code in at_fix if code in default_codes})
    result.found_by_any = sorted({code for _, code in at_fix})
    if result.after is None:
        return result
    # A finding is the same one after the fix when its code and its line's text are;
    # those far from the fix are matched first (two identical lines: the fixed one goes).
    left = Counter(_signature(after, line, code) for line, code in result.after)
    for line, code in sorted(result.before, key=lambda found: near(found[0], ranges)):
        key = _signature(before, line, code)
        if left[key]:
            left[key] -= 1
        elif near(line, ranges):
            result.disappeared.append((line, code))
        elif code in default_codes:
            result.gone_elsewhere.append((line, code))
    return result


def _signature(source: str, line: int, code: str) -> tuple[str, str]:
    lines = source.splitlines()
    return code, lines[line - 1].strip() if 0 < line <= len(lines) else ""


def summary(results: Sequence[Result], split: Optional[str]) -> dict:
    chosen = [r for r in results if split is None or r.fix.split == split]
    visible = [r for r in chosen if r.fix.visible and not r.error]
    by_class: dict[str, list] = {}
    for r in visible:
        by_class.setdefault(r.fix.klass, []).append(r)
    return {
        "split": split or "all",
        "fixes": len(chosen),
        "visible": len(visible),
        "found_default": sum(1 for r in visible if r.found_by),
        "found_any": sum(1 for r in visible if r.found_by_any),
        "found_elsewhere": sum(1 for r in visible if not r.found_by and r.gone_elsewhere),
        "errors": [f"{r.fix.id}: {r.error}" for r in chosen if r.error],
        "classes": {k: (sum(1 for r in v if r.found_by), sum(1 for r in v if r.found_by_any), len(v))
                    for k, v in sorted(by_class.items())},
    }


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def print_report(results: Sequence[Result]) -> None:
    for split in (*SPLITS, None):
        s = summary(results, split)
        print(f"== {s['split']}: {s['fixes']} fixes, {s['visible']} visible in the file alone; "
              f"default codes find {s['found_default']} ({_pct(s['found_default'], s['visible'])}), "
              f"all codes {s['found_any']} ({_pct(s['found_any'], s['visible'])}); missed at the fix but "
              f"reported elsewhere and gone after it: {s['found_elsewhere']}")
        for klass, (default, any_code, total) in s["classes"].items():
            print(f"   {klass:34s} default {default}/{total}   all codes {any_code}/{total}")
        for error in s["errors"]:
            print(f"   ERROR {error}")
    print("\nper fix (visible ones first):")
    for r in sorted(results, key=lambda r: (not r.fix.visible, r.fix.split, r.fix.klass, r.fix.id)):
        verdict = "ERROR" if r.error else ("found " + ",".join(r.found_by)) if r.found_by else (
            f"opt-in only {','.join(r.found_by_any)}" if r.found_by_any else "missed")
        gone = f"; gone after the fix: {', '.join(f'{c}@{n}' for n, c in r.disappeared)}" if r.disappeared else ""
        if r.gone_elsewhere:
            gone += f"; gone after the fix, away from it: {', '.join(f'{c}@{n}' for n, c in r.gone_elsewhere)}"
        print(f"  [{r.fix.split:7s} {'visible' if r.fix.visible else 'needs another file'}] {r.fix.id} "
              f"({r.fix.klass}) lines {r.lines}: {verdict}{gone}")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=SPLITS)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--fixes-csv", type=Path, default=FIXES_CSV, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        from flake8_torchdevice.rules import ALL_RULES

        fixes = read_fixes(args.fixes_csv)
    except (ImportError, OSError, CorpusError, KeyError) as exc:
        print(f"recall.py: {exc}", file=sys.stderr)
        return 2
    default_codes = {rule.CODE for rule in ALL_RULES if rule.DEFAULT_ENABLED}
    results = [evaluate(fix, default_codes) for fix in fixes if not args.split or fix.split == args.split]
    if args.json:
        json.dump({"summary": [summary(results, s) for s in ("tune", "heldout", None)],
                   "results": [{**asdict(r), "fix": asdict(r.fix)} for r in results]}, sys.stdout, indent=1)
        print()
    else:
        print_report(results)
    return 1 if any(r.error for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
