"""``[engine] threads`` and ``ccarena run --threads``: one simulated run split over threads
stores exactly the tables one thread stores, the option reaches the engine from the scenario and
from the command line, and a bad value is one line naming the field (issue 35, item 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from conftest import ccarena

FAT_TREE = """
name = "threads"
duration = "80ms"
seed = 3

[topology]
kind = "fat_tree"
k = 4
host = { rate = "1Gbps", delay = "20us", queue = { limit = "64pkt" } }
edge = { rate = "1Gbps", delay = "20us", queue = { limit = "64pkt" } }
core = { rate = "1Gbps", delay = "20us", queue = { limit = "64pkt" } }

[[traffic]]
pattern = "permutation"
flow = { flavor = "cubic" }

[output]
sample_interval = "5ms"
"""

TABLES = ("flows", "samples", "queues", "links")


def _tables(experiment: Path) -> dict[str, pd.DataFrame]:
    (run,) = (experiment / "runs").iterdir()
    return {name: pd.read_parquet(run / f"{name}.parquet") for name in TABLES}


def _record(experiment: Path) -> dict:
    (run,) = (experiment / "runs").iterdir()
    return json.loads((run / "run.json").read_text())


def _one_and_two_threads(tmp_path: Path, scenario: str) -> tuple[dict[str, pd.DataFrame], dict[str, pd.DataFrame]]:
    """Run ``scenario`` as written (experiment ``one``) and with ``[engine] threads = 2``
    (``two``), assert every table of the two is equal, and return both runs' tables."""
    (tmp_path / "one.toml").write_text(scenario)
    (tmp_path / "two.toml").write_text(scenario + "\n[engine]\nthreads = 2\n")
    for name in ("one", "two"):
        done = ccarena("run", f"{name}.toml", "-o", name, "-q", "--no-report", "-j", "1", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    one, two = _tables(tmp_path / "one"), _tables(tmp_path / "two")
    for name in TABLES:
        pd.testing.assert_frame_equal(one[name], two[name], check_exact=True, obj=name)
    return one, two


def test_a_run_split_over_threads_stores_one_threads_tables(tmp_path: Path):
    one, two = _one_and_two_threads(tmp_path, FAT_TREE)
    assert one["flows"]["bytes_delivered"].gt(0).all()
    assert "threads" not in _record(tmp_path / "one").get("engine", {})
    assert _record(tmp_path / "two")["engine"] == {"threads": 2}
    # The record says how many parts the run was split into, and counts the CPU of the
    # threads that ran them (the calling thread only waited for them).
    timing_one, timing_two = _record(tmp_path / "one")["timing"], _record(tmp_path / "two")["timing"]
    assert (timing_one["engine_parts"], timing_two["engine_parts"]) == (1, 2)
    assert timing_two["engine_cpu_s"] > 0.5 * timing_one["engine_cpu_s"] > 0
    # --threads overrides the scenario's table, for every run of the experiment.
    done = ccarena("run", "one.toml", "-o", "three", "-q", "--no-report", "--threads", "3", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _record(tmp_path / "three")["engine"] == {"threads": 3}
    three = _tables(tmp_path / "three")
    for name in TABLES:
        pd.testing.assert_frame_equal(one[name], three[name], check_exact=True, obj=name)


POISSON = """
name = "threads-poisson"
duration = "400ms"
seed = 2

[topology]
kind = "dumbbell"
pairs = 8
bottleneck = { rate = "1Gbps", delay = "20us", queue = { limit = "200pkt", ecn_threshold = "20pkt" } }
access = { rate = "10Gbps", delay = "5us" }

[[traffic]]
pattern = "poisson"
senders = ["left*"]
receivers = ["right*"]
sizes = "websearch"
load = 0.6
capacity = "1Gbps"
stop = "300ms"
flow = { flavor = "dctcp", delayed_ack = "0s", min_rto = "10ms" }

[output]
sample_interval = "10ms"
"""


def test_data_center_traffic_split_over_threads_stores_one_threads_tables(tmp_path: Path):
    """The web-search Poisson workload of examples/datacenter-poisson.toml, shortened: flows
    that start and finish throughout the run, each side of the dumbbell on its own thread."""
    one, two = _one_and_two_threads(tmp_path, POISSON)
    assert len(one["flows"]) > 5 and one["flows"]["completion_time_s"].notna().sum() > 3


def test_a_run_that_cannot_be_split_says_so(tmp_path: Path):
    """A capture keeps the network whole (one thread writes the files): the run asks for two
    threads, runs on one, and the command says why in one note."""
    captured = FAT_TREE.replace('sample_interval = "5ms"', 'sample_interval = "5ms"\npcap = ["pod0-edge0-h0"]')
    (tmp_path / "captured.toml").write_text(captured + "\n[engine]\nthreads = 2\n")
    done = ccarena("run", "captured.toml", "-o", "captured", "-q", "--no-report", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _record(tmp_path / "captured")["timing"]["engine_parts"] == 1
    notes = [line for line in done.stderr.splitlines() if line.startswith("note: 1 of 1 runs")]
    assert len(notes) == 1 and "pcap" in notes[0], done.stderr
    # A run that was split says nothing.
    (tmp_path / "two.toml").write_text(FAT_TREE + "\n[engine]\nthreads = 2\n")
    done = ccarena("run", "two.toml", "-o", "two", "-q", "--no-report", cwd=tmp_path)
    assert done.returncode == 0 and "note:" not in done.stderr, done.stderr


def test_a_bad_thread_count_is_one_line_naming_the_field(tmp_path: Path):
    (tmp_path / "bad.toml").write_text(FAT_TREE + "\n[engine]\nthreads = 0\n")
    done = ccarena("validate", "bad.toml", cwd=tmp_path)
    assert done.returncode == 2
    assert "engine.threads" in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    done = ccarena("run", "bad.toml", "--threads", "0", cwd=tmp_path)
    assert done.returncode == 2 and "--threads" in done.stderr, done.stderr
