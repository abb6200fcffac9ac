"""One part of an experiment as the commands that read stored results see it (``compare``,
``plot``, ``query``, the run tables): its own summary rows, its own swept columns, and matrix runs
labelled by their pair.

summary.parquet holds every part's rows in one table, with one column per field path swept in any
part; a part's rows have ``"nan"`` (or NaN) in the columns of the other parts' sweeps, and a
``[matrix]`` part's runs have ``matrix_row`` and ``matrix_col``. A view keeps a part's rows, drops
the columns it does not sweep and adds ``pair`` (``"cubic vs reno"``: the row flavor, which starts
first, against the column flavor).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ccarena.errors import UserError

PAIR = "pair"
"""The column naming a matrix run's ordered pair, ``"<row> vs <column>"``."""

MATRIX_KEYS = ("matrix_row", "matrix_col")
"""The summary columns of a matrix run's row and column flavor."""


def missing(values: pd.Series) -> pd.Series:
    """True where a summary value is absent: NA/NaN, or the text ``"nan"``/``""`` that a swept
    column holds for the runs of parts that do not sweep it."""
    text = values.astype("string")
    return values.isna() | text.isna() | text.isin(["nan", "<NA>", "None", ""])


def label_pairs(summary: pd.DataFrame) -> pd.DataFrame:
    """``summary`` with a ``pair`` column ``"<matrix_row> vs <matrix_col>"`` (NA for rows of
    runs that are not in a matrix), placed before ``matrix_row``; unchanged when it has no matrix
    columns or already has ``pair``."""
    if PAIR in summary.columns or not set(MATRIX_KEYS) <= set(summary.columns):
        return summary
    row, col = summary["matrix_row"], summary["matrix_col"]
    absent = missing(row) | missing(col)
    pair = (row.astype("string") + " vs " + col.astype("string")).mask(absent)
    out = summary.copy()
    out.insert(out.columns.get_loc("matrix_row"), PAIR, pair.astype("string"))
    return out


def pair_params(params: list[str]) -> list[str]:
    """Swept parameters with ``matrix_row``/``matrix_col`` replaced by the one ``pair`` column."""
    out: list[str] = []
    for p in params:
        q = PAIR if p in MATRIX_KEYS else p
        if q not in out:
            out.append(q)
    return out


def labelled(table: pd.DataFrame, params: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """A summary-like ``table`` (per run and flow, or aggregated) of one part and its swept
    columns ``params`` as a run table shows them: the columns of ``params`` that hold nothing
    here (another part's sweep) dropped, and a matrix's ``matrix_row``/``matrix_col`` shown as one
    ``pair`` column (:func:`label_pairs`), also when ``params`` (an experiment's own sweep, which
    leaves out its parts' matrices) does not name them."""
    present = [p for p in params if p in table.columns and not bool(missing(table[p]).all())]
    out = part_summary(table, present, params) if len(table) else table
    if PAIR in out.columns:
        present = [*present, *MATRIX_KEYS]
    return out, [p for p in pair_params(present) if p in out.columns]


@dataclass
class View:
    """One part of an experiment as a table.

    Attributes:
        part: the part's name ("" for a scenario without ``[[parts]]``).
        name: the experiment's name, with the part's after a dash when it has one.
        summary: the part's summary rows (one per run and flow), without the swept columns of
            other parts, with ``pair`` for a matrix.
        parameters: the part's swept columns (``pair`` for a matrix), as columns of ``summary``.
        run_ids: the part's complete runs.
        root: the experiment's directory.
    """

    part: str
    name: str
    summary: pd.DataFrame
    parameters: list[str]
    run_ids: list[str]
    root: Path


def part_summary(summary: pd.DataFrame, params: list[str], all_params: list[str]) -> pd.DataFrame:
    """``summary`` (one part's rows) without the columns of ``all_params`` that are not in
    ``params`` and hold nothing for these rows, with ``pair`` for a matrix (:func:`label_pairs`)."""
    others = [c for c in all_params if c not in params and c in summary.columns
              and bool(missing(summary[c]).all())]
    if "matrix_row" in summary.columns and bool(missing(summary["matrix_row"]).all()):
        others += [c for c in (*MATRIX_KEYS, "matrix_role") if c in summary.columns]
    return label_pairs(summary.drop(columns=others))


def view(part: Any) -> View:
    """The :class:`View` of a :class:`ccarena.results.PartResult`."""
    result = part.result
    every = list(result.parameters)
    for p in result.parts():
        every += [q for q in p.parameters if q not in every]
    params = pair_params(part.parameters)
    summary = part_summary(part.summary, part.parameters, every) if len(part.summary) else part.summary
    return View(part=part.part, name=part.name, summary=summary,
                parameters=[p for p in params if p in summary.columns], run_ids=part.run_ids,
                root=part.root)


def part_names(result: Any) -> list[str]:
    """The names of ``result``'s ``[[parts]]`` ([] for a scenario without them)."""
    return [p.part for p in result.parts() if p.part]


def select(result: Any, part: str | None, option: str = "--part") -> list[View]:
    """The views of ``result``'s parts that have complete runs (every part when ``part`` is None,
    else the one named).

    Raises:
        UserError: ``part`` is given and the experiment has no such part (the message lists its
            parts) or no parts at all.
    """
    if part is None:
        return [view(p) for p in result.parts() if p.run_ids]
    names = part_names(result)
    if not names:
        raise UserError(f"{option}: {result.root} has no parts (its scenario has no [[parts]]); "
                        f"leave {option} out")
    if part not in names:
        from ccarena.flavors import suggest

        raise UserError(f"{option}: no part '{part}' in {result.root}{suggest(part, names)}; "
                        f"parts: {', '.join(names)}")
    return [view(p) for p in result.parts() if p.part == part]
