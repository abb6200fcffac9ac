"""The results format is versioned: records carry ``format_version``, the reader upgrades the
layout an earlier ccarena wrote (version 1: ``"format": 1``, no engine revision) and refuses one
from a newer ccarena with one line."""

from __future__ import annotations

import json
from pathlib import Path

import ccarena
import pytest
from ccarena.errors import UserError
from ccarena.store import FORMAT_VERSION, ExperimentStore

SCENARIO = {"name": "fmt", "duration": "2s",
            "topology": {"kind": "single_link", "link": {"rate": "10Mbps", "delay": "5ms"}},
            "flows": [{"from": "a", "to": "b", "flavor": "reno"}]}


def _records(root: Path) -> list[Path]:
    return [root / "experiment.json", *sorted((root / "runs").glob("*/run.json"))]


def _rewrite(path: Path, change) -> None:
    record = json.loads(path.read_text())
    path.write_text(json.dumps(change(record)))


def _as_version_1(record: dict) -> dict:
    record = {k: v for k, v in record.items() if k != "format_version"}
    record["format"] = 1
    record.get("software", {}).pop("engine_git_revision", None)
    return record


def test_records_carry_the_format_version_and_the_engine_revision(tmp_path: Path) -> None:
    result = ccarena.run(SCENARIO, out=tmp_path / "fmt", jobs=1)
    for path in _records(result.root):
        record = json.loads(path.read_text())
        assert record["format_version"] == FORMAT_VERSION and "format" not in record
        assert record["software"]["engine_git_revision"]
    assert result.experiment["software"]["engine"] != "unknown"


def test_an_older_layout_is_upgraded_on_reading_and_its_runs_are_reused(tmp_path: Path) -> None:
    root = ccarena.run(SCENARIO, out=tmp_path / "fmt", jobs=1).root
    for path in _records(root):
        _rewrite(path, _as_version_1)
    store = ExperimentStore(root)
    record = store.read_run_record(store.complete_runs()[0])
    assert record["format_version"] == FORMAT_VERSION
    assert record["software"]["engine_git_revision"] == "unknown"
    again = ccarena.run(SCENARIO, out=root, jobs=1)
    assert again.outcome.skipped == store.complete_runs() and not again.outcome.completed
    assert again.report().is_file()


def test_a_newer_layout_is_refused_with_one_line(tmp_path: Path) -> None:
    root = ccarena.run(SCENARIO, out=tmp_path / "fmt", jobs=1).root
    _rewrite(root / "experiment.json", lambda r: dict(r, format_version=FORMAT_VERSION + 1))
    with pytest.raises(UserError) as err:
        ccarena.load(root)
    message = str(err.value)
    assert "\n" not in message and "newer ccarena" in message and "experiment.json" in message
