"""Reading an experiment's stored results: the summary table and the :class:`Result` object the
Python API returns (``ccarena.run(...)`` / ``ccarena.load(...)``)."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from ccarena.analysis import metrics
from ccarena.store import ExperimentStore


class Result:
    """An experiment's results, read from its directory.

    Tables (pandas DataFrames, concatenated over runs, with a ``run_id`` column):
    ``flows`` (per flow: engine totals and :func:`ccarena.analysis.metrics.flow_table` metrics),
    ``samples`` (per flow and sample instant), ``queues`` (per link and sample instant),
    ``links`` (per link), ``regions`` (per region of each run), ``summary`` (summary.parquet).
    ``outcome`` is the :class:`ccarena.executor.ExperimentOutcome` when the result comes from
    :func:`ccarena.run`.
    """

    def __init__(self, root: str | Path, outcome: Any | None = None) -> None:
        self.root = Path(root)
        self.store = ExperimentStore(self.root)
        self.experiment = self.store.read_experiment()
        self.outcome = outcome

    @property
    def name(self) -> str:
        """The experiment's name."""
        return self.experiment["name"]

    @property
    def run_ids(self) -> list[str]:
        """Ids of the experiment's complete runs, in experiment order."""
        return [r["run_id"] for r in self.experiment["runs"] if self.store.is_complete(r["run_id"])]

    @property
    def parameters(self) -> list[str]:
        """The swept field paths (columns of :attr:`summary`)."""
        return list(self.experiment["sweep"]["parameters"])

    def _concat(self, table: str) -> pd.DataFrame:
        return self.store.read_tables(list(self.run_ids), table)

    @cached_property
    def flows(self) -> pd.DataFrame:
        """Per-flow totals and metrics of every run."""
        return self._concat("flows")

    @cached_property
    def samples(self) -> pd.DataFrame:
        """Per-flow time series of every run."""
        return self._concat("samples")

    @cached_property
    def queues(self) -> pd.DataFrame:
        """Per-queue time series of every run."""
        return self._concat("queues")

    @cached_property
    def links(self) -> pd.DataFrame:
        """Per-link totals and metrics of every run."""
        return self._concat("links")

    @cached_property
    def regions(self) -> pd.DataFrame:
        """Regions (constant active-flow sets) of every run, with fairness and stability."""
        return self._concat("regions")

    @cached_property
    def summary(self) -> pd.DataFrame:
        """summary.parquet: one row per run and flow, sweep parameters as columns."""
        return self.store.read_summary()

    def aggregate(self) -> pd.DataFrame:
        """Mean, SD and 95% CI over repeats per grid point and flow
        (:func:`ccarena.analysis.metrics.aggregate_repeats`)."""
        by = ["point", *self.parameters, "flow", "name", "flavor"]
        return metrics.aggregate_repeats(self.summary, by)

    def parts(self) -> list["PartResult"]:
        """The experiment's parts (one unnamed part for a scenario without ``[[parts]]``), each a
        view of this result restricted to the part's runs."""
        metas = self.experiment.get("parts") or [{"name": "", "description": "",
                                                  "parameters": self.parameters, "repeats": 1,
                                                  "matrix": None, "report": {}}]
        return [PartResult(self, meta) for meta in metas]

    def report(self, path: str | Path | None = None) -> Path:
        """Draw the figures and write the self-contained HTML report (default
        ``<experiment>/report.html``); returns its path."""
        from ccarena.report import write_report

        return write_report(self, path)

    def _repr_html_(self) -> str:
        cols = [c for c in ("run_id", *self.parameters, "name", "goodput_mean_bps",
                            "loss_rate", "rtt_mean_s", "jain_index") if c in self.summary.columns]
        return self.summary[cols].to_html(index=False)

    def __repr__(self) -> str:
        return f"Result({str(self.root)!r}, runs={len(self.run_ids)})"


class PartResult:
    """One part of an experiment's results: the same attributes the report reads from
    :class:`Result` (``name, store, root, experiment, run_ids, parameters, summary, regions,
    aggregate()``), restricted to the part's runs.

    Attributes:
        meta: the part's entry in experiment.json (``name, description, parameters, repeats,
            matrix, report``).
    """

    def __init__(self, result: Result, meta: dict[str, Any]) -> None:
        self.result = result
        self.meta = meta
        self.store = result.store
        self.root = result.root
        self.experiment = result.experiment

    @property
    def part(self) -> str:
        """The part's name ("" for a scenario without parts)."""
        return str(self.meta.get("name", ""))

    @property
    def name(self) -> str:
        """The experiment's name, with the part's."""
        return f"{self.result.name} — {self.part}" if self.part else self.result.name

    @property
    def run_ids(self) -> list[str]:
        """Complete runs of this part, in experiment order."""
        mine = {r["run_id"] for r in self.experiment["runs"] if r.get("part", "") == self.part}
        return [r for r in self.result.run_ids if r in mine]

    @property
    def parameters(self) -> list[str]:
        """The part's swept field paths (``matrix_row``, ``matrix_col`` for a matrix)."""
        return list(self.meta.get("parameters", []))

    @cached_property
    def summary(self) -> pd.DataFrame:
        """The summary rows of this part's runs."""
        full = self.result.summary
        if "part" not in full.columns:
            return full
        return full[full["part"].fillna("") == self.part].reset_index(drop=True)

    @cached_property
    def regions(self) -> pd.DataFrame:
        """The region rows of this part's runs."""
        regions = self.result.regions
        if not len(regions):
            return regions
        return regions[regions["run_id"].isin(self.run_ids)].reset_index(drop=True)

    def read(self, table: str) -> pd.DataFrame:
        """One table (``samples``, ``queues``, ...) concatenated over this part's runs."""
        return self.store.read_tables(list(self.run_ids), table)

    def aggregate(self) -> pd.DataFrame:
        """Mean, SD and 95% CI over repeats per grid point and flow (a copy: the report asks
        for it from several places, and it is computed once)."""
        return self._aggregate.copy()

    @cached_property
    def _aggregate(self) -> pd.DataFrame:
        by = ["point", *self.parameters, "flow", "name", "flavor"]
        return metrics.aggregate_repeats(self.summary, by)
