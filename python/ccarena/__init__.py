"""ccarena: compare TCP congestion controllers and UDP transports on network topologies.

Python API (for notebooks)::

    import ccarena
    result = ccarena.run("examples/quickstart.toml")   # or a dict with the same fields
    result.summary            # pandas DataFrame: one row per run and flow
    result.flows, result.samples, result.queues, result.links, result.regions
    result.report()           # writes report.html, returns its path
    ccarena.load("results/quickstart")                 # the same object from stored results

A sweep's runs execute on worker processes that do not import the calling script, so a script
needs no ``if __name__ == "__main__":`` guard (one read from standard input, a notebook neither).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

from ccarena.errors import EngineFault, RunFailed, UserError, WorkerDied  # noqa: E402

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
        jobs: worker processes (default all cores; 1 runs in this process). The workers do not
            import the calling script, so it needs no ``if __name__ == "__main__":`` guard.
        force: redo runs already stored.
        progress: draw rich progress bars on stderr.
        report: also write report.html.

    Raises:
        UserError: the scenario is invalid, ``out`` holds another scenario's runs or another
            ccarena is writing it (the message names the fix as arguments of this function:
            ``force=True``, ``out=...``), or this process is a worker of another program that is
            importing the calling script (:func:`_refuse_nested_run`).
        EngineFault: the engine failed on a run (other runs are kept).
        WorkerDied: the process running a run was killed (e.g. by the out-of-memory killer) or
            exited, also when the run was retried alone (other runs are kept).
        KeyboardInterrupt: interrupted; finished runs are kept.
    """
    from ccarena.errors import python_api
    from ccarena.executor import run_experiment
    from ccarena.results import Result
    from ccarena.scenario import load_scenario

    _refuse_nested_run()
    with python_api():
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


def _refuse_nested_run() -> None:
    """Refuse to start an experiment while this process is a spawned worker still importing its
    parent's ``__main__`` (``multiprocessing``'s spawn and forkserver children do; ccarena's own
    workers do not): there the call is the parent script's own, re-executed, and would start a
    second experiment into the same directory.

    Raises:
        UserError: this process is such a worker.
    """
    import multiprocessing

    # The flag multiprocessing itself sets while a child imports __main__ (its own check,
    # spawn._check_not_importing_main, reads it to refuse starting processes meanwhile).
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise UserError("ccarena.run was called while this process was starting as a worker of "
                        "another program, which re-runs the script that calls it: put the call "
                        'under if __name__ == "__main__": in that script')


def load(directory: str | Path) -> "Result":
    """The :class:`Result` of an experiment stored in ``directory``.

    Raises:
        UserError: ``directory`` is not a results directory.
    """
    from ccarena.errors import python_api
    from ccarena.results import Result

    with python_api():
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
           "RunFailed", "EngineFault", "WorkerDied", "__version__"]
