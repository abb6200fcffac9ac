"""The notebook API (ccarena.run / ccarena.load) and the example scenarios, on the real engine."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import ccarena
import pandas as pd
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_run_a_dict_returns_dataframes_and_writes_a_report(tmp_path):
    scenario = {
        "name": "api", "duration": "3s", "seed": 2,
        "topology": {"kind": "dumbbell", "pairs": 2,
                     "bottleneck": {"rate": "10Mbps", "delay": "10ms"}},
        "flows": [{"from": "left0", "to": "right0", "flavor": "cubic"},
                  {"from": "left1", "to": "right1", "flavor": "vegas", "start": "1s"}],
        "sweep": {"repeats": 2},
    }
    result = ccarena.run(scenario, tmp_path / "api", jobs=1)
    for table in (result.flows, result.samples, result.queues, result.links, result.regions, result.summary):
        assert isinstance(table, pd.DataFrame) and len(table) > 0
    assert list(result.summary["run_id"].unique()) == ["r0", "r1"]
    assert set(result.summary["name"]) == {"cubic", "vegas"}
    assert (result.summary["goodput_mean_bps"] > 0).all()
    # Flows share one 10 Mbps bottleneck for 3 s: together they cannot deliver more payload.
    per_run = result.flows.groupby("run_id")["bytes_delivered"].sum() * 8
    assert (per_run <= 10e6 * 3).all() and (per_run > 0.5 * 10e6 * 3).all()
    aggregated = result.aggregate()
    assert list(aggregated["n"]) == [2, 2]
    path = result.report()
    assert path.is_file() and (tmp_path / "api" / "figures").is_dir()
    again = ccarena.load(tmp_path / "api")
    pd.testing.assert_frame_equal(again.summary, result.summary)


def test_api_raises_user_error_for_a_bad_scenario(tmp_path):
    with pytest.raises(ccarena.UserError, match=r"flows\[0\]\.flavor"):
        ccarena.run({"name": "x", "duration": "1s",
                     "topology": {"kind": "single_link", "link": {"rate": "1Mbps", "delay": "1ms"}},
                     "flows": [{"from": "a", "to": "b", "flavor": "renoo"}]}, tmp_path / "x")
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("example", sorted(str(p.relative_to(EXAMPLES)) for p in EXAMPLES.glob("**/*.toml")
                                            if "traces" not in p.parts))
def test_every_example_validates(example):
    done = subprocess.run([sys.executable, "-m", "ccarena", "validate", str(EXAMPLES / example)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "ok" in done.stdout
    if example == "quickstart.toml":  # counts read as English: "1 run", not "1 runs"
        assert re.search(r"2 flows, 1 run\b(?!s)", done.stdout), done.stdout


def test_validate_keeps_its_verdict_on_one_line_at_any_width():
    """The verdict line names the file: piped or in a narrow terminal it stays one line (a path
    folded in two cannot be copied or grepped)."""
    quickstart = EXAMPLES / "quickstart.toml"
    done = subprocess.run([sys.executable, "-m", "ccarena", "validate", str(quickstart)],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "40"})
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first == f"{quickstart}: ok — quickstart: dumbbell, 2 flows, 1 run", done.stdout


def test_udp_and_tcp_example(tmp_path):
    """The CBR stream sends 6 Mbps from 5 s to 15 s; NewReno gets the link alone before and after."""
    result = ccarena.run(EXAMPLES / "udp-and-tcp.toml", tmp_path / "mix", jobs=1)
    flows = result.flows.set_index("name")
    cbr = flows.loc["cbr"]
    assert cbr["active_s"] == pytest.approx(10.0)
    # Payload rate 6 Mbps, less what the 50-packet queue drops.
    assert 6e6 * (1 - cbr["loss_rate"]) * 0.9 <= cbr["goodput_mean_bps"] <= 6e6 * 1.01
    samples = result.samples
    cbr_samples = samples[samples["name"] == "cbr"]
    assert cbr_samples["time_s"].min() >= 5.0
    assert (cbr_samples.loc[cbr_samples["time_s"] > 15.2, "goodput_bps"] == 0).all()
    regions = result.regions
    assert list(regions["flows"]) == ["newreno", "newreno, cbr", "newreno"]
    assert list(regions["start_s"]) == [0.0, 5.0, 15.0]
    alone, shared = regions.iloc[2]["goodput_total_bps"], regions.iloc[1]
    newreno = samples[samples["name"] == "newreno"]
    with_cbr = newreno[(newreno["time_s"] > 6) & (newreno["time_s"] <= 15)]["goodput_bps"].mean()
    after = newreno[(newreno["time_s"] > 16)]["goodput_bps"].mean()
    assert after > 1.5 * with_cbr, (after, with_cbr)
    assert alone == pytest.approx(regions.iloc[2]["goodput_total_bps"])
    assert shared["n_flows"] == 2


def test_flow_completion_time_is_measured_from_the_flow_start(tmp_path):
    """A 2 MB transfer starting at 1 s: its FCT is end − start, and a 10 Mbps link needs at least
    1.6 s of serialization for 2 MB of payload."""
    result = ccarena.run({
        "name": "fct", "duration": "10s",
        "topology": {"kind": "single_link", "link": {"rate": "10Mbps", "delay": "10ms"}},
        "flows": [{"from": "a", "to": "b", "flavor": "cubic", "bytes": "2MB", "start": "1s"}],
    }, tmp_path / "fct", jobs=1)
    flow = result.summary.iloc[0]
    assert flow["bytes_delivered"] == 2_000_000
    assert flow["fct_s"] == pytest.approx(flow["end_s"] - flow["start_s"], abs=1e-6)
    assert 1.6 < flow["fct_s"] < 4.0
