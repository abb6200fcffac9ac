"""``ccarena query DIRECTORY SQL``: SQL (DuckDB) over an experiment's Parquet files, as a table or
CSV, confined to the experiment's files unless ``--unsafe-sql``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import typer

from ccarena.cli.console import stdout
from ccarena.cli.output import print_store_warnings
from ccarena.errors import UserError, printable, terminal_text


def query(
    directory: Path = typer.Argument(..., help="Experiment directory."),
    sql: str = typer.Argument(..., help="SQL (DuckDB). Views: summary, flows, samples, queues, links, regions."),
    csv: bool = typer.Option(False, "--csv", help="Print CSV instead of a table."),
    part: Optional[str] = typer.Option(None, "--part", help="Views of this [[parts]] entry's runs "
                                       "only [default: every run]."),
    unsafe_sql: bool = typer.Option(False, "--unsafe-sql", help="Allow any SQL: reading and "
                                    "writing any file, ATTACH, extensions [default: SELECT over "
                                    "this experiment's files only]."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Print at most N rows "
                                        "[default: 1000 in a table (the count of the rest is "
                                        "said), every row with --csv]."),
) -> None:
    """Run SQL (DuckDB) over an experiment's Parquet files.

    Views: summary (summary.parquet) and flows, samples, queues, links, regions (every run's file,
    with a run_id column); with --part, the part's rows and runs only (a matrix's summary then
    has a pair column, "cubic vs reno"). Paths in the SQL are relative to DIRECTORY. The SQL
    reads only files under DIRECTORY and only SELECT (SHOW, DESCRIBE, SUMMARIZE) runs, unless
    --unsafe-sql is given.

    Examples:

      ccarena query results/quickstart "SELECT name, goodput_mean_bps/1e6 AS mbps FROM summary"

      ccarena query results/loss "SELECT run_id, max(backlog_packets) FROM queues GROUP BY run_id"

      ccarena query results/loss "SELECT * FROM 'runs/*/flows.parquet'" --csv

      ccarena query results/seed-004 "SELECT pair, avg(goodput_mean_bps) FROM summary GROUP BY pair" --part matrix
    """
    import contextlib

    import duckdb

    from ccarena.results import Result
    from ccarena.store import query_access
    from ccarena.store.query import fetch_rows, stream_rows

    result = Result(directory, deep=False)  # experiment.json checked: one line when it cannot be
    con = duckdb.connect()
    if unsafe_sql:
        # Confined, relative paths are resolved by working in the directory (query_access.inside),
        # which also works where the search path does not: a name holding ',' or '\'.
        con.execute("SET file_search_path = ?", [str(directory.resolve())])
    con.execute("SET enable_progress_bar = false")  # a long query's bar would go into the CSV
    _query_views(con, result, part)
    print_store_warnings(result)
    if not unsafe_sql:
        query_access.confine(con, directory)
    try:
        with contextlib.nullcontext() if unsafe_sql else query_access.inside(directory):
            if not unsafe_sql:
                query_access.check_statements(con, sql)
            if csv:  # streamed batch by batch: any number of rows in bounded memory
                columns, batches = stream_rows(con, sql, limit)
                _write_csv(columns, batches)
                return
            found = fetch_rows(con, sql, limit or QUERY_TABLE_ROWS)
    except duckdb.Error as err:
        denied = None if unsafe_sql else query_access.refusal(err)
        raise UserError(denied or f"query: {(str(err).splitlines() or [type(err).__name__])[0]}") from None
    from rich.table import Table

    table = Table()
    for c in found.columns:
        table.add_column(terminal_text(c))
    for row in found.rows:
        table.add_row(*["" if v is None else (f"{v:.6g}" if isinstance(v, float) else terminal_text(v))
                        for v in row])
    stdout.print(table)
    if found.more != 0:
        more = "more rows" if found.more is None else f"{found.more:,} more " + (
            "row" if found.more == 1 else "rows")
        stdout.print(f"the first {len(found.rows):,} rows shown; {more} not shown (--limit N "
                     "shows more, --csv prints every row)", soft_wrap=True, markup=False,
                     highlight=False)


QUERY_TABLE_ROWS = 1000
"""Rows ``ccarena query`` prints in a table unless ``--limit`` says otherwise."""


def _write_csv(columns: list[str], batches: Any) -> None:
    """``columns`` and the rows of ``batches`` as CSV on stdout. Text read from the files keeps
    its content but never reaches the terminal as control characters (an escape sequence in a
    flavor name would retitle or clear it)."""
    import csv as csv_module

    writer = csv_module.writer(sys.stdout)
    writer.writerow([printable(c, keep="\n\t") for c in columns])
    for rows in batches:
        writer.writerows([printable(v, keep="\n\t") if isinstance(v, str) else v for v in row]
                         for row in rows)


def _query_views(con: Any, result: Any, part: str | None) -> None:
    """The query views (:func:`ccarena.store.query.create_views`) over the experiment's readable
    runs (damaged ones left out): ``summary`` is summary.parquet, or the summary without the
    runs left out (built again when summary.parquet itself is damaged). With ``part``
    (``query --part``), ``summary`` is the part's :class:`ccarena.report.views.View` (its rows
    and swept columns, ``pair`` for a matrix) and the per-run views cover the part's runs only.

    Raises:
        UserError: no such part (the message lists the parts); every run is damaged."""
    from ccarena.store.query import create_views
    from ccarena.store.verify import parquet_problem

    result.require_runs()
    if part is not None:
        from ccarena.report import views

        [view] = views.select(result, part)
        create_views(con, result.store, view.run_ids, view.summary)
        return
    run_ids = result.run_ids
    stored = result.root / "summary.parquet"
    whole = not result.damaged and parquet_problem(stored, "summary") is None
    summary = None if whole or not stored.exists() else result.summary
    create_views(con, result.store, run_ids, summary)
