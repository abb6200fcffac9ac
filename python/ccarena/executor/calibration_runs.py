"""``ccarena calibrate``: the calibration suite (:mod:`ccarena.experiment.calibration_suite`) run on the
simulator and on this machine's kernel through :func:`ccarena.executor.run_experiment`, and its
per-cell comparison (:mod:`ccarena.analysis.calibration_cells`) stored beside the summary as
``calibration.parquet``.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from rich.console import Console

from ccarena.analysis.calibration_cells import calibration_table
from ccarena.backends import calibration_backends, offered_flavors
from ccarena.errors import UserError
from ccarena.executor import ExperimentOutcome, run_experiment
from ccarena.experiment.calibration_suite import calibration_flavors, calibration_scenario
from ccarena.flavors import tcp_flavors
from ccarena.scenario import load_scenario
from ccarena.store import ExperimentStore

CALIBRATION_TABLE = "calibration"
"""The stored table's name (``calibration.parquet``)."""


def kernel_flavors() -> list[str]:
    """The catalogue's TCP flavors this kernel offers (``tcp_available_congestion_control``), in
    catalogue order.

    Raises:
        UserError: the kernel offers none of them.
    """
    available = offered_flavors(calibration_backends()[1])
    flavors = calibration_flavors(list(tcp_flavors()), available)
    if not flavors:
        raise UserError("calibrate: this kernel offers none of ccarena's TCP flavors (available: "
                        f"{' '.join(available) or 'none'}); `ccarena doctor` says more")
    return flavors


def run_calibration(root: str | Path, *, quick: bool = False, flavors: list[str] | None = None,
                    repeats: int = 1, jobs: int | None = None, resume: bool = False, console: Console | None = None,
                    show_progress: bool = True) -> tuple[ExperimentOutcome, pd.DataFrame]:
    """Run the calibration suite into ``root`` on the simulator and the kernel
    (:func:`ccarena.backends.calibration_backends`) and store its table.

    Args:
        root: the experiment directory.
        quick: the quick suite (fewer cells, shorter runs).
        flavors: the flavors to calibrate (default: :func:`kernel_flavors`).
        repeats: runs per cell and backend, each with its own seed (the table compares means).
        jobs: worker processes for the simulator's runs (kernel runs go one at a time).
        resume: keep runs already complete in ``root`` (after Ctrl-C); by default every run is
            done again, since a calibration measures the machine and the engine as they are now.
        console, show_progress: as for :func:`ccarena.executor.run_experiment`.

    Returns:
        The outcome and the per-cell table (:func:`ccarena.analysis.calibration_cells.calibration_table`;
        empty when no cell finished on both backends).

    Raises:
        UserError: the kernel backend cannot run here (not root, no flavor, ...).
    """
    flavors = flavors or kernel_flavors()
    loaded = load_scenario(calibration_scenario(flavors, quick=quick, repeats=repeats))
    outcome = run_experiment(loaded, root, jobs=jobs, force=not resume, console=console,
                             show_progress=show_progress, backends=list(calibration_backends()))
    store = ExperimentStore(root)
    table = pd.DataFrame()
    if (Path(root) / "summary.parquet").is_file():
        table = calibration_table(store.read_summary())
        store.write_experiment_table(CALIBRATION_TABLE, table)
    return outcome, table
