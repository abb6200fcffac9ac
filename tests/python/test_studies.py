"""Study tables (ccarena.studies), the aggregate-goodput metrics and the study figures, against
small hand-built tables whose answers are worked out by hand in the comments."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from ccarena.analysis import metrics, study_tables as studies
from ccarena.report import plots, study_plots

T_975_2 = 4.302652729911275   # Student t, 0.975 quantile, 2 degrees of freedom
T_975_1 = 12.706204736174707  # 1 degree of freedom


# ----------------------------------------------------------------------------- matrix (seed 004)

# (row flavor, col flavor) → per repeat (row flow's goodput, col flow's goodput), Mbps.
PAIRS = {
    ("cubic", "cubic"): [(50, 50), (48, 52), (52, 48)],
    ("cubic", "vegas"): [(90, 10), (92, 8), (94, 6)],
    ("vegas", "cubic"): [(3, 97), (2, 98), (1, 99)],
    ("vegas", "vegas"): [(50, 50), (50, 50), (50, 50)],
}


def matrix_summary() -> pd.DataFrame:
    rows = []
    for point, ((r, c), reps) in enumerate(PAIRS.items()):
        for rep, (gr, gc) in enumerate(reps):
            run = f"p{point}-r{rep}"
            for flow, (role, flavor, g) in enumerate((("row", r, gr), ("col", c, gc))):
                rows.append({"run_id": run, "point": point, "repeat": rep, "flow": flow,
                             "name": f"f{flow}", "flavor": flavor, "goodput_mean_bps": g * 1e6,
                             "matrix_row": r, "matrix_col": c, "matrix_role": role})
            # A cross-traffic flow in one run: no matrix role, so it must not count.
            if (r, c) == ("cubic", "vegas") and rep == 0:
                rows.append({"run_id": run, "point": point, "repeat": rep, "flow": 2, "name": "x",
                             "flavor": "udp-cbr", "goodput_mean_bps": 5e6, "matrix_row": r,
                             "matrix_col": c, "matrix_role": "cross"})
    return pd.DataFrame(rows)


def test_matrix_table_means_cis_shares_and_jain_by_hand():
    table = studies.matrix_table(matrix_summary())
    assert list(zip(table["row_flavor"], table["col_flavor"])) == list(PAIRS)
    assert list(table["n"]) == [3, 3, 3, 3]
    cv = table[(table["row_flavor"] == "cubic") & (table["col_flavor"] == "vegas")].iloc[0]
    # row: 90, 92, 94 Mbps → mean 92, sample SD 2, CI t·2/√3.
    assert cv["row_goodput_mean_bps"] == pytest.approx(92e6)
    assert cv["row_goodput_ci95_bps"] == pytest.approx(T_975_2 * 2e6 / math.sqrt(3))
    assert cv["col_goodput_mean_bps"] == pytest.approx(8e6)
    assert cv["col_goodput_ci95_bps"] == pytest.approx(T_975_2 * 2e6 / math.sqrt(3))
    # shares 0.90, 0.92, 0.94 (each pair sums to 100 Mbps; the 5 Mbps cross flow is ignored).
    assert cv["row_share_mean"] == pytest.approx(0.92)
    assert cv["row_share_ci95"] == pytest.approx(T_975_2 * 0.02 / math.sqrt(3))
    # Jain of (90, 10), (92, 8), (94, 6): 100² / (2·Σx²) = 10000/16400, 10000/17056, 10000/17744.
    jains = [10000 / 16400, 10000 / 17056, 10000 / 17744]
    assert cv["jain_index_mean"] == pytest.approx(np.mean(jains))
    assert cv["jain_index_ci95"] == pytest.approx(T_975_2 * np.std(jains, ddof=1) / math.sqrt(3))
    vv = table[(table["row_flavor"] == "vegas") & (table["col_flavor"] == "vegas")].iloc[0]
    assert vv["row_share_mean"] == pytest.approx(0.5) and vv["row_share_ci95"] == pytest.approx(0.0)
    assert vv["jain_index_mean"] == pytest.approx(1.0)


def test_matrix_wide_is_row_first_flavor_by_column_second():
    wide = studies.matrix_wide(studies.matrix_table(matrix_summary()), "row_goodput_mean_bps")
    assert list(wide.index) == ["cubic", "vegas"] and list(wide.columns) == ["cubic", "vegas"]
    assert wide.loc["cubic", "vegas"] == pytest.approx(92e6)   # cubic first, against vegas
    assert wide.loc["vegas", "cubic"] == pytest.approx(2e6)    # vegas first, against cubic


def test_matrix_table_without_matrix_columns_is_a_clear_error():
    plain = matrix_summary().drop(columns=["matrix_row", "matrix_col", "matrix_role"])
    with pytest.raises(ValueError, match="matrix_row"):
        studies.matrix_table(plain)


def test_matrix_run_missing_a_role_is_an_error():
    broken = matrix_summary()
    broken = broken[~((broken["run_id"] == "p0-r0") & (broken["matrix_role"] == "col"))]
    with pytest.raises(ValueError, match="p0-r0"):
        studies.matrix_table(broken)


# ----------------------------------------------------------------------------- regions (seed 001)

FLOWS = pd.DataFrame({"flow": [0, 1], "name": ["a", "b"], "start_s": [0.0, 2.0], "end_s": [6.0, 4.0]})
# 1 s samples. Regions: [0,2) {a}, [2,4) {a,b}, [4,6) {a}. b keeps reporting 0 after it stops.
RUN1 = {0: [10, 30, 20, 20, 40, 40], 1: [20, 40, 0, 0]}
RUN2 = {0: [20, 20, 30, 30, 10, 30], 1: [30, 30, 0, 0]}


def samples_of(goodputs: dict[int, list[float]]) -> pd.DataFrame:
    rows = []
    for flow, values in goodputs.items():
        first = 1 if flow == 0 else 3
        for k, g in enumerate(values):
            rows.append({"time_s": float(first + k), "flow": flow, "goodput_bps": float(g)})
    return pd.DataFrame(rows)


def test_region_table_aggregate_columns_by_hand():
    table = metrics.region_table(FLOWS, samples_of(RUN1), duration_s=6.0, sample_interval_s=1.0)
    # Sums: region 0 [10, 30]; region 1 [20+20, 20+40] = [40, 60]; region 2 [40, 40].
    assert list(table["aggregate_goodput_mean_bps"]) == pytest.approx([20, 50, 40])
    assert list(table["aggregate_goodput_sd_bps"]) == pytest.approx([10, 10, 0])
    assert list(table["aggregate_stability"]) == pytest.approx([0.5, 0.2, 0.0])
    assert list(table["aggregate_samples"]) == [2, 2, 2]
    # Existing columns are unchanged: region 1's per-flow stability is mean(SD/μ of a, of b).
    assert table["stability"][1] == pytest.approx((0 / 20 + 10 / 30) / 2)
    assert table["goodput_total_bps"][1] == pytest.approx(50)


def test_aggregate_over_run_is_sd_over_mean_of_the_whole_aggregate_series():
    out = metrics.aggregate_over_run(samples_of(RUN1), FLOWS, duration_s=6.0, interval_s=1.0)
    # Series [10, 30, 40, 60, 40, 40]: Σ = 220, Σx² = 9400 (b's zeros after it stops excluded).
    mean = 220 / 6
    sd = math.sqrt(9400 / 6 - mean ** 2)
    assert out["aggregate_samples"] == 6
    assert out["aggregate_goodput_mean_bps"] == pytest.approx(mean)
    assert out["aggregate_goodput_sd_bps"] == pytest.approx(sd)
    assert out["aggregate_stability"] == pytest.approx(sd / mean)
    pooled = metrics.pool_aggregate(metrics.region_table(FLOWS, samples_of(RUN1), 6.0, 1.0))
    assert pooled == pytest.approx(out)


def test_aggregate_skips_instants_where_an_active_flow_has_no_sample():
    samples = samples_of(RUN1)
    samples = samples[~((samples["flow"] == 1) & (samples["time_s"] == 4.0))]
    table = metrics.region_table(FLOWS, samples, duration_s=6.0, sample_interval_s=1.0)
    # Region 1 keeps only t = 3 (20 + 20): one instant, so SD 0 and stability undefined.
    assert table["aggregate_samples"][1] == 1
    assert table["aggregate_goodput_mean_bps"][1] == pytest.approx(40.0)
    assert math.isnan(table["aggregate_stability"][1])


def regions_and_summary(flavor_b: str = "reno") -> tuple[pd.DataFrame, pd.DataFrame]:
    regions, summary = [], []
    for run_id, goodputs in (("r0", RUN1), ("r1", RUN2)):
        regions.append(metrics.region_table(FLOWS, samples_of(goodputs), 6.0, 1.0).assign(run_id=run_id))
        for flow, flavor in ((0, "reno"), (1, flavor_b)):
            summary.append({"run_id": run_id, "flow": flow, "flavor": flavor, "loss_rate": 0.01})
    return pd.concat(regions, ignore_index=True), pd.DataFrame(summary)


def test_regions_by_group_is_table_1_mean_over_repeats():
    regions, summary = regions_and_summary()
    table = studies.regions_by_group(regions, summary, ["flavor"])
    assert len(table) == 1 and table["n"][0] == 2
    # Run 1: [10, 30, 40, 60, 40, 40]; run 2: [20, 20, 60, 60, 10, 30] (Σ 200, Σx² 9000).
    m1, m2 = 220 / 6, 200 / 6
    s1, s2 = math.sqrt(9400 / 6 - m1 ** 2), math.sqrt(9000 / 6 - m2 ** 2)
    assert table["aggregate_goodput_mean_bps"][0] == pytest.approx((m1 + m2) / 2)
    assert table["aggregate_goodput_sd_bps"][0] == pytest.approx((s1 + s2) / 2)
    assert table["aggregate_stability"][0] == pytest.approx((s1 / m1 + s2 / m2) / 2)
    stab = [s1 / m1, s2 / m2]
    assert table["aggregate_stability_ci95"][0] == pytest.approx(T_975_1 * np.std(stab, ddof=1) / math.sqrt(2))
    # Run 1, region 1: a's mean 20, b's 30 → J = 50² / (2·(400 + 900)) = 2500/2600; run 2: J = 1.
    assert table["fairness_min"][0] == pytest.approx((2500 / 2600 + 1.0) / 2)
    assert table["fairness_max"][0] == pytest.approx(1.0)


def test_region_detail_is_table_2_per_region_mean_over_repeats():
    regions, summary = regions_and_summary()
    detail = studies.region_detail(regions, summary, ["flavor"])
    assert list(detail["region"]) == [0, 1, 2]
    assert list(detail["n"]) == [2, 2, 2]
    # aggregate SD/μ per region: run 1 [0.5, 0.2, 0], run 2 [0 (20, 20), 0 (60, 60), 0.5 (10, 30)].
    assert list(detail["aggregate_stability"]) == pytest.approx([0.25, 0.1, 0.25])
    assert list(detail["jain_index"]) == pytest.approx([1.0, (2500 / 2600 + 1.0) / 2, 1.0])
    assert list(detail["flows"]) == ["a", "a, b", "a"]


def test_grouping_regions_by_a_per_flow_column_that_varies_is_an_error():
    regions, summary = regions_and_summary(flavor_b="cubic")
    with pytest.raises(ValueError, match="differ"):
        studies.regions_by_group(regions, summary, ["flavor"])


def test_regions_without_aggregate_columns_are_refused():
    regions, summary = regions_and_summary()
    with pytest.raises(ValueError, match="aggregate_stability"):
        studies.regions_by_group(regions.drop(columns=["aggregate_stability"]), summary, ["flavor"])


# ----------------------------------------------------------------------------- drops (seed 003)

def test_drop_rate_mean_and_variance_in_percent():
    summary = pd.DataFrame({"flavor": ["tahoe"] * 3 + ["reno"] * 2,
                            "loss_rate": [0.05, 0.10, 0.15, 0.02, 0.04]})
    table = studies.drop_rate_by_group(summary, ["flavor"]).set_index("flavor")
    # tahoe: 5, 10, 15 % → mean 10, variance (25 + 0 + 25) / 2 = 25 %².
    assert table.loc["tahoe", "drop_rate_mean_pct"] == pytest.approx(10.0)
    assert table.loc["tahoe", "drop_rate_var_pct2"] == pytest.approx(25.0)
    assert table.loc["tahoe", "n"] == 3
    # reno: 2, 4 % → mean 3, variance (1 + 1) / 1 = 2 %².
    assert table.loc["reno", "drop_rate_mean_pct"] == pytest.approx(3.0)
    assert table.loc["reno", "drop_rate_var_pct2"] == pytest.approx(2.0)
    assert table.loc["reno", "drop_rate_ci95_pct"] == pytest.approx(T_975_1 * math.sqrt(2) / math.sqrt(2))


# ----------------------------------------------------------------------------- intervals (seed 003)

def interval_samples(run_id: str, values: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"run_id": run_id, "time_s": np.arange(1.0, len(values) + 1), "flow": 0,
                         "name": "newreno", "goodput_bps": values})


def test_goodput_by_interval_means_and_labels():
    samples = interval_samples("a", [1, 1, 1, 2, 2, 2, 3, 3, 3])
    table = studies.goodput_by_interval(samples, [0, 3, 6, 9], ["10pkt", "20pkt", "30pkt"])
    assert list(table["label"]) == ["10pkt", "20pkt", "30pkt"]
    assert list(table["goodput_mean_bps"]) == pytest.approx([1, 2, 3])
    assert list(table["n_samples"]) == [3, 3, 3]


def test_goodput_by_interval_leaves_out_the_sample_spanning_a_change():
    samples = interval_samples("a", [1, 1, 1, 2, 2, 2, 3, 3, 3])
    table = studies.goodput_by_interval(samples, [0, 2.5, 9], [10, 20])
    # (2, 3] straddles 2.5: first interval t = 1, 2 → 1; second t = 4..9 → 2.5.
    assert list(table["n_samples"]) == [2, 6]
    assert list(table["goodput_mean_bps"]) == pytest.approx([1.0, 2.5])


def test_goodput_by_interval_rejects_bad_schedules():
    samples = interval_samples("a", [1, 2, 3])
    with pytest.raises(ValueError, match="labels"):
        studies.goodput_by_interval(samples, [0, 1, 2], ["only one"])
    with pytest.raises(ValueError, match="increasing"):
        studies.goodput_by_interval(samples, [0, 2, 1], ["x", "y"])


def test_interval_goodput_over_repeats_with_ci():
    samples = pd.concat([interval_samples("a", [1, 1, 1, 2, 2, 2, 3, 3, 3]),
                         interval_samples("b", [3, 3, 3, 4, 4, 4, 5, 5, 5])])
    per_run = studies.goodput_by_interval(samples, [0, 3, 6, 9], [10, 20, 30])
    summary = pd.DataFrame({"run_id": ["a", "b"], "flow": [0, 0], "flavor": ["newreno"] * 2})
    table = studies.interval_goodput_over_repeats(per_run, summary, ["flavor"])
    assert list(table["n"]) == [2, 2, 2]
    assert list(table["goodput_mean_bps"]) == pytest.approx([2, 3, 4])
    # Two runs differing by 2: sample SD √2, CI t(1)·√2/√2.
    assert list(table["goodput_ci95_bps"]) == pytest.approx([T_975_1] * 3)
    assert set(table["flavor"]) == {"newreno"}


# ----------------------------------------------------------------------------- reference tables

SEED_004 = {"title": "Table 1: Throughput comparison of TCP variants", "source": "seed 004",
            "unit": "Mbps", "rows": ["Cubic", "Vegas", "BBR"], "columns": ["Cubic", "Vegas"],
            "values": [[49.5778, 92.4111], [2.52, None], [45.80333, 71.7]]}


def test_reference_comparison_side_by_side_with_ratio_and_missing_cells():
    wide = studies.matrix_wide(studies.matrix_table(matrix_summary()), "row_goodput_mean_bps")
    cmp = studies.reference_comparison(wide, SEED_004, divisor=1e6).set_index(["row", "column"])
    assert len(cmp) == 6
    cell = cmp.loc[("Cubic", "Vegas")]
    assert cell["computed"] == pytest.approx(92.0) and cell["reference"] == pytest.approx(92.4111)
    assert cell["ratio"] == pytest.approx(92.0 / 92.4111)
    assert cell["computed_row"] == "cubic" and cell["unit"] == "Mbps"
    # The study has no (Vegas, Vegas) number: NaN reference, no ratio; we have one.
    assert math.isnan(cmp.loc[("Vegas", "Vegas"), "reference"])
    assert cmp.loc[("Vegas", "Vegas"), "computed"] == pytest.approx(50.0)
    assert math.isnan(cmp.loc[("Vegas", "Vegas"), "ratio"])
    # We ran no BBR: NaN computed, never a number made up.
    assert math.isnan(cmp.loc[("BBR", "Cubic"), "computed"]) and pd.isna(cmp.loc[("BBR", "Cubic"), "computed_row"])


def test_reference_labels_match_by_alias_and_normalised_name():
    computed = pd.DataFrame({"drop_rate_mean_pct": [9.0, 7.0]}, index=["tahoe", "newreno"])
    ref = {"title": "Table I", "source": "seed 003", "unit": "%", "rows": ["Tahoe", "New Reno"],
           "columns": ["Expected Value"], "values": [[9.3], [7.5]]}
    cmp = studies.reference_comparison(computed, ref, aliases={"Expected Value": "drop_rate_mean_pct"})
    assert list(cmp["computed"]) == pytest.approx([9.0, 7.0])
    assert list(cmp["ratio"]) == pytest.approx([9.0 / 9.3, 7.0 / 7.5])


def test_malformed_reference_is_refused():
    bad = dict(SEED_004, values=[[49.5778, "92"], [2.52, None], [45.8, 71.7]])
    with pytest.raises(ValueError, match="not a number"):
        studies.reference_frame(bad)
    with pytest.raises(ValueError, match="rows"):
        studies.reference_frame(dict(SEED_004, values=[[1.0, 2.0]]))


# ----------------------------------------------------------------------------- figures

def _png_size(fig, tmp_path, name: str) -> int:
    return len(plots.save(fig, tmp_path / f"{name}.png"))


def test_matrix_heatmap_with_reference_panel(tmp_path):
    table = studies.matrix_table(matrix_summary())
    fig = study_plots.matrix_heatmap(table, "row_goodput_mean_bps", "Goodput of the first flow",
                                     reference=SEED_004)
    main, ref = fig.axes[0], fig.axes[1]
    assert main.images and ref.images
    assert main.get_xlabel() and main.get_ylabel() and ref.get_xlabel()
    # One number per cell: 2 × 2 ours, 3 × 2 the study's.
    assert len(main.texts) == 4 and len(ref.texts) == 6
    assert "92" in " ".join(t.get_text() for t in main.texts)
    # Same colour scale on both panels.
    assert main.images[0].get_clim() == ref.images[0].get_clim()
    assert "Mbps" in fig.axes[-1].get_ylabel()  # the colour bar carries the unit
    assert _png_size(fig, tmp_path, "heatmap") > 10_000


def test_matrix_heatmap_of_share_on_unit_scale(tmp_path):
    fig = study_plots.matrix_heatmap(studies.matrix_table(matrix_summary()), "row_share_mean", "Share")
    assert fig.axes[0].images[0].get_clim() == (0.0, 1.0)
    assert _png_size(fig, tmp_path, "share") > 5_000


def test_pairs_goodput_grid_has_both_flows_in_every_panel(tmp_path):
    summary = matrix_summary()
    rows = []
    for run_id, flow in summary[["run_id", "flow"]].itertuples(index=False):
        for t in range(1, 11):
            rows.append({"run_id": run_id, "time_s": float(t), "flow": flow,
                         "goodput_bps": 1e6 * (10 + flow + t)})
    fig = study_plots.pairs_goodput_grid(pd.DataFrame(rows), summary, "Pairs")
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert len(panels) == 4
    assert all(len(ax.lines) == 2 for ax in panels)
    assert panels[0].get_ylabel() == "goodput (Mbps)" and panels[-1].get_xlabel() == "time (s)"
    assert panels[0].get_ylim() == panels[-1].get_ylim()  # shared y axis
    assert _png_size(fig, tmp_path, "pairs") > 10_000


def test_goodput_vs_interval_on_a_buffer_axis(tmp_path):
    samples = pd.concat([interval_samples("a", [1e6] * 3 + [2e6] * 3 + [3e6] * 3),
                         interval_samples("b", [3e6] * 3 + [4e6] * 3 + [5e6] * 3)])
    per_run = studies.goodput_by_interval(samples, [0, 3, 6, 9], ["10pkt", "20pkt", "30pkt"])
    table = studies.interval_goodput_over_repeats(per_run)
    fig = study_plots.goodput_vs_interval(table, "Goodput vs buffer", xlabel="queue limit")
    ax = fig.axes[0]
    assert ax.get_xlabel() == "queue limit (pkt)" and "Mbps" in ax.get_ylabel()
    assert len(ax.lines) >= 1 and len(ax.containers) == 1
    assert list(ax.lines[0].get_xdata()) == [10, 20, 30]
    assert list(ax.lines[0].get_ydata()) == pytest.approx([2, 3, 4])
    assert _png_size(fig, tmp_path, "interval") > 5_000


def test_red_average_vs_time_draws_backlog_average_and_thresholds(tmp_path):
    t = np.arange(1.0, 31.0)
    queues = pd.DataFrame({"time_s": t, "link": 2, "link_name": "r0->r1",
                           "backlog_packets": 10 + 5 * np.sin(t), "backlog_bytes": 1500 * (10 + 5 * np.sin(t)),
                           "red_avg": 10 + np.sin(t) / 3, "early_drops": 0})
    fig = study_plots.red_average_vs_time(queues, [2], {2: (5, 15, "packets")}, "RED")
    ax = fig.axes[0]
    assert len(ax.lines) == 4 and ax.get_xlabel() == "time (s)" and "packets" in ax.get_ylabel()
    assert _png_size(fig, tmp_path, "red") > 5_000
    with pytest.raises(ValueError, match="RED average"):
        study_plots.red_average_vs_time(queues.assign(red_avg=np.nan), [2], {2: (5, 15, "packets")}, "x")
