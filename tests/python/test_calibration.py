"""``ccarena calibrate`` without root: the suite's cells, the per-cell comparison and its verdicts
on synthetic summaries (bands, median, figures a cell does not have), and the report section drawn
from stored results (the kernel's runs stand in as copies of the simulator's, one of them altered).
The suite on the real kernel is tests/kernel/test_calibrate.py."""

from __future__ import annotations

import json
import math
import shutil

import pandas as pd
import pytest
from ccarena.analysis import calibration_cells as cal
from ccarena.experiment import expand
from ccarena.experiment.calibration_suite import (
    BDP_PACKETS,
    calibration_flavors,
    calibration_scenario,
    limit_packets,
)
from ccarena.scenario import load_scenario

RATE = 20e6
RTT = 0.040


def run_rows(run_id: str, backend: str, part: str, point: int, goodputs: list[float],
             flavors: list[str], limit: str = "67pkt", loss: float = 0.0, util: float = 0.98,
             rtt_min: float = 0.0405) -> list[dict]:
    """Summary rows of one run (one per flow), as build_summary writes them."""
    return [{"run_id": run_id, "backend": backend, "part": part, "point": point, "repeat": 0,
             "flow": i, "flavor": flavor, "goodput_mean_bps": g, "rtt_min_s": rtt_min,
             "base_rtt_s": RTT, "bottleneck_rate_bps": RATE, "path_loss": loss,
             "bottleneck_utilization": util, cal.LIMIT_PARAMETER: limit}
            for i, (g, flavor) in enumerate(zip(goodputs, flavors))]


def summary_of(*cells: tuple[dict, dict]) -> pd.DataFrame:
    """A summary of cells, each (sim kwargs, kernel overrides)."""
    rows = []
    for point, (sim, kernel) in enumerate(cells):
        rid = f"{sim['part']}_{point}"
        rows += run_rows(rid, "sim", point=point, **sim)
        rows += run_rows(rid + "@kernel", "kernel", point=point, **dict(sim, **kernel))
    return pd.DataFrame(rows)


def pair(a: str, b: str, sim: list[float], kernel: list[float], **kw) -> tuple[dict, dict]:
    return ({"part": f"{a}-vs-{b}", "goodputs": sim, "flavors": [a, b], **kw}, {"goodputs": kernel})


def test_share_goodput_and_verdict_of_a_pair_cell():
    table = cal.calibration_table(summary_of(
        pair("cubic", "bbr", [6e6, 14e6], [4e6, 16e6]),        # share 0.30 vs 0.20: +0.10, ok
        pair("reno", "bbr", [7e6, 13e6], [4e6, 16e6]),         # share 0.35 vs 0.20: +0.15, off
        pair("reno", "cubic", [10e6, 10e6], [10.6e6, 10.6e6])))  # goodput −5.7 %: off
    assert list(table["cell"]) == ["cubic-vs-bbr 1 BDP", "reno-vs-bbr 1 BDP", "reno-vs-cubic 1 BDP"]
    first, second, third = table.to_dict("records")
    assert first["share_sim"] == pytest.approx(0.30) and first["share_kernel"] == pytest.approx(0.20)
    assert first["share_error"] == pytest.approx(0.10)
    assert first["goodput_error"] == pytest.approx(0.0)
    assert first["verdict"] == "ok" and first["off"] == ""
    assert second["share_error"] == pytest.approx(0.15) and second["verdict"] == "off"
    assert second["off"] == "share"
    assert third["share_error"] == pytest.approx(0.0)
    assert third["goodput_error"] == pytest.approx(20 / 21.2 - 1)
    assert third["verdict"] == "off" and third["off"] == "goodput"
    assert math.isnan(first["rtt_floor_error"])  # a pair has no RTT floor figure
    assert first["share_band"] == cal.SHARE_BAND and first["goodput_band"] == cal.GOODPUT_BAND


def test_single_flow_cells_judge_utilization_rtt_floor_and_goodput_but_not_share():
    table = cal.calibration_table(summary_of(
        ({"part": "single", "goodputs": [18.8e6], "flavors": ["cubic"], "rtt_min": 0.0410},
         {"goodputs": [18.9e6], "rtt_min": 0.0400}),                   # 1.0 ms: ok
        ({"part": "single", "goodputs": [18.8e6], "flavors": ["reno"], "rtt_min": 0.0435,
          "util": 0.90}, {"goodputs": [18.9e6], "rtt_min": 0.0400, "util": 0.97}),  # 3.5 ms, −0.07
        ({"part": "loss", "goodputs": [3.0e6], "flavors": ["cubic"], "loss": 0.01},
         {"goodputs": [3.9e6]})))
    one, two, lossy = table.to_dict("records")
    assert one["kind"] == "single" and math.isnan(one["share_error"]) and one["verdict"] == "ok"
    assert one["rtt_floor_error"] == pytest.approx(0.001)
    assert two["verdict"] == "off" and two["off"] == "utilization, rtt_floor"
    assert lossy["kind"] == "loss" and lossy["cell"] == "cubic 1 BDP 1% loss"
    assert lossy["goodput_error"] == pytest.approx(3.0 / 3.9 - 1) and lossy["off"] == "goodput"


def test_the_buffer_is_read_from_the_swept_limit_in_bandwidth_delay_products():
    table = cal.calibration_table(summary_of(
        pair("cubic", "bbr", [5e6, 15e6], [5e6, 15e6], limit="33pkt"),
        pair("cubic", "bbr", [5e6, 15e6], [5e6, 15e6], limit="267pkt"),
        pair("cubic", "bbr", [5e6, 15e6], [5e6, 15e6], limit="100KB")))
    assert list(table["buffer_bdp"]) == [0.5, 4.0, 1.0]


def test_repeats_are_averaged_per_backend_and_a_cell_needs_both_backends():
    rows = (run_rows("a_r0", "sim", "cubic-vs-bbr", 0, [4e6, 16e6], ["cubic", "bbr"])
            + [dict(r, repeat=1) for r in run_rows("a_r1", "sim", "cubic-vs-bbr", 0, [6e6, 14e6], ["cubic", "bbr"])]
            + run_rows("a_r0@kernel", "kernel", "cubic-vs-bbr", 0, [5e6, 15e6], ["cubic", "bbr"])
            + run_rows("b_r0", "sim", "single", 1, [19e6], ["cubic"]))   # no kernel twin
    table = cal.calibration_table(pd.DataFrame(rows))
    assert len(table) == 1
    rec = table.iloc[0]
    assert rec["share_sim"] == pytest.approx(0.25) and rec["share_error"] == pytest.approx(0.0)
    assert rec["repeats"] == 1


def test_overall_verdict_needs_every_cell_ok_and_the_median_share_error_within_its_band():
    # Three pair cells, each within 0.12, but with a median |error| of 0.08 > 0.05.
    cells = [pair("cubic", "bbr", [s * 20e6, (1 - s) * 20e6], [0.2 * 20e6, 0.8 * 20e6])
             for s in (0.28, 0.30, 0.10)]
    table = cal.calibration_table(summary_of(*cells))
    assert list(table["verdict"]) == ["ok", "ok", "ok"]
    result = cal.overall(table)
    assert result["median_abs_share_error"] == pytest.approx(0.10)
    assert not result["median_ok"] and not result["ok"]
    assert "median |share error| 0.100 (band 0.05) — off" in cal.verdict_line(table)
    good = cal.calibration_table(summary_of(pair("cubic", "bbr", [4.2e6, 15.8e6], [4e6, 16e6])))
    assert cal.overall(good)["ok"]
    assert cal.verdict_line(good).startswith("within the bands: all 1 cells ok")
    off = cal.calibration_table(summary_of(pair("reno", "bbr", [7e6, 13e6], [4e6, 16e6])))
    assert cal.overall(off)["cells_off"] == ["reno-vs-bbr 1 BDP"]
    assert "reno-vs-bbr 1 BDP (share)" in cal.verdict_line(off)
    assert "mean of" not in cal.verdict_line(off)
    assert "each backend's mean of 3 runs per cell" in cal.verdict_line(off.assign(repeats=3))


def test_the_suite_covers_every_flavor_pair_and_buffer():
    flavors = calibration_flavors(["reno", "newreno", "cubic", "bbr", "vegas"], ["bbr", "cubic", "reno"])
    assert flavors == ["reno", "cubic", "bbr"]  # catalogue order, only what the kernel offers
    assert [limit_packets(b) for b in (0.5, 1, 4)] == [33, 67, 267]
    assert BDP_PACKETS == pytest.approx(20e6 * 0.040 / 8 / 1500)
    full = expand(load_scenario(calibration_scenario(flavors)))
    quick = expand(load_scenario(calibration_scenario(flavors, quick=True)))
    parts = {p.part for p in full}
    assert parts == {"single", "loss", "reno-vs-reno", "cubic-vs-cubic", "bbr-vs-bbr",
                     "reno-vs-cubic", "reno-vs-bbr", "cubic-vs-bbr"}
    limits = {(p.part, p.resolved.spec.links[0].queue.limit_packets) for p in full}
    for mixed in ("reno-vs-cubic", "reno-vs-bbr", "cubic-vs-bbr"):
        assert {lim for part, lim in limits if part == mixed} == {33, 67, 267}
    assert {lim for part, lim in limits if part == "bbr-vs-bbr"} == {67}
    assert len(full) == 21 and len(quick) == 10
    assert all(p.resolved.spec.links[0].queue.limit_packets == 67 for p in quick)
    lossy = [p for p in full if p.part == "loss"]
    assert {p.scenario.flows[0].flavor for p in lossy} == set(flavors)
    assert all(p.resolved.spec.links[0].loss == pytest.approx(0.01) for p in lossy)
    assert all(p.resolved.spec.links[0].loss == 0 for p in full if p.part != "loss")
    # Wall time of the kernel's runs (the simulator's are negligible): quick < 3 min with room
    # for ~3 s of setup per run, full < 15 min.
    assert sum(p.scenario.duration_ns for p in quick) / 1e9 + 3 * len(quick) < 150
    assert sum(p.scenario.duration_ns for p in full) / 1e9 + 3 * len(full) < 700
    assert load_scenario(calibration_scenario(flavors)).scenario.name == cal.CALIBRATION_NAME
    assert cal.is_calibration({"name": "ccarena-calibration-quick"})
    assert not cal.is_calibration({"name": "kernel-vs-sim"})
    with pytest.raises(ValueError):
        calibration_scenario([])


def test_repeats_run_every_cell_again_with_its_own_seeds():
    flavors = ["reno", "cubic", "bbr"]
    once = expand(load_scenario(calibration_scenario(flavors)))
    thrice = expand(load_scenario(calibration_scenario(flavors, repeats=3)))
    assert len(thrice) == 3 * len(once) == 63
    cells: dict[tuple, list] = {}
    for plan in thrice:
        cells.setdefault((plan.part, plan.point), []).append(plan)
    assert len(cells) == len(once)
    for plans in cells.values():
        assert sorted(p.repeat for p in plans) == [0, 1, 2]
        assert len({p.seed for p in plans}) == 3
        # The repeats differ only in their seeds.
        specs = {p.resolved.spec.model_copy(update={"seed": 0}).to_json() for p in plans}
        assert len(specs) == 1
    with pytest.raises(ValueError, match="repeats"):
        calibration_scenario(flavors, repeats=0)


def test_the_terminal_table_fits_80_columns():
    from ccarena.report.calibration_section import terminal_table
    from rich.console import Console

    table = cal.calibration_table(summary_of(
        pair("cubic", "cubic", [10e6, 10e6], [10.5e6, 9.5e6]),
        ({"part": "loss", "goodputs": [3.0e6], "flavors": ["highspeed"], "loss": 0.01}, {"goodputs": [3.9e6]})))
    console = Console(width=80, record=True)
    console.print(terminal_table(table))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "cubic/cubic" in text and "highspeed 1%" in text and "-23.1%" in text and "off" in text


def stored_calibration(tmp_path, alter: float):
    """A quick calibration of cubic and bbr stored with the kernel's runs stood in by copies of
    the simulator's, the cubic-vs-bbr cell's first flow delivering ``alter`` times as much."""
    from ccarena.executor import run_experiment
    from ccarena.store import ExperimentStore, build_summary

    root = tmp_path / "cal"
    loaded = load_scenario(calibration_scenario(["cubic", "bbr"], quick=True))
    run_experiment(loaded, root, jobs=1, show_progress=False, backends=["sim"])
    store = ExperimentStore(root)
    meta = store.read_experiment()
    twins = []
    for run in list(meta["runs"]):
        twin = run["run_id"] + "@kernel"
        shutil.copytree(store.run_dir(run["run_id"]), store.run_dir(twin))
        record = json.loads((store.run_dir(twin) / "run.json").read_text())
        (store.run_dir(twin) / "run.json").write_text(json.dumps(dict(record, run_id=twin, backend="kernel")))
        if run["run_id"].startswith("cubic-vs-bbr"):
            flows = store.read_table(twin, "flows")
            flows.loc[flows["flow"] == 0, "goodput_mean_bps"] *= alter
            flows.to_parquet(store.run_dir(twin) / "flows.parquet", index=False)
        twins.append(dict(run, run_id=twin, backend="kernel"))
    store.write_experiment(dict(meta, runs=meta["runs"] + twins))
    store.write_summary(build_summary(store, [r["run_id"] for r in meta["runs"] + twins]))
    return root


def test_the_report_draws_the_calibration_from_stored_results(tmp_path):
    from ccarena.report import write_report
    from ccarena.results import Result

    root = stored_calibration(tmp_path, alter=1.0)
    page = write_report(Result(root)).read_text()
    assert '<section id="calibration">' in page
    assert page.index('<section id="calibration">') < page.index('<section id="part-single">')
    assert "figures/calibration-share-error.png" in page and (root / "figures/calibration-share-error.png").is_file()
    # Six cells: two single flows, three pairs, one loss point; identical twins are all ok.
    assert page.count('data-col="verdict"') == 6
    assert "within the bands: all 6 cells ok" in page


def test_an_altered_kernel_run_puts_its_cell_off_in_the_stored_table(tmp_path):
    from ccarena.store import ExperimentStore

    root = stored_calibration(tmp_path, alter=3.0)

    table = cal.calibration_table(ExperimentStore(root).read_summary())
    rec = table.set_index("cell").loc["cubic-vs-bbr 1 BDP"]
    assert rec["verdict"] == "off" and rec["off"] == "share, goodput"
    assert set(table.loc[table["cell"] != "cubic-vs-bbr 1 BDP", "verdict"]) == {"ok"}


def test_no_calibration_section_for_other_experiments(tmp_path):
    from ccarena.report.calibration_section import section_html

    class Fake:
        def __init__(self) -> None:
            self.experiment = {"name": "kernel-vs-sim"}
            self.run_ids = ["r0"]

    assert section_html(Fake(), tmp_path) == ""
