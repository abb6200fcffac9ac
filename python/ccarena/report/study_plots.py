"""Figures for the study tables (:mod:`ccarena.analysis.study_tables`), in the style of :mod:`ccarena.report.plots`
(matplotlib, Agg backend, :data:`ccarena.report.plots.STYLE`, flow colours from :func:`ccarena.report.plots.color`).

- :func:`matrix_heatmap` — seed 004 Table 1 as a heatmap, numbers (mean ± 95% CI) in the cells,
  optionally beside the study's own matrix on the same colour scale;
- :func:`pairs_goodput_grid` — seed 004 Fig. 3: goodput vs time, one panel per ordered pair;
- :func:`goodput_vs_interval` — seed 003 Figs. 4 and 7: mean goodput per flow vs the setting in
  force (buffer size), with 95% CI error bars;
- :func:`red_average_vs_time` — a RED queue's backlog and average queue against time with its
  min_th and max_th.

Cumulative delivered bytes per flow against time is :func:`ccarena.report.plots.delivered_vs_time`
(already in every report). Seed 000's "transfer size" graphs are iperf's bytes per report
interval, i.e. goodput × interval: the shape of :func:`ccarena.report.plots.goodput_vs_time`.

Every function returns a :class:`matplotlib.figure.Figure`; write it with
:func:`ccarena.report.plots.save`.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from ccarena.analysis import study_tables as studies  # noqa: E402
from ccarena.report import plots, sweep_plots  # noqa: E402

RATE_UNITS = {"bps": 1.0, "kbps": 1e3, "Kbps": 1e3, "Mbps": 1e6, "Mb/s": 1e6, "Gbps": 1e9}
"""Rate units a reference table may be given in → bits per second."""

MATRIX_VALUES: dict[str, tuple[str, float, str]] = {
    "row_goodput_mean_bps": ("first flow's goodput", 1e6, "Mbps"),
    "col_goodput_mean_bps": ("second flow's goodput", 1e6, "Mbps"),
    "row_share_mean": ("first flow's share of the pair's goodput", 1.0, ""),
    "jain_index_mean": ("Jain's fairness index of the pair", 1.0, ""),
}
""":func:`ccarena.analysis.study_tables.matrix_table` mean column → (label, divisor, display unit)."""


def _subplots(nrows: int = 1, ncols: int = 1, **kwargs: Any) -> tuple[plt.Figure, np.ndarray]:
    """A figure in :data:`ccarena.report.plots.STYLE` with a grid of axes (always a 2-D array)."""
    with matplotlib.rc_context(plots.STYLE):
        fig, axes = plt.subplots(nrows, ncols, squeeze=False, **kwargs)
    return fig, axes


def _value_display(value: str) -> tuple[str, float, str]:
    if value in MATRIX_VALUES:
        return MATRIX_VALUES[value]
    if value.endswith("_bps"):
        return value, 1e6, "Mbps"
    return value, 1.0, ""


def _reference_scale(unit: str, display_unit: str) -> float:
    """The factor taking a reference table's values into the heatmap's display unit.

    Raises:
        ValueError: the units cannot be compared (e.g. a rate against a fraction).
    """
    if display_unit in RATE_UNITS and unit in RATE_UNITS:
        return RATE_UNITS[unit] / RATE_UNITS[display_unit]
    if display_unit == "" and unit in ("", "1", "fraction", "index"):
        return 1.0
    if display_unit == "" and unit == "%":
        return 0.01
    raise ValueError(f"reference unit {unit!r} cannot be shown on a scale in {display_unit or 'plain numbers'!r}")


def _cell_text(mean: float, half: float) -> str:
    if not math.isfinite(mean):
        return "–"
    if math.isfinite(half):
        return f"{mean:.3g}\n± {half:.2g}"
    return f"{mean:.3g}"


def _draw_matrix(ax: plt.Axes, data: np.ndarray, half: np.ndarray | None, rows: list[str],
                 cols: list[str], vmin: float, vmax: float, cmap: str) -> Any:
    image = ax.imshow(np.ma.masked_invalid(data), cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    ax.set_xticks(range(len(cols)), labels=cols, rotation=30, ha="right")
    ax.set_yticks(range(len(rows)), labels=rows)
    ax.grid(False)
    colormap = plt.get_cmap(cmap)
    span = (vmax - vmin) or 1.0
    for i in range(len(rows)):
        for j in range(len(cols)):
            mean = float(data[i, j])
            h = float(half[i, j]) if half is not None else math.nan
            # Dark text on light cells, light on dark, so every number stays legible.
            shade = colormap((mean - vmin) / span) if math.isfinite(mean) else (1, 1, 1, 1)
            luminance = 0.299 * shade[0] + 0.587 * shade[1] + 0.114 * shade[2]
            ax.text(j, i, _cell_text(mean, h), ha="center", va="center", fontsize=8,
                    color="black" if luminance > 0.5 else "white")
    return image


def matrix_heatmap(table: pd.DataFrame, value: str, title: str,
                   reference: Mapping[str, Any] | None = None, cmap: str = "viridis") -> plt.Figure:
    """A flavor-pair matrix as a heatmap with mean ± 95% CI in each cell.

    Rows are the first flow's flavor (it starts first), columns the second's (after the
    stagger); pairs without runs are blank.

    Args:
        table: :func:`ccarena.analysis.study_tables.matrix_table` output for one block (no ``by`` repeats).
        value: a ``..._mean...`` column, e.g. ``row_goodput_mean_bps`` (shown in Mbps),
            ``row_share_mean`` or ``jain_index_mean``; its CI is the column with ``_mean``
            replaced by ``_ci95``.
        title: the figure's title.
        reference: a study's published matrix (``{"title", "source", "unit", "rows", "columns",
            "values"}``, see :func:`ccarena.analysis.study_tables.reference_frame`), drawn as a second panel
            with its own labels on the same colour scale, converted to the displayed unit.

    Raises:
        ValueError: ``value`` is not in ``table``, or the reference's unit is not comparable.
    """
    ci_col = value.replace("_mean", "_ci95", 1)
    mean_wide = studies.matrix_wide(table, value)
    half_wide = studies.matrix_wide(table, ci_col) if ci_col != value and ci_col in table.columns else None
    label, divisor, unit = _value_display(value)
    data = mean_wide.to_numpy(dtype=float) / divisor
    half = half_wide.to_numpy(dtype=float) / divisor if half_wide is not None else None
    ref_data = None
    if reference is not None:
        ref = studies.reference_frame(reference)
        ref_data = ref.to_numpy(dtype=float) * _reference_scale(str(reference["unit"]), unit)
    both = np.concatenate([data.ravel(), ref_data.ravel() if ref_data is not None else []])
    finite = both[np.isfinite(both)]
    vmin, vmax = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    if unit == "" and value in ("row_share_mean", "jain_index_mean"):
        vmin, vmax = 0.0, 1.0  # fractions: the full scale, so 0.5 always looks like 0.5
    n_cols = 2 if ref_data is not None else 1
    size = max(len(mean_wide.columns), 2)
    fig, axes = _subplots(1, n_cols, figsize=(n_cols * (1.4 * size + 2.6) + 1.0, 1.1 * size + 2.0),
                          layout="constrained")
    ax = axes[0, 0]
    image = _draw_matrix(ax, data, half, [str(x) for x in mean_wide.index],
                         [str(x) for x in mean_wide.columns], vmin, vmax, cmap)
    ax.set_xlabel("second flavor (starts after the stagger)")
    ax.set_ylabel("first flavor (starts first)")
    ax.set_title("ccarena (mean ± 95% CI)" if ref_data is not None else title)
    if ref_data is not None:
        rax = axes[0, 1]
        _draw_matrix(rax, ref_data, None, [str(x) for x in ref.index], [str(x) for x in ref.columns],
                     vmin, vmax, cmap)
        rax.set_xlabel("second flavor (study)")
        rax.set_ylabel("first flavor (study)")
        rax.set_title(f"{reference['source']}: {reference['title']}", fontsize=9, wrap=True)
        fig.suptitle(title)
    bar = fig.colorbar(image, ax=list(axes.ravel()), shrink=0.9, pad=0.02)
    bar.set_label(f"{label} ({unit})" if unit else label)
    return fig


def pairs_goodput_grid(samples: pd.DataFrame, summary: pd.DataFrame, title: str) -> plt.Figure:
    """Goodput vs time for every ordered pair of a matrix experiment (seed 004, Fig. 3).

    One panel per pair — rows: the first flow's flavor, columns: the second's — showing the
    first-repeat run (lowest ``repeat``, then ``run_id``) with both flows, on a shared y axis
    (Mbps) and time axis (s). The first flow is drawn in :func:`ccarena.report.plots.color` (0), the
    second in colour 1.

    Args:
        samples: samples of the matrix runs (``run_id, time_s, flow, goodput_bps``).
        summary: summary rows with ``run_id, flow`` and :data:`ccarena.analysis.study_tables.MATRIX_COLUMNS`.

    Raises:
        ValueError: the matrix columns are absent.
    """
    studies._require(summary, ["run_id", "flow", *studies.MATRIX_COLUMNS], "summary (not a [matrix] experiment?)")
    flavors = studies.matrix_flavors(summary)
    rows = [f for f in flavors if f in set(summary["matrix_row"].astype(str))]
    cols = [f for f in flavors if f in set(summary["matrix_col"].astype(str))]
    order = summary.sort_values([c for c in ("repeat", "run_id") if c in summary.columns], kind="stable")
    first_run = order.drop_duplicates(["matrix_row", "matrix_col"]).set_index(["matrix_row", "matrix_col"])["run_id"]
    width, height = 2.6 * len(cols) + 1.0, 1.9 * len(rows) + 1.2
    fig, axes = _subplots(len(rows), len(cols), sharex=True, sharey=True, figsize=(width, height))
    # A fixed layout (inches: room for the tick labels and axis labels left and below, the
    # legend under them, the title above, each panel's title between rows), as constrained
    # layout would place it: fitting a grid of 16 panels costs constrained layout ~0.5 s.
    panel_w = (width - 0.85 - 0.15 - 0.15 * (len(cols) - 1)) / len(cols)
    panel_h = (height - 0.85 - 0.65 - 0.3 * (len(rows) - 1)) / len(rows)
    fig.subplots_adjust(left=0.85 / width, right=1 - 0.15 / width, bottom=0.85 / height,
                        top=1 - 0.65 / height, wspace=0.15 / panel_w, hspace=0.3 / panel_h)
    top = 0.0
    for i, r in enumerate(rows):
        for j, c in enumerate(cols):
            ax = axes[i, j]
            ax.set_title(f"{r} then {c}", fontsize=9)
            if i == len(rows) - 1:
                ax.set_xlabel("time (s)")
            if j == 0:
                ax.set_ylabel("goodput (Mbps)")
            if (r, c) not in first_run.index:
                ax.text(0.5, 0.5, "no run", transform=ax.transAxes, ha="center", va="center")
                continue
            run_id = first_run.loc[(r, c)]
            roles = summary[summary["run_id"] == run_id]
            for role, k in (("row", 0), ("col", 1)):
                for flow in roles.loc[roles["matrix_role"] == role, "flow"]:
                    mine = samples[(samples["run_id"] == run_id) & (samples["flow"] == flow)].sort_values("time_s")
                    y = mine["goodput_bps"].to_numpy(dtype=float) / 1e6
                    if np.any(np.isfinite(y)):
                        ax.plot(mine["time_s"], y, color=plots.color(k), linewidth=1.0)
                        top = max(top, float(np.nanmax(y)))
    axes[0, 0].set_ylim(0, top * 1.05 if top > 0 else 1.0)
    handles = [Line2D([], [], color=plots.color(0), label="first flow (row flavor)"),
               Line2D([], [], color=plots.color(1), label="second flow (column flavor)")]
    fig.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 0.05 / height), ncol=2,
               frameon=False, fontsize=9)
    fig.suptitle(title, y=1 - 0.12 / height, va="top")
    return fig


_INTERVAL_STATS = {"interval", "label", "start_s", "end_s", "n", "n_samples", "run_id",
                   "goodput_mean_bps", "goodput_sd_bps", "goodput_ci95_bps"}


def goodput_vs_interval(table: pd.DataFrame, title: str, xlabel: str = "setting in force") -> plt.Figure:
    """Mean goodput per flow (Mbps) against each interval's label (seed 003 Figs. 4 and 7:
    throughput vs buffer size), with 95% CI error bars when the table has them.

    Labels that are quantities (``"10pkt"``, 10) go on a numeric axis in their unit
    (:func:`ccarena.report.sweep_plots.param_axis`); others are categories in interval order.

    Args:
        table: :func:`ccarena.analysis.study_tables.interval_goodput_over_repeats` output (or the per-run
            :func:`ccarena.analysis.study_tables.goodput_by_interval` of one run: no error bars). One line per
            combination of the other columns (``flow, name`` and any ``by`` columns).
        xlabel: what the labels are, e.g. "bottleneck queue limit".

    Raises:
        ValueError: the table lacks ``interval, label, goodput_mean_bps``.
    """
    studies._require(table, ["interval", "label", "goodput_mean_bps"], "interval table")
    per_interval = table.drop_duplicates("interval").sort_values("interval")
    labels = [v.item() if isinstance(v, np.generic) else v for v in per_interval["label"]]
    axis = sweep_plots.param_axis(labels)
    if axis is not None:
        xs, unit = axis
        x_of = dict(zip(per_interval["interval"], xs))
        xlabel_full = f"{xlabel} ({unit})" if unit else xlabel
    else:
        x_of = {iv: k for k, iv in enumerate(per_interval["interval"])}
        xlabel_full = xlabel
    fig, axes = _subplots()
    ax = axes[0, 0]
    ax.set_title(title)
    ax.set_xlabel(xlabel_full)
    ax.set_ylabel("mean goodput (Mbps)")
    keys = [c for c in table.columns if c not in _INTERVAL_STATS]
    groups = table.groupby(keys, sort=False, dropna=False) if keys else [((), table)]
    for k, (key, group) in enumerate(groups):
        key = key if isinstance(key, tuple) else (key,)
        ident = dict(zip(keys, key))
        flow = int(ident["flow"]) if "flow" in ident else k
        name = ", ".join(str(v) for c, v in ident.items() if c != "flow" or "name" not in ident)
        group = group.sort_values("interval")
        x = group["interval"].map(x_of).to_numpy(dtype=float)
        y = group["goodput_mean_bps"].to_numpy(dtype=float) / 1e6
        err = None
        if "goodput_ci95_bps" in group.columns:
            err = group["goodput_ci95_bps"].to_numpy(dtype=float) / 1e6
            err = np.where(np.isfinite(err), err, 0.0)
        colour = plots.flavor_color(str(ident["flavor"])) if "flavor" in ident else plots.color(flow)
        ax.errorbar(x, y, yerr=err, color=colour, marker="o", capsize=3, label=name or None)
    if axis is None:
        ax.set_xticks(list(x_of.values()), labels=[str(v) for v in labels])
    ax.set_ylim(bottom=0)
    return plots._finish(fig, ax)


def _threshold(spec: Any) -> tuple[float, float, str]:
    if isinstance(spec, Mapping):
        return float(spec["min_th"]), float(spec["max_th"]), str(spec.get("unit", "packets"))
    lo, hi, unit = spec
    return float(lo), float(hi), str(unit)


def red_average_vs_time(queues: pd.DataFrame, links: pd.DataFrame | Sequence[int],
                        thresholds: Mapping[int, Any], title: str) -> plt.Figure:
    """Backlog and the RED average queue against time, with min_th and max_th, one panel per link.

    Args:
        queues: the queues table (``time_s, link, backlog_packets, backlog_bytes, red_avg``;
            ``link_name`` optional).
        links: the links to draw: a DataFrame with ``link`` (and ``name``) as for
            :func:`ccarena.report.plots.backlog_vs_time`, or link ids.
        thresholds: link id → ``(min_th, max_th, unit)`` or ``{"min_th", "max_th", "unit"}``,
            unit ``"packets"`` or ``"bytes"``: the unit of ``red_avg`` for that queue. The backlog
            drawn is in the same unit (bytes shown as KB).

    Raises:
        ValueError: ``red_avg`` is absent, a link has no threshold, a unit is unknown, or a link
            has no finite RED average (a droptail queue).
    """
    studies._require(queues, ["time_s", "link", "backlog_packets", "backlog_bytes", "red_avg"], "queues")
    if isinstance(links, pd.DataFrame):
        chosen = [(int(r.link), str(getattr(r, "name", r.link))) for r in links.itertuples(index=False)]
    else:
        names = {}
        if "link_name" in queues.columns:
            names = dict(zip(queues["link"].astype(int), queues["link_name"].astype(str)))
        chosen = [(int(link), names.get(int(link), f"link {int(link)}")) for link in links]
    if not chosen:
        raise ValueError("no link to draw")
    fig, axes = _subplots(len(chosen), 1, sharex=True, figsize=(8.0, 3.0 * len(chosen) + 0.6),
                          layout="constrained")
    for i, (link, name) in enumerate(chosen):
        if link not in thresholds:
            raise ValueError(f"link {link} ({name}) has no RED thresholds")
        lo, hi, unit = _threshold(thresholds[link])
        if unit not in ("packets", "bytes"):
            raise ValueError(f"link {link}: threshold unit must be 'packets' or 'bytes', got {unit!r}")
        mine = queues[queues["link"] == link].sort_values("time_s")
        avg = mine["red_avg"].to_numpy(dtype=float)
        if not np.any(np.isfinite(avg)):
            raise ValueError(f"link {link} ({name}) has no RED average (not a RED queue?)")
        scale, shown = (1.0, "packets") if unit == "packets" else (1e3, "KB")
        backlog = mine["backlog_packets" if unit == "packets" else "backlog_bytes"].to_numpy(dtype=float)
        ax = axes[i, 0]
        ax.plot(mine["time_s"], backlog / scale, color=plots.COLORS[7], linewidth=0.8, alpha=0.8,
                label="backlog")
        ax.plot(mine["time_s"], avg / scale, color=plots.COLORS[3], linewidth=1.8, label="RED average")
        ax.axhline(lo / scale, color="black", linestyle="--", linewidth=1.0, label="min_th")
        ax.axhline(hi / scale, color="black", linestyle=":", linewidth=1.2, label="max_th")
        peak = np.nanmax(np.concatenate([backlog / scale, avg / scale, [hi / scale]]))
        ax.set_ylim(0, 1.3 * peak)  # headroom so the legend never hides max_th
        ax.set_ylabel(f"queue ({shown})")
        ax.set_title(name, fontsize=10)
        ax.legend(loc="upper right", ncol=4)
        if i == len(chosen) - 1:
            ax.set_xlabel("time (s)")
    fig.suptitle(title)
    return fig
