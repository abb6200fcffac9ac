"""The metric catalogue is the one place a metric's words, unit and format are declared: every view
reads it, the importers use the simulated runs' formulas, flavor theory lives in the analysis and
the figures' palette is an object."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ccarena.analysis import catalogue, metrics, theory, verdict
from ccarena.report import compare, custom_plot, plots, sweep_plots, html_tables as tables, terminal
from ccarena.report.palette import PALETTE, PINNED, FlavorPalette
from ccarena.store import columns


def test_every_catalogue_metric_is_a_summary_column_with_one_entry() -> None:
    names = [m.name for m in catalogue.CATALOGUE]
    assert len(names) == len(set(names))
    stored = set(columns.SUMMARY_FLOW_COLUMNS) | set(metrics.SUMMARY_METRICS)
    assert set(names) <= stored, set(names) - stored
    every_alias = [a for m in catalogue.CATALOGUE for a in m.aliases]
    assert len(every_alias) == len(set(every_alias)), "an alias names two metrics"


def test_every_view_reads_the_catalogue() -> None:
    assert list(tables.COLUMNS) == [m.name for m in catalogue.CATALOGUE]
    for m in catalogue.CATALOGUE:
        assert tables.COLUMNS[m.name] == (m.heading, m.formatter)
        assert custom_plot.heading(m.name) == m.heading
        assert terminal.terminal_heading(m.name) == (m.short_heading or m.heading)
        assert sweep_plots.catalogue.axis(m.name) == ((m.axis_label, m.axis_divisor) if m.axis_label
                                                       else (m.name, 1.0))
    assert custom_plot.METRIC_ALIASES == catalogue.aliases()
    assert set(terminal.TERMINAL_COLUMNS) <= set(catalogue.BY_NAME)
    for column, (heading, fmt) in compare.METRICS.items():
        entry = catalogue.metric(column)
        assert (heading, fmt) == (entry.comparison_heading or entry.heading, entry.formatter)


def test_units_follow_the_column_names_and_ranges_hold_fractions() -> None:
    assert catalogue.display_unit("goodput_mean_bps") == ("Mbps", 1e6)
    assert catalogue.display_unit("rtt_p50_s") == ("ms", 1e-3)
    assert catalogue.display_unit("bottleneck_utilization") == ("%", 1e-2)
    assert catalogue.display_unit("fct_slowdown") == ("", 1.0)
    assert catalogue.metric("loss_rate").unit == ("%", 1e-2)
    for name in ("loss_rate", "delivery_ratio", "jain_index"):
        assert catalogue.value_range(name) == (0.0, 1.0)
    assert catalogue.value_range("not_a_metric") == (0.0, math.inf)
    assert catalogue.axis("not_a_metric") == ("not_a_metric", 1.0)


def test_the_verdict_takes_the_direction_of_better_from_the_catalogue() -> None:
    for spec in (verdict.GOODPUT, verdict.FCT, verdict.FCT_SLOWDOWN, verdict.RTT, verdict.LOSS,
                 verdict.RETRANSMISSIONS, verdict.JAIN):
        assert spec.higher_is_better is catalogue.metric(spec.column).higher_is_better


def test_packet_ratios_are_one_formula_for_simulated_and_imported_runs() -> None:
    assert metrics.packet_ratios(3, 5, 97, 100) == (0.03, 0.05, 0.97)
    lost, retx, delivered = metrics.packet_ratios(math.nan, 2, 10, 10)
    assert math.isnan(lost) and (retx, delivered) == (0.2, 1.0)
    assert all(math.isnan(x) for x in metrics.packet_ratios(1, 1, 1, 0))
    assert metrics.PACKET_RATIOS == ("loss_rate", "retransmission_rate", "delivery_ratio")


def test_flavor_theory_chooses_the_models_of_each_flavor() -> None:
    rtt, loss = np.array([0.02, 0.05]), np.array([0.01, 0.02])
    reno = theory.response_functions("reno", 1448, rtt, loss)
    assert [name for name, _ in reno] == ["Mathis et al. 1997", "Padhye et al. 1998"]
    assert np.array_equal(reno[0][1], theory.mathis_bps(1448, rtt, loss))
    assert np.array_equal(reno[1][1], theory.padhye_bps(1448, rtt, loss, rto_s=np.maximum(0.2, rtt)))
    cubic = theory.response_functions("cubic", 1448, rtt, loss)
    assert [name for name, _ in cubic] == ["CUBIC (RFC 9438 §5.1)"]
    assert np.array_equal(cubic[0][1], theory.cubic_bps(1448, rtt, loss))
    assert theory.response_functions("bbr", 1448, rtt, loss) == []
    assert set(theory.RENO_FAMILY) == {"tahoe", "reno", "newreno"}


def test_a_palette_is_an_object_with_the_report_colours() -> None:
    a, b = FlavorPalette(), FlavorPalette()
    a.set_order(["vegas2", "reno", "cubic"])
    assert a.color("cubic") == PALETTE[PINNED["cubic"]] and a.color("reno") == PALETTE[PINNED["reno"]]
    assert b.slots() == {}, "palettes share no state"
    b.restore(a.slots())
    assert [b.color(f) for f in ("vegas2", "reno", "cubic")] == [a.color(f) for f in ("vegas2", "reno", "cubic")]
    # The report's palette, behind the module-level functions, assigns the same colours.
    saved = plots.flavor_slots()
    try:
        plots.set_flavor_order(["vegas2", "reno", "cubic"])
        assert plots.flavor_slots() == a.slots()
        assert plots.flavor_color("vegas2") == a.color("vegas2")
        other = FlavorPalette()
        other.set_order(["vegas3", "vegas2"])
        # A palette passed in wins over the report's.
        assert plots.flavor_color("vegas2", palette=other) == other.color("vegas2") != a.color("vegas2")
    finally:
        plots.restore_flavor_slots(saved)


@pytest.mark.parametrize("figure", ["metric_vs_param", "metric_vs_category"])
def test_sweep_figures_take_their_palette(figure: str) -> None:
    import pandas as pd

    rows = pd.DataFrame([{"point": i, "loss": v, "flow": 0, "name": "x", "flavor": "vegas2",
                          "goodput_mean_bps": 1e6 * (i + 1), "goodput_mean_bps_ci95": 1e4}
                         for i, v in enumerate(["1%", "2%"])])
    palette = FlavorPalette()
    palette.set_order(["udp-cbr", "vegas2"])
    fig = getattr(sweep_plots, figure)(rows, "loss", "goodput_mean_bps", ["flow"], "t", palette=palette)
    assert plots.flavor_colors_of(fig)["vegas2"] == palette.color("vegas2").lower()


def test_the_stored_flows_table_is_the_backends_columns_then_the_flow_metrics() -> None:
    from ccarena.backends.sim import run_spec
    from ccarena.experiment import expand
    from ccarena.scenario import load_scenario

    raw = {"name": "columns", "duration": "2s",
           "topology": {"kind": "single_link", "link": {"rate": "10Mbps", "delay": "10ms", "loss": "1%"}},
           "flows": [{"from": "a", "to": "b", "flavor": "reno", "bytes": "200KB"}]}
    plan = expand(load_scenario(raw))[0]
    tables = run_spec(plan.resolved.spec)
    out = metrics.flow_table(tables["flows"], tables["samples"], plan.resolved.derived, 2.0, 0.1,
                             links=tables["links"])
    assert list(out.columns) == [*tables["flows"].columns, *metrics.FLOW_TABLE_COLUMNS]
    assert set(metrics.FLOW_METRICS) - set(metrics.CPU_COLUMNS) - {"rtt_min_s", "rtt_mean_s", "rtt_p50_s",
                                                                     "rtt_p95_s", "rtt_p99_s"} \
        <= set(metrics.FLOW_TABLE_COLUMNS)


def test_an_imported_flows_table_keeps_its_columns_in_order() -> None:
    # Parquet files of imports written before the lists moved into the store read the same.
    assert columns.IMPORTED_FLOW_COLUMNS == (
        "flow", "name", "kind", "flavor", "recovery", "direction", "start_s", "end_s", "bytes_offered",
        "bytes_sent", "bytes_retransmitted", "bytes_delivered", "packets_sent", "packets_retransmitted",
        "packets_received", "packets_lost", "rto_count", "fast_recoveries", "spurious_rtos",
        "duplicate_bytes_received", "completion_time_s", "rtt_min_s", "rtt_mean_s", "rtt_p50_s",
        "rtt_p95_s", "rtt_p99_s", "rtt_samples", "active_s", "goodput_mean_bps", "throughput_mean_bps",
        "loss_rate", "retransmission_rate", "delivery_ratio", "stability", "fct_s", "base_rtt_s",
        "mss_bytes", "path_loss", "bottleneck_rate_bps", "mathis_bps", "padhye_bps", "cubic_bps",
        "ideal_fct_s", "fct_slowdown", "jitter_s")
