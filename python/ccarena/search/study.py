"""The search loop: Optuna's ask-and-tell interface in batches of ``jobs`` trials, each batch run
in parallel by a runner (:mod:`ccarena.search.runners`) into one experiment directory
(``OUT/trials``, run ``t0007`` for trial 7), each run's objective measured from its stored tables
(:mod:`ccarena.search.objectives`) and told back in trial order.

Reproducible: the sampler is seeded, every batch is asked in full before any of it is told, and
values are told in trial order, so the same ``seed`` and ``jobs`` give the same trials and result
whatever executor runs them and in whatever order the runs finish. A trial whose point is not a
valid scenario, is over the memory budget, or fails in the engine is told as failed with its
reason; the search goes on.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ccarena.errors import UserError
from ccarena.scenario import ExecutorOptions, LoadedScenario
from ccarena.search.objectives import Objective, measure_run
from ccarena.search.proposals import Proposal
from ccarena.search.space import SearchSpace

if TYPE_CHECKING:
    import optuna

SAMPLERS = ("tpe", "cmaes", "ga", "random", "grid")
"""``--sampler`` values: Optuna's TPESampler (the default), CmaEsSampler (needs the ``cmaes``
package), NSGAIISampler (a genetic algorithm), RandomSampler and GridSampler (the baselines)."""


def grid_values(space: SearchSpace, trials: int) -> dict[str, list[Any]]:
    """An equal-budget grid over ``space``: every choice of each categorical field, and
    ``k = ⌊(trials / choices)^(1/d)⌋`` (at least 2) evenly spaced values of each of the ``d``
    numeric parameters (geometrically spaced on a log range; whole numbers deduplicated), so the
    grid has at most ``trials`` points when ``trials`` allows 2 per parameter."""
    import numpy as np

    from ccarena.search.space import Choice

    domains: dict[str, Any] = {f.name: f.domain for f in space.fields}
    for t in space.traces:
        domains.update(zip(t.names, t.params))
    choices = math.prod(len(d.values) for d in domains.values() if isinstance(d, Choice))
    numeric = [n for n, d in domains.items() if not isinstance(d, Choice)]
    k = 2
    if numeric:
        k = max(2, int(math.floor((trials / choices) ** (1 / len(numeric)) + 1e-9)))
    out: dict[str, list[Any]] = {}
    for name, d in domains.items():
        if isinstance(d, Choice):
            out[name] = list(d.values)
            continue
        points = (np.geomspace if d.log else np.linspace)(d.low, d.high, k)
        out[name] = sorted({int(round(p)) for p in points}) if d.integer \
            else [float(p) for p in points]
    return out


def make_sampler(name: str, seed: int, trials: int, jobs: int,
                 space: SearchSpace | None = None) -> optuna.samplers.BaseSampler:
    """The seeded Optuna sampler ``name`` (:data:`SAMPLERS`).

    - ``tpe``: Tree-structured Parzen Estimator (Bergstra et al., "Algorithms for Hyper-Parameter
      Optimization", NeurIPS 2011), multivariate, its first ``max(jobs, min(10, trials // 4))``
      trials random;
    - ``cmaes``: CMA-ES (Hansen, "The CMA Evolution Strategy: A Tutorial", arXiv:1604.00772);
    - ``ga``: NSGA-II's crossover and mutation (Deb et al., IEEE TEC 2002) on a population of
      ``max(jobs, min(20, max(4, trials // 4)))``;
    - ``random``: independent uniform draws;
    - ``grid``: :func:`grid_values` of ``space``, in a seeded order.

    Raises:
        UserError: an unknown name, or ``cmaes`` without the ``cmaes`` package.
    """
    import optuna

    if name == "tpe":
        startup = max(jobs, min(10, trials // 4))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup,
                                              multivariate=True)
    if name == "cmaes":
        try:
            import cmaes  # noqa: F401
        except ImportError:
            raise UserError("--sampler cmaes needs the cmaes package: pip install cmaes "
                            "(or use --sampler tpe)") from None
        return optuna.samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False)
    if name == "ga":
        population = max(jobs, min(20, max(4, trials // 4)))
        return optuna.samplers.NSGAIISampler(seed=seed, population_size=population)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "grid" and space is not None:
        class AskTellGrid(optuna.samplers.GridSampler):
            """GridSampler without its stop at the last point: ``Study.stop`` works only inside
            ``optimize``, and the loop asks no more than the grid holds."""

            def after_trial(self, *args: Any) -> None:
                return None

        return AskTellGrid(grid_values(space, trials), seed=seed)
    raise UserError(f"--sampler: unknown sampler '{name}'; one of {', '.join(SAMPLERS)}")


@dataclass
class TrialOutcome:
    """One trial: ``number``; ``params`` (parameter name → value in its base unit); ``state``
    (``complete`` or ``failed``); ``value`` (the objective, NaN when failed); ``error`` (why it
    failed); ``run_id``; ``raw`` (its scenario as written, None when it could not be made);
    ``wall_s`` (the run's wall time)."""

    number: int
    params: dict[str, Any]
    state: str = "failed"
    value: float = math.nan
    error: str = ""
    run_id: str = ""
    raw: dict[str, Any] | None = None
    wall_s: float = math.nan


@dataclass
class SearchResult:
    """What :func:`run_search` did: every trial in order, the Optuna study, the trials'
    experiment directory, where the runs executed, and the total wall time (s)."""

    trials: list[TrialOutcome]
    study: Any
    trials_root: Path
    where: str
    wall_s: float
    plans: list[Any] = field(default_factory=list)

    def complete(self) -> list[TrialOutcome]:
        """The trials with a value."""
        return [t for t in self.trials if t.state == "complete"]


def _trial_plan(space: SearchSpace, values: dict[str, Any], trace_dir: Path, number: int,
                max_memory_bytes: int | None,
                genomes: dict[str, Any] | None = None) -> tuple[dict[str, Any], Any]:
    """Trial ``number``'s scenario as written and its run plan (run id ``tNNNN``); ``genomes``:
    the packet-level traces by link (:meth:`SearchSpace.scenario`).

    Raises:
        UserError: the point is not a valid scenario, or over the memory budget.
        ValueError: a trace generator refuses its parameters.
    """
    from ccarena.experiment import expand
    from ccarena.experiment.budget import check_budget
    from ccarena.scenario import load_scenario

    label = f"t{number:04d}"
    raw = space.scenario(values, trace_dir, label, genomes)
    plans = expand(load_scenario(raw))
    check_budget(plans, max_memory_bytes)
    return raw, replace(plans[0], run_id=label, point=number, params=dict(values))


def run_search(loaded: LoadedScenario, space: SearchSpace, objective: Objective, *, out: Path,
               trials: int, sampler: str, seed: int, jobs: int, executor: ExecutorOptions,
               workers: int, max_memory_bytes: int | None = None,
               on_trial: Callable[[TrialOutcome, TrialOutcome | None], None] | None = None) -> SearchResult:
    """Run ``trials`` trials of ``space`` for ``objective`` into ``out/trials`` (an experiment
    directory whose runs are ``t0000``, ``t0001``, …; traces in ``out/traces``).

    Args:
        loaded: the base scenario (one part, no sweep).
        space: the searched fields (:func:`ccarena.search.space.parse_space`).
        objective: what is sought (:func:`ccarena.search.objectives.parse_objective`).
        out: the search's directory (created).
        trials: how many trials.
        sampler: :data:`SAMPLERS` (with a ``packets`` trace in ``space``, ccarena's own genetic
            algorithm runs instead: :class:`ccarena.search.evolve.TraceEvolution`).
        seed: the sampler's seed.
        jobs: trials per batch (asked together, run in parallel).
        executor: where the runs execute.
        workers: worker processes of a local pool (≤ ``jobs``; 1 runs here).
        max_memory_bytes: the per-run memory budget (None: half this machine's memory).
        on_trial: called with each trial as it is told, and the best trial so far.

    Raises:
        UserError: a bad sampler, the directory is locked by another ccarena, the cluster cannot
            be reached.
        KeyboardInterrupt: Ctrl-C; the trials told so far are in the result's study only if the
            caller catches it (the runs stay stored).
    """
    import optuna

    from ccarena.backends import MEMORY_BUDGET_ENV
    from ccarena.executor import experiment_meta
    from ccarena.search.runners import open_runner
    from ccarena.store import ExperimentStore
    from ccarena.store.guard import check_tree, experiment_lock

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    proposer: Any
    if space.packet_traces():
        from ccarena.search.evolve import TraceEvolution

        proposer = TraceEvolution(space, objective, seed=seed, trials=trials, jobs=jobs)
    else:
        proposer = OptunaProposer(space, objective, make_sampler(sampler, seed, trials, jobs, space))
        if sampler == "grid":  # past its size the grid would repeat points
            trials = min(trials, math.prod(len(v) for v in grid_values(space, trials).values()))
    study = proposer.study
    root = out / "trials"
    trace_dir = out / "traces"
    check_tree(root)
    root.mkdir(parents=True, exist_ok=True)
    if max_memory_bytes is not None:  # the engine's own stop, here and in pool workers
        os.environ[MEMORY_BUDGET_ENV] = str(max_memory_bytes)
    store = ExperimentStore(root)
    name = loaded.scenario.name
    outcomes: list[TrialOutcome] = []
    plans: list[Any] = []
    best: TrialOutcome | None = None
    t0 = time.perf_counter()
    with experiment_lock(root):
        store.cleanup_tmp()
        store.write_experiment(experiment_meta(loaded, []))  # Dask workers look for it
        with open_runner(str(root), name, executor, workers, max_memory_bytes) as runner:
            while len(outcomes) < trials:
                asked = [proposer.ask() for _ in range(min(jobs, trials - len(outcomes)))]
                batch: dict[int, TrialOutcome] = {}
                to_run = []
                for proposal in asked:
                    outcome = TrialOutcome(number=proposal.number, params=proposal.values)
                    batch[proposal.number] = outcome
                    try:
                        outcome.raw, plan = _trial_plan(space, proposal.values, trace_dir,
                                                        proposal.number, max_memory_bytes,
                                                        proposal.genomes)
                    except (UserError, ValueError) as err:
                        outcome.error = str(err).split("\n")[0]
                        continue
                    outcome.run_id = plan.run_id
                    to_run.append(plan)
                    plans.append(plan)
                results = runner.run(to_run) if to_run else {}
                for proposal in asked:  # told in trial order: the same study whatever finished first
                    outcome = batch[proposal.number]
                    result = results.get(outcome.run_id)
                    if result is not None and result["status"] == "complete":
                        outcome.wall_s = float(result.get("wall_s", math.nan))
                        outcome.value = measure_run(objective, store, outcome.run_id)
                        if math.isfinite(outcome.value):
                            outcome.state = "complete"
                        else:
                            outcome.error = f"{objective.name} is not defined for this run"
                    elif result is not None:
                        outcome.error = str(result.get("error", "the run failed")).split("\n")[0]
                    if outcome.state == "complete" and (
                            best is None or objective.better(outcome.value, best.value)):
                        best = outcome
                    proposer.tell(proposal, outcome)
                    outcomes.append(outcome)
                    if on_trial is not None:
                        on_trial(outcome, best)
        _write_experiment(store, loaded, plans)
    return SearchResult(trials=outcomes, study=study, trials_root=root, where=runner.where,
                        wall_s=time.perf_counter() - t0, plans=plans)


class OptunaProposer:
    """Points from an Optuna sampler (ask-and-tell): ``ask`` draws a trial's values
    (:meth:`SearchSpace.suggest`), ``tell`` gives back its value or its failure."""

    def __init__(self, space: SearchSpace, objective: Objective,
                 sampler: optuna.samplers.BaseSampler) -> None:
        import optuna

        self.space = space
        self.study = optuna.create_study(direction=objective.direction, sampler=sampler)

    def ask(self) -> Proposal:
        """The next trial and its values."""
        trial = self.study.ask()
        return Proposal(number=trial.number, values=self.space.suggest(trial), handle=trial)

    def tell(self, proposal: Proposal, outcome: TrialOutcome) -> None:
        """Tell the study the trial's value (or that it failed, with the reason)."""
        import optuna

        trial = proposal.handle
        if outcome.state == "complete":
            self.study.tell(trial, outcome.value)
        else:
            trial.set_user_attr("error", outcome.error)
            self.study.tell(trial, state=optuna.trial.TrialState.FAIL)


def _write_experiment(store: Any, loaded: LoadedScenario, plans: list[Any]) -> None:
    """experiment.json naming every trial's run, and summary.parquet over the complete ones:
    ``OUT/trials`` reads as an ordinary experiment (``ccarena report``, ``query``)."""
    from ccarena.executor import experiment_meta
    from ccarena.store import build_summary

    store.write_experiment(experiment_meta(loaded, plans))
    done = [p for p in plans if store.is_complete(p.run_id)]
    if done:
        store.write_summary(build_summary(store, done))
