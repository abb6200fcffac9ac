"""The report: a self-contained HTML page (figures embedded as PNG data URIs, also written to
``figures/*.png``) with the scenario, the per-run and per-flow summary, the mean ± 95% CI over
repeats, the region table and the figures; and the same summary as a terminal table.

Every number shown comes from summary.parquet or the runs' regions.parquet; each table cell
carries the exact value in ``data-value`` (and the column in ``data-col``), so tests and tools can
check the page against the Parquet files. The page is well-formed XHTML-compatible markup.
"""

from __future__ import annotations

import base64
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
from jinja2 import Environment, PackageLoader, select_autoescape
from rich.table import Table

from ccarena import metrics, plots, units
from ccarena.store import atomic_write_bytes


def _pct(x: float) -> str:
    return "–" if not math.isfinite(x) else f"{100 * x:.3g}%"


def _mean_ci(fmt: Callable[[float], str], mean: float, half: float) -> str:
    """mean ± half-width in one unit (percentages as ``1.09 ± 0.04%``)."""
    if fmt is _pct and math.isfinite(mean) and math.isfinite(half):
        return f"{100 * mean:.3g} ± {100 * half:.2g}%"
    return units.format_mean_ci(fmt, mean, half)


def _index(x: float) -> str:
    return "–" if not math.isfinite(x) else f"{x:.3f}"


COLUMNS: dict[str, tuple[str, Callable[[float], str]]] = {
    "goodput_mean_bps": ("goodput", units.format_rate),
    "throughput_mean_bps": ("throughput", units.format_rate),
    "loss_rate": ("loss", _pct),
    "retransmission_rate": ("retransmitted", _pct),
    "delivery_ratio": ("delivered", _pct),
    "rtt_min_s": ("RTT min", units.format_time),
    "rtt_mean_s": ("RTT mean", units.format_time),
    "rtt_p95_s": ("RTT p95", units.format_time),
    "rtt_p99_s": ("RTT p99", units.format_time),
    "stability": ("stability", _index),
    "fct_s": ("completion", units.format_time),
    "jain_index": ("Jain (run)", _index),
    "bottleneck_utilization": ("bottleneck util.", _pct),
    "bottleneck_queueing_delay_s": ("queueing delay", units.format_time),
    "mathis_bps": ("Mathis", units.format_rate),
}
"""Summary column → (heading, formatter): the numbers the report and the terminal show."""

REGION_COLUMNS: dict[str, tuple[str, Callable[[float], str]]] = {
    "start_s": ("from", units.format_time),
    "end_s": ("to", units.format_time),
    "goodput_total_bps": ("total goodput", units.format_rate),
    "jain_index": ("Jain", _index),
    "stability": ("stability (mean)", _index),
    "stability_max": ("stability (max)", _index),
}


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


@dataclass
class Cell:
    """A table cell: the text shown and, for numbers, the exact value and its column."""

    text: str
    col: str | None = None
    value: str | None = None


def _cell(col: str, value: Any, fmt: Callable[[float], str] | None) -> Cell:
    if _is_number(value) and fmt is not None:
        v = float(value)
        return Cell(fmt(v), col, repr(v) if math.isfinite(v) else "nan")
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return Cell("–", col, None)
    return Cell(str(value), col, None)


def _shown_columns(df: pd.DataFrame, candidates: dict[str, Any]) -> list[str]:
    """Columns present with at least one finite value (Jain's index only with several flows:
    for one flow it is 1 by definition)."""
    out = []
    single_flow = "flow" in df.columns and df["flow"].nunique() <= 1
    for c in candidates:
        if c == "jain_index" and single_flow:
            continue
        if c in df.columns:
            x = pd.to_numeric(df[c], errors="coerce").to_numpy(dtype=float)
            if np.any(np.isfinite(x)):
                out.append(c)
    return out


def summary_rows(summary: pd.DataFrame, params: list[str]) -> tuple[list[str], list[list[Cell]]]:
    """Headings and cells of the per-run, per-flow summary table."""
    keys = ["run_id", *params, "name", "flavor"]
    cols = _shown_columns(summary, COLUMNS)
    headings = ["run", *params, "flow", "flavor"] + [COLUMNS[c][0] for c in cols]
    rows = []
    for rec in summary.to_dict("records"):
        row = [_cell(k, rec.get(k), None) for k in keys]
        row += [_cell(c, rec.get(c), COLUMNS[c][1]) for c in cols]
        rows.append(row)
    return headings, rows


def aggregate_rows(aggregated: pd.DataFrame, params: list[str]) -> tuple[list[str], list[list[Cell]]]:
    """Headings and cells of the mean ± 95% CI table (one row per grid point and flow)."""
    cols = _shown_columns(aggregated, COLUMNS)
    headings = [*params, "flow", "flavor", "n"] + [COLUMNS[c][0] for c in cols]
    rows = []
    for rec in aggregated.to_dict("records"):
        row = [_cell(k, rec.get(k), None) for k in (*params, "name", "flavor", "n")]
        for c in cols:
            fmt = COLUMNS[c][1]
            mean, half = float(rec.get(c, math.nan)), float(rec.get(f"{c}_ci95", math.nan))
            text = _mean_ci(fmt, mean, half)
            row.append(Cell(text, c, repr(mean) if math.isfinite(mean) else "nan"))
        rows.append(row)
    return headings, rows


def region_rows(regions: pd.DataFrame) -> tuple[list[str], list[list[Cell]]]:
    """Headings and cells of the region table (all runs)."""
    headings = ["run", "region", "active flows"] + [h for h, _ in REGION_COLUMNS.values()]
    rows = []
    for rec in regions.to_dict("records"):
        row = [_cell("run_id", rec.get("run_id"), None), _cell("region", rec.get("region"), None),
               _cell("flows", rec.get("flows"), None)]
        row += [_cell(c, rec.get(c), fmt) for c, (_, fmt) in REGION_COLUMNS.items()]
        rows.append(row)
    return headings, rows


TERMINAL_COLUMNS = ("goodput_mean_bps", "loss_rate", "retransmission_rate", "delivery_ratio",
                    "rtt_mean_s", "rtt_p95_s", "stability", "fct_s", "jain_index")
"""The summary columns the terminal table shows (the report shows all of :data:`COLUMNS`)."""


def terminal_table(summary: pd.DataFrame, params: list[str], title: str) -> Table:
    """The summary as a rich table: one row per run and flow, or, when there are repeats, one row
    per grid point and flow with mean ± 95% CI."""
    columns = {c: COLUMNS[c] for c in TERMINAL_COLUMNS}
    cols = _shown_columns(summary, columns)
    table = Table(title=title)
    if int(summary["repeat"].max()) > 0:
        aggregated = metrics.aggregate_repeats(summary, ["point", *params, "flow", "name", "flavor"])
        keys = [*params, "name", "flavor", "n"]
        for k in keys:
            table.add_column("flow" if k == "name" else k)
        for c in cols:
            table.add_column(COLUMNS[c][0] + " (±95% CI)", justify="right")
        for rec in aggregated.to_dict("records"):
            cells = [_cell(k, rec.get(k), None).text for k in keys]
            for c in cols:
                fmt = COLUMNS[c][1]
                mean, half = float(rec[c]), float(rec[f"{c}_ci95"])
                cells.append(_mean_ci(fmt, mean, half))
            table.add_row(*cells)
        return table
    keys = (["run_id"] if summary["run_id"].nunique() > 1 else []) + [*params, "name", "flavor"]
    for k in keys:
        table.add_column({"run_id": "run", "name": "flow"}.get(k, k))
    for c in cols:
        table.add_column(COLUMNS[c][0], justify="right")
    for rec in summary.to_dict("records"):
        table.add_row(*[_cell(k, rec.get(k), None).text for k in keys],
                      *[_cell(c, rec.get(c), COLUMNS[c][1]).text for c in cols])
    return table


@dataclass
class Figure:
    """A figure in the report: title, file name under figures/, PNG bytes, and how many data
    points it draws (:func:`ccarena.plots.data_points`; the page carries it as ``data-points``)."""

    title: str
    file: str
    png: bytes
    points: int = 0

    @classmethod
    def draw(cls, fig: Any, title: str, file: str, figures_dir: Path) -> "Figure":
        """Count ``fig``'s data points, save it as ``figures_dir/file`` and close it."""
        points = plots.data_points(fig)
        return cls(title, file, plots.save(fig, figures_dir / file), points)

    @property
    def data_uri(self) -> str:
        """The PNG as a data URI for embedding."""
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")


def draw_figures(result: Any, figures_dir: Path, max_runs: int = 4, prefix: str = "") -> list[Figure]:
    """Draw every figure of the report into ``figures_dir``.

    Time series for the first repeat of up to ``max_runs`` grid points; metric-vs-parameter
    figures for each numeric swept parameter when there is a sweep. ``prefix`` starts the file
    names of figures that are not per run (a part's name).
    """
    out: list[Figure] = []
    summary = result.summary
    shown = summary[summary["repeat"] == 0].drop_duplicates("point")["run_id"].tolist()[:max_runs]
    for run_id in shown:
        flows = result.store.read_table(run_id, "flows")
        samples = result.store.read_table(run_id, "samples")
        queues = result.store.read_table(run_id, "queues")
        links = result.store.read_table(run_id, "links")
        record = result.store.read_run_record(run_id)
        mss = {int(f["flow"] if "flow" in f else i): float(f.get("mss_bytes") or 1448)
               for i, f in enumerate(flows.to_dict("records"))}
        label = run_id if len(shown) > 1 or record.get("params") else result.name
        watched = links[links["role"].isin(metrics.BOTTLENECK_ROLES)
                        | (links["packets_dropped_queue"] > 0)]
        # cwnd and RTT exist only for window-based flows: a UDP-only run has none to draw.
        windowed = bool(samples["cwnd_bytes"].notna().any()) if "cwnd_bytes" in samples else False
        timed = bool(samples["srtt_s"].notna().any()) if "srtt_s" in samples else False
        figs = [
            ("goodput", f"Goodput per flow — {label}", plots.goodput_vs_time(samples, flows, f"Goodput — {label}")),
            *([("cwnd", f"cwnd and ssthresh — {label}", plots.cwnd_vs_time(samples, flows, mss, f"cwnd and ssthresh — {label}"))]
              if windowed else []),
            *([("rtt", f"RTT — {label}", plots.rtt_vs_time(samples, flows, f"Smoothed RTT — {label}"))]
              if timed else []),
            ("queue", f"Queue backlog — {label}", plots.backlog_vs_time(queues, watched, f"Queue backlog — {label}")),
            ("delivered", f"Cumulative delivered bytes — {label}", plots.delivered_vs_time(samples, flows, f"Delivered — {label}")),
        ]
        for key, title, fig in figs:
            name = f"{run_id}-{key}.png"
            out.append(Figure.draw(fig, title, name, figures_dir))
    params = result.parameters
    if params:
        aggregated = result.aggregate()
        per_metric = ["goodput_mean_bps"]
        if summary.groupby("run_id").size().max() > 1:
            per_metric.append("jain_index")
        if np.any(np.isfinite(summary["fct_s"].to_numpy(dtype=float))):
            per_metric.append("fct_s")
        per_metric.append("rtt_mean_s")
        for param in params:
            others = [p for p in params if p != param]
            for metric in per_metric:
                group_by = ["flow", "name", *others] if metric != "jain_index" else others or ["point_group"]
                data = aggregated if metric != "jain_index" else \
                    aggregated.drop_duplicates(["point"]).assign(point_group="all flows", flow=0)
                fig = plots.metric_vs_param(
                    data, param, metric, group_by,
                    f"{plots.METRIC_LABELS[metric][0]} vs {param}",
                    theory_rows=summary if metric == "goodput_mean_bps" else None)
                if fig is None:
                    continue
                slug = "".join(ch if ch.isalnum() else "_" for ch in param)
                name = f"{prefix}sweep-{metric}-vs-{slug}.png"
                out.append(Figure.draw(fig, f"{plots.METRIC_LABELS[metric][0]} vs {param} (mean ± 95% CI)",
                                       name, figures_dir))
    return out


@dataclass
class Section:
    """One part of the experiment in the report: its tables and figures.

    ``key`` suffixes the element ids ("" for a scenario without parts, so ids stay ``summary``,
    ``aggregate``, ``regions``); ``studies`` are the study tables (:mod:`ccarena.report_studies`)
    as ``(id, title, caption, (headings, rows))``.
    """

    key: str
    title: str
    description: str
    summary: tuple[list[str], list[list[Cell]]]
    aggregate: tuple[list[str], list[list[Cell]]] | None
    regions: tuple[list[str], list[list[Cell]]] | None
    studies: list[tuple[str, str, str, tuple[list[str], list[list[Cell]]]]]
    figures: list[Figure]


def build_section(part: Any, figures_dir: Path) -> Section:
    """Tables and figures of one part (a :class:`ccarena.results.PartResult`)."""
    from ccarena import report_studies

    params = part.parameters
    summary = part.summary
    prefix = f"{part.part}__" if part.part else ""
    figures = draw_figures(part, figures_dir, prefix=prefix)
    studies, study_figures = report_studies.study_content(part, figures_dir, prefix)
    agg = None
    if params or (len(summary) and int(summary["repeat"].max()) > 0):
        agg = aggregate_rows(part.aggregate(), params)
    return Section(
        key=f"-{part.part}" if part.part else "",
        title=part.part, description=str(part.meta.get("description", "")),
        summary=summary_rows(summary, params), aggregate=agg,
        regions=region_rows(part.regions) if len(part.regions) else None,
        studies=studies, figures=study_figures + figures)


def render_html(result: Any, sections: list[Section]) -> str:
    """The report page for ``result`` with its ``sections`` (one per part) embedded."""
    env = Environment(loader=PackageLoader("ccarena", "templates"),
                      autoescape=select_autoescape(["html", "j2"]))
    template = env.get_template("report.html.j2")
    experiment = result.experiment
    scenario_text = experiment.get("scenario_text") or json.dumps(experiment["scenario"], indent=2)
    first_spec = experiment["runs"][0]["spec"] if experiment.get("runs") else {}
    return template.render(
        name=result.name,
        description=experiment["scenario"].get("description", ""),
        updated=experiment.get("updated", ""),
        n_runs=len(result.run_ids),
        n_planned=len(experiment.get("runs", [])),
        software=experiment.get("software", {}),
        scenario_text=scenario_text,
        defaults=json.dumps(experiment.get("defaults", {}), indent=2),
        first_spec=json.dumps(first_spec, indent=2),
        sections=sections,
    )


def write_report(result: Any, path: str | Path | None = None) -> Path:
    """Draw the figures into ``<experiment>/figures/`` and write the report (default
    ``<experiment>/report.html``) atomically; returns its path."""
    path = Path(path) if path is not None else result.root / "report.html"
    sections = [build_section(part, path.parent / "figures") for part in result.parts()
                if part.run_ids]
    page = render_html(result, sections)
    from ccarena.compare import insert_section  # runs on both backends, side by side

    page = insert_section(page, result, path.parent / "figures")
    atomic_write_bytes(path, page.encode("utf-8"))
    return path
