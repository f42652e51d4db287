"""The table printed at the end of a run: what was proven, per rule, and where."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

NO_CUDA_NOTE = "no-CUDA failure only"
FOOTNOTES = {
    NO_CUDA_NOTE: "on a machine without CUDA the flagged program can only show that CUDA is missing;"
    " the failure the rule is about (invalid device ordinal, tensors on two devices) needs its GPU proof",
    "post-condition": "torch raises nothing on this machine; the program's own assert saw the effect (e.g. no move)",
}


# The kinds of torch build a CPU claim is judged on: the CPU-only wheel, and a CUDA
# wheel with every GPU hidden (CUDA_VISIBLE_DEVICES=""), which words some mistakes
# differently (a GPU workstation's pytest run).
CPU_ONLY, CUDA_BUILD = "cpu-only", "cuda"
COLUMNS = ("rule", "CPU-only build", "CUDA build, no GPU visible", "GPU", "GPU claims under fake CUDA")


@dataclass(frozen=True)
class Record:
    """What became of one proof in this run."""

    rule: str
    gpus: int
    outcome: str  # the claim: "runs" | "fails"
    status: str  # "passed" | "failed" | "skipped: needs N GPUs"
    postcondition: bool = False
    no_cuda: bool = False
    build: str = CPU_ONLY  # the torch build the program ran on
    fake: bool = False  # a GPU claim judged under fake CUDA, no device visible


def build_of(torch) -> str:
    """Which kind of build ``torch`` is, read from torch itself."""
    return CUDA_BUILD if torch.backends.cuda.is_built() else CPU_ONLY


def cpu_cell(records: list[Record]) -> str:
    if not records:
        return "not run"
    failed = [r for r in records if r.status == "failed"]
    if failed:
        return f"failed ({len(failed)} of {len(records)} proofs)"
    fails = [r for r in records if r.outcome == "fails"]
    if not fails:
        return f"no failing program proven ({len(records)} run)"
    notes = []
    if any(r.postcondition for r in fails):
        notes.append("post-condition")
    if all(r.no_cuda for r in fails):
        notes.append(NO_CUDA_NOTE)
    text = f"passed ({len(fails)} fail as claimed, {len(records) - len(fails)} run)"
    return text + "".join(f"; {note}" for note in notes)


def gpu_cell(records: list[Record], declared: bool) -> str:
    if not declared:
        return "none written"
    if not records:
        return "not run"
    failed = [r for r in records if r.status == "failed"]
    passed = [r for r in records if r.status == "passed"]
    skipped = sorted({r.status for r in records if r.status.startswith("skipped")})
    if failed:
        return f"failed ({len(failed)} of {len(records)} proofs)"
    if passed:
        rest = f"; {', '.join(skipped)}" if skipped else ""
        return f"passed ({len(passed)} proofs){rest}"
    return ", ".join(skipped)


def rows(records: list[Record], rules: list[str], gpu_declared: set) -> list[tuple[str, ...]]:
    """One row per rule: (rule, CPU proof on a CPU-only build, on a CUDA build with no GPU visible, GPU proof,
    GPU claims under fake CUDA).

    A CPU column this run's build did not fill says so: one run judges one build."""
    builds = {r.build for r in records if r.gpus == 0}
    table = []
    for rule in sorted(set(rules) | {r.rule for r in records}):
        mine = [r for r in records if r.rule == rule]
        cpu = [_build_cell([r for r in mine if r.gpus == 0 and r.build == b], b in builds)
               for b in (CPU_ONLY, CUDA_BUILD)]
        gpu = [r for r in mine if r.gpus > 0 and not r.fake]
        fake = [r for r in mine if r.fake]
        table.append((rule, *cpu, gpu_cell(gpu, rule in gpu_declared), gpu_cell(fake, rule in gpu_declared)))
    return table


def _build_cell(records: list[Record], this_build: bool) -> str:
    return cpu_cell(records) if this_build else "not run (another torch build)"


def render(table: list[tuple], header: Optional[tuple] = None) -> list[str]:
    header = header or COLUMNS
    widths = [max(len(row[i]) for row in [header, *table]) for i in range(len(header))]

    def line(row) -> str:
        return "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()

    notes = [f"{key}: {text}" for key, text in FOOTNOTES.items() if any(key in cell for row in table for cell in row)]
    return [line(header), line(tuple("-" * w for w in widths)), *(line(row) for row in table), *notes]
