"""Reading an experiment's stored results: the summary table and the :class:`Result` object the
Python API returns (``ccarena.run(...)`` / ``ccarena.load(...)``)."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from ccarena.analysis import metrics
from ccarena.errors import UserError
from ccarena.store import DamagedFile, ExperimentStore


class Result:
    """An experiment's results, read from its directory.

    Tables (pandas DataFrames, concatenated over runs, with a ``run_id`` column):
    ``flows`` (per flow: engine totals and :func:`ccarena.analysis.metrics.flow_table` metrics),
    ``samples`` (per flow and sample instant), ``queues`` (per link and sample instant),
    ``links`` (per link), ``regions`` (per region of each run), ``summary`` (summary.parquet).
    ``outcome`` is the :class:`ccarena.executor.ExperimentOutcome` when the result comes from
    :func:`ccarena.run`.

    Stored files are verified as they are read (:mod:`ccarena.store.verify`): a run with a file
    that cannot be read (cut short, overwritten, of another schema) is left out of
    :attr:`run_ids`, of the tables and of the summary, and named in :attr:`damaged` and in
    :attr:`warnings`; a damaged summary.parquet is built again from the runs. Runs written by
    this process (``outcome.completed``) are not checked again. With ``deep`` (the default)
    each run's Parquet footers are parsed and their key columns checked (0.2–0.4 ms a file);
    without, only their framing (a file cut short or overwritten; 0.03 ms a file), for readers
    of the summary alone (``ccarena plot``, ``compare``, ``query``): a table of another schema
    is then found when it is read in full (:attr:`flows` and the other tables leave its run out
    then).

    ``checked``: runs whose files another reader of the experiment has just verified (the
    report's process, handing a part to a worker process), not checked again.

    Raises:
        UserError: ``root`` holds no experiment, or its experiment.json cannot be read
            (:class:`ccarena.store.DamagedFile`).
    """

    def __init__(self, root: str | Path, outcome: Any | None = None, deep: bool = True,
                 checked: Iterable[str] = ()) -> None:
        self.root = Path(root)
        self.store = ExperimentStore(self.root)
        self.experiment = self.store.read_experiment()
        self.outcome = outcome
        self.damaged: dict[str, DamagedFile] = {}
        """Runs left out, by id: the first of the run's files that cannot be read."""
        self.warnings: list[str] = []
        """One line per file found damaged (a run left out, the summary built again), in the
        order found; :meth:`pop_warnings` takes them."""
        self._checked: set[str] = {*(getattr(outcome, "completed", None) or ()), *checked}
        self._deep = deep

    def pop_warnings(self) -> list[str]:
        """The :attr:`warnings` not yet taken (then forgotten)."""
        taken, self.warnings = self.warnings, []
        return taken

    def _leave_out(self, err: DamagedFile) -> None:
        if err.run_id is not None and err.run_id not in self.damaged:
            self.damaged[err.run_id] = err
            self.warnings.append(err.left_out())

    def require_runs(self) -> None:
        """Raise when runs are stored but none can be read (every one is damaged).

        Raises:
            UserError: one line naming the first damaged file and how many runs are.
        """
        if not self.run_ids and self.damaged:
            first = next(iter(self.damaged.values()))
            n = len(self.damaged) - 1
            more = f" (and {n} more damaged run{'s' if n > 1 else ''})" if n else ""
            raise UserError(f"{self.root}: no stored run can be read: {first.path}: {first.why}"
                            f"{more}; delete the damaged runs and run the scenario again")

    @property
    def name(self) -> str:
        """The experiment's name."""
        return self.experiment["name"]

    @property
    def run_ids(self) -> list[str]:
        """Ids of the experiment's complete runs whose files can be read, in experiment order
        (each run is checked once, the first time it is seen complete:
        :meth:`ccarena.store.ExperimentStore.readable_runs`)."""
        complete = [r["run_id"] for r in self.experiment["runs"] if self.store.is_complete(r["run_id"])]
        unchecked = [r for r in complete if r not in self._checked]
        if unchecked:
            _, damage = self.store.readable_runs(unchecked, deep=self._deep)
            for err in damage.values():
                self._leave_out(err)
            self._checked.update(unchecked)
        return [r for r in complete if r not in self.damaged]

    @property
    def parameters(self) -> list[str]:
        """The swept field paths (columns of :attr:`summary`)."""
        return list(self.experiment["sweep"]["parameters"])

    def _concat(self, table: str) -> pd.DataFrame:
        # A file damaged inside an intact frame, or (not deep) of another schema, is found only
        # now: that run is left out too.
        while True:
            try:
                return self.store.read_tables(list(self.run_ids), table, check_schema=True)
            except DamagedFile as err:
                if err.run_id is None or err.run_id in self.damaged:
                    raise
                self._leave_out(err)

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
        """summary.parquet: one row per run and flow, sweep parameters as columns; without the
        rows of runs left out (:attr:`damaged`). A damaged summary.parquet is built again from
        the readable runs (:func:`ccarena.store.build_summary`), with a warning.

        Raises:
            UserError: there is no summary.parquet (no run has finished yet).
        """
        run_ids = self.run_ids
        try:
            summary = self.store.read_summary(check_schema=True)
        except DamagedFile as err:
            from ccarena.store import build_summary

            self.warnings.append(f"{err}; the summary is built again from the runs")
            summary = build_summary(self.store, run_ids)
        if self.damaged and "run_id" in summary.columns:
            summary = summary[~summary["run_id"].isin(list(self.damaged))].reset_index(drop=True)
        return summary

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
