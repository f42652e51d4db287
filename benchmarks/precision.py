"""Precision of every TDV rule on real code nobody here tuned for.

    python benchmarks/precision.py                    # download (once), lint, report
    python benchmarks/precision.py --split tune --code TDV201
    python benchmarks/precision.py --sample 40 --seed 0 --code TDV101   # what to judge next
    python benchmarks/precision.py --json > out.json
    python benchmarks/precision.py --offline          # only what is in the cache

The corpus is ``benchmarks/realworld/projects.csv``: pinned PyPI sdists and pinned
commits of GitHub repositories (``github:owner/name``, read from a local mirror under
``$TDV_MIRRORS``, default /work/.mirror), split into ``tune`` and ``heldout`` by the
hash rules written in that file. Notebooks count: their code cells, joined. Each sdist is fetched from PyPI (its simple API gives
the file and its sha256; the same file ``pip download --no-deps --no-binary :all:
NAME==VERSION`` fetches), checked, and extracted under the cache directory
(``$TDV_REALWORLD_CACHE``, default ``~/.cache/flake8-torchdevice/realworld``).
Every ``.py`` file is checked in-process with every rule in
``flake8_torchdevice.rules.ALL_RULES`` (opt-in codes too). Findings are joined on
``(project, version, path, line, code)`` with ``benchmarks/realworld/labels.csv``.
``benchmarks/realworld/baseline.csv`` lists the findings of the baseline run, so that
findings the rules newly produce can be told apart (``--write-baseline`` rewrites it).
See docs/precision.md for the verdicts and how to judge.
"""

from __future__ import annotations

import argparse
import ast
import csv
import hashlib
import json
import os
import random
import sys
import tarfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Iterator, Optional, Sequence

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
REALWORLD = HERE / "realworld"
PROJECTS_CSV = REALWORLD / "projects.csv"
LABELS_CSV = REALWORLD / "labels.csv"
BASELINE_CSV = REALWORLD / "baseline.csv"
SIMPLE_INDEX = os.environ.get("TDV_PYPI_SIMPLE", "https://pypi.org/simple") + "/{name}/"
VERDICTS = ("true", "latent", "false", "deliberate")
SPLITS = ("tune", "heldout")
LABEL_FIELDS = ["project", "version", "path", "line", "code", "verdict", "idiom", "note"]
CONTEXT_LINES = 3

if str(REPO) not in sys.path:  # run from a clone without installing
    sys.path.insert(0, str(REPO))

from benchmarks.mirrors import git_dir as mirror_git_dir  # noqa: E402 - needs the clone on sys.path


class CorpusError(Exception):
    """A project that could not be fetched or read: one line for the user."""


# --------------------------------------------------------------------- data
@dataclass(frozen=True)
class Project:
    name: str
    version: str
    split: str
    kind: str
    why: str = ""

    @property
    def key(self) -> str:
        return f"{self.name}=={self.version}"


@dataclass(frozen=True)
class Finding:
    project: str
    version: str
    path: str  # relative to the sdist's top directory, "/"-separated
    line: int
    col: int
    code: str
    message: str

    @property
    def key(self) -> tuple[str, str, str, int, str]:
        return (self.project, self.version, self.path, self.line, self.code)


@dataclass(frozen=True)
class Label:
    project: str
    version: str
    path: str
    line: int
    code: str
    verdict: str
    idiom: str
    note: str

    @property
    def key(self) -> tuple[str, str, str, int, str]:
        return (self.project, self.version, self.path, self.line, self.code)


def _data_rows(path: Path) -> Iterator[str]:
    with open(path, newline="", encoding="utf-8") as handle:
        for row in handle:
            if not row.lstrip().startswith("#") and row.strip():
                yield row


def read_projects(path: Path = PROJECTS_CSV) -> list[Project]:
    projects = []
    for row in csv.DictReader(_data_rows(path)):
        if row["split"] not in SPLITS:
            raise CorpusError(f"{path}: {row['project']}: split must be one of {SPLITS}, not {row['split']!r}")
        projects.append(Project(row["project"], row["version"], row["split"], row["kind"], row.get("why") or ""))
    return projects


def read_labels(path: Path = LABELS_CSV) -> dict[tuple, Label]:
    """The judged findings by key; an unknown verdict or a duplicate is an error."""
    labels: dict[tuple, Label] = {}
    if not path.exists():
        return labels
    for number, row in enumerate(csv.DictReader(_data_rows(path)), start=2):
        verdict = (row.get("verdict") or "").strip()
        if verdict not in VERDICTS:
            raise CorpusError(f"{path}:{number}: verdict must be one of {', '.join(VERDICTS)}, not {verdict!r}")
        label = Label(row["project"], row["version"], row["path"], int(row["line"]), row["code"],
                      verdict, (row.get("idiom") or "").strip(), (row.get("note") or "").strip())
        if label.key in labels:
            raise CorpusError(f"{path}:{number}: {label.key} is judged twice")
        labels[label.key] = label
    return labels


def read_baseline(path: Path = BASELINE_CSV) -> Optional[set[tuple]]:
    if not path.exists():
        return None
    return {(r["project"], r["version"], r["path"], int(r["line"]), r["code"]) for r in csv.DictReader(_data_rows(path))}


def write_baseline(findings: Iterable[Finding], path: Path = BASELINE_CSV) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["project", "version", "path", "line", "code"])
        for finding in sorted(findings, key=lambda f: f.key):
            writer.writerow(finding.key)


# ----------------------------------------------------------------- download
def cache_dir() -> Path:
    return Path(os.environ.get("TDV_REALWORLD_CACHE") or Path.home() / ".cache" / "flake8-torchdevice" / "realworld")


def sdist_info(project: Project) -> tuple[str, str, str]:
    """(url, filename, sha256) of the project's sdist, from PyPI's simple API
    (PEP 691 JSON: the index pip itself reads)."""
    url = SIMPLE_INDEX.format(name=_normal(project.name))
    request = urllib.request.Request(url, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            base = response.geturl()
            index = json.load(response)
    except urllib.error.HTTPError as exc:
        raise CorpusError(f"PyPI has no project {project.name} ({exc.code} {exc.reason})") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise CorpusError(f"cannot ask PyPI about {project.key}: {getattr(exc, 'reason', exc)}") from None
    for entry in index.get("files", []):
        stem = _sdist_stem(entry.get("filename", ""))
        if stem and "-" in stem:
            name, version = stem.rsplit("-", 1)
            if _normal(name) == _normal(project.name) and version == project.version:
                return urllib.parse.urljoin(base, entry["url"]), entry["filename"], entry.get("hashes", {}).get("sha256", "")
    raise CorpusError(f"PyPI has no sdist of {project.key}")


def _sdist_stem(filename: str) -> Optional[str]:
    for suffix in (".tar.gz", ".zip"):
        if filename.endswith(suffix):
            return filename[: -len(suffix)]
    return None


def download(project: Project, cache: Path) -> Path:
    """The sdist archive in the cache, downloaded and checked if missing."""
    archives = cache / "sdists"
    for existing in archives.glob(f"*-{project.version}.*") if archives.exists() else ():
        if _normal(existing.name.rsplit("-", 1)[0]) == _normal(project.name):
            return existing
    url, filename, sha256 = sdist_info(project)
    archives.mkdir(parents=True, exist_ok=True)
    target = archives / filename
    partial = target.with_name(target.name + ".part")
    try:
        with urllib.request.urlopen(url, timeout=300) as response, open(partial, "wb") as out:
            digest = hashlib.sha256()
            while chunk := response.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
    except (urllib.error.URLError, OSError) as exc:
        partial.unlink(missing_ok=True)
        raise CorpusError(f"cannot download {filename}: {getattr(exc, 'reason', exc)}") from None
    if sha256 and digest.hexdigest() != sha256:
        partial.unlink(missing_ok=True)
        raise CorpusError(f"{filename}: sha256 {digest.hexdigest()} is not PyPI's {sha256}")
    partial.replace(target)
    return target


def _normal(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-").replace("github:", "").replace("/", "+")


# ------------------------------------------------------- repositories (v2)
REPO_PREFIX = "github:"


def export_commit(project: Project, root: Path) -> None:
    """The project's .py and .ipynb files at its pinned commit, from the local mirror.

    A snapshot may lack its largest blobs: those files are left out and listed in
    ``.missing`` (the report counts them as not analysed)."""
    import subprocess

    git_dir = mirror_git_dir(project.name[len(REPO_PREFIX):])
    if not (git_dir / "HEAD").exists():
        raise CorpusError(f"no local mirror of {project.name} at {git_dir} (fetch it with the search tool)")
    git = ["git", "--git-dir", str(git_dir)]
    listing = subprocess.run([*git, "ls-tree", "-r", "-z", project.version], capture_output=True)
    if listing.returncode != 0:
        raise CorpusError(f"{project.key}: {listing.stderr.decode(errors='replace').strip()}")
    entries = [line.split("\t", 1) for line in listing.stdout.decode("utf-8", "replace").split("\0") if "\t" in line]
    wanted = [(meta.split()[2], path) for meta, path in entries
              if meta.split()[1] == "blob" and path.endswith((".py", ".ipynb"))]
    root.mkdir(parents=True)
    missing = []
    for blob, path in wanted:
        content = subprocess.run([*git, "cat-file", "blob", blob], capture_output=True)
        if content.returncode != 0:
            missing.append(path)
            continue
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.stdout)
    (root / ".missing").write_text("".join(f"{path}\n" for path in missing))
    (root / ".complete").write_text(project.version + "\n")


def extract(archive: Path, cache: Path, project: Project) -> Path:
    """The sdist's top directory, extracted once (marker file ``.complete``)."""
    root = cache / "src" / f"{_normal(project.name)}-{project.version}"
    if (root / ".complete").exists():
        return root
    if root.exists():
        _remove_tree(root)
    root.mkdir(parents=True)
    try:
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as zipped:
                zipped.extractall(root)
        else:
            with tarfile.open(archive) as tarred:
                tarred.extractall(root, filter="data")
    except (tarfile.TarError, zipfile.BadZipFile, OSError) as exc:
        raise CorpusError(f"cannot extract {archive.name}: {exc}") from None
    (root / ".complete").write_text(archive.name + "\n")
    return root


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path)


def project_root(project: Project, cache: Path, offline: bool) -> Path:
    """The directory whose ``.py`` files are the project's (the sdist's top folder)."""
    root = cache / "src" / f"{_normal(project.name)}-{project.version}"
    if project.name.startswith(REPO_PREFIX):
        if not (root / ".complete").exists():
            if root.exists():
                _remove_tree(root)
            export_commit(project, root)
        return root
    if not (root / ".complete").exists():
        if offline:
            raise CorpusError(f"{project.key} is not in the cache {cache} (run once without --offline)")
        extract(download(project, cache), cache, project)
    tops = [entry for entry in root.iterdir() if entry.is_dir()]
    return tops[0] if len(tops) == 1 else root


def python_files(root: Path) -> list[str]:
    """The .py files and notebooks below ``root`` (a notebook's lines are its code cells joined)."""
    found = [*root.rglob("*.py"), *root.rglob("*.ipynb")]
    return sorted(path.relative_to(root).as_posix() for path in found if path.is_file())


def read_source(path: Path) -> tuple[str, Optional[tuple[int, ...]]]:
    """A .py file's text; a notebook's code cells as one module and each line's cell, without the cells that do not
    parse on their own when the whole does not (as the command line reads a notebook)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".ipynb":
        from flake8_torchdevice import notebooks

        cells = notebooks.cell_sources(text, path.name)
        module = notebooks.join(cells)
        try:
            ast.parse(module.source)
        except (SyntaxError, ValueError):
            module = notebooks.join(notebooks.without_broken_cells(cells)[0])
        return module.source, module.cells()
    return text, None


def file_kind(path: str) -> str:
    """test / example / package, from the path alone (for the reports)."""
    parts = path.lower().split("/")
    name = parts[-1]
    if any(part in ("test", "tests", "testing") for part in parts[:-1]) or name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py":
        return "test"
    if any(part in ("examples", "example", "scripts", "benchmarks", "benchmark", "tutorials", "docs") or part.endswith("_cli") for part in parts[:-1]):
        return "example"
    return "package"


# --------------------------------------------------------------------- lint
def rules_fingerprint() -> str:
    """Changes whenever any file of the installed/checked-out package changes."""
    import flake8_torchdevice

    digest = hashlib.sha256()
    package = Path(flake8_torchdevice.__file__).parent
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def lint_file(args: tuple[str, str]) -> tuple[str, list[tuple[int, int, str, str]], Optional[str], int]:
    """(path, [(line, col, code, message)], error, lines) for one file; runs in a worker."""
    from flake8_torchdevice.engine import check_source

    from flake8_torchdevice.notebooks import NotebookError

    root, path = args
    try:
        source, cells = read_source(Path(root) / path)
    except (OSError, UnicodeDecodeError, NotebookError) as exc:
        return path, [], f"unreadable: {type(exc).__name__}", 0
    # The path as a user would pass it: test modules are known by their path too.
    result = check_source(source, filename=path, cells=cells)
    found = [(v.line, v.col, v.code, v.message) for v in result.violations]
    return path, found, result.error, source.count("\n") + 1


@dataclass
class ProjectRun:
    project: Project
    files: int
    lines: int
    findings: list[Finding]
    errors: list[str]


def lint_project(project: Project, root: Path, cache: Path, jobs: int, fingerprint: str) -> ProjectRun:
    stored = cache / "findings" / f"{_normal(project.name)}-{project.version}-{fingerprint}.json"
    if stored.exists():
        data = json.loads(stored.read_text())
        return ProjectRun(project, data["files"], data["lines"], [Finding(**f) for f in data["findings"]], data["errors"])
    paths = python_files(root)
    findings: list[Finding] = []
    errors: list[str] = []
    lines = 0
    work = [(str(root), path) for path in paths]
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            results = list(pool.map(lint_file, work, chunksize=8))
    else:
        results = [lint_file(item) for item in work]
    for path, found, error, count in results:
        lines += count
        if error:
            errors.append(f"{path}: {error}")
        findings.extend(Finding(project.name, project.version, path, line, col, code, message) for line, col, code, message in found)
    run = ProjectRun(project, len(paths), lines, findings, errors)
    stored.parent.mkdir(parents=True, exist_ok=True)
    stored.write_text(json.dumps({"files": run.files, "lines": run.lines, "errors": errors,
                                  "findings": [asdict(f) for f in findings]}))
    return run


# ------------------------------------------------------------------- report
def precision(counts: Counter) -> tuple[Optional[float], Optional[float]]:
    """(precision counting latent as a bug, precision counting latent as false)."""
    judged = sum(counts[v] for v in VERDICTS)
    if not judged:
        return None, None
    return ((counts["true"] + counts["latent"] + counts["deliberate"]) / judged,
            (counts["true"] + counts["deliberate"]) / judged)


def table_rows(findings: Sequence[Finding], labels: dict[tuple, Label], split_of: dict[str, str],
               codes: Sequence[str]) -> list[dict]:
    """One row per (split, code) and per code over both splits."""
    per: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for finding in findings:
        label = labels.get(finding.key)
        for split in (split_of[finding.project], "all"):
            counter = per[(split, finding.code)]
            counter["findings"] += 1
            if label:
                counter["judged"] += 1
                counter[label.verdict] += 1
    rows = []
    for split in (*SPLITS, "all"):
        for code in codes:
            counter = per[(split, code)]
            loose, strict = precision(counter)
            rows.append({"split": split, "code": code, "findings": counter["findings"], "judged": counter["judged"],
                         **{v: counter[v] for v in VERDICTS}, "precision": loose, "precision_latent_false": strict})
    return rows


def gone_labels(findings: Sequence[Finding], labels: dict[tuple, Label], projects: Sequence[Project]) -> list[Label]:
    """Judged findings (of the projects checked) that the rules no longer report."""
    present = {finding.key for finding in findings}
    checked = {(p.name, p.version) for p in projects}
    return sorted((label for label in labels.values() if (label.project, label.version) in checked and label.key not in present),
                  key=lambda label: label.key)


def new_findings(findings: Sequence[Finding], labels: dict[tuple, Label], baseline: Optional[set[tuple]]) -> list[Finding]:
    """Unjudged findings that the baseline run did not have (all unjudged ones if there is no baseline)."""
    return [f for f in findings if f.key not in labels and (baseline is None or f.key not in baseline)]


def sample(findings: Sequence[Finding], labels: dict[tuple, Label], size: int, seed: int) -> dict[str, list[Finding]]:
    """Per code, the first ``size`` findings of a seeded shuffle of all its findings,
    without those already judged: the sample stays the same while it is being judged."""
    by_code: dict[str, list[Finding]] = defaultdict(list)
    for finding in sorted(findings, key=lambda f: f.key):
        by_code[finding.code].append(finding)
    picked = {}
    for code, items in sorted(by_code.items()):
        random.Random(f"{seed}:{code}").shuffle(items)
        picked[code] = [f for f in items[:size] if f.key not in labels]
    return picked


def context(root: Path, finding: Finding, around: int = CONTEXT_LINES) -> str:
    from flake8_torchdevice.notebooks import NotebookError

    try:
        lines = read_source(root / finding.path)[0].splitlines()
    except (OSError, UnicodeDecodeError, NotebookError):
        return "    (source unavailable)"
    first = max(1, finding.line - around)
    last = min(len(lines), finding.line + around)
    return "\n".join(f"{'>' if n == finding.line else ' '}{n:6d}  {lines[n - 1]}" for n in range(first, last + 1))


def _pct(value: Optional[float]) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def print_report(runs: Sequence[ProjectRun], rows: Sequence[dict], gone: Sequence[Label], new: Sequence[Finding],
                 splits: Sequence[str], list_heldout: bool, baseline_missing: bool = False, out=None) -> None:
    out = out or sys.stdout
    print("projects", file=out)
    print(f"  {'project':30} {'version':>10} {'split':8} {'kind':10} {'files':>6} {'lines':>8} {'findings':>8}", file=out)
    for run in runs:
        p = run.project
        print(f"  {p.name:30} {p.version:>10} {p.split:8} {p.kind:10} {run.files:6d} {run.lines:8d} {len(run.findings):8d}"
              + (f"  ({len(run.errors)} files not analysed)" if run.errors else ""), file=out)
    print(f"  {'total':30} {'':>10} {'':8} {'':10} {sum(r.files for r in runs):6d} {sum(r.lines for r in runs):8d} "
          f"{sum(len(r.findings) for r in runs):8d}", file=out)
    print("\nprecision = (true+latent+deliberate)/judged; strict counts latent as false", file=out)
    header = f"  {'split':8} {'code':7} {'findings':>8} {'judged':>6} {'true':>5} {'latent':>6} {'false':>5} {'delib':>5} {'precision':>9} {'strict':>6}"
    print(header, file=out)
    for row in rows:
        if row["split"] not in splits and not (row["split"] == "all" and len(splits) > 1):
            continue
        print(f"  {row['split']:8} {row['code']:7} {row['findings']:8d} {row['judged']:6d} {row['true']:5d} {row['latent']:6d} "
              f"{row['false']:5d} {row['deliberate']:5d} {_pct(row['precision']):>9} {_pct(row['precision_latent_false']):>6}",
              file=out)
    split_of = {r.project.name: r.project.split for r in runs}
    lost = [label for label in gone if label.verdict != "false"]
    print(f"\ngone: {len(gone)} judged findings no longer reported, {len(lost)} of them real (recall lost)", file=out)
    for label in lost:
        if split_of.get(label.project) == "heldout" and not list_heldout:
            continue
        print(f"  LOST {label.project} {label.path}:{label.line} {label.code} [{label.verdict}/{label.idiom}] {label.note}", file=out)
    shown = [f for f in new if split_of[f.project] != "heldout" or list_heldout]
    if baseline_missing:
        print(f"\nunjudged findings: {len(new)} (no {BASELINE_CSV.name}: nothing to call new; --write-baseline makes one)", file=out)
        return
    print(f"\nnew unjudged findings: {len(new)}" + (f" (heldout ones not listed: {len(new) - len(shown)})" if len(shown) != len(new) else ""), file=out)
    for finding in shown:
        print(f"  NEW {finding.project} {finding.path}:{finding.line}:{finding.col + 1} {finding.code} {finding.message}", file=out)


# --------------------------------------------------------------------- main
def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=SPLITS, help="only this split (default: both)")
    parser.add_argument("--code", action="append", help="only this code or prefix (repeatable)")
    parser.add_argument("--project", action="append", help="only this project (repeatable)")
    parser.add_argument("--sample", type=int, metavar="N", help="print a seeded sample of up to N unjudged findings per code, with context")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    parser.add_argument("--offline", action="store_true", help="use only the cache, never the network")
    parser.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--write-baseline", action="store_true", help=f"rewrite {BASELINE_CSV.relative_to(REPO)} from this run")
    parser.add_argument("--projects-csv", type=Path, default=PROJECTS_CSV, help=argparse.SUPPRESS)
    parser.add_argument("--labels-csv", type=Path, default=LABELS_CSV, help=argparse.SUPPRESS)
    parser.add_argument("--baseline-csv", type=Path, default=BASELINE_CSV, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    try:
        import libcst  # noqa: F401 - the engine needs it; without it every file would come back "not analysed"
        from flake8_torchdevice.rules import ALL_RULES
    except ImportError as exc:
        print(f"precision.py: cannot import the linter ({exc}); install it first: pip install -e .", file=sys.stderr)
        return 2
    try:
        projects = read_projects(args.projects_csv)
        labels = read_labels(args.labels_csv)
        baseline = read_baseline(args.baseline_csv)
    except (CorpusError, OSError, KeyError, ValueError) as exc:
        print(f"precision.py: {exc}", file=sys.stderr)
        return 2
    if args.split:
        projects = [p for p in projects if p.split == args.split]
    if args.project:
        projects = [p for p in projects if p.name in args.project]
    codes = [rule.CODE for rule in ALL_RULES if not args.code or any(rule.CODE.startswith(c) for c in args.code)]
    cache = cache_dir()
    fingerprint = rules_fingerprint()
    runs: list[ProjectRun] = []
    roots: dict[str, Path] = {}
    failed = 0
    for project in projects:
        try:
            root = project_root(project, cache, args.offline)
        except CorpusError as exc:
            print(f"precision.py: skipped {project.key}: {exc}", file=sys.stderr)
            failed += 1
            continue
        roots[project.name] = root
        if not args.json:
            print(f"checking {project.key} ...", file=sys.stderr, flush=True)
        runs.append(lint_project(project, root, cache, max(1, args.jobs), fingerprint))
    findings = [f for run in runs for f in run.findings if f.code in codes]
    split_of = {run.project.name: run.project.split for run in runs}
    rows = table_rows(findings, labels, split_of, codes)
    gone = [label for label in gone_labels(findings, labels, [r.project for r in runs]) if label.code in codes]
    new = new_findings(findings, labels, baseline)
    picked = sample([f for f in findings if split_of[f.project] == (args.split or "tune")], labels, args.sample, args.seed) if args.sample else {}
    if args.write_baseline:
        if args.split or args.code or args.project or failed:
            print("precision.py: --write-baseline needs the whole corpus (no --split/--code/--project, no failed download)", file=sys.stderr)
            return 2
        write_baseline(findings, args.baseline_csv)
    splits = [args.split] if args.split else list(SPLITS)
    if args.json:
        json.dump({
            "rules_fingerprint": fingerprint,
            "projects": [{**asdict(r.project), "files": r.files, "lines": r.lines, "findings": len(r.findings), "errors": r.errors} for r in runs],
            "table": rows,
            "gone": [asdict(label) for label in gone],
            "new": [asdict(f) for f in new],
            "findings": [{**asdict(f), "split": split_of[f.project], "file_kind": file_kind(f.path),
                          **({"verdict": labels[f.key].verdict, "idiom": labels[f.key].idiom} if f.key in labels else {})} for f in findings],
            "sample": {code: [asdict(f) for f in items] for code, items in picked.items()},
        }, sys.stdout, indent=1)
        print()
    elif args.sample:
        for code, items in picked.items():
            print(f"== {code}: {len(items)} unjudged in the sample of {args.sample} (seed {args.seed})")
            for finding in items:
                print(f"-- {finding.project} {finding.version} {finding.path}:{finding.line}:{finding.col + 1} [{file_kind(finding.path)}] {finding.code} {finding.message}")
                print(context(roots[finding.project], finding))
    else:
        print_report(runs, rows, gone, new, splits, list_heldout=args.split == "heldout", baseline_missing=baseline is None)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
