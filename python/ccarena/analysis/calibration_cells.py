"""The calibration's figures (``ccarena calibrate``): per cell of the suite, the simulator against
the kernel, the difference and a verdict against a stated band — computed from the stored
summary alone, so ``ccarena report`` redraws them from stored results.

A cell is one grid point of the suite (:mod:`ccarena.experiment.calibration_suite`) run on both
backends: ``single`` (one flow), ``pair`` (two flows, the first one started first) or ``loss``
(one flow on a lossy path). Per cell, each backend's figures (mean over repeats when there are
several) are:

- ``share``: the first flow's share of the total goodput, g₀ / (g₀ + g₁) (pairs only);
- ``goodput``: the total goodput, Σ of the flows' ``goodput_mean_bps`` (bits/s);
- ``utilization``: the bottleneck's utilization (``bottleneck_utilization``, 0–1);
- ``rtt_floor``: the first flow's smallest RTT sample (``rtt_min_s``, seconds; single-flow cells).

Errors are simulator − kernel: absolute for share, utilization and RTT floor, relative to the
kernel's for goodput. The bands (issue 19) are :data:`BANDS`; a cell is ``ok`` when every figure
it has is within its band, else ``off``, with the figures outside listed. The suite as a whole
also asks the median absolute share error to stay within :data:`SHARE_MEDIAN_BAND`.

A calibration is a measurement: a cell outside its band says where the simulator's model departs
from this machine's Linux, not that anything failed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ccarena import units
from ccarena.backends import calibration_backends

CALIBRATION_NAME = "ccarena-calibration"
"""Name of a calibration experiment (``-quick`` appended for the quick suite)."""
PACKET_BYTES = 1500
"""Wire size of a full-size packet: the unit of a queue limit given in packets."""
LIMIT_PARAMETER = "topology.bottleneck.queue.limit"
"""The swept field path holding each cell's buffer."""

SHARE_BAND = 0.12
"""Largest |share error| of a cell (the first flow's share, simulator − kernel)."""
SHARE_MEDIAN_BAND = 0.05
"""Largest median |share error| over the suite's pair cells."""
GOODPUT_BAND = 0.05
"""Largest |total goodput error| of a cell, relative to the kernel's (5 %)."""
UTILIZATION_BAND = 0.05
"""Largest |utilization error| of a cell (absolute, 0–1)."""
RTT_FLOOR_BAND_S = 0.002
"""Largest |RTT floor error| of a single-flow cell (2 ms)."""

BANDS: dict[str, float] = {"share": SHARE_BAND, "goodput": GOODPUT_BAND,
                           "utilization": UTILIZATION_BAND, "rtt_floor": RTT_FLOOR_BAND_S}
"""Figure → the band its error must stay within (see each constant)."""

CELL_COLUMNS = ("cell", "part", "kind", "flavors", "first_flavor", "second_flavor", "buffer_bdp",
                "loss", "repeats")
"""Columns describing a cell in :func:`calibration_table`."""


def is_calibration(experiment: dict[str, Any]) -> bool:
    """True when experiment.json describes a calibration experiment (``ccarena calibrate``)."""
    return str(experiment.get("name", "")).startswith(CALIBRATION_NAME)


def _limit_packets(value: Any) -> float:
    """A queue limit as written (``"67pkt"``, ``"100KB"``, 67) → packets (NaN if unreadable)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return math.nan
    try:
        limit = units.parse_queue_limit(value if not isinstance(value, float) else int(value))
    except (units.UnitError, ValueError, TypeError):
        return math.nan
    return float(limit.packets) if limit.packets is not None else limit.bytes / PACKET_BYTES


def _figures(rows: pd.DataFrame) -> dict[str, float]:
    """One backend's figures for one run (its summary rows, one per flow)."""
    rows = rows.sort_values("flow")
    goodputs = rows["goodput_mean_bps"].to_numpy(dtype=float)
    total = float(np.sum(goodputs))
    first = rows.iloc[0]
    return {
        "share": goodputs[0] / total if len(goodputs) > 1 and total > 0 else math.nan,
        "goodput": total,
        "utilization": float(first.get("bottleneck_utilization", math.nan)),
        "rtt_floor": float(first["rtt_min_s"]) if len(goodputs) == 1 else math.nan,
    }


def _cell(rows: pd.DataFrame) -> dict[str, Any]:
    """What a cell is, from one of its runs' summary rows."""
    rows = rows.sort_values("flow")
    first = rows.iloc[0]
    flavors = [str(f) for f in rows["flavor"]]
    loss = float(first.get("path_loss", 0.0) or 0.0)
    kind = "pair" if len(rows) > 1 else ("loss" if loss > 0 else "single")
    bdp_packets = float(first["bottleneck_rate_bps"]) * float(first["base_rtt_s"]) / 8 / PACKET_BYTES
    limit = _limit_packets(first.get(LIMIT_PARAMETER)) if LIMIT_PARAMETER in rows.columns else math.nan
    # Nearest quarter BDP: the base RTT includes serialization, so 267 packets are 3.93 BDP.
    buffer_bdp = round(4 * limit / bdp_packets) / 4 if bdp_packets > 0 else math.nan
    names = "-vs-".join(flavors)
    label = f"{names} {buffer_bdp:g} BDP" + (f" {100 * loss:g}% loss" if kind == "loss" else "")
    return {"cell": label, "part": str(first.get("part", "")), "kind": kind, "flavors": names,
            "first_flavor": flavors[0], "second_flavor": flavors[1] if len(flavors) > 1 else "",
            "buffer_bdp": buffer_bdp, "loss": loss}


def _error(name: str, sim: float, kernel: float) -> float:
    if not (math.isfinite(sim) and math.isfinite(kernel)):
        return math.nan
    if name == "goodput":
        return (sim - kernel) / kernel if kernel > 0 else math.nan
    return sim - kernel


def calibration_table(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per cell present on both backends, in the suite's order.

    Columns: :data:`CELL_COLUMNS`; per figure f of :data:`BANDS`: ``f_sim``, ``f_kernel``,
    ``f_error`` (simulator − kernel; relative for goodput) and ``f_band``; ``verdict`` ("ok" or
    "off") and ``off`` (the figures outside their bands, comma-separated; "" when ok).
    Figures a cell does not have are NaN and never put it off.
    """
    if not len(summary) or "backend" not in summary.columns:
        return pd.DataFrame(columns=list(CELL_COLUMNS))
    data = summary.copy()
    data["part"] = data["part"].fillna("") if "part" in data.columns else ""
    simulator, real = calibration_backends()  # the columns' suffixes: "sim" and "kernel"
    out = []
    for (_, point), cell_rows in data.groupby(["part", "point"], sort=False):
        per_backend: dict[str, list[dict[str, float]]] = {}
        for (backend, _), run_rows in cell_rows.groupby(["backend", "run_id"], sort=False):
            per_backend.setdefault(str(backend), []).append(_figures(run_rows))
        if simulator not in per_backend or real not in per_backend:
            continue
        first_run = cell_rows[cell_rows["run_id"] == cell_rows["run_id"].iloc[0]]
        row: dict[str, Any] = _cell(first_run)
        row["repeats"] = min(len(per_backend[simulator]), len(per_backend[real]))
        off = []
        for name, band in BANDS.items():
            sim = float(np.mean([f[name] for f in per_backend[simulator]]))
            kernel = float(np.mean([f[name] for f in per_backend[real]]))
            err = _error(name, sim, kernel)
            row.update({f"{name}_{simulator}": sim, f"{name}_{real}": kernel, f"{name}_error": err,
                        f"{name}_band": band})
            if math.isfinite(err) and abs(err) > band:
                off.append(name)
        row["verdict"] = "off" if off else "ok"
        row["off"] = ", ".join(off)
        row["_order"] = int(point)
        out.append(row)
    if not out:
        return pd.DataFrame(columns=list(CELL_COLUMNS))
    table = pd.DataFrame(out).sort_values("_order", kind="stable").drop(columns="_order")
    return table.reset_index(drop=True)


def overall(table: pd.DataFrame) -> dict[str, Any]:
    """The suite's verdict from :func:`calibration_table`.

    Returns ``{"cells", "cells_off" (list of cell labels), "median_abs_share_error" (over pair
    cells; NaN without any), "median_ok", "ok"}``; ``ok`` when every cell is ok and the median
    is within :data:`SHARE_MEDIAN_BAND`.
    """
    cells_off = table.loc[table["verdict"] == "off", "cell"].tolist() if len(table) else []
    shares = table["share_error"].to_numpy(dtype=float) if "share_error" in table else np.array([])
    shares = np.abs(shares[np.isfinite(shares)])
    median = float(np.median(shares)) if shares.size else math.nan
    median_ok = not (math.isfinite(median) and median > SHARE_MEDIAN_BAND)
    return {"cells": len(table), "cells_off": cells_off, "median_abs_share_error": median,
            "median_ok": median_ok, "ok": bool(len(table)) and not cells_off and median_ok}


def verdict_line(table: pd.DataFrame) -> str:
    """One sentence: the overall verdict and the cells outside their bands."""
    result = overall(table)
    if not result["cells"]:
        return "no cell ran on both backends: nothing to compare"
    median = result["median_abs_share_error"]
    median_text = (f"median |share error| {median:.3f} (band {SHARE_MEDIAN_BAND:g})"
                   if math.isfinite(median) else "no pair cells")
    repeats = int(table["repeats"].min()) if "repeats" in table.columns else 1
    if repeats > 1:
        median_text += f"; each backend's mean of {repeats} runs per cell"
    if result["ok"]:
        return f"within the bands: all {result['cells']} cells ok, {median_text}"
    parts = []
    for rec in table[table["verdict"] == "off"].to_dict("records"):
        parts.append(f"{rec['cell']} ({rec['off']})")
    off = f"{len(parts)} of {result['cells']} cells off: " + "; ".join(parts) if parts else \
        f"all {result['cells']} cells ok"
    return f"outside the bands: {off}; {median_text}" + ("" if result["median_ok"] else " — off")
