"""Figures, in one consistent style (matplotlib, Agg backend): the primitives every figure uses
(style, flavor colours, legends, caption notes, spike clipping, saving) and the per-run figures.

Per run: goodput, cwnd and ssthresh, RTT, queue backlog and cumulative delivered bytes against
time, and goodput small multiples over a sweep's grid points. The sweep figures (a metric against
a swept parameter, with the theory curves) are in :mod:`ccarena.report.sweep_plots`.

Every function returns a :class:`matplotlib.figure.Figure`; :func:`save` writes it as PNG.
Colour follows the flavor (a :class:`ccarena.report.palette.FlavorPalette` given as ``palette``,
else the report's, :data:`REPORT_PALETTE`: one colour-blind-safe colour per flavor across the
whole report), line style the flow among flows of the same flavor. Legends sit outside the data.
Each line of a flow's time series carries the gid ``"<run_id>|<flow>|<flavor>"`` so tests and the
page can tell which series a figure draws (:func:`series_of`).
"""

from __future__ import annotations

import contextlib
import io
import math
from pathlib import Path
from typing import Any, Iterator, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ccarena import units  # noqa: E402
from ccarena.report.palette import PALETTE, PINNED, FlavorPalette  # noqa: E402,F401 (PALETTE, PINNED: read here)

STYLE: dict[str, Any] = {
    "figure.figsize": (8.0, 4.0),
    # The dpi figures are saved at: text measured while they are built (tight layout) is then
    # measured at the dpi of the saving renderer, the same one, and matplotlib reuses it.
    "figure.dpi": 110,
    "savefig.dpi": 110,
    "savefig.bbox": "tight",
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 12,
    # A fixed title position: matplotlib otherwise measures every axes' tick labels at each draw
    # to lift the title over them (a third of a 24-panel page's drawing time); none are on top.
    "axes.titley": 1.0,
    "axes.titlepad": 6.0,
    "axes.labelsize": 11,
    "legend.fontsize": 9,
    "legend.frameon": False,
    "lines.linewidth": 1.4,
    "font.family": "DejaVu Sans",
}
"""Matplotlib settings every ccarena figure uses."""

TEXT_METRICS_CACHED = 8192
"""Most text measurements :func:`shared_text_metrics` keeps (strings × fonts × sizes × dpi)."""

_GENERIC_FAMILIES = ("serif", "sans-serif", "cursive", "fantasy", "monospace")
_FONT_SETTINGS = ("text.hinting", "text.hinting_factor", "text.kerning_factor",
                  "font.enable_last_resort")
_TEXT_METRICS: dict[tuple[Any, ...], tuple[float, float, float]] = {}


@contextlib.contextmanager
def shared_text_metrics() -> Iterator[None]:
    """While in this block, every Agg renderer of the process shares one cache of text
    measurements (kept between blocks); outside it matplotlib is as it was, so a notebook that
    draws its own figures beside ccarena's is untouched.

    Matplotlib caches a string's measured size per renderer, and each figure gets its own
    renderer — two, when it is saved in its tight box (one to measure the box, one of the box's
    size to draw) — so every tick label, axis label and legend entry was laid out by FreeType
    again in every figure, twice (0.3–1 ms a string: a sixth of a report's drawing time). A
    measurement depends only on the string, the font properties, the dpi and the font settings
    in the key (the font files follow from the properties and the generic families' lists), so
    the cache gives what the renderer would. Mathtext and TeX are measured as before. Nested
    blocks share the outer one's cache."""
    from matplotlib.backends.backend_agg import RendererAgg

    measure = RendererAgg.get_text_width_height_descent
    if getattr(measure, "__wrapped__", None) is not None:  # an enclosing block installed it
        yield
        return
    rc = matplotlib.rcParams

    def shared(self: Any, s: str, prop: Any, ismath: Any) -> tuple[float, float, float]:
        if ismath is not False:
            return measure(self, s, prop, ismath)
        families = tuple(tuple(rc[f"font.{f}"]) if f in _GENERIC_FAMILIES else f
                         for f in prop.get_family())
        # A copy: FontProperties hash by their mutable state (matplotlib's own cache does so).
        key = (s, prop.copy(), self.dpi, families, *(rc.get(k) for k in _FONT_SETTINGS))
        found = _TEXT_METRICS.get(key)
        if found is None:
            if len(_TEXT_METRICS) >= TEXT_METRICS_CACHED:
                _TEXT_METRICS.clear()
            found = _TEXT_METRICS[key] = measure(self, s, prop, ismath)
        return found

    shared.__wrapped__ = measure  # type: ignore[attr-defined]  # matplotlib's own, uncached
    RendererAgg.get_text_width_height_descent = shared  # type: ignore[method-assign]
    try:
        yield
    finally:
        RendererAgg.get_text_width_height_descent = measure  # type: ignore[method-assign]


COLORS = plt.get_cmap("tab10").colors

REPORT_PALETTE = FlavorPalette()
"""The palette of the report this process draws: every figure function takes ``palette=`` and
uses this one when given none (:func:`set_flavor_order` fixes it for a report)."""

LINESTYLES = ("-", "--", ":", "-.", (0, (5, 1)), (0, (1, 1)), (0, (3, 1, 1, 1, 1, 1)))
"""Line style of the n-th flow of one flavor in a figure (colour says the flavor)."""


def set_flavor_order(flavors: Sequence[str]) -> None:
    """Fix every flavor's colour in :data:`REPORT_PALETTE` for the figures that follow
    (:meth:`ccarena.report.palette.FlavorPalette.set_order`)."""
    REPORT_PALETTE.set_order(flavors)


def flavor_slots() -> dict[str, int]:
    """:data:`REPORT_PALETTE`'s flavor → palette index map (to hand to a process drawing in
    parallel)."""
    return REPORT_PALETTE.slots()


def restore_flavor_slots(slots: dict[str, int]) -> None:
    """Take over a map from :func:`flavor_slots` into :data:`REPORT_PALETTE`."""
    REPORT_PALETTE.restore(slots)


def flavor_color(flavor: str, palette: FlavorPalette | None = None) -> str:
    """The colour (hex) of ``flavor`` in ``palette`` (the report's, :data:`REPORT_PALETTE`, when
    None): the same in every figure of a report."""
    return (palette or REPORT_PALETTE).color(flavor)


def color(flow: int) -> tuple[float, float, float]:
    """A colour by index, for things that are not flavors (queues, study roles)."""
    return COLORS[int(flow) % len(COLORS)]


def flow_styles(flows: pd.DataFrame, palette: FlavorPalette | None = None) -> dict[int, tuple[str, Any]]:
    """Flow index → (colour of its flavor in ``palette``, line style: its rank among the flows of
    its flavor)."""
    out: dict[int, tuple[str, Any]] = {}
    seen: dict[str, int] = {}
    flavors = flows["flavor"].astype(str).tolist() if "flavor" in flows else [""] * len(flows)
    for flow, flavor in zip(flows["flow"].tolist(), flavors):
        rank = seen.get(flavor, 0)
        seen[flavor] = rank + 1
        out[int(flow)] = (flavor_color(flavor, palette), LINESTYLES[rank % len(LINESTYLES)])
    return out


def series_of(fig: plt.Figure) -> list[str]:
    """The gids (``"<run_id>|<flow>|<flavor>"``) of the flow series ``fig`` draws."""
    return [str(line.get_gid()) for ax in fig.axes for line in ax.get_lines() if line.get_gid()]


def flavor_colors_of(fig: plt.Figure) -> dict[str, str]:
    """Flavor → the colour (hex) its series have in ``fig``; a flavor drawn in two colours maps to
    the last one seen (a test compares these across a report's figures)."""
    from matplotlib.colors import to_hex

    out: dict[str, str] = {}
    for ax in fig.axes:
        for line in ax.get_lines():
            gid = line.get_gid()
            if gid and gid.count("|") == 2:
                out[gid.split("|")[2]] = to_hex(line.get_color())
        for container in ax.containers:
            gid = getattr(container, "_ccarena_flavor", None)
            if gid:
                lines = getattr(container, "lines", None)
                if isinstance(lines, tuple) and lines and hasattr(lines[0], "get_color"):
                    out[gid] = to_hex(lines[0].get_color())  # an errorbar container
                elif getattr(container, "patches", None):
                    out[gid] = to_hex(container.patches[0].get_facecolor())
    return out


def _figure(title: str, xlabel: str, ylabel: str) -> tuple[plt.Figure, plt.Axes]:
    with matplotlib.rc_context(STYLE):
        fig, ax = plt.subplots()
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return fig, ax


MAX_LEGEND_FLOWS = 8
"""Above this many flows in a figure the legend names flavors, not flows."""


def _finish(fig: plt.Figure, ax: plt.Axes) -> plt.Figure:
    """The legend outside the axes (right of the data), each label once."""
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    if len(unique) > MAX_LEGEND_FLOWS + 4 and any(line.get_gid() for line in ax.get_lines()):
        unique = _flavor_handles(ax)
    if unique:
        ax.legend(unique.values(), unique.keys(), loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  borderaxespad=0.0)
    return fig


def _flavor_handles(ax: plt.Axes) -> dict[str, Any]:
    from matplotlib.lines import Line2D

    out: dict[str, Any] = {}
    for line in ax.get_lines():
        gid = line.get_gid()
        if gid and gid.count("|") == 2:
            flavor = gid.split("|")[2]
            out.setdefault(flavor, Line2D([], [], color=line.get_color(), label=flavor))
    return out


MAX_POINTS_PER_SERIES = 600
"""A flow's time series longer than this is drawn as per-second means with a min–max band (a
500 s run sampled every 100 ms would otherwise be a solid band)."""


def _binned(t: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(bin centres, mean, min, max)`` of ``y`` over bins of width chosen so at most
    :data:`MAX_POINTS_PER_SERIES` bins remain (1 s, or a whole multiple of it)."""
    span = float(t[-1] - t[0]) if t.size else 0.0
    width = max(1.0, math.ceil(span / MAX_POINTS_PER_SERIES))
    keys = np.floor((t - t[0]) / width).astype(np.int64)
    frame = pd.DataFrame({"k": keys, "y": y}).groupby("k")["y"].agg(["mean", "min", "max"])
    centres = t[0] + (frame.index.to_numpy(dtype=float) + 0.5) * width
    return centres, frame["mean"].to_numpy(), frame["min"].to_numpy(), frame["max"].to_numpy()


def _per_flow(ax: plt.Axes, samples: pd.DataFrame, flows: pd.DataFrame, column: str,
              scale: float | dict[int, float], run_id: str = "",
              palette: FlavorPalette | None = None, **style: Any) -> None:
    """One line per flow: colour by flavor (in ``palette``), style by rank within the flavor, gid
    naming it."""
    styles = flow_styles(flows, palette)
    by_flow = dict(tuple(samples.groupby("flow", sort=False))) if len(samples) else {}
    for row in flows.itertuples(index=False):
        mine = by_flow.get(row.flow)
        if mine is None:
            continue
        mine = mine.sort_values("time_s")
        y = mine[column].to_numpy(dtype=float)
        if not np.any(np.isfinite(y)):
            continue
        factor = scale[int(row.flow)] if isinstance(scale, dict) else scale
        colour, linestyle = styles[int(row.flow)]
        t = mine["time_s"].to_numpy(dtype=float)
        flavor = str(getattr(row, "flavor", ""))
        gid = f"{run_id}|{int(row.flow)}|{flavor}"
        # The legend names the flavor: a flow named otherwise carries it in brackets.
        label = str(row.name) if str(row.name) == flavor or not flavor else f"{row.name} ({flavor})"
        kwargs = {"linestyle": linestyle, **style}
        if t.size > MAX_POINTS_PER_SERIES:
            ok = np.isfinite(y)
            centres, mean, low, high = _binned(t[ok], y[ok] / factor)
            ax.fill_between(centres, low, high, color=colour, alpha=0.18, linewidth=0)
            note(ax.figure, "Long series are drawn as means over bins of "
                            f"{float(centres[1] - centres[0]) if centres.size > 1 else 1.0:g} s, "
                            "the band in the flow's colour spanning the bin's lowest to highest sample.")
            ax.plot(centres, mean, color=colour, label=label, gid=gid, **kwargs)
        else:
            ax.plot(t, y / factor, color=colour, label=label, gid=gid, **kwargs)


def trim_time_axis(ax: plt.Axes, flows: pd.DataFrame, samples: pd.DataFrame) -> None:
    """Limit the time axis to when flows are active: from 0 to a little past the last flow's end
    (a 2 MB transfer in a 120 s run is drawn over its own seconds, not the run's)."""
    if not len(samples) or "end_s" not in flows or not flows["end_s"].notna().all():
        return
    last_sample = float(samples["time_s"].max())
    last_end = float(flows["end_s"].max())
    if 0 < last_end < 0.8 * last_sample:
        ax.set_xlim(0, last_end * 1.05)


MAX_SHADED_REGIONS = 24
"""Most regions a time-series figure shades and labels (:func:`shade_regions`)."""


def shade_regions(ax: plt.Axes, regions: pd.DataFrame | None) -> None:
    """Shade every other region (a maximal interval with one set of active flows,
    :func:`ccarena.analysis.metrics.find_regions`) in light grey and name each by its number of
    active flows along the top, so a reader sees where flows come and go. Nothing is drawn for a
    run with a single region, nor past :data:`MAX_SHADED_REGIONS` (an incast's or a Poisson
    workload's hundreds of regions would be stripes and overprinted labels). ``regions`` has
    ``start_s``, ``end_s`` and ``n_flows`` (the run's regions table)."""
    if regions is None or not 2 <= len(regions) <= MAX_SHADED_REGIONS \
            or not {"start_s", "end_s", "n_flows"} <= set(regions):
        return
    rows = regions.sort_values("start_s")
    for i, row in enumerate(rows.itertuples(index=False)):
        start, end = float(row.start_s), float(row.end_s)
        if not (math.isfinite(start) and math.isfinite(end)) or end <= start:
            continue
        if i % 2 == 1:
            ax.axvspan(start, end, color="0.92", zorder=0, linewidth=0, gid="region")
            note(ax.figure, "Grey bands mark every other region (an interval with one set of active "
                            "flows); the count along the top is its number of active flows.")
        n = int(row.n_flows)
        # Inside the top of the axes: above it, the clipping hid them.
        ax.text((start + end) / 2, 0.985, f"{n} flow{'s' if n != 1 else ''}", ha="center",
                va="top", fontsize=7, color="0.35", transform=ax.get_xaxis_transform(),
                clip_on=True)


def goodput_vs_time(samples: pd.DataFrame, flows: pd.DataFrame, title: str,
                    run_id: str = "", capacity_bps: float | None = None,
                    regions: pd.DataFrame | None = None,
                    capacity_series: tuple[np.ndarray, np.ndarray] | None = None,
                    palette: FlavorPalette | None = None) -> plt.Figure:
    """Goodput of each flow per sample interval (Mbps) against time (s), with the bottleneck's
    capacity as a reference: ``capacity_series`` (interval ends in s, bits/s: a trace-driven
    link's capacity per sample interval, :func:`ccarena.report.capacity.capacity_over_time`) drawn
    as a grey filled step under the goodput, else ``capacity_bps`` as a flat line; the regions
    shaded when flows come and go (:func:`shade_regions`); the y axis not set by one spike
    (:func:`clip_spikes`)."""
    fig, ax = _figure(title, "time (s)", "goodput (Mbps)")
    shade_regions(ax, regions)
    reference = None
    if capacity_series is not None and len(capacity_series[0]):
        draw_capacity(ax, *capacity_series)
        reference = float(np.max(capacity_series[1])) / 1e6
    elif capacity_bps is not None and math.isfinite(capacity_bps) and capacity_bps > 0:
        ax.axhline(capacity_bps / 1e6, color="0.45", linewidth=1.0, linestyle=(0, (6, 3)),
                   label=f"capacity {units.format_rate(capacity_bps)}")
        reference = capacity_bps / 1e6
    _per_flow(ax, samples, flows, "goodput_bps", 1e6, run_id, palette)
    ax.set_ylim(bottom=0)
    if "goodput_bps" in samples:
        clip_spikes(ax, samples["goodput_bps"].to_numpy(dtype=float) / 1e6, reference, "Mbps")
    trim_time_axis(ax, flows, samples)
    return _finish(fig, ax)


def draw_capacity(ax: plt.Axes, ends_s: np.ndarray, capacity_bps: np.ndarray) -> None:
    """A trace-driven link's capacity per interval (``ends_s``: interval ends, s; bits/s) as a
    light grey filled step (gid ``"capacity"``), labelled for the legend."""
    ends = np.asarray(ends_s, dtype=float)
    rate = np.asarray(capacity_bps, dtype=float) / 1e6
    step = float(ends[1] - ends[0]) if ends.size > 1 else float(ends[0])
    x = np.concatenate([[ends[0] - step], ends])
    y = np.concatenate([rate[:1], rate])
    ax.fill_between(x, 0, y, step="pre", color="0.88", linewidth=0, zorder=0)
    ax.step(x, y, where="pre", color="0.55", linewidth=0.9, zorder=1, gid="capacity",
            label=f"link capacity (trace, per {units.format_time(step)})")


SPIKE_PERCENTILE = 99.0
SPIKE_HEADROOM = 1.15
"""A time series' y axis ends at :data:`SPIKE_HEADROOM` × the larger of the reference (capacity)
and the :data:`SPIKE_PERCENTILE`-th percentile of its samples when a few samples lie above that."""


def note(fig: plt.Figure, text: str) -> None:
    """Add ``text`` to the notes the report prints under ``fig`` (its caption)."""
    notes = getattr(fig, "_ccarena_notes", None)
    if notes is None:
        notes = []
        fig._ccarena_notes = notes  # type: ignore[attr-defined]
    if text not in notes:
        notes.append(text)


def notes_of(fig: plt.Figure) -> list[str]:
    """The caption notes of ``fig`` (:func:`note`)."""
    return list(getattr(fig, "_ccarena_notes", []) or [])


def clip_spikes(ax: plt.Axes, values: np.ndarray, reference: float | None = None,
                unit: str = "", what: str = "samples") -> float | None:
    """Keep a few spikes from setting the y axis: when the largest of ``values`` (in the axis'
    unit) exceeds :data:`SPIKE_HEADROOM` × max(its :data:`SPIKE_PERCENTILE`-th percentile,
    ``reference``), the axis ends there, the samples above are counted in a mark at the top and
    the caption says so (:func:`note`), calling the values ``what``. Returns the new top, or None
    when nothing was cut (fewer than 20 finite values are never cut)."""
    y = np.asarray(values, dtype=float)
    y = y[np.isfinite(y)]
    if y.size < 20:
        return None
    base = float(np.percentile(y, SPIKE_PERCENTILE))
    if reference is not None and math.isfinite(reference):
        base = max(base, float(reference))
    top = SPIKE_HEADROOM * base
    above = int(np.count_nonzero(y > top))
    if top <= 0 or above == 0:
        return None
    ax.set_ylim(bottom=min(0.0, float(y.min())), top=top)
    unit_text = f" {unit}" if unit else ""
    ax.text(1.0, 1.01, f"▲ {above} above {top:.3g}{unit_text}", transform=ax.transAxes,
            ha="right", va="bottom", fontsize=7, color="0.3", gid="spikes-cut")
    basis = f"the {SPIKE_PERCENTILE:g}th percentile of the {what}" + \
        (" or the capacity, whichever is larger" if reference is not None else "")
    one = what[:-1] if what.endswith("s") else what
    note(ax.figure, f"The y axis ends at {top:.3g}{unit_text} ({SPIKE_HEADROOM:g} × {basis}); "
                    f"{above} {what if above != 1 else one} above it {'are' if above != 1 else 'is'} "
                    f"off the axis (max {float(y.max()):.3g}{unit_text}).")
    return top


def with_rtt_rounds(samples: pd.DataFrame) -> pd.DataFrame:
    """``samples`` with a ``round`` column: per flow, the transmission rounds elapsed since its
    first sample, ``∫ dt / srtt`` summed over the sample intervals (one round = one smoothed RTT,
    the textbook "transmission round" of a window-based sender; the cumulative sum over samples is
    vectorized per flow). Samples without an srtt add nothing."""
    if not len(samples):
        return samples.assign(round=np.array([], dtype=float))
    ordered = samples.sort_values(["flow", "time_s"])
    dt = ordered.groupby("flow")["time_s"].diff().fillna(0.0).to_numpy(dtype=float)
    srtt = ordered["srtt_s"].to_numpy(dtype=float)
    step = np.where(np.isfinite(srtt) & (srtt > 0), dt / np.where(srtt > 0, srtt, 1.0), 0.0)
    rounds = pd.Series(step, index=ordered.index).groupby(ordered["flow"]).cumsum()
    return ordered.assign(round=rounds.to_numpy())


def cwnd_vs_time(samples: pd.DataFrame, flows: pd.DataFrame, mss_bytes: dict[int, float],
                 title: str, run_id: str = "", regions: pd.DataFrame | None = None,
                 rounds: bool = False, palette: FlavorPalette | None = None) -> plt.Figure:
    """cwnd (the flow's line) and ssthresh (thin dotted, same colour) of each TCP, QUIC or UDT
    flow, in MSS-sized packets, against time (UDT has no ssthresh; none drawn for more than
    :data:`MAX_LEGEND_FLOWS` flows or binned series). With ``rounds`` the x axis is the flow's
    transmission rounds (:func:`with_rtt_rounds`, ``[report] cwnd_axis = "rounds"``: cwnd per
    RTT round, the textbook sawtooth); otherwise time, with the regions shaded."""
    xlabel = "transmission round (∫ dt / srtt)" if rounds else "time (s)"
    fig, ax = _figure(title, xlabel, "window (packets of MSS)")
    tcp = flows[flows["kind"].isin(["tcp", "quic", "udt"])]
    if rounds:
        if "end_s" in tcp and len(samples):
            # A stopped flow's samples go on (flat); its rounds end with it.
            ends = samples["flow"].map(dict(zip(tcp["flow"], tcp["end_s"])))
            samples = samples[~(samples["time_s"] > ends)]
        # The rounds column stands in for time: the plotting helpers read ``time_s``.
        samples = with_rtt_rounds(samples).drop(columns="time_s").rename(columns={"round": "time_s"})
    else:
        shade_regions(ax, regions)
    _per_flow(ax, samples, tcp, "cwnd_bytes", mss_bytes, run_id, palette)
    styles = flow_styles(tcp, palette)
    if len(tcp) <= MAX_LEGEND_FLOWS:  # ssthresh of many flows would hide their cwnd
        for row in tcp.itertuples(index=False):
            mine = samples[samples["flow"] == row.flow].sort_values("time_s")
            if len(mine) > MAX_POINTS_PER_SERIES:
                continue
            y = mine["ssthresh_bytes"].to_numpy(dtype=float) / mss_bytes[int(row.flow)]
            y[y > 1e6] = np.nan  # "infinite" ssthresh before the first loss
            if np.any(np.isfinite(y)):
                ax.plot(mine["time_s"], y, color=styles[int(row.flow)][0], linewidth=0.8,
                        alpha=0.6, linestyle=":", label=f"{row.name} ssthresh")
    ax.set_ylim(bottom=0)
    if not rounds:
        trim_time_axis(ax, tcp, samples)
    return _finish(fig, ax)


def rtt_vs_time(samples: pd.DataFrame, flows: pd.DataFrame, title: str,
                run_id: str = "", base_rtt_s: float | None = None,
                regions: pd.DataFrame | None = None,
                palette: FlavorPalette | None = None) -> plt.Figure:
    """Smoothed RTT (srtt, ms) of each TCP, QUIC or UDT flow against time, with the base
    (propagation) RTT as a reference line when given and the regions shaded (:func:`shade_regions`)."""
    fig, ax = _figure(title, "time (s)", "smoothed RTT (ms)")
    shade_regions(ax, regions)
    windowed = flows[flows["kind"].isin(["tcp", "quic", "udt"])]
    _per_flow(ax, samples, windowed, "srtt_s", 1e-3, run_id, palette)
    if base_rtt_s is not None and math.isfinite(base_rtt_s) and base_rtt_s > 0:
        ax.axhline(base_rtt_s * 1e3, color="0.45", linewidth=1.0, linestyle=(0, (6, 3)),
                   label=f"base RTT {units.format_time(base_rtt_s)}")
    ax.set_ylim(bottom=0)
    if "srtt_s" in samples and len(windowed):
        mine = samples[samples["flow"].isin(windowed["flow"])]
        clip_spikes(ax, mine["srtt_s"].to_numpy(dtype=float) * 1e3, None, "ms")
    trim_time_axis(ax, windowed, samples)
    return _finish(fig, ax)


def backlog_vs_time(queues: pd.DataFrame, links: pd.DataFrame, title: str) -> plt.Figure:
    """Backlog (packets) of the given links' queues against time, each with its queue limit as a
    dashed line of the same colour when the links table has ``limit_packets``."""
    fig, ax = _figure(title, "time (s)", "queue backlog (packets)")
    for i, row in enumerate(links.itertuples(index=False)):
        mine = queues[queues["link"] == row.link].sort_values("time_s")
        colour = COLORS[(i + 7) % len(COLORS)]
        ax.plot(mine["time_s"], mine["backlog_packets"], color=colour, label=str(row.name))
        limit = getattr(row, "limit_packets", None)
        if limit is not None and isinstance(limit, (int, float)) and math.isfinite(limit) and limit > 0:
            ax.axhline(float(limit), color=colour, linewidth=0.9, linestyle="--",
                       label=f"{row.name} limit ({float(limit):.0f} packets)")
    ax.set_ylim(bottom=0)
    return _finish(fig, ax)


def delivered_vs_time(samples: pd.DataFrame, flows: pd.DataFrame, title: str,
                      run_id: str = "", palette: FlavorPalette | None = None) -> plt.Figure:
    """Cumulative payload delivered (MB) of each flow against time."""
    fig, ax = _figure(title, "time (s)", "delivered (MB)")
    _per_flow(ax, samples, flows, "delivered_bytes", 1e6, run_id, palette)
    ax.set_ylim(bottom=0)
    trim_time_axis(ax, flows, samples)
    return _finish(fig, ax)


def data_points(fig: plt.Figure) -> int:
    """How many data points ``fig`` draws: finite points of its lines, markers and error bars,
    cells of its images (heatmaps) and bars — 0 for a figure with axes but no data."""
    total = 0
    for ax in fig.axes:
        for line in ax.get_lines():
            x = np.asarray(line.get_xdata(), dtype=float)
            y = np.asarray(line.get_ydata(), dtype=float)
            if x.size > 1 or line.get_marker() not in (None, "", "None", " "):
                total += int(np.count_nonzero(np.isfinite(x) & np.isfinite(y)))
        for image in ax.get_images():
            total += int(np.ma.count(image.get_array()))
        for collection in ax.collections:
            total += len(collection.get_offsets()) if hasattr(collection, "get_offsets") else 0
        total += sum(1 for p in ax.patches if p.get_height() != 0) if ax.patches else 0
    return total


def _laid_out_tight_box(fig: plt.Figure, dpi: float) -> Any:
    """Run ``fig``'s layout engine (constrained or tight layout, if any) and return its tight
    bounding box (inches, padded by ``savefig.pad_inches``) at ``dpi``, leaving the figure with
    no layout engine. Given this box, ``savefig`` draws the figure once; asked for
    ``bbox_inches="tight"`` (or with a layout engine) it draws it twice, the first time only to
    measure — half of a report's drawing time. The box is the one savefig would find: the same
    layout at the same dpi, measured by the same ``Figure.get_tightbbox``."""
    saved_dpi = fig.dpi
    fig.dpi = dpi
    try:
        renderer = fig.canvas.get_renderer()
        engine = fig.get_layout_engine()
        if engine is not None:
            engine.execute(fig)
            # No engine at all: "none" (or a figure's own tight_layout() call) leaves a
            # placeholder engine, and savefig draws a figure that has any engine twice.
            # (None, not "none", under STYLE's figure.autolayout = False.)
            fig.set_layout_engine(None)
        return fig.get_tightbbox(renderer).padded(float(matplotlib.rcParams["savefig.pad_inches"]))
    finally:
        fig.dpi = saved_dpi


EXTRA_FORMATS: list[str] = []
"""Vector formats (``svg``, ``pdf``) every saved figure is also written in, beside its PNG (set by
``write_report(formats=…)``, i.e. ``--formats``)."""


def save(fig: plt.Figure, path: Path) -> bytes:
    """Write ``fig`` as PNG to ``path`` (and in each of :data:`EXTRA_FORMATS` with that suffix)
    and return the PNG bytes (for embedding); closes ``fig``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # A figure laid out by hand is saved whole: fitting a tight box would draw it twice.
    # (Such overview pages are also rendered at a lower resolution: 24 panels at 80 dpi.)
    fixed = getattr(fig, "_ccarena_fixed_layout", False)
    style = {**STYLE, "savefig.bbox": None, "savefig.dpi": 80} if fixed else STYLE
    with matplotlib.rc_context(style), shared_text_metrics():
        box = None if fixed else _laid_out_tight_box(fig, float(style["savefig.dpi"]))
        data = _png(fig, box, float(style["savefig.dpi"]))
        for fmt in EXTRA_FORMATS:
            fig.savefig(path.with_suffix("." + fmt), format=fmt, bbox_inches=box)
    plt.close(fig)
    path.write_bytes(data)
    return data


PNG_COMPRESS_LEVEL = 1
"""zlib level of the figures' PNGs. Without the alpha channel (:func:`_png`) level 1 makes files
as small as matplotlib's RGBA PNGs at its default level 6, in half the time."""


def _png(fig: plt.Figure, box: Any, dpi: float) -> bytes:
    """``fig`` drawn in ``box`` (inches; None: the whole figure) at ``dpi`` as PNG bytes: the
    pixels ``savefig(format="png")`` writes, encoded without their alpha channel when every pixel
    is opaque (a report figure's background always is) at :data:`PNG_COMPRESS_LEVEL`, with
    the same text and resolution chunks. PIL's PNG encoder took a tenth of a figure's time."""
    from PIL import Image, PngImagePlugin

    raw = io.BytesIO()
    fig.savefig(raw, format="rgba", bbox_inches=box)
    # The image just drawn is the canvas' last: its buffer has the shape the raw bytes lack.
    shape = np.asarray(fig.canvas.buffer_rgba()).shape
    if raw.tell() != int(np.prod(shape)):  # another canvas drew it: matplotlib's own PNG
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", bbox_inches=box)
        return buffer.getvalue()
    pixels = np.frombuffer(raw.getbuffer(), dtype=np.uint8).reshape(shape)
    opaque = bool(pixels[..., 3].min() == 255)
    image = Image.fromarray(np.ascontiguousarray(pixels[..., :3]) if opaque else pixels,
                            "RGB" if opaque else "RGBA")
    info = PngImagePlugin.PngInfo()
    info.add_text("Software", f"Matplotlib version{matplotlib.__version__}, https://matplotlib.org/")
    out = io.BytesIO()
    image.save(out, format="png", pnginfo=info, dpi=(dpi, dpi), compress_level=PNG_COMPRESS_LEVEL)
    return out.getvalue()


SMALL_MULTIPLES_PER_FIGURE = 24
"""Most panels in one small-multiples figure (6 columns × 4 rows); more points take more figures."""


def goodput_small_multiples(panels: Sequence[tuple[str, str, pd.DataFrame, pd.DataFrame]],
                            title: str, palette: FlavorPalette | None = None) -> plt.Figure:
    """Goodput (Mbps) against time, one small panel per grid point: ``panels`` holds
    ``(panel title, run_id, samples, flows)``; flows coloured by flavor as everywhere, one shared
    legend right of the panels, shared axes (tick labels on the outer panels only). The layout is
    fixed (no tight layout: a page of 24 panels would cost a second per figure to fit)."""
    n = len(panels)
    cols = min(6, n)
    rows = math.ceil(n / cols)
    width, height = 2.3 * cols + 1.6, 1.9 * rows + 0.8
    with matplotlib.rc_context(STYLE):
        fig, axes = plt.subplots(rows, cols, figsize=(width, height), sharey=True, sharex=True,
                                 squeeze=False)
    fig.subplots_adjust(left=0.9 / width, right=1 - 1.5 / width, bottom=0.6 / height,
                        top=1 - 0.55 / height, wspace=0.12, hspace=0.45)
    for ax, (panel_title, run_id, samples, flows) in zip(axes.flat, panels):
        _per_flow(ax, samples, flows, "goodput_bps", 1e6, run_id, palette, linewidth=0.9)
        ax.set_title(panel_title, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.set_ylim(bottom=0)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel("goodput (Mbps)", fontsize=8)
    for ax in axes[-1, :]:
        ax.set_xlabel("time (s)", fontsize=8)
    fig.suptitle(title, fontsize=11)
    handles: dict[str, Any] = {}
    for ax in list(axes.flat)[:n]:
        for k, v in _flavor_handles(ax).items():
            handles.setdefault(k, v)
    if handles:
        fig.legend(handles.values(), handles.keys(), loc="upper left",
                   bbox_to_anchor=(1 - 1.4 / width, 1 - 0.55 / height), fontsize=8, title="flavor",
                   title_fontsize=8)
    fig._ccarena_fixed_layout = True  # type: ignore[attr-defined]  # save() keeps the whole canvas
    return fig
