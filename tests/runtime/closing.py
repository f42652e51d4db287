"""The proof table that ends a run, printed by the process that prints the run's summary: the only
one, or pytest-xdist's controller, to which each worker hands the records of its proofs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from fixture_cases import all_cases
from flake8_torchdevice.rules import ALL_RULES

from . import proofs, summary, table

RECORDS = pytest.StashKey[list]()
_HANDED = "tdv_proof_records"  # the key in an xdist worker's output


def hand_over(config) -> None:
    """In an xdist worker: its records go to the controller with the worker's output."""
    output = getattr(config, "workeroutput", None)
    if output is not None:
        output[_HANDED] = [dataclasses.asdict(record) for record in config.stash.get(RECORDS, [])]


def take_over(node) -> None:
    """In the controller: a finished worker's records join the run's."""
    handed = getattr(node, "workeroutput", {}).get(_HANDED, [])
    node.config.stash.setdefault(RECORDS, []).extend(summary.Record(**fields) for fields in handed)


def print_table(terminalreporter, config) -> None:
    records = config.stash.get(RECORDS, [])
    if not records:
        return
    import torch

    all_proofs, _ = proofs.collect(all_cases())
    gpu_declared = {p.rule for p in all_proofs if p.gpus > 0}
    rules = [rule.CODE for rule in ALL_RULES]
    rows = summary.rows(records, rules, gpu_declared)
    build = summary.build_of(torch)
    terminalreporter.write_sep("=", "runtime proofs (real torch, nothing mocked)")
    terminalreporter.write_line(f"torch {torch.__version__}, a {build} build: the CPU claims were judged for it")
    for line in summary.render(rows):
        terminalreporter.write_line(line)
    target = config.getoption("--proof-table")
    if target:
        gpus = max((r.gpus for r in records if not r.status.startswith("skipped") and not r.fake), default=0)
        columns = table.filled_columns(build, gpu_results=gpus > 0, fake_results=any(r.fake for r in records))
        visible = torch.cuda.device_count() if gpus else 0
        table.update(Path(target), rows, columns, table.run_description(torch, visible))
        terminalreporter.write_line(f"wrote columns {', '.join(summary.COLUMNS[i] for i in columns)} of {target}")
