"""The results store: one directory per experiment, one sub-directory per run (README.md,
"Results reference")::

    <experiment>/
      experiment.json          the scenario as given and as resolved, software versions
      runs/<run_id>/run.json   the run's parameters, seed, backend, status, timings, resolved spec
      runs/<run_id>/flows.parquet, samples.parquet, queues.parquet, links.parquet, regions.parquet
      runs/<run_id>/pcap/*.pcap ``[output] pcap`` only: one packet capture per link direction
      summary.parquet          one row per run and flow, sweep parameters as columns
      calibration.parquet      ``ccarena calibrate`` only: one row per cell, sim vs kernel
      failed/<run_id>.json     runs the engine failed on (spec and seed for replay)
      report.html, figures/*.png

A run directory is written whole in ``.tmp/`` and renamed into ``runs/`` (rename is atomic on one
file system), so ``runs/`` never holds a half-written run: a run is complete exactly when its
directory exists. JSON and summary files are written to a temporary name and renamed too.
One process at a time should write an experiment directory.

Every file is verified as it is read (:mod:`ccarena.store.verify`): one cut short, overwritten or
of another schema is a :class:`DamagedFile` naming it and its run, and readers of many runs leave
such runs out (:meth:`ExperimentStore.readable_runs`).
"""

from typing import Any

from ccarena.store.experiment_store import RUN_TABLES, ExperimentStore
from ccarena.durable_files import atomic_write_bytes
from ccarena.store.file_formats import json_dumps, write_parquet
from ccarena.store.format import FORMAT_VERSION, upgrade_record
from ccarena.store.verify import DamagedFile

STORE_FORMAT = FORMAT_VERSION
"""Version of the layout this ccarena writes (``format_version`` in experiment.json and run.json)."""


def __getattr__(name: str) -> Any:
    # The summary's columns come from the metrics (numpy, pandas): loaded on first use, so a
    # command that starts a run first loads them while the run works.
    if name in ("SUMMARY_FLOW_COLUMNS", "build_summary"):
        from ccarena.store import summary

        return getattr(summary, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["FORMAT_VERSION", "RUN_TABLES", "STORE_FORMAT", "SUMMARY_FLOW_COLUMNS", "DamagedFile",
           "ExperimentStore", "atomic_write_bytes", "build_summary", "json_dumps", "upgrade_record", "write_parquet"]
