"""The results store writes each run atomically: an interrupted or failed write leaves nothing in
runs/, and replacing a run never leaves a mixture of old and new files."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest
from ccarena.store import ExperimentStore

TABLES = {"flows": pd.DataFrame({"flow": [0, 1], "goodput_mean_bps": [1.0, 2.0]}),
          "samples": pd.DataFrame({"time_s": [0.1, 0.2], "flow": [0, 0]})}


def test_a_written_run_is_complete(tmp_path):
    store = ExperimentStore(tmp_path)
    store.write_run("r0", {"run_id": "r0", "status": "complete", "spec_sha256": "abc"}, TABLES)
    assert store.is_complete("r0") and store.complete_runs() == ["r0"]
    assert store.stored_spec_sha256("r0") == "abc"
    assert store.read_table("r0", "flows").equals(TABLES["flows"])
    assert not any(store.tmp_dir.iterdir())


def test_a_failing_write_leaves_no_run(tmp_path):
    store = ExperimentStore(tmp_path)
    bad = dict(TABLES, queues=pd.DataFrame({"x": [object()]}))  # pyarrow cannot write this
    with pytest.raises(Exception):
        store.write_run("r0", {"run_id": "r0"}, bad)
    assert not store.is_complete("r0")
    assert list(store.runs_dir.iterdir()) == []
    assert list(store.tmp_dir.iterdir()) == []


def test_an_interrupt_at_the_rename_leaves_no_run(tmp_path, monkeypatch):
    store = ExperimentStore(tmp_path)

    def interrupted(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "rename", interrupted)
    with pytest.raises(KeyboardInterrupt):
        store.write_run("r0", {"run_id": "r0"}, TABLES)
    monkeypatch.undo()
    assert list(store.runs_dir.iterdir()) == []
    assert list(store.tmp_dir.iterdir()) == []


def test_replacing_a_run_swaps_it_whole(tmp_path):
    store = ExperimentStore(tmp_path)
    store.write_run("r0", {"run_id": "r0", "version": 1}, TABLES)
    newer = {"flows": pd.DataFrame({"flow": [0], "goodput_mean_bps": [9.0]})}
    store.write_run("r0", {"run_id": "r0", "version": 2}, newer)
    assert store.read_run_record("r0")["version"] == 2
    assert sorted(p.name for p in store.run_dir("r0").iterdir()) == ["flows.parquet", "run.json"]
    assert list(store.tmp_dir.iterdir()) == []


def test_failures_are_recorded_and_cleared_by_a_later_success(tmp_path):
    store = ExperimentStore(tmp_path)
    path = store.write_failure("r0", {"run_id": "r0", "seed": 3, "spec": {"seed": 3}})
    assert json.loads(path.read_text())["seed"] == 3
    store.write_run("r0", {"run_id": "r0"}, TABLES)
    assert not path.exists()
