"""docs/gpu-proofs.md: the proof table of every kind of machine, kept in one file.

One run judges one torch build: a CPU-only wheel fills the "CPU-only build" column;
a CUDA wheel fills "CUDA build, no GPU visible" (the CPU claims, devices hidden) and,
with GPUs, the "GPU" column. ``update`` rewrites only the columns this run filled and
keeps the others, with the machine each column was last filled on.
"""

from __future__ import annotations

import datetime
import platform
import shutil
import subprocess
from pathlib import Path

from flake8_torchdevice.ruletable import between

from .summary import COLUMNS, CPU_ONLY

START, END = "<!-- proof-table:start -->", "<!-- proof-table:end -->"
RUNS_START, RUNS_END = "<!-- proof-runs:start -->", "<!-- proof-runs:end -->"
NOT_RUN = "not run yet"
RUNS_HEADER = ("column", "date", "machine", "torch", "Python")


def filled_columns(build: str, gpu_results: bool, fake_results: bool = False) -> list[int]:
    """The table columns (1-based, after "rule") a run on this build fills."""
    columns = [1] if build == CPU_ONLY else ([2, 3] if gpu_results else [2])
    return columns + [4] if fake_results else columns


def machine(torch, gpus: int) -> str:
    """What a reader needs to know of the machine: GPU and driver, or that there was none."""
    if not gpus:
        return f"{platform.machine()}, no GPU visible"
    names = sorted({torch.cuda.get_device_name(i) for i in range(gpus)})
    return f"{gpus} x {', '.join(names)}, driver {driver_version()}"


def driver_version() -> str:
    if not shutil.which("nvidia-smi"):
        return "unknown (no nvidia-smi)"
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.splitlines()[0].strip() if out.strip() else "unknown"


def _rows(text: str, start: str, end: str) -> list[list[str]]:
    if start not in text or end not in text:
        return []
    body = text.split(start, 1)[1].split(end, 1)[0]
    lines = [line for line in body.strip().splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in lines[2:]]


def _markdown(header, rows) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def update(path: Path, table: list[tuple], columns: list[int], run: dict) -> None:
    """Write this run's ``columns`` of ``table`` (rows as summary.rows gives them) into ``path``.

    ``run`` describes the run: date, machine, torch, Python; every column it filled
    is stamped with it in the runs table."""
    text = path.read_text(encoding="utf-8")
    old = {row[0]: row for row in _rows(text, START, END)}
    merged = []
    for row in table:
        kept = old.get(row[0], [row[0]] + [NOT_RUN] * (len(COLUMNS) - 1))
        merged.append([row[i] if i in columns else kept[i] for i in range(len(COLUMNS))])
    runs = {row[0]: row for row in _rows(text, RUNS_START, RUNS_END)}
    for i in columns:
        stamp = [run["date"], run["machine"], run["torch"], run["python"]]
        runs[COLUMNS[i]] = [COLUMNS[i], *stamp]
    run_rows = [runs.get(name, [name, NOT_RUN, "", "", ""]) for name in COLUMNS[1:]]
    text = between(text, START, END, _markdown(COLUMNS, merged))
    text = between(text, RUNS_START, RUNS_END, _markdown(RUNS_HEADER, run_rows))
    path.write_text(text, encoding="utf-8")


def run_description(torch, gpus: int) -> dict:
    return {
        "date": datetime.date.today().isoformat(),
        "machine": machine(torch, gpus),
        "torch": torch.__version__,
        "python": platform.python_version(),
    }
