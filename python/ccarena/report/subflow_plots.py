"""Figures of Multipath TCP connections, from a run's ``subflows`` table (one row per subflow per
sample instant; docs/engine-spec.md, "Tables"), in the style of :mod:`ccarena.report.plots`:

- :func:`subflow_goodput_stacked` — per MPTCP connection, its subflows' goodput stacked over
  time: how the connection spreads its data over its paths, and where it moves it when a path
  congests or fails. Each panel is drawn in its connection's flavor colour (one colour per
  flavor, as in every figure), its subflows in shades of it.

Every function returns a :class:`matplotlib.figure.Figure`; write it with
:func:`ccarena.report.plots.save`.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.colors as mcolors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ccarena.report import plots  # noqa: E402
from ccarena.report.palette import FlavorPalette  # noqa: E402

MAX_CONNECTIONS_DRAWN = 4
"""Most MPTCP connections one figure draws, one panel each (the first ones, by flow index)."""


def mptcp_flows(flows: pd.DataFrame, subflows: pd.DataFrame | None) -> list[int]:
    """The indices of the MPTCP connections of a run that have subflow rows, at most
    :data:`MAX_CONNECTIONS_DRAWN`, in flow order; empty without a ``subflows`` table."""
    if subflows is None or not len(subflows) or "subflows" not in flows:
        return []
    multi = flows[flows["subflows"].to_numpy(dtype=float) > 1]["flow"].astype(int).tolist()
    present = set(subflows["flow"].astype(int))
    return [f for f in multi if f in present][:MAX_CONNECTIONS_DRAWN]


MAX_POINTS = 150
"""Most time points a panel draws: longer series are averaged over equal bins, so the stack
shows how the subflows share the connection rather than each sample's noise."""


def _shades(color: str, n: int) -> list[tuple[float, float, float]]:
    """``n`` shades of ``color``, from a darker shade to a light tint, so a connection's subflows
    read as one flavor yet stay apart."""
    base = np.array(mcolors.to_rgb(color))
    dark, light = base * 0.55, base + (1.0 - base) * 0.6
    return [tuple(dark + (light - dark) * (i / max(n - 1, 1))) for i in range(n)]


def _binned(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` (time index) averaged over at most :data:`MAX_POINTS` equal runs of rows."""
    if len(table) <= MAX_POINTS:
        return table
    bins = np.arange(len(table)) * MAX_POINTS // len(table)
    out = table.groupby(bins).mean()
    out.index = table.index.to_series().groupby(bins).mean().to_numpy()
    return out


def subflow_goodput_stacked(subflows: pd.DataFrame, flows: pd.DataFrame, shown: list[int],
                            title: str, palette: FlavorPalette | None = None) -> plt.Figure:
    """One panel per connection in ``shown`` (flow indices, :func:`mptcp_flows`): its subflows'
    goodput (Mbps, ``goodput_bps`` of the ``subflows`` table) stacked against time (s), subflow 0
    at the bottom, in shades of the connection's flavor colour; the panel's title names the
    connection, its coupling and its subflow count. The legend (right of the data) names the
    subflows of the first panel."""
    palette = palette or plots.REPORT_PALETTE
    rows = flows.set_index(flows["flow"].astype(int))
    with matplotlib.rc_context(plots.STYLE):
        fig, axes = plt.subplots(len(shown), 1, sharex=True, squeeze=False,
                                 figsize=(8.0, 1.2 + 2.0 * len(shown)))
    fig.suptitle(title)
    for ax, flow in zip(axes[:, 0], shown):
        mine = subflows[subflows["flow"].astype(int) == flow]
        table = _binned(mine.pivot_table(index="time_s", columns="subflow", values="goodput_bps",
                                         aggfunc="sum").fillna(0.0).sort_index())
        row = rows.loc[flow]
        colors = _shades(palette.color(str(row["flavor"])), table.shape[1])
        # A thin white edge parts neighbouring shades.
        ax.stackplot(table.index.to_numpy(dtype=float), (table.to_numpy(dtype=float) / 1e6).T,
                     colors=colors, labels=[f"subflow {int(s)}" for s in table.columns],
                     edgecolor="white", linewidth=0.4)
        ax.set_title(f"{row['name']}: {row['flavor']}, {int(row['subflows'])} subflows",
                     fontsize="medium", loc="left")
        ax.set_ylabel("goodput (Mbps)")
        ax.set_ylim(bottom=0)
    axes[-1, 0].set_xlabel("time (s)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if handles:
        axes[0, 0].legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                          borderaxespad=0.0)
    return fig
