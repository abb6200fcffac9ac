"""What ``ccarena query`` reads and prints: views over an experiment's stored files, and a result
fetched within bounds.

The views name each run's file explicitly (a list handed to DuckDB's ``read_parquet``) rather
than a glob over ``runs/*/``: a directory whose name holds a glob character (``[``, ``*``,
``?``, ``{``) or a quote then works as any other, and runs left out as damaged
(:meth:`ccarena.store.ExperimentStore.readable_runs`) stay out. Rows are fetched as a stream: a
table shows the first ``limit`` rows and says how many more there are; CSV is written batch by
batch, so a result of 10⁸ rows takes bounded memory.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from ccarena.errors import UserError
from ccarena.store.experiment_store import OPTIONAL_RUN_TABLES, RUN_TABLES, ExperimentStore

if TYPE_CHECKING:
    import pandas as pd

FETCH_BATCH_ROWS = 10_000
"""Rows fetched from DuckDB at a time when streaming a result."""

COUNT_BUDGET_S = 5.0
"""How long counting the rows beyond a table's limit may take before it is given up."""


def sql_string(text: str) -> str:
    """``text`` as an SQL string literal (single quotes, doubled inside)."""
    return "'" + text.replace("'", "''") + "'"


def run_files(store: ExperimentStore, run_ids: list[str], table: str) -> list[Path]:
    """The absolute paths of ``table``'s file (one of :data:`RUN_TABLES`) of each run in
    ``run_ids`` that has one, in order."""
    files = [store.run_dir(r).resolve() / f"{table}.parquet" for r in run_ids]
    return [f for f in files if f.is_file()]


def create_views(con: Any, store: ExperimentStore, run_ids: list[str],
                 summary: pd.DataFrame | None = None) -> None:
    """Create the query views on the DuckDB connection ``con``: ``summary`` and one view per
    table of :data:`RUN_TABLES` over the files of ``run_ids`` (listed explicitly, so paths with
    glob characters or quotes work), each read with ``union_by_name``.

    ``summary`` is the frame the ``summary`` view shows (a part's rows, or a summary built again
    from the runs); None reads the experiment's summary.parquet itself, when there is one.
    """
    if summary is not None:
        con.register("ccarena_summary", summary)
        con.execute("CREATE VIEW summary AS SELECT * FROM ccarena_summary")
    elif (store.root / "summary.parquet").is_file():
        path = sql_string(str((store.root / "summary.parquet").resolve()))
        con.execute(f"CREATE VIEW summary AS SELECT * FROM read_parquet({path})")
    for table in RUN_TABLES + OPTIONAL_RUN_TABLES:
        files = run_files(store, run_ids, table)
        if files:
            listed = ", ".join(sql_string(str(f)) for f in files)
            con.execute(f"CREATE VIEW {table} AS SELECT * FROM "
                        f"read_parquet([{listed}], union_by_name = true)")


@dataclass
class Rows:
    """The first rows of a query's result.

    Attributes:
        columns: the result's column names (empty for a statement that returns no rows).
        rows: at most the limit asked for, as tuples of Python values.
        more: rows of the result beyond ``rows`` (0 when every row is there; None when there
            are more but counting them took longer than :data:`COUNT_BUDGET_S`).
    """

    columns: list[str]
    rows: list[tuple[Any, ...]]
    more: int | None


def _execute(con: Any, sql: str) -> Any:
    """``con.execute(sql)`` as a cursor.

    Raises:
        UserError: the SQL holds no statement (DuckDB executes an empty string, or only
            comments, as nothing).
        duckdb.Error: DuckDB refuses or fails it.
    """
    if not sql.strip() or not con.extract_statements(sql):
        raise UserError("query: the SQL holds no statement; give one, e.g. "
                        "\"SELECT * FROM summary\"")
    cursor = con.execute(sql)
    if cursor is None:
        raise UserError("query: the SQL holds no statement; give one, e.g. "
                        "\"SELECT * FROM summary\"")
    return cursor


def fetch_rows(con: Any, sql: str, limit: int) -> Rows:
    """Run ``sql`` on ``con`` and fetch its first ``limit`` rows (streamed: the rest of the
    result is never held); when there are more, count them (``SELECT count(*)`` over the
    statement, when it is a single query, given up after :data:`COUNT_BUDGET_S`).

    Raises:
        UserError: the SQL holds no statement.
        duckdb.Error: DuckDB refuses or fails it.
    """
    cursor = _execute(con, sql)
    columns = [d[0] for d in cursor.description] if cursor.description else []
    if not columns:
        return Rows([], [], 0)
    rows = cursor.fetchmany(limit + 1)
    if len(rows) <= limit:
        return Rows(columns, rows, 0)
    total = _count(con, sql)
    return Rows(columns, rows[:limit], None if total is None else max(total - limit, 1))


def _count(con: Any, sql: str) -> int | None:
    """Rows of the single query ``sql`` (None when it is not one, or counting exceeds
    :data:`COUNT_BUDGET_S`: DuckDB's ``interrupt`` stops it)."""
    import duckdb

    try:
        statements = con.extract_statements(sql)
    except duckdb.Error:
        return None
    if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
        return None
    counter = con.cursor()
    timer = threading.Timer(COUNT_BUDGET_S, counter.interrupt)
    timer.start()
    try:
        # A newline before the parenthesis ends a trailing comment; a trailing ';' would end
        # the statement inside it.
        query = statements[0].query.rstrip().rstrip(";")
        (total,) = counter.execute(f"SELECT count(*) FROM ({query}\n)").fetchone()
        return int(total)
    except (duckdb.Error, RuntimeError):
        return None
    finally:
        timer.cancel()
        counter.close()


def stream_rows(con: Any, sql: str, limit: int | None = None
                ) -> tuple[list[str], Iterator[list[tuple[Any, ...]]]]:
    """Run ``sql`` on ``con``: its column names, and its rows in batches of
    :data:`FETCH_BATCH_ROWS` (at most ``limit`` rows in all when given), fetched as they are
    consumed.

    Raises:
        UserError: the SQL holds no statement.
        duckdb.Error: DuckDB refuses or fails it (also while the batches are fetched).
    """
    cursor = _execute(con, sql)
    columns = [d[0] for d in cursor.description] if cursor.description else []

    def batches() -> Iterator[list[tuple[Any, ...]]]:
        left = limit
        while columns and (left is None or left > 0):
            batch = cursor.fetchmany(FETCH_BATCH_ROWS if left is None else min(left, FETCH_BATCH_ROWS))
            if not batch:
                return
            if left is not None:
                left -= len(batch)
            yield batch

    return columns, batches()
