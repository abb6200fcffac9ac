"""CPU per megabit (seed 001, Table 1): the arithmetic of CPU % and MHz per Mbps, the run-level
numbers of the seed's table, and the simulator leaving them empty (it has no CPU cost)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from ccarena.analysis import metrics, study_tables as studies
from ccarena.backends.sim import run_spec
from ccarena.experiment import expand
from ccarena.report import study_sections as report_studies
from ccarena.scenario import load_scenario


def test_mhz_per_mbps_is_seed_001s_cpu_fraction_times_clock_over_goodput():
    # Seed 001's sender: a 3.06 GHz Xeon. 2 % of it moving 248.4 Mbit/s (Reno's average):
    # 0.02 · 3060 / 248.4 = 0.2464 MHz/Mbps.
    assert metrics.cpu_percent(0.2, 10.0) == pytest.approx(2.0)
    assert metrics.mhz_per_mbps(0.2, 10.0, 3060.0, 248.4e6) == pytest.approx(0.02 * 3060 / 248.4)
    # (10⁶ cycles/s) / (10⁶ bit/s): cycles per bit; the wall time cancels out.
    bits = 248.4e6 * 10.0
    assert metrics.mhz_per_mbps(0.2, 10.0, 3060.0, 248.4e6) == pytest.approx(0.2 * 3060e6 / bits)
    for args in ((math.nan, 10.0, 3060.0, 1e6), (0.2, 0.0, 3060.0, 1e6), (0.2, 10.0, math.nan, 1e6),
                 (0.2, 10.0, 3060.0, 0.0)):
        assert math.isnan(metrics.mhz_per_mbps(*args)), args


def _flows(cpu_s: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"run_id": "r", "flow": [0, 1], "start_s": [0.0, 2.0], "end_s": [10.0, 6.0],
                         "bytes_delivered": [100e6, 25e6], "sender_cpu_s": cpu_s,
                         "cpu_mhz": [2600.0, 2600.0]})


def test_run_cpu_cost_is_the_senders_cpu_over_the_run_and_cycles_per_bit():
    out = studies.run_cpu_cost(_flows([0.4, 0.1]))
    # 0.5 CPU s over the 10 s from the first start to the last end; 1000 Mbit delivered.
    assert out["sender_cpu_percent"] == pytest.approx(5.0)
    assert out["mhz_per_mbps"] == pytest.approx(0.5 * 2600 / 1000)
    # Equal to the seed's formula with the run's totals: 5 % · 2600 MHz / 100 Mbit/s.
    assert out["mhz_per_mbps"] == pytest.approx(metrics.mhz_per_mbps(0.5, 10.0, 2600.0, 100e6))
    # A flow without a measurement (the simulator's NaN): no number rather than a partial one.
    assert all(math.isnan(v) for v in studies.run_cpu_cost(_flows([0.4, math.nan])).values())


def test_the_simulator_has_no_cpu_cost_and_table_1_shows_a_dash():
    raw = {"name": "sim-cpu", "duration": "3s",
           "topology": {"kind": "single_link", "link": {"rate": "10Mbps", "delay": "10ms"}},
           "flows": [{"from": "a", "to": "b", "flavor": "cubic"},
                     {"from": "a", "to": "b", "flavor": "reno", "start": "1s", "stop": "2s"}]}
    plan = expand(load_scenario(raw))[0]
    tables = run_spec(plan.resolved.spec)
    flows = tables["flows"]
    for column in ("sender_cpu_s", "sender_wall_s", "cpu_mhz"):
        assert flows[column].isna().all(), column
    per_flow = metrics.flow_table(flows, tables["samples"], plan.resolved.derived, 3.0, 0.1)
    assert per_flow["cpu_percent"].isna().all() and per_flow["mhz_per_mbps"].isna().all()
    assert per_flow["goodput_mean_bps"].gt(0).all()
    regions = metrics.region_table(flows, tables["samples"], 3.0, 0.1).assign(run_id="r")
    summary = per_flow.assign(run_id="r", part="p")
    part = SimpleNamespace(meta={}, parameters=[], summary=summary, regions=regions)
    out: list = []
    report_studies._regions(part, out)
    headings, rows = out[0][3]
    assert headings[-2:] == ["CPU %", "MHz/Mbps"]
    assert [cell.text for cell in rows[0][-2:]] == ["—", "—"]
    # With measurements (a kernel run) the same table shows the numbers.
    measured = summary.assign(sender_cpu_s=[0.3, 0.03], cpu_mhz=2600.0)
    grouped = studies.regions_by_group(regions, measured, ["part"])
    assert np.isfinite(grouped["sender_cpu_percent"][0]) and grouped["mhz_per_mbps"][0] > 0
