"""The report's figures compare flavors at a glance (issue 17): one colour per flavor in every
figure, a time series for every grid point and flow, error bars inside the metric's range, study
tables only where a scenario asks for them."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import ccarena
import numpy as np
import pandas as pd
import pytest
from ccarena.report import plots, sweep_plots

SCENARIO = """
name = "figures"
duration = "3s"
[topology]
kind = "dumbbell"
pairs = 3
bottleneck = { rate = "10Mbps", delay = "10ms", queue = { limit = "50pkt" } }
[[flows]]
from = "left0"
to = "right0"
flavor = "cubic"
[[flows]]
from = "left1"
to = "right1"
flavor = "reno"
[[flows]]
name = "second-cubic"
from = "left2"
to = "right2"
flavor = "cubic"
[sweep]
"topology.bottleneck.loss" = ["0%", "0.5%", "1%", "2%", "3%", "4%"]
repeats = 2
"""


class Images(HTMLParser):
    """The ``<img>`` attributes of a report page."""

    def __init__(self) -> None:
        super().__init__()
        self.images: list[dict[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.images.append({k: v or "" for k, v in attrs})


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, str]]]:
    root = tmp_path_factory.mktemp("figures")
    scenario = root / "figures.toml"
    scenario.write_text(SCENARIO)
    out = root / "out"
    ccarena.run(scenario, out, jobs=1, report=True)
    parser = Images()
    parser.feed((out / "report.html").read_text())
    return out, parser.images


def test_every_flavor_keeps_one_colour_in_every_figure(report):
    _, images = report
    seen: dict[str, set[str]] = {}
    for img in images:
        for pair in img.get("data-flavor-colors", "").split():
            flavor, colour = pair.split("=")
            seen.setdefault(flavor, set()).add(colour)
    assert set(seen) == {"cubic", "reno"}
    assert all(len(colours) == 1 for colours in seen.values()), seen
    assert seen["cubic"] != seen["reno"]
    # Pinned across reports: CUBIC is the palette's first colour everywhere.
    assert seen["cubic"] == {plots.PALETTE[plots.PINNED["cubic"]].lower()}


def test_every_grid_point_and_flow_has_a_time_series(report):
    out, images = report
    summary = pd.read_parquet(out / "summary.parquet")
    first = summary[summary["repeat"] == 0]
    expected = {f"{r.run_id}|{r.flow}|{r.flavor}" for r in first.itertuples()}
    drawn = {s for img in images for s in img.get("data-series", "").split()}
    assert len(first["point"].unique()) == 6 and len(expected) == 18
    assert expected <= drawn, sorted(expected - drawn)


def test_error_bars_stay_inside_the_metric_range():
    # Two repeats with Jain's indices 0.99 and 0.7: the t-based 95% CI reaches far above 1.
    aggregated = pd.DataFrame({"point": [0, 1], "loss": ["0%", "1%"], "flow": [0, 0],
                               "name": ["all", "all"], "flavor": ["reno", "reno"],
                               "jain_index": [0.845, 0.9], "jain_index_ci95": [1.8, 0.05]})
    fig = sweep_plots.metric_vs_param(aggregated, "loss", "jain_index", ["flow"], "Jain vs loss")
    ax = fig.axes[0]
    tops = []
    for collection in ax.collections:
        for segment in collection.get_segments():
            tops.append(float(np.max(segment[:, 1])))
            assert float(np.min(segment[:, 1])) >= 0.0
    assert tops and max(tops) <= 1.0 + 1e-9
    assert ax.get_ylim()[1] <= 1.05


def test_no_study_table_in_a_report_that_does_not_ask_for_one(report, tmp_path):
    # Repeats are what seed 003's Table I is computed from: this report has them, and no table.
    out, _ = report
    page = (out / "report.html").read_text()
    assert "Table I" not in page and "Drop rate per flavor" not in page
    assert not re.search(r'id="drop-rate', page)
    # Asking for it shows it (same stored runs, the scenario's [report] amended).
    import json

    record = json.loads((out / "experiment.json").read_text())
    for part in record.get("parts", []) or []:
        part.setdefault("report", {})["tables"] = ["drop_rate"]
    record.setdefault("scenario", {}).setdefault("report", {})["tables"] = ["drop_rate"]
    (out / "experiment.json").write_text(json.dumps(record))
    from ccarena.results import Result

    asked = Result(out).report()
    assert 'id="drop-rate' in Path(asked).read_text()


def test_swept_values_read_as_the_scenario_labels_them():
    aggregated = pd.DataFrame({
        "point": [0, 1, 2, 3], "loss": ["0%", "1%", "0%", "1%"], "flows[0].dupthresh": [3, 3, 1000, 1000],
        "flow": [0] * 4, "name": ["reno"] * 4, "flavor": ["reno"] * 4,
        "fct_s": [1.0, 2.0, 1.5, 6.0], "fct_s_ci95": [0.1] * 4})
    labels = {"flows[0].dupthresh": {"3": "fast recovery", "1000": "timeouts only"}}
    fig = sweep_plots.metric_vs_param(aggregated, "loss", "fct_s", ["flow", "name", "flows[0].dupthresh"],
                                "FCT vs loss", labels=labels)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert legend == ["reno, fast recovery", "reno, timeouts only"]
    bars = sweep_plots.metric_vs_category(aggregated, "flows[0].dupthresh", "fct_s", ["flow", "loss"],
                                    "FCT vs dupthresh", labels["flows[0].dupthresh"], labels)
    ticks = [t.get_text() for t in bars.axes[0].get_xticklabels()]
    assert ticks == ["fast recovery", "timeouts only"]


def test_a_flavor_sweep_is_drawn_as_bars_in_each_flavor_colour():
    aggregated = pd.DataFrame({
        "point": [0, 1, 2], "flows[0].flavor": ["reno", "cubic", "bbr"], "flow": [0, 0, 0],
        "name": ["reno", "cubic", "bbr"], "flavor": ["reno", "cubic", "bbr"],
        "goodput_mean_bps": [3e6, 5e6, 9e6], "goodput_mean_bps_ci95": [1e6, 1e6, 1e6]})
    assert sweep_plots.metric_vs_param(aggregated, "flows[0].flavor", "goodput_mean_bps", ["flow"], "t") is None
    fig = sweep_plots.metric_vs_category(aggregated, "flows[0].flavor", "goodput_mean_bps", ["flow"], "t")
    assert plots.flavor_colors_of(fig) == {f: plots.flavor_color(f).lower() for f in ("reno", "cubic", "bbr")}


def test_regions_are_shaded_where_flows_come_and_go():
    t = np.arange(0.0, 10.0, 0.5)
    samples = pd.DataFrame({"flow": np.r_[np.zeros(t.size), np.ones(t.size)].astype(int),
                            "time_s": np.r_[t, t], "goodput_bps": 1e6})
    flows = pd.DataFrame({"flow": [0, 1], "name": ["a", "b"], "flavor": ["reno", "cubic"],
                          "kind": ["tcp", "tcp"], "end_s": [10.0, 10.0]})
    regions = pd.DataFrame({"start_s": [0.0, 3.0, 7.0], "end_s": [3.0, 7.0, 10.0], "n_flows": [1, 2, 1]})
    fig = plots.goodput_vs_time(samples, flows, "g", regions=regions)
    spans = [p for p in fig.axes[0].patches if p.get_gid() == "region"]
    assert len(spans) == 1  # every other region: the middle one
    x0, x1 = spans[0].get_x(), spans[0].get_x() + spans[0].get_width()
    assert (x0, x1) == (3.0, 7.0)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts == ["1 flow", "2 flows", "1 flow"]
    # One region (no flow comes or goes): nothing shaded.
    single = plots.goodput_vs_time(samples, flows, "g", regions=regions.iloc[:1])
    assert not [p for p in single.axes[0].patches if p.get_gid() == "region"]


def test_cwnd_per_rtt_round_counts_rounds_by_srtt():
    # 4 s at srtt 100 ms = 40 rounds; then 2 s at 200 ms = 10 more.
    t = np.arange(0.0, 6.01, 0.1)
    srtt = np.where(t <= 4.0 + 1e-9, 0.1, 0.2)
    samples = pd.DataFrame({"flow": 0, "time_s": t, "srtt_s": srtt, "cwnd_bytes": 14480.0,
                            "ssthresh_bytes": np.nan})
    rounds = plots.with_rtt_rounds(samples)["round"].to_numpy()
    assert rounds[0] == 0.0
    assert abs(rounds[40] - 40.0) < 1e-6 and abs(rounds[-1] - 50.0) < 1e-6
    flows = pd.DataFrame({"flow": [0], "name": ["reno"], "flavor": ["reno"], "kind": ["tcp"],
                          "end_s": [6.0]})
    fig = plots.cwnd_vs_time(samples, flows, {0: 1448.0}, "c", rounds=True)
    line = next(ln for ln in fig.axes[0].lines if ln.get_gid())
    assert abs(float(np.max(line.get_xdata())) - 50.0) < 1e-6
    assert "round" in fig.axes[0].get_xlabel()


def test_a_delay_sweep_at_fixed_loss_draws_the_1_over_rtt_law():
    delays = ["10ms", "50ms", "100ms"]
    rtts = np.array([0.02, 0.1, 0.2])
    aggregated = pd.DataFrame({"point": [0, 1, 2], "delay": delays, "flow": 0, "name": "reno",
                               "flavor": "reno", "goodput_mean_bps": [9e6, 2e6, 1e6],
                               "goodput_mean_bps_ci95": [1e5] * 3})
    rows = pd.DataFrame({"point": [0, 1, 2], "flow": 0, "kind": "tcp", "flavor": "reno",
                         "path_loss": 0.01, "base_rtt_s": rtts, "mss_bytes": 1448.0,
                         "bottleneck_rate_bps": 1e9})
    fig = sweep_plots.metric_vs_param(aggregated, "delay", "goodput_mean_bps", ["flow"], "g vs delay",
                                theory_rows=rows)
    mathis = [ln for ln in fig.axes[0].lines if ln.get_label().startswith("Mathis")]
    assert len(mathis) == 1 and "1/RTT" in mathis[0].get_label()
    x, y = mathis[0].get_xdata(), mathis[0].get_ydata()
    # Goodput × RTT is constant along the curve: the 1/RTT law (Mathis at p = 1%).
    rtt_at = np.interp(x, [10, 50, 100], rtts)
    product = y * rtt_at
    assert np.allclose(product, product[0], rtol=1e-9)
    expected = 8 * 1448 / 0.02 * np.sqrt(1.5 / 0.01) / 1e6
    assert abs(y[0] - expected) / expected < 1e-6


def test_figures_drawn_in_worker_processes_match_the_serial_ones(report, tmp_path, monkeypatch):
    # 2 panels a page: the 4 shown runs' time series and the 6 grid points' 3 pages are drawn by
    # spawned workers; they must be the same figures, with the same series and flavor colours, in
    # the same order, as drawn in this process.
    from ccarena.report import figures
    from ccarena.results import Result

    out, _ = report
    monkeypatch.setattr(plots, "SMALL_MULTIPLES_PER_FIGURE", 2)
    result = Result(out)
    plots.set_flavor_order(["reno", "cubic"])

    def drawn(parallel: bool) -> list[tuple]:
        monkeypatch.setattr(figures, "PARALLEL_TASKS_MIN", 1 if parallel else 10**6)
        where = tmp_path / ("parallel" if parallel else "serial")
        where.mkdir()
        figs = figures.draw_figures(result, where)
        assert all((where / f.file).stat().st_size > 1000 for f in figs)
        return [(f.file, f.title, f.series, f.flavor_colors, f.points) for f in figs]

    serial, parallel = drawn(False), drawn(True)
    assert sum("every-point" in f[0] for f in serial) == 3
    assert parallel == serial


def test_many_flows_in_a_flavor_sweep_collapse_to_one_bar_per_flavor_with_min_max_whiskers():
    flavors = ["reno", "cubic", "dctcp"]
    rows = [{"flows[0].flavor": f, "flow": i, "flavor": f, "goodput_mean_bps": (k + 1) * 1e6 + i * 1e4,
             "goodput_mean_bps_ci95": 1e5} for k, f in enumerate(flavors) for i in range(sweep_plots.MAX_BAR_GROUPS + 8)]
    fig = sweep_plots.metric_vs_category(pd.DataFrame(rows), "flows[0].flavor", "goodput_mean_bps", ["flow"], "t")
    ax = fig.axes[0]
    bars = [c for c in ax.containers if getattr(c, "_ccarena_flavor", None)]
    assert [c._ccarena_flavor for c in bars] == flavors and all(len(c.patches) == 1 for c in bars)
    # The bar is the mean over the flows (in Mbps); its whisker spans the lowest to the highest flow.
    n = sweep_plots.MAX_BAR_GROUPS + 8
    for k, c in enumerate(bars):
        assert c.patches[0].get_height() == pytest.approx(k + 1 + (n - 1) / 2 * 0.01)
        segments = c.errorbar.lines[2][0].get_segments()
        assert segments[0][0][1] == pytest.approx(k + 1) and segments[0][1][1] == pytest.approx(k + 1 + (n - 1) * 0.01)
    assert plots.flavor_colors_of(fig) == {f: plots.flavor_color(f).lower() for f in flavors}


def test_hundreds_of_regions_are_not_shaded_or_labelled():
    t = np.arange(0.0, 10.0, 0.5)
    samples = pd.DataFrame({"flow": np.zeros(t.size, dtype=int), "time_s": t, "goodput_bps": 1e6})
    flows = pd.DataFrame({"flow": [0], "name": ["a"], "flavor": ["reno"], "kind": ["tcp"], "end_s": [10.0]})
    n = plots.MAX_SHADED_REGIONS + 1
    edges = np.linspace(0.0, 10.0, n + 1)
    regions = pd.DataFrame({"start_s": edges[:-1], "end_s": edges[1:], "n_flows": np.arange(n) % 3 + 1})
    fig = plots.goodput_vs_time(samples, flows, "g", regions=regions)
    assert not [p for p in fig.axes[0].patches if p.get_gid() == "region"] and not fig.axes[0].texts
    fig = plots.goodput_vs_time(samples, flows, "g", regions=regions.iloc[:-1])
    assert len([p for p in fig.axes[0].patches if p.get_gid() == "region"]) == (n - 1) // 2


def test_flows_that_share_every_swept_value_are_told_apart_by_name_in_the_legend():
    rows = [{"flows[*].flavor": f, "flows[*].rwnd": "1600KB", "flow": i, "name": f"flow{i + 1}", "flavor": f,
             "goodput_mean_bps": 1e6 * (i + 1)} for f in ("reno", "cubic") for i in range(3)]
    fig = sweep_plots.metric_vs_category(pd.DataFrame(rows), "flows[*].flavor", "goodput_mean_bps",
                                   ["flow", "flows[*].rwnd"], "t")
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert legend[2:] == ["flow1, 1600KB", "flow2, 1600KB", "flow3, 1600KB"]
