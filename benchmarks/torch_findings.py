"""Findings of two installed versions on the installed torch package, code by code.

Each version's standalone ``torchdevice`` runs over every ``.py`` file of torch
with every code it has selected by name (opt-in codes included), ``--format
json``, one process (``-j1``); the findings are compared as (path, line, code).

    python benchmarks/torch_findings.py OLD_TORCHDEVICE NEW_TORCHDEVICE
    python benchmarks/torch_findings.py /tmp/old/.venv/bin/torchdevice .venv/bin/torchdevice \\
        --torch .venv/lib/python3.11/site-packages/torch --save /tmp/findings

Prints, per code, the counts of each version (``-`` where a version has no such
code) and each finding only one of them reports. docs/torch-findings.md explains
the differences at the commits it names.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

CODES = "from flake8_torchdevice.rules import ALL_RULES; print(','.join(r.CODE for r in ALL_RULES))"


def interpreter(executable: str) -> str:
    """The Python a console script runs under (its ``#!`` line)."""
    with open(executable, encoding="utf-8") as script:
        first = script.readline()
    if not first.startswith("#!"):
        sys.exit(f"{executable}: not a console script")
    return first[2:].strip().split()[0]


def codes(executable: str) -> list[str]:
    # -I: the current directory (a checkout of another version) is not on sys.path.
    out = subprocess.run([interpreter(executable), "-I", "-c", CODES], check=True, capture_output=True, text=True)
    return out.stdout.strip().split(",")


def findings(executable: str, selected: list[str], torch_root: Path, save: Path | None, label: str) -> list[dict]:
    command = [
        os.path.abspath(executable), "--isolated", "--select", ",".join(selected),
        "--extend-exclude", "*.pyi", "--format", "json", "-j1", "--exit-zero", torch_root.name,
    ]
    print(f"{label}: (cd {shlex.quote(str(torch_root.parent))} && {shlex.join(command)})", file=sys.stderr)
    out = subprocess.run(command, cwd=torch_root.parent, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{label}: exit {out.returncode}\n{out.stderr}")
    if out.stderr:
        print(out.stderr, end="", file=sys.stderr)  # files it could not check
    if save:
        (save / f"{label}.json").write_text(out.stdout, encoding="utf-8")
    return json.loads(out.stdout)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old", help="the old version's torchdevice executable")
    parser.add_argument("new", help="the new version's torchdevice executable")
    parser.add_argument("--torch", help="the torch package directory (default: the new version's installed torch)")
    parser.add_argument("--save", help="a directory for old.json and new.json")
    args = parser.parse_args(argv)
    torch_root = Path(args.torch) if args.torch else _torch_root(args.new)
    save = Path(args.save) if args.save else None
    if save:
        save.mkdir(parents=True, exist_ok=True)
    old_codes, new_codes = codes(args.old), codes(args.new)
    keys = {}
    for label, executable, selected in (("old", args.old, old_codes), ("new", args.new, new_codes)):
        found = findings(executable, selected, torch_root, save, label)
        keys[label] = collections.Counter((f["code"], f["path"], f["line"]) for f in found)
    old, new = keys["old"], keys["new"]
    differences = 0
    print(f"{'code':<8}{'old':>5}{'new':>5}")
    for code in sorted(set(old_codes) | set(new_codes)):
        count = {label: sum(n for k, n in keys[label].items() if k[0] == code) for label in keys}
        shown = [str(count["old"]) if code in old_codes else "-", str(count["new"]) if code in new_codes else "-"]
        print(f"{code:<8}{shown[0]:>5}{shown[1]:>5}")
        if code not in old_codes or code not in new_codes:
            continue  # a code of one version only: nothing to compare
        for sign, only in (("-", old - new), ("+", new - old)):
            for _, path, line in sorted(k for k in only if k[0] == code):
                print(f"    {sign} {path}:{line}")
                differences += 1
    print(f"{differences} differences in the codes both versions have")
    return 0


def _torch_root(executable: str) -> Path:
    where = "import importlib.util, os; print(os.path.dirname(importlib.util.find_spec('torch').origin))"
    out = subprocess.run([interpreter(executable), "-I", "-c", where], check=True, capture_output=True, text=True)
    return Path(out.stdout.strip())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
