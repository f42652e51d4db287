"""Under pytest-xdist the proofs run in workers and the table is printed by the controller: each
worker hands its records over with its output, and they arrive whole."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from .closing import RECORDS, hand_over, take_over
from .summary import Record


def _config(**extra):
    return SimpleNamespace(stash=pytest.Stash(), **extra)


def test_a_workers_records_reach_the_controller_unchanged():
    records = [Record("TDV101", 0, "fails", "passed", postcondition=True),
               Record("TDV201", 1, "runs", "skipped: needs 1 GPU", fake=True)]
    worker = _config(workeroutput={})
    worker.stash[RECORDS] = list(records)
    hand_over(worker)
    sent = json.loads(json.dumps(worker.workeroutput))  # execnet sends plain data only
    controller = _config()
    controller.stash[RECORDS] = [Record("TDV301", 2, "fails", "passed")]  # another worker's, already in
    take_over(SimpleNamespace(workeroutput=sent, config=controller))
    assert controller.stash[RECORDS] == [Record("TDV301", 2, "fails", "passed"), *records]


def test_without_xdist_nothing_is_handed_and_a_worker_without_proofs_adds_nothing():
    alone = _config()
    alone.stash[RECORDS] = [Record("TDV101", 0, "fails", "passed")]
    hand_over(alone)  # no workeroutput: a plain run prints its own table
    assert not hasattr(alone, "workeroutput")
    controller = _config()
    take_over(SimpleNamespace(workeroutput={}, config=controller))
    assert controller.stash[RECORDS] == []
