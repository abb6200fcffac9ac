"""The metric catalogue: what every per-flow summary metric is called, in which unit it is shown
and how it is written, declared once (after flent, which declares a series' label and units once
and has every plot refer to it by name).

Every view reads it: the report's tables (:data:`ccarena.report.html_tables.COLUMNS`, in catalogue
order), the terminal (:data:`ccarena.report.terminal.TERMINAL_COLUMNS`, headings from
:attr:`Metric.short_heading`), the side-by-side comparison (:data:`ccarena.report.compare.METRICS`),
``ccarena plot`` (:data:`ccarena.report.custom_plot.METRIC_ALIASES`, units from :func:`display_unit`)
and the figures (:mod:`ccarena.report.sweep_plots`, through :func:`axis` and :func:`value_range`). The formulas
live in :mod:`ccarena.analysis.metrics`; adding a metric is its formula there and its entry here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from ccarena import units


def pct_text(x: float) -> str:
    """A fraction as a percentage with 3 significant digits (``–`` when not finite)."""
    return "–" if not math.isfinite(x) else f"{100 * x:.3g}%"


def index_text(x: float) -> str:
    """An index in [0, 1] (Jain, stability) to 3 decimals (``–`` when not finite)."""
    return "–" if not math.isfinite(x) else f"{x:.3f}"


def ratio_text(x: float) -> str:
    """A ratio ≥ 0 (FCT slowdown) to 3 significant digits (``–`` when not finite)."""
    return "–" if not math.isfinite(x) else f"{x:.3g}"


@dataclass(frozen=True)
class Metric:
    """One summary metric as every view shows it.

    Attributes:
        name: its summary column (``goodput_mean_bps``).
        heading: the report table's heading (``goodput``).
        formatter: value in the column's base unit (bit/s, s, fraction) → the text a table shows.
        description: one sentence: what is measured (docs/metrics.md has the definitions).
        higher_is_better: the direction of "better" (None where neither is: a model's prediction).
        aliases: short names ``ccarena plot --y`` accepts (``goodput``, ``retx``).
        short_heading: the terminal's narrower heading (None: the report's).
        comparison_heading: the side-by-side table's heading, written beside ``sim`` and the backend
            (None: the report's).
        axis_label: the sweep figures' y-axis label with its unit (None: the column name, unscaled).
        axis_divisor: divide values by this for :attr:`axis_label`'s unit (1e6 for Mbps).
        value_range: the closed range values and error bars stay in (a Jain index CI never above 1).
    """

    name: str
    heading: str
    formatter: Callable[[float], str]
    description: str
    higher_is_better: bool | None
    aliases: tuple[str, ...] = ()
    short_heading: str | None = None
    comparison_heading: str | None = None
    axis_label: str | None = None
    axis_divisor: float = 1.0
    value_range: tuple[float, float] = (0.0, math.inf)

    @property
    def unit(self) -> tuple[str, float]:
        """The preferred display unit and its divisor (``("Mbps", 1e6)``): :func:`display_unit`."""
        return display_unit(self.name)


UNIT_BY_SUFFIX: dict[str, tuple[str, float]] = {
    "_bps": ("Mbps", 1e6), "_s": ("ms", 1e-3), "_rate": ("%", 1e-2), "_ratio": ("%", 1e-2),
    "utilization": ("%", 1e-2)}
"""Column-name suffix → (preferred display unit, divisor): the column naming convention
(docs/engine-spec.md, units in names), first match in this order."""


def display_unit(column: str) -> tuple[str, float]:
    """The preferred display unit of any summary column and the divisor into it, read from its
    name (:data:`UNIT_BY_SUFFIX`); ``("", 1.0)`` for a dimensionless column."""
    for suffix, unit in UNIT_BY_SUFFIX.items():
        if column.endswith(suffix):
            return unit
    return "", 1.0


_FRACTION = (0.0, 1.0)

CATALOGUE: tuple[Metric, ...] = (
    Metric("goodput_mean_bps", "goodput", units.format_rate,
           "In-order payload delivered to the receiving application per second of the flow's "
           "active time.", True, aliases=("goodput",), axis_label="goodput (Mbps)", axis_divisor=1e6),
    Metric("throughput_mean_bps", "throughput", units.format_rate,
           "Bytes the sender put on the wire per second, retransmissions included.", None,
           aliases=("throughput",), axis_label="throughput (Mbps)", axis_divisor=1e6),
    Metric("loss_rate", "loss", pct_text, "Packets lost over packets sent.", False,
           aliases=("loss",), comparison_heading="lost", axis_label="loss rate (%)",
           axis_divisor=1e-2, value_range=_FRACTION),
    Metric("retransmission_rate", "retransmitted", pct_text,
           "Packets retransmitted over packets sent.", False, aliases=("retx", "retransmissions"),
           short_heading="retx"),
    Metric("delivery_ratio", "delivered", pct_text,
           "Packets received over packets sent (seed 003's packet delivery ratio).", True,
           aliases=("delivered",), short_heading="delivered", value_range=_FRACTION),
    Metric("rtt_min_s", "RTT min", units.format_time, "Smallest per-ACK RTT sample.", False,
           aliases=("rtt_min",)),
    Metric("rtt_mean_s", "RTT mean", units.format_time, "Mean of the per-ACK RTT samples.", False,
           aliases=("rtt",), short_heading="RTT", axis_label="mean RTT (ms)", axis_divisor=1e-3),
    Metric("rtt_p95_s", "RTT p95", units.format_time, "95th percentile of the per-ACK RTT samples.",
           False, aliases=("rtt_p95",)),
    Metric("rtt_p99_s", "RTT p99", units.format_time, "99th percentile of the per-ACK RTT samples.",
           False, aliases=("rtt_p99",)),
    Metric("stability", "stability", index_text,
           "SD / mean of the flow's goodput samples (seed 001); lower is steadier.", False,
           aliases=("stability",)),
    Metric("fct_s", "completion", units.format_time,
           "Flow completion time: from the flow's start until its last byte is acknowledged.",
           False, aliases=("fct",), short_heading="FCT", axis_label="flow completion time (s)"),
    Metric("fct_slowdown", "FCT slowdown", ratio_text,
           "Completion time over the ideal one on an empty path.", False, aliases=("slowdown",),
           short_heading="slowdown"),
    Metric("jain_index", "Jain (run)", index_text,
           "Jain's fairness index over the run's flows' mean goodput (Jain, Chiu, Hawe 1984).", True,
           aliases=("jain", "fairness"), short_heading="Jain", axis_label="Jain's fairness index",
           value_range=_FRACTION),
    Metric("bottleneck_utilization", "bottleneck util.", pct_text,
           "Share of the run the bottleneck link was busy.", True, aliases=("utilization",)),
    Metric("bottleneck_queueing_delay_s", "queueing delay", units.format_time,
           "Mean time a packet waited in the bottleneck's queue.", False),
    Metric("bottleneck_l4s_sojourn_mean_s", "L4S qdelay", units.format_time,
           "Mean time L4S packets (ECT(1), CE) waited in the bottleneck's DualPI2 L4S queue "
           "(RFC 9332).", False, aliases=("l4s_qdelay",),
           axis_label="L4S queueing delay, mean (ms)", axis_divisor=1e-3),
    Metric("bottleneck_l4s_sojourn_p99_s", "L4S qdelay p99", units.format_time,
           "99th percentile of the time L4S packets waited in the bottleneck's DualPI2 L4S queue.",
           False, aliases=("l4s_qdelay_p99",),
           axis_label="L4S queueing delay, p99 (ms)", axis_divisor=1e-3),
    Metric("bottleneck_classic_sojourn_mean_s", "Classic qdelay", units.format_time,
           "Mean time Classic packets (Not-ECT, ECT(0)) waited in the bottleneck's DualPI2 Classic "
           "queue.", False, aliases=("classic_qdelay",),
           axis_label="Classic queueing delay, mean (ms)", axis_divisor=1e-3),
    Metric("bottleneck_classic_sojourn_p99_s", "Classic qdelay p99", units.format_time,
           "99th percentile of the time Classic packets waited in the bottleneck's DualPI2 Classic "
           "queue.", False, aliases=("classic_qdelay_p99",),
           axis_label="Classic queueing delay, p99 (ms)", axis_divisor=1e-3),
    Metric("mathis_bps", "Mathis", units.format_rate,
           "Mathis et al. 1997's throughput at the path's loss and base RTT.", None),
)
"""Every summary metric the views show, in the report table's column order."""

BY_NAME: dict[str, Metric] = {m.name: m for m in CATALOGUE}
""":data:`CATALOGUE` by summary column."""


def metric(name: str) -> Metric:
    """The catalogue entry of summary column ``name``.

    Raises:
        KeyError: ``name`` is not in :data:`CATALOGUE`.
    """
    return BY_NAME[name]


def aliases() -> dict[str, str]:
    """Every alias → its summary column (``retx`` → ``retransmission_rate``)."""
    return {a: m.name for m in CATALOGUE for a in m.aliases}


def value_range(column: str) -> tuple[float, float]:
    """The range ``column``'s values and error bars stay in: its entry's, else [0, ∞)."""
    entry = BY_NAME.get(column)
    return entry.value_range if entry is not None else (0.0, math.inf)


def axis(column: str) -> tuple[str, float]:
    """The sweep figures' y-axis label of ``column`` and the divisor into its unit: its entry's
    :attr:`Metric.axis_label` (``("goodput (Mbps)", 1e6)``), else the column name, unscaled."""
    entry = BY_NAME.get(column)
    if entry is None or entry.axis_label is None:
        return column, 1.0
    return entry.axis_label, entry.axis_divisor
