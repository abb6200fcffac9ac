"""The summary printed in the terminal: it fits the terminal's width.

One row per run and flow (per grid point and flow with mean ± 95% CI when there are repeats; per
run for runs of many flows). Metric columns are shown in :data:`TERMINAL_COLUMNS` order of
importance; when the table is wider than the terminal, the least important are left out and the
caption names them (``--wide`` shows every column, ``--json`` prints the numbers for scripts).
Swept parameters are headed by the shortest unambiguous tail of their path (``loss`` for
``topology.bottleneck.loss``).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import pandas as pd
from rich import box
from rich.console import Console, Group
from rich.measure import Measurement
from rich.table import Table

from ccarena import units
from ccarena.analysis import catalogue, metrics
from ccarena.errors import printable, terminal_text
from ccarena.report.html_tables import (
    COLUMNS,
    cell,
    index_text,
    mean_ci_text,
    pct_text,
    ratio_text,
    shown_columns,
)

TERMINAL_COLUMNS = ("goodput_mean_bps", "loss_rate", "rtt_mean_s", "jain_index", "fct_s",
                    "fct_slowdown", "retransmission_rate", "rtt_p95_s", "stability", "delivery_ratio")
"""The summary columns the terminal shows, most important first (the report shows all of
:data:`ccarena.report.html_tables.COLUMNS`)."""



def terminal_heading(column: str) -> str:
    """The terminal's heading of a metric column: its catalogue short heading, shorter than the
    report's so more columns fit 80 columns (``retx``), else the report's
    (:class:`ccarena.analysis.catalogue.Metric`)."""
    entry = catalogue.metric(column)
    return entry.short_heading or entry.heading

MAX_FLOW_ROWS_PER_RUN = 8
"""Above this many flows in a run, the terminal shows one row per run (totals, Jain, FCT
percentiles) instead of one per flow: a permutation or incast of hundreds of flows would otherwise
print hundreds of rows."""


def short_names(params: list[str]) -> dict[str, str]:
    """Each swept parameter path → the shortest tail of its dotted path that no other parameter
    shares and no metric heading uses (``…dupthresh`` → ``dupthresh``; ``topology.link.loss`` →
    ``link.loss``, as ``loss`` heads the measured loss; two ``…rate`` paths keep one more part)."""
    taken = {terminal_heading(c) for c in TERMINAL_COLUMNS} | {"flow", "flavor", "run"}
    out: dict[str, str] = {}
    for p in params:
        parts = p.split(".")
        for n in range(1, len(parts) + 1):
            tail = ".".join(parts[-n:])
            if tail not in taken and not any(q != p and (q == tail or q.endswith("." + tail))
                                             for q in params):
                out[p] = tail
                break
        else:
            out[p] = p
    return out


def _table(title: str, caption: str | None = None) -> Table:
    # Titles hold the experiment's and the parts' names, read from experiment.json.
    return Table(title=terminal_text(title), caption=caption, box=box.SIMPLE_HEAD, pad_edge=False,
                 show_edge=False, padding=(0, 1), title_justify="left", caption_justify="left")


def table_width(table: Table) -> int:
    """The width ``table`` takes when given as much room as it wants, in columns."""
    console = Console(width=10_000, file=open("/dev/null", "w"))  # noqa: SIM115 (measuring only)
    try:
        return Measurement.get(console, console.options, table).maximum
    finally:
        console.file.close()


def fit(build: Callable[[list[str], str | None], Table], cols: list[str], width: int | None,
        wide: bool) -> Table:
    """``build(columns, caption)`` with as many of ``cols`` (most important first) as fit in
    ``width``; every column when ``wide`` or ``width`` is None. The caption names what was left out."""
    if wide or width is None:
        return build(cols, None)
    shown = list(cols)
    table = build(shown, None)
    while len(shown) > 1 and table_width(table) > width:
        shown.pop()
        hidden = [terminal_heading(c) for c in cols[len(shown):]]
        table = build(shown, f"not shown at this width: {', '.join(hidden)} (--wide shows them)")
    return table


def terminal_table(summary: pd.DataFrame, params: list[str], title: str,
                   width: int | None = None, wide: bool = False) -> Any:
    """The summary as a rich renderable at most ``width`` columns wide (None: no limit): one row
    per run and flow, or, when there are repeats, one row per grid point and flow with mean ± 95%
    CI; runs of more than :data:`MAX_FLOW_ROWS_PER_RUN` flows get one row per run
    (:func:`per_run_table`). ``wide`` keeps every column whatever the width. With ``[[parts]]``,
    one table per part titled by it (a rich ``Group``), each with its own swept columns and a
    matrix's runs labelled by their pair (:func:`ccarena.report.views.labelled`)."""
    from ccarena.report.views import labelled

    if "part" in summary and summary["part"].astype(str).str.len().gt(0).any():
        # Each part shows the parameters its own runs set (parts sweep different fields).
        return Group(*[terminal_table(rows.drop(columns="part").reset_index(drop=True),
                                      [p for p in params if p in rows and rows[p].notna().any()],
                                      f"{title} — {part}", width, wide)
                       for part, rows in summary.groupby("part", sort=False)])
    summary, params = labelled(summary, params)
    if int(summary.groupby("run_id").size().max()) > MAX_FLOW_ROWS_PER_RUN:
        return per_run_table(summary, params, title)
    names = short_names(params)
    cols = shown_columns(summary, {c: COLUMNS[c] for c in TERMINAL_COLUMNS})
    flavors = summary["flavor"].astype(str)
    # A swept flavor is shown once, in the flavor column.
    params = [p for p in params if not (summary[p].astype(str) == flavors).all()]
    # Flows named after their flavor (the default) need no separate flow column.
    labels = ["flavor"] if (summary["name"].astype(str) == flavors).all() else ["name", "flavor"]
    if int(summary["repeat"].max()) > 0:
        aggregated = metrics.aggregate_repeats(summary, ["point", *params, "flow", "name", "flavor"])
        n = int(aggregated["n"].max())

        def build(shown: list[str], caption: str | None) -> Table:
            note = f"mean ± 95% CI over {n} repeats"
            table = _table(title, f"{note}; {caption}" if caption else note)
            for k in (*params, *labels):
                table.add_column(terminal_text({"name": "flow"}.get(k, names.get(k, k))), no_wrap=True)
            for c in shown:
                table.add_column(terminal_heading(c), justify="right", no_wrap=True)
            for rec in aggregated.to_dict("records"):
                cells = [_key_text(k, rec.get(k)) for k in (*params, *labels)]
                cells += [mean_ci_text(COLUMNS[c][1], float(rec[c]), float(rec[f"{c}_ci95"]))
                          for c in shown]
                table.add_row(*cells)
            return table

        return fit(build, cols, width, wide)
    keys = (["run_id"] if summary["run_id"].nunique() > 1 else []) + [*params, *labels]

    def build_runs(shown: list[str], caption: str | None) -> Table:
        table = _table(title, caption)
        for k in keys:
            table.add_column(terminal_text({"run_id": "run", "name": "flow"}.get(k, names.get(k, k))),
                             no_wrap=True)
        for c in shown:
            table.add_column(terminal_heading(c), justify="right", no_wrap=True)
        for rec in summary.to_dict("records"):
            # Names, flavors and swept values come from stored files: shown, never obeyed.
            table.add_row(*[_key_text(k, rec.get(k)) for k in keys],
                          *[cell(c, rec.get(c), COLUMNS[c][1]).text for c in shown])
        return table

    return fit(build_runs, cols, width, wide)


def _key_text(column: str, value: Any) -> str:
    """A key cell's text (a swept value, a name, a flavor): a whole number stored as a float (a
    swept count beside another part's runs, which do not set it, is a float column) without its
    ``.0``."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return terminal_text(cell(column, value, None).text)


def per_run_table(summary: pd.DataFrame, params: list[str], title: str) -> Any:
    """One row per run: flows, the flavors, total goodput, mean RTT over the run's flows (when
    measured), Jain's index over the run's flows, retransmitted share, and the FCT p99 of finite
    flows and their slowdown p99 (a report of the same runs has every per-flow number). With
    ``[[parts]]``, one such table per part, titled by it (a rich ``Group``), so the rows fit 80
    columns."""
    has_parts = "part" in summary and summary["part"].astype(str).str.len().gt(0).any()
    if not has_parts:
        return _per_run_rows(summary, params, title)
    tables = [_per_run_rows(rows, params, f"{title} — {part}")
              for part, rows in summary.groupby("part", sort=False)]
    return Group(*tables)


def _per_run_rows(summary: pd.DataFrame, params: list[str], title: str) -> Table:
    table = _table(title)
    flavors = summary["flavor"].astype(str)
    names = short_names(params)
    # A swept flavor is shown once, in the flavor column.
    keys = [p for p in params if not (summary[p].astype(str) == flavors).all()
            and summary[p].astype(str).nunique() > 1]
    if int(summary["repeat"].max()) > 0:
        keys.append("repeat")
    for k in keys:
        table.add_column(terminal_text(names.get(k, k)), overflow="fold")
    finite = bool(summary["fct_s"].notna().any()) if "fct_s" in summary else False
    # Mean RTT over the run's flows: where DCTCP and CUBIC differ at equal goodput (issue 29).
    rtt = "rtt_mean_s" in summary and bool(
        pd.to_numeric(summary["rtt_mean_s"], errors="coerce").notna().any())
    heads = ["flows", "flavor", "goodput Σ"] + (["RTT"] if rtt else []) + ["Jain", "retx"] + (
        ["FCT p99", "slowdown p99"] if finite else [])
    for i, h in enumerate(heads):
        table.add_column(h, justify="left" if i == 1 else "right")
    for _, run in summary.groupby("run_id", sort=False):
        first = run.iloc[0]
        goodput = run["goodput_mean_bps"]
        cells = [_key_text(k, first.get(k)) for k in keys]
        cells += [str(len(run)), terminal_text(",".join(dict.fromkeys(run["flavor"].astype(str)))),
                  units.format_rate(float(goodput.sum()))]
        if rtt:
            cells.append(units.format_time(float(pd.to_numeric(run["rtt_mean_s"], errors="coerce").mean())))
        cells += [index_text(float(first.get("jain_index", math.nan))),
                  pct_text(float(run["retransmission_rate"].mean()))]
        if finite:
            fct = run["fct_s"].dropna()
            slow = run["fct_slowdown"].dropna() if "fct_slowdown" in run else pd.Series(dtype=float)
            cells += [units.format_time(float(fct.quantile(0.99))) if len(fct) else "–",
                      ratio_text(float(slow.quantile(0.99))) if len(slow) else "–"]
        table.add_row(*cells)
    return table


def verdict_lines(result: Any) -> list[tuple[str, list[str]]]:
    """The verdict of each part of ``result`` (:func:`ccarena.analysis.verdict.part_verdict`):
    ``(heading, sentences)`` per part with something to say; the heading is ``Verdict`` or
    ``Verdict — PART``."""
    from ccarena.analysis.verdict import part_verdict

    out = []
    for part in result.parts():
        if not part.run_ids:
            continue
        v = part_verdict(part)
        lines = v.lines(short_names(v.parameters))
        if lines:
            out.append((f"Verdict — {part.part}" if part.part else "Verdict", lines))
    return out


def verdict_renderable(result: Any) -> Any:
    """:func:`verdict_lines` for the terminal: each heading, then its sentences as a list whose
    wrapped lines stay indented under their bullet (None when there is nothing to say)."""
    from rich.text import Text

    blocks: list[Any] = []
    for heading, lines in verdict_lines(result):
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True)
        grid.add_column()
        for line in lines:
            # Text parses no markup, but the lines name flavors read from stored files.
            grid.add_row("  -", Text(printable(line)))
        blocks += [Text(printable(heading) + ":", style="bold"), grid]
    return Group(*blocks) if blocks else None


def summary_json(summary: pd.DataFrame) -> str:
    """The per-run, per-flow summary as a JSON array of objects (one per flow of each run; NaN as
    null), for scripts: ``ccarena run … --json``."""
    return summary.to_json(orient="records", double_precision=15)
