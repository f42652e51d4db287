"""Selection never changes a verdict, checked on every file of a corpus.

For each file: the findings of each rule run alone (the normal, selective
run) must equal that rule's share of the whole-file run (``full=True``: no
code skipped), and so must all rules run together. The default corpus is the
installed torch package (2,285 files); ``tests/test_selection.py`` runs the
same check on every 25th of them, and on fixtures, re-spellings and hostile
inputs.

    python benchmarks/equivalence.py                 # the installed torch package
    python benchmarks/equivalence.py path/to/project --jobs 2

Prints the files, lines, differences (each one listed) and files skipped
because LibCST itself cannot parse them whole; exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import ast
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path


def _differences(path: str) -> tuple[str, int, list[str], bool]:
    from flake8_torchdevice.engine import check_source
    from flake8_torchdevice.rules import ALL_RULES

    try:
        source = Path(path).read_text(encoding="utf-8")
        tree = ast.parse(source)
    except (UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return path, 0, [], True
    lines = source.count("\n") + 1
    whole = check_source(source, tree, full=True)
    if whole.error:
        return path, lines, [], True  # LibCST's own limit: no whole-file reference
    reference = [(v.line, v.col, v.code) for v in whole.violations]
    found = []
    together = [(v.line, v.col, v.code) for v in check_source(source, tree).violations]
    if together != reference:
        found.append(f"all rules: {together} != {reference}")
    for rule in ALL_RULES:
        alone = [(v.line, v.col, v.code) for v in check_source(source, tree, rules=[rule]).violations]
        share = [f for f in reference if f[2] == rule.CODE]
        if alone != share:
            found.append(f"{rule.CODE} alone: {alone} != {share}")
    return path, lines, found, False


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    roots = [Path(p) for p in args.paths] or [_torch_root()]
    files = sorted(str(f) for root in roots for f in ([root] if root.is_file() else root.rglob("*.py")))
    started = time.perf_counter()
    total_lines, skipped, differing = 0, [], {}
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for path, lines, found, skip in pool.map(_differences, files, chunksize=8):
            total_lines += lines
            if skip:
                skipped.append(path)
            if found:
                differing[path] = found
    for path, found in differing.items():
        print(path)
        for line in found:
            print("   ", line[:400])
    print(
        f"{len(files)} files, {total_lines} lines: {len(differing)} with differences, "
        f"{len(skipped)} without a whole-file reference, {time.perf_counter() - started:.0f} s"
    )
    return 1 if differing else 0


def _torch_root() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        sys.exit("torch is not installed: name the files to check")
    return Path(spec.origin).parent


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
