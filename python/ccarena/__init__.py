"""ccarena: compare TCP congestion controllers and UDP transports on network topologies.

Python API (for notebooks)::

    import ccarena
    result = ccarena.run("examples/quickstart.toml")   # or a dict with the same fields
    result.summary            # pandas DataFrame: one row per run and flow
    result.flows, result.samples, result.queues, result.links, result.regions
    result.report()           # writes report.html, returns its path
    ccarena.load("results/quickstart")                 # the same object from stored results
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

from ccarena.errors import EngineFault, UserError  # noqa: E402

if TYPE_CHECKING:
    from ccarena.results import Result
    from ccarena.scenario import LoadedScenario, Scenario, load_scenario


def run(scenario: str | Path | dict[str, Any], out: str | Path | None = None, *,
        results_dir: str | Path = "results", jobs: int | None = None, force: bool = False,
        progress: bool = False, report: bool = False) -> "Result":
    """Run a scenario (a TOML path or a dict) and return its :class:`Result`.

    Args:
        scenario: path of a scenario file, or the scenario as a dict (TOML's structure).
        out: the experiment directory (default ``<results_dir>/<scenario name>``).
        results_dir: parent of the default experiment directory.
        jobs: worker processes (default all cores).
        force: redo runs already stored.
        progress: draw rich progress bars on stderr.
        report: also write report.html.

    Raises:
        UserError: the scenario is invalid, or ``out`` holds another scenario's runs.
        EngineFault: the engine failed on a run (other runs are kept).
        KeyboardInterrupt: interrupted; finished runs are kept.
    """
    from ccarena.executor import run_experiment
    from ccarena.results import Result
    from ccarena.scenario import load_scenario

    loaded = load_scenario(scenario)
    root = Path(out) if out is not None else Path(results_dir) / loaded.scenario.name
    outcome = run_experiment(loaded, root, jobs=jobs, force=force, show_progress=progress)
    if outcome.interrupted:
        raise KeyboardInterrupt
    outcome.raise_for_failures()
    result = Result(root, outcome)
    if report:
        result.report()
    return result


def load(directory: str | Path) -> "Result":
    """The :class:`Result` of an experiment stored in ``directory``.

    Raises:
        UserError: ``directory`` is not a results directory.
    """
    from ccarena.results import Result

    return Result(directory)


def __getattr__(name: str) -> Any:
    # The scenario schema (pydantic) and results (pandas) load on first use, so `ccarena --help`
    # and `ccarena --version` start without them.
    if name == "Result":
        from ccarena.results import Result

        return Result
    if name in ("LoadedScenario", "Scenario", "load_scenario"):
        from ccarena import scenario

        return getattr(scenario, name)
    raise AttributeError(name)


__all__ = ["run", "load", "load_scenario", "Result", "Scenario", "LoadedScenario", "UserError",
           "EngineFault", "__version__"]
