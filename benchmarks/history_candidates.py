"""List a recall batch's candidates from repository histories (batches 104-106's rule, `docs/recall.md`).

The pool: the repositories whose every row of `benchmarks/bugs/fixes.csv` belongs to the bug-report batches
(`heldout25`-`heldout96`) and that no subject-rule batch listed (`candidates<=24` and `candidates97-103`), ordered
by the sha256 of their name. For each repository of ``pool[start:end]``, the three oldest commits whose subject
matches batch 2's expression, that touch one to three `.py`/`.ipynb` files and are not already a row. Rows of the
history batches themselves (``--skip heldout104 ...``) are left out of the pool's computation, so earlier batches'
pools stay reproducible.

    python benchmarks/history_candidates.py 80 120 --skip heldout104 heldout105 heldout106 > candidates106.csv

With ``--corpus`` the pool is batch 110's instead: the precision corpus's GitHub projects
(`benchmarks/realworld/projects.csv`) whose repository is no row of `fixes.csv` (the ``--skip`` splits left out)
and in no candidates file numbered below 110, by the same sha256 order; ``--limit N`` stops after the repository
whose candidates bring the count to N or more.

    python benchmarks/history_candidates.py 0 2000 --corpus --limit 40 --skip heldout110 > candidates110.csv

``--since OWNER/NAME`` keeps only the corpus projects listed from that one on (batch 112: the corpus batches added
after batches 110 and 111 read the whole pool).

Needs the mirrors (`benchmarks/mirrors.py`); reads and prints only repository names and commit ids.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.mirrors import git_dir  # noqa: E402 - needs the clone on sys.path
from benchmarks.recall import read_fixes  # noqa: E402 - the same

BUGS = Path(__file__).resolve().parent / "bugs"
SUBJECT = re.compile(
    r"(?i)(fix|bug|error|crash|support|work).*(cuda|gpu|cpu|device|map_location)"
    r"|(cuda|gpu|cpu|device|map_location).*(fix|bug|error|crash)"
)


def rows(path: Path) -> list[dict]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(line for line in handle if not line.startswith("#")))


def batch_number(split: str):
    match = re.fullmatch(r"heldout(\d+)", split)
    return int(match.group(1)) if match else None


def pool(fixes: list) -> list[str]:
    by_repo: dict = {}
    for fix in fixes:
        by_repo.setdefault(fix.repo, []).append(batch_number(fix.split))
    listed = set()
    for path in BUGS.glob("candidates*.csv"):
        number = int(re.search(r"candidates(\d+)", path.name).group(1))
        if number <= 24 or 97 <= number <= 103:
            listed |= {row["repo"] for row in rows(path)}
    chosen = [repo for repo, numbers in by_repo.items()
              if all(n is not None and 25 <= n <= 96 for n in numbers) and repo not in listed]
    return sorted(chosen, key=lambda name: hashlib.sha256(name.encode()).hexdigest())


def corpus_pool(fixes: list, since: str = "") -> list[str]:
    """Batch 110's pool: corpus repositories no row and no candidates file below 110 names; with ``since``, only
    the projects listed from that one on (a corpus batch added after the pool was read, batch 112's)."""
    corpus = BUGS.parent / "realworld" / "projects.csv"
    projects = [row["project"][len("github:"):] for row in rows(corpus) if row["project"].startswith("github:")]
    if since:
        projects = projects[projects.index(since):]
    named = {fix.repo for fix in fixes}
    for path in BUGS.glob("candidates*.csv"):
        if int(re.search(r"candidates(\d+)", path.name).group(1)) < 110:
            named |= {row["repo"] for row in rows(path)}
    chosen = {repo for repo in projects if repo not in named}
    return sorted(chosen, key=lambda name: hashlib.sha256(name.encode()).hexdigest())


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={git_dir(repo)}", *args], capture_output=True, text=True).stdout


def candidates(repo: str, known: set) -> list[str]:
    found = []
    log = git(repo, "log", "--all", "--no-renames", "--no-merges", "--format=%H%x09%ct%x09%s")
    for line in log.splitlines():
        commit, stamp, subject = (line.split("\t", 2) + ["", ""])[:3]
        if not SUBJECT.search(subject):
            continue
        files = git(repo, "diff-tree", "--no-commit-id", "--name-only", "-r", "--no-renames", commit).split()
        sources = sum(name.endswith((".py", ".ipynb")) for name in files)
        if 1 <= sources <= 3 and not any(commit.startswith(k) or k.startswith(commit[:12]) for k in known):
            found.append((int(stamp), commit))
    return [commit[:12] for _, commit in sorted(set(found))[:3]]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("start", type=int)
    parser.add_argument("end", type=int)
    parser.add_argument("--skip", nargs="*", default=[], help="splits left out of the pool's computation")
    parser.add_argument("--corpus", action="store_true", help="batch 110's pool: the precision corpus's histories")
    parser.add_argument("--limit", type=int, default=0, help="stop once this many candidates are listed")
    parser.add_argument("--since", default="", help="with --corpus: only projects listed from OWNER/NAME on")
    args = parser.parse_args(argv)
    fixes = [fix for fix in read_fixes() if fix.split not in set(args.skip)]
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["repo", "commit"])
    listed = 0
    for repo in (corpus_pool(fixes, args.since) if args.corpus else pool(fixes))[args.start:args.end]:
        if args.limit and listed >= args.limit:
            break
        if not git_dir(repo).is_dir():
            print(f"history_candidates.py: no mirror of {repo}", file=sys.stderr)
            continue
        known = {fix.commit[:12] for fix in fixes if fix.repo == repo}
        for commit in candidates(repo, known):
            out.writerow([repo, commit])
            listed += 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
