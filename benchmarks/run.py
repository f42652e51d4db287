#!/usr/bin/env python3
"""Benchmark flake8-torchdevice against TorchFix, plain flake8 and the parse floors.

One command from a fresh clone (Python >= 3.10 on PATH, PyPI reachable)::

    python3 benchmarks/run.py                 # every .py of the installed torch package
    python3 benchmarks/run.py --sample 300    # a deterministic sample of 300 files
    python3 benchmarks/run.py path/to/project --runs 5
    python3 benchmarks/run.py --scaling       # 1k / 10k / 50k-line files of repeated code
    python3 benchmarks/run.py --startup       # one small file, as an editor save checks it
    python3 benchmarks/run.py --attribute     # the plugin's own CPU time inside one flake8 run
    python3 benchmarks/run.py --without TDV601,TDV602,TDV603   # also without those rules: their cost

It creates its own virtualenvs under ``.bench/`` (gitignored) so that no tool
sees another's plugins: ``venv-tdv`` (this checkout installed, with flake8), ``venv-flake8``
(the same flake8, pycodestyle, pyflakes and mccabe versions, without our
plugin) and ``venv-torchfix`` (torch==2.13.0 first, then TorchFix; its torch
package is the default corpus). Each tool runs in its own process on the same
file list; wall time and peak RSS come from ``os.wait4``. The median of
``--runs`` rounds is reported (tools are interleaved within a round so that a
load spike on the machine hits them alike). Children run with bytecode
caching on (``PYTHONDONTWRITEBYTECODE`` removed), as an installed package has.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / ".bench"
TORCH_PIN = "torch==2.13.0"  # the local CPU build; never let pip pick another
TORCHFIX_PIN = "torchfix==0.7.0"
# Torch first, pinned, so that nothing TorchFix pulls can replace it; its
# torch package is also the default corpus.
TORCHFIX_INSTALLS = [[TORCH_PIN], [TORCH_PIN, TORCHFIX_PIN]]


# -- virtualenvs -------------------------------------------------------------
def _py(env: Path) -> Path:
    return env / "bin" / "python"


def _ensure_venv(name: str, installs: list[list[str]], stamp: str = "") -> Path:
    """Create ``.bench/<name>`` once; ``installs`` are pip argument lists run
    in order; a change of ``installs`` or ``stamp`` recreates it."""
    env = BENCH / name
    marker = env / ".bench-ready"
    wanted = json.dumps([installs, stamp])
    if marker.exists() and marker.read_text() == wanted:
        return env
    print(f"[setup] creating {env.relative_to(ROOT)} ...", file=sys.stderr, flush=True)
    venv.EnvBuilder(with_pip=True, clear=True).create(env)
    for args in installs:
        subprocess.run([str(_py(env)), "-m", "pip", "install", "-q", *args], check=True)
    marker.write_text(wanted)
    return env


def _versions(env: Path, dists: list[str]) -> dict[str, str]:
    code = "import importlib.metadata as m, sys; print(' '.join(m.version(d) for d in sys.argv[1:]))"
    out = subprocess.run([str(_py(env)), "-c", code, *dists], check=True, capture_output=True, text=True)
    return dict(zip(dists, out.stdout.split()))


def _source_stamp() -> str:
    """Hash of what an install of this checkout contains."""
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes())
    for path in sorted((ROOT / "flake8_torchdevice").rglob("*.py")):
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def setup_envs(need_torchfix: bool) -> dict[str, Path]:
    # A regular (not editable) install, as users get it: compiled bytecode
    # and no editable-import hook at startup. Any source change reinstalls.
    envs = {"tdv": _ensure_venv("venv-tdv", [[str(ROOT)]], _source_stamp())}
    flake8_dists = ["flake8", "pycodestyle", "pyflakes", "mccabe"]
    pins = [f"{d}=={v}" for d, v in _versions(envs["tdv"], flake8_dists).items()]
    envs["flake8"] = _ensure_venv("venv-flake8", [pins])
    if need_torchfix:
        envs["torchfix"] = _ensure_venv("venv-torchfix", TORCHFIX_INSTALLS)
    return envs


def default_corpus(envs: dict[str, Path]) -> Path:
    env = envs.get("torchfix") or _ensure_venv("venv-torchfix", TORCHFIX_INSTALLS)
    code = "import importlib.util as u; print(u.find_spec('torch').submodule_search_locations[0])"
    out = subprocess.run([str(_py(env)), "-c", code], check=True, capture_output=True, text=True)
    return Path(out.stdout.strip())


# -- the corpus --------------------------------------------------------------
def collect(paths: list[Path], sample: int | None, seed: int) -> list[Path]:
    files = sorted({f for p in paths for f in (p.rglob("*.py") if p.is_dir() else [p]) if f.is_file()})
    if sample and sample < len(files):
        files = sorted(random.Random(seed).sample(files, sample))
    return files


def count_lines(files: list[Path]) -> int:
    return sum(f.read_bytes().count(b"\n") for f in files)


# -- measuring one process -----------------------------------------------------
def _child_env() -> dict[str, str]:
    """This environment, but with bytecode caches written and read, as on a
    user's machine (a ``PYTHONDONTWRITEBYTECODE`` here would make every timed
    run compile what the warm-up could have cached)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def measure(argv: list[str]) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, peak RSS in MiB, lines printed) of one child.

    CPU time (user + system) is reported beside wall time because it barely
    moves when other work shares the machine; wall time does."""
    out = tempfile.TemporaryFile()
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE, env=_child_env())
    # wait4 gives this child's own rusage (getrusage(CHILDREN) would be a
    # running maximum over every child so far).
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{argv[:3]} exited {proc.returncode}:\n{err[-2000:]}")
    out.seek(0)
    printed = sum(chunk.count(b"\n") for chunk in iter(lambda: out.read(1 << 20), b""))
    out.close()
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, printed


def _cli(env: Path, name: str) -> Path | None:
    exe = env / "bin" / name
    return exe if exe.exists() else None


def commands(
    envs: dict[str, Path], files: list[Path], listing: Path, tools: list[str], without: list[str] = ()
) -> dict[str, list[str]]:
    names = [str(f) for f in files]
    me = [str(_py(envs["tdv"])), str(Path(__file__).resolve())]
    standalone = _cli(envs["tdv"], "torchdevice")
    table = {
        "ast.parse": me + ["--child", "ast", str(listing)],
        "libcst.parse_module": me + ["--child", "libcst", str(listing)],
        # Until the CLI exists the engine is driven directly (same work, no output).
        # A cold lint: the result cache would answer every round after the first.
        "torchdevice -j1": (
            [str(standalone), "-j1", "--isolated", "--exit-zero", "--no-cache", *names]
            if standalone
            else me + ["--child", "engine", str(listing)]
        ),
        "flake8 -j1": [str(envs["flake8"] / "bin" / "flake8"), "-j1", "--isolated", "--exit-zero", *names],
        "flake8 -j1 + TDV": [str(envs["tdv"] / "bin" / "flake8"), "-j1", "--isolated", "--exit-zero", *names],
    }
    if standalone:  # a second run over unchanged files: its cache was filled by an untimed first run
        table[CACHED] = [str(standalone), "-j1", "--isolated", "--exit-zero",
                         "--cache-dir", tempfile.mkdtemp(prefix="tdv-bench-cache-"), *names]
    if without and standalone:
        kept = kept_codes(envs["tdv"], without)
        table[_without("torchdevice -j1")] = [str(standalone), "-j1", "--isolated", "--exit-zero", "--no-cache",
                                              "--select", kept]
        table[_without("torchdevice -j1")] += names
        flake8 = table["flake8 -j1 + TDV"]
        table[_without("flake8 -j1 + TDV")] = flake8[:1] + flake8_selecting(envs["tdv"], kept) + flake8[1:]
    if "torchfix" in envs:
        table["torchfix -j1"] = [str(envs["torchfix"] / "bin" / "torchfix"), "-j", "1", *names]
    return {k: v for k, v in table.items() if not tools or re.split(r"[ .]", k)[0] in tools}


CACHED = "torchdevice -j1 cached"


def _without(tool: str) -> str:
    return f"{tool} w/o"


def kept_codes(env: Path, without: list[str]) -> str:
    """The codes on by default in that venv's plugin, but ``without``, comma-joined."""
    program = "from flake8_torchdevice.rules import ALL_RULES as R; print(*(r.CODE for r in R if r.DEFAULT_ENABLED))"
    found = subprocess.run([str(_py(env)), "-c", program], capture_output=True, text=True, check=True).stdout.split()
    return ",".join(code for code in found if code not in without)


def flake8_selecting(env: Path, kept: str) -> list[str]:
    """flake8 options that run our plugin with the rules ``kept`` alone and
    leave flake8's own output as by default (an explicit ``--select`` would
    show the codes flake8 ignores by default)."""
    program = "from flake8.defaults import IGNORE; print(*IGNORE)"
    ignored = subprocess.run([str(_py(env)), "-c", program], capture_output=True, text=True, check=True).stdout.split()
    return [f"--select=E,F,W,C90,{kept}", f"--extend-ignore={','.join(ignored)}"]


def _on_few_files(argv: list[str]) -> list[str]:
    """The same command on its first two files (a warm-up)."""
    if "--child" in argv:  # the floors and the engine driver: their imports
        return [argv[0], "-c", "import ast, libcst, flake8_torchdevice.engine"]
    first = next(i for i, arg in enumerate(argv) if i > 0 and arg.endswith(".py"))
    return argv[: first + 2]


def child(kind: str, listing: str) -> None:
    """Runs inside venv-tdv: the floors, and an engine driver until the CLI exists."""
    if kind == "scale":
        scale_child(int(listing))
        return
    if kind == "attribute":
        attribute_child(listing)
        return
    files = Path(listing).read_text().split("\n")
    if kind == "ast":
        import ast

        for name in files:
            try:
                ast.parse(Path(name).read_bytes())
            except SyntaxError:  # newer syntax than this Python: LibCST may still parse it
                pass
    elif kind == "libcst":
        import libcst

        for name in files:
            try:
                libcst.parse_module(Path(name).read_bytes())
            except libcst.ParserSyntaxError:
                pass
    elif kind == "engine":
        from flake8_torchdevice.engine import check_source

        found = 0
        for name in files:
            found += len(check_source(Path(name).read_text(encoding="utf-8", errors="replace")).violations)
        print(found)


# -- reporting ---------------------------------------------------------------
def run_rounds(cmds: dict[str, list[str]], runs: int, slow_runs: int) -> dict[str, dict]:
    samples: dict[str, list] = {name: [] for name in cmds}
    printed: dict[str, int] = {}
    # One untimed run of each tool on a couple of files first: a fresh venv
    # compiles its bytecode on first import (~1-2 s CPU for LibCST alone).
    for name, argv in cmds.items():
        measure(argv if name == CACHED else _on_few_files(argv))
    for round_no in range(max(runs, slow_runs)):
        for name, argv in cmds.items():
            if round_no >= (slow_runs if name.startswith("torchfix") else runs):
                continue
            wall, cpu, rss, printed[name] = measure(argv)
            samples[name].append((wall, cpu, rss))
            print(
                f"[run {round_no + 1}/{runs}] {name:20} {wall:8.2f} s wall {cpu:8.2f} s cpu {rss:6.0f} MiB",
                file=sys.stderr,
                flush=True,
            )
    return {
        name: {
            "wall": statistics.median(w for w, _, _ in got),
            "cpu": statistics.median(c for _, c, _ in got),
            "rss": max(r for _, _, r in got),
            "walls": [round(w, 3) for w, _, _ in got],
            "cpus": [round(c, 3) for _, c, _ in got],
            "output_lines": printed[name],
        }
        for name, got in samples.items()
    }


def print_versions(envs: dict[str, Path]) -> None:
    """What each flake8 loads: the plain one must list no flake8-torchdevice."""
    for label, env in (("flake8 -j1", envs["flake8"]), ("flake8 -j1 + TDV", envs["tdv"])):
        out = subprocess.run([str(env / "bin" / "flake8"), "--version"], capture_output=True, text=True)
        print(f"- {label}: {' '.join(out.stdout.split())}")
    if "torchfix" in envs:
        out = subprocess.run([str(envs["torchfix"] / "bin" / "torchfix"), "--version"], capture_output=True, text=True)
        print(f"- torchfix: {out.stdout.strip()}")


RATIOS = (
    ("torchfix -j1 / torchdevice -j1", "torchfix -j1", "torchdevice -j1"),
    ("torchdevice -j1 cached / torchdevice -j1", CACHED, "torchdevice -j1"),
    ("flake8 -j1 + TDV / flake8 -j1", "flake8 -j1 + TDV", "flake8 -j1"),
    ("torchdevice -j1 / ast.parse", "torchdevice -j1", "ast.parse"),
    ("torchdevice -j1 / libcst.parse_module", "torchdevice -j1", "libcst.parse_module"),
    ("libcst.parse_module / ast.parse", "libcst.parse_module", "ast.parse"),
    ("torchfix -j1 / libcst.parse_module", "torchfix -j1", "libcst.parse_module"),
    # --without CODES: what those default rules cost
    ("flake8 -j1 + TDV w/o / flake8 -j1", _without("flake8 -j1 + TDV"), "flake8 -j1"),
    ("flake8 -j1 + TDV / flake8 -j1 + TDV w/o", "flake8 -j1 + TDV", _without("flake8 -j1 + TDV")),
    ("torchdevice -j1 w/o / ast.parse", _without("torchdevice -j1"), "ast.parse"),
    ("torchdevice -j1 / torchdevice -j1 w/o", "torchdevice -j1", _without("torchdevice -j1")),
)


def print_table(results: dict[str, dict], n_files: int, lines: int) -> None:
    print(f"\n{n_files} files, {lines} lines; wall and CPU: median of the runs; peak RSS: the largest\n")
    print("| tool | wall s | CPU s | lines/s (wall) | peak RSS MiB | output lines | wall of each run (s) |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, r in results.items():
        each = ", ".join(f"{w:.2f}" for w in r["walls"])
        print(
            f"| {name} | {r['wall']:.2f} | {r['cpu']:.2f} | {lines / r['wall']:,.0f} | {r['rss']:.0f} "
            f"| {r['output_lines']} | {each} |"
        )
    print("\n| ratio (of the medians) | wall | CPU | CPU, each round |\n|---|---:|---:|---|")
    for label, num, den in RATIOS:
        if num in results and den in results:
            wall = results[num]["wall"] / results[den]["wall"]
            cpu = results[num]["cpu"] / results[den]["cpu"]
            # Same-round pairs ran back to back, so they shared the machine's load.
            rounds = ", ".join(f"{a / b:.2f}x" for a, b in zip(results[num]["cpus"], results[den]["cpus"]))
            print(f"| {label} | {wall:.2f}x | {cpu:.2f}x | {rounds} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", type=Path, help="files or directories (default: the torch package)")
    parser.add_argument("--sample", type=int, help="a deterministic random sample of N files")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--torchfix-runs", type=int, help="runs of TorchFix (~20x slower; default: --runs; 0 skips it)")
    parser.add_argument("--tools", default="", help="comma list of first words, e.g. torchdevice,flake8,ast")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--scaling", action="store_true", help="run the 1k/10k/50k-line scaling check instead")
    parser.add_argument("--startup", action="store_true", help="time one small file per tool (an editor save)")
    parser.add_argument(
        "--attribute", action="store_true", help="time the plugin's own work inside one flake8 -j1 run on the corpus"
    )
    parser.add_argument(
        "--without",
        default="",
        help="comma list of default codes: also time our tools with those rules off (what they cost)",
    )
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0
    tools = [t for t in args.tools.split(",") if t]
    want_torchfix = args.torchfix_runs != 0 and (not tools or "torchfix" in tools)
    envs = setup_envs(want_torchfix and not (args.scaling or args.startup or args.attribute))
    if args.scaling:
        return scaling(envs)
    if args.startup:
        return startup(envs, max(args.runs, 7))
    files = collect(args.paths or [default_corpus(envs)], args.sample, args.seed)
    if not files:
        parser.error("no .py files found")
    lines = count_lines(files)
    print(f"[corpus] {len(files)} files, {lines} lines", file=sys.stderr, flush=True)
    print_versions(envs)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as handle:
        handle.write("\n".join(map(str, files)))
        listing = Path(handle.name)
    without = [code.strip() for code in args.without.split(",") if code.strip()]
    if without:
        print(f"- w/o: {', '.join(without)} off (the other default codes selected by name)")
    if args.attribute:
        try:
            return attribute(envs, listing, args.runs, without)
        finally:
            listing.unlink()
    try:
        slow_runs = args.runs if args.torchfix_runs is None else args.torchfix_runs
        results = run_rounds(commands(envs, files, listing, tools, without), args.runs, slow_runs)
    finally:
        listing.unlink()
    print_table(results, len(files), lines)
    if args.json:
        args.json.write_text(json.dumps({"files": len(files), "lines": lines, "results": results}, indent=1))
    return 0


# -- where the plugin's time goes inside flake8 ------------------------------------
def attribute_child(listing: str) -> None:
    """Runs inside venv-tdv: one in-process ``flake8 -j1`` over the listed files,
    with the plugin's import and every ``run()`` timed (CPU). Unlike two runs
    compared, this split does not move with the machine's load."""
    start = time.process_time()
    from flake8_torchdevice import plugin

    imported = time.process_time() - start
    spent = [0.0, 0]
    original = plugin.TorchDeviceChecker.run

    def timed_run(self):
        began = time.process_time()
        found = list(original(self))  # LibCST's import happens in here, on the first file that needs it
        spent[0] += time.process_time() - began
        spent[1] += 1
        return iter(found)

    plugin.TorchDeviceChecker.run = timed_run
    from flake8.main.cli import main

    files = Path(listing).read_text().split("\n")
    try:
        options = json.loads(os.environ.get("TDV_BENCH_OPTIONS", "[]"))  # --without: the other default codes
        main(["-j1", "--isolated", "--exit-zero", "--output-file", os.devnull, *options, *files])
    except SystemExit:
        pass
    total = time.process_time() - start
    print(json.dumps({"total": total, "import": imported, "run": spent[0], "files": spent[1]}))


def attribute(envs: dict[str, Path], listing: Path, runs: int, without: list[str] = ()) -> int:
    me = [str(_py(envs["tdv"])), str(Path(__file__).resolve()), "--child", "attribute", str(listing)]
    variants = {"default": []}
    if without:
        variants["w/o"] = flake8_selecting(envs["tdv"], kept_codes(envs["tdv"], without))
    print("\n| run | rules | flake8 + TDV CPU s | plugin import s | plugin run() s | plugin share of the rest |")
    print("|---:|---|---:|---:|---:|---:|")
    for number in range(1, runs + 1):
        for label, options in variants.items():  # alternated: a load spike hits both
            env = dict(_child_env(), TDV_BENCH_OPTIONS=json.dumps(options))
            done = subprocess.run(me, capture_output=True, text=True, check=True, env=env)
            row = json.loads(done.stdout.strip().splitlines()[-1])
            ours = row["import"] + row["run"]
            print(
                f"| {number} | {label} | {row['total']:.2f} | {row['import']:.3f} | {row['run']:.2f} "
                f"| +{100 * ours / (row['total'] - ours):.1f}% |"
            )
    return 0


# -- one small file: an editor save -------------------------------------------------
PLAIN_FILE = """\
import os


def join_all(root, names):
    return [os.path.join(root, name) for name in names if name]
"""
# One finding of a rule on by default (TDV701; until TDV201 became opt-in this
# was a torch.load without map_location).
TORCH_FILE = """\
import torch


def make_scaler(enabled):
    return torch.cuda.amp.GradScaler(enabled=enabled)
"""


def startup(envs: dict[str, Path], runs: int) -> int:
    """Median CPU of each tool on one small file (no trigger / one finding)."""
    with tempfile.TemporaryDirectory() as tmp:
        cases = {"no trigger": Path(tmp, "plain.py"), "one finding": Path(tmp, "scaler.py")}
        cases["no trigger"].write_text(PLAIN_FILE)
        cases["one finding"].write_text(TORCH_FILE)
        tools = {
            "flake8": [str(envs["flake8"] / "bin" / "flake8"), "--isolated", "--exit-zero"],
            "flake8 + TDV": [str(envs["tdv"] / "bin" / "flake8"), "--isolated", "--exit-zero"],
            # an editor saves a changed file: no kept result to read
            "torchdevice": [str(envs["tdv"] / "bin" / "torchdevice"), "--isolated", "--exit-zero", "--no-cache"],
        }
        cpu: dict = {(case, tool): [] for case in cases for tool in tools}
        for argv in tools.values():
            measure(argv + [str(cases["no trigger"])])  # warm-up: bytecode caches
        for _ in range(runs):
            for case, path in cases.items():
                for tool, argv in tools.items():
                    cpu[case, tool].append(measure(argv + [str(path)])[1])
    print(f"\nOne small file, median CPU s of {runs} runs\n")
    print("| file | flake8 | flake8 + TDV | torchdevice | flake8 + TDV / flake8 |")
    print("|---|---:|---:|---:|---:|")
    for case in cases:
        med = {tool: statistics.median(cpu[case, tool]) for tool in tools}
        print(
            f"| {case} | {med['flake8']:.3f} | {med['flake8 + TDV']:.3f} | {med['torchdevice']:.3f} "
            f"| {med['flake8 + TDV'] / med['flake8']:.2f}x |"
        )
    return 0


# -- scaling -------------------------------------------------------------------
# One chunk of ordinary model code with something for every kind of trigger;
# repeated (with fresh names) into files of 1k, 10k and 50k lines.
CHUNK = """\
class Block{i}(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.register_buffer("scale", torch.ones(dim))
        self.steps = torch.zeros(1)

    def forward(self, x):
        y = self.proj(x) * self.scale
        self.steps += 1
        return torch.relu(y) + x


def train_{i}(path, model, data):
    state = torch.load(path)
    model.load_state_dict(state)
    model = model.cuda()
    model = nn.DataParallel(model)
    device = torch.device("cuda:1" if torch.cuda.is_available() else "cpu")
    for batch in data:
        batch = batch.to(device)
        loss = model(batch).sum()
        loss.backward()
    return model


def helper_{i}(values):
    total = 0
    for value in values:
        if value % 2:
            total += value * 3
        else:
            total -= value // 2
    return {{"total": total, "count": len(values)}}


"""
HEADER = "import torch\nimport torch.nn as nn\n\n\n"


def scaling_source(lines: int) -> str:
    chunk_lines = CHUNK.count("\n")
    return HEADER + "".join(CHUNK.format(i=i) for i in range(max(1, lines // chunk_lines)))


def scale_child(lines: int) -> None:
    """Runs inside venv-tdv: per-line CPU time of check_source on one generated
    file (CPU time: other work on the machine moves wall time far more)."""
    from flake8_torchdevice.engine import check_source

    source = scaling_source(lines)
    real = source.count("\n")
    best, spent, rounds, found = float("inf"), 0.0, 0, 0
    while rounds < 3 or (spent < 2.0 and rounds < 50):
        start = time.process_time()
        found = len(check_source(source).violations)
        took = time.process_time() - start
        best, spent, rounds = min(best, took), spent + took, rounds + 1
    print(json.dumps({"lines": real, "best_s": best, "rounds": rounds, "violations": found}))


def scaling(envs: dict[str, Path], sizes=(1000, 10000, 50000)) -> int:
    me = [str(_py(envs["tdv"])), str(Path(__file__).resolve()), "--child", "scale"]
    rows = []
    for size in sizes:
        proc = subprocess.Popen(me + [str(size)], stdout=subprocess.PIPE, env=_child_env())
        _, status, usage = os.wait4(proc.pid, 0)
        row = json.loads(proc.stdout.read())
        proc.stdout.close()
        row["rss"] = usage.ru_maxrss / 1024
        rows.append(row)
    base = rows[0]["best_s"] / rows[0]["lines"]
    print("| file lines | best CPU s | µs/line | per line vs 1k | violations | peak RSS MiB |")
    print("|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        per = row["best_s"] / row["lines"]
        print(
            f"| {row['lines']} | {row['best_s']:.3f} | {per * 1e6:.1f} | {per / base:.2f}x "
            f"| {row['violations']} | {row['rss']:.0f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
