"""Adversarial (or optimizing) search over a scenario's fields and link capacity traces:
``ccarena search SCENARIO --objective … --over …`` (docs/search.md).

Optuna's samplers propose points (:mod:`ccarena.search.study`), in batches run in parallel on the
executors ``ccarena run`` uses (:mod:`ccarena.search.runners`); each point is the scenario with
the searched fields set (:mod:`ccarena.search.space`, traces from :mod:`ccarena.search.trace_shapes`),
scored from its stored run (:mod:`ccarena.search.objectives`); the trials table, the worst cases
as scenario files with their runs, a figure and a report are written at the end
(:mod:`ccarena.search.outputs`). A ``packets`` trace (each delivery opportunity a gene,
:mod:`ccarena.search.packet_traces`) is evolved by ccarena's own genetic algorithm
(:mod:`ccarena.search.evolve`) in the same loop. In the spirit of CC-Fuzz (Agarwal et al., HotNets 2022), which
searched link traces with a genetic algorithm for conditions that break a controller.

Entry point: :func:`search`.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ccarena.errors import UserError
from ccarena.scenario import ExecutorOptions, LoadedScenario
from ccarena.search.objectives import Objective, parse_objective
from ccarena.search.outputs import WorstCase
from ccarena.search.space import SearchSpace, parse_space
from ccarena.search.study import SAMPLERS, SearchResult, TrialOutcome, make_sampler, run_search

__all__ = ["SAMPLERS", "SearchOutcome", "prepare", "search"]

OWNED = ("trials", "traces", "worst", "trials.csv", "trials.parquet", "objective.png",
         "report.md")
"""What a search writes in its directory (replaced by ``force``)."""


@dataclass
class SearchOutcome:
    """What :func:`search` did and wrote: ``result`` (the trials), ``table`` (trials.csv's
    rows), ``worst`` (the kept cases), ``ranking`` (parameter → importance), ``objective``,
    ``space``, ``out`` (the directory), ``report`` and ``figure`` (paths)."""

    result: SearchResult
    table: Any
    worst: list[WorstCase]
    ranking: dict[str, float]
    objective: Objective
    space: SearchSpace
    out: Path
    report: Path
    figure: Path


def prepare(loaded: LoadedScenario, objective: str,
            over: list[str]) -> tuple[SearchSpace, Objective]:
    """Check that ``loaded`` can be searched and parse the objective and ``--over`` options.

    Raises:
        UserError: the scenario has ``[[parts]]``, a ``[sweep]`` or a ``[matrix]`` (the search
            chooses the values), runs on a backend other than the simulator, or an option is bad
            (the message names ``--objective`` or ``--over``).
    """
    from ccarena.backends import reference_backend
    from ccarena.scenario import without_sweep

    scenario = loaded.scenario
    if len(loaded.parts) != 1 or loaded.parts[0].name:
        raise UserError("search: the scenario has [[parts]]; search one scenario (merge the part "
                        "you want into the file)")
    if scenario.sweep is not None or scenario.matrix is not None:
        table = "[sweep]" if scenario.sweep is not None else "[matrix]"
        raise UserError(f"search: the scenario has a {table}; remove it — the search chooses the "
                        "values (--over)")
    if scenario.backend != reference_backend():
        raise UserError(f"search: backend = \"{scenario.backend}\"; the search runs on the "
                        f"simulator: set backend = \"{reference_backend()}\"")
    base = without_sweep(loaded.parts[0].raw)
    space = parse_space(over, base, scenario.duration_ns / 1e9)
    return space, parse_objective(objective, len(scenario.flows))


def search(loaded: LoadedScenario, *, objective: str, over: list[str], out: Path,
           trials: int = 40, sampler: str | None = None, seed: int = 0, jobs: int = 4,
           executor: ExecutorOptions | None = None, keep: int = 3, force: bool = False,
           max_memory_bytes: int | None = None, workers: int | None = None,
           on_trial: Callable[[TrialOutcome, TrialOutcome | None], None] | None = None,
           notes: Callable[[str], None] | None = None) -> SearchOutcome:
    """Search ``loaded`` for the points that score best on ``objective`` and write the results
    into ``out`` (see :mod:`ccarena.search.outputs` for the files).

    Args:
        loaded: the base scenario.
        objective: ``min-jain``, ``max-starvation``, ``max-p99-delay``, ``max-stall``,
            ``max:EXPR`` or ``min:EXPR`` (:mod:`ccarena.search.objectives`).
        over: the ``--over`` options (:mod:`ccarena.search.space`).
        out: the search's directory.
        trials: how many points to try (≥ 1).
        sampler: :data:`SAMPLERS`; None: ``tpe``, or ``ga`` with a ``packets`` trace (evolved
            by ccarena's own genetic algorithm, :mod:`ccarena.search.evolve`, the only sampler
            such a trace takes).
        seed: the sampler's seed: the same seed and ``jobs`` give the same trials and result.
        jobs: trials per batch, run in parallel (the batch is part of the result: it does not
            depend on the machine; fewer processes run when the machine has fewer cores).
        executor: where runs execute (default: the scenario's ``[executor]``).
        keep: worst cases written as scenario files and run again.
        force: replace an earlier search's files in ``out``.
        max_memory_bytes: the per-run memory budget (None: half this machine's memory).
        workers: ``dask-local`` workers (default ``jobs``, bounded as ``jobs`` is).
        on_trial: called as each trial is told (the trial, the best so far).
        notes: called with each line saying how the workers were sized.

    Raises:
        UserError: bad options, ``out`` holds an earlier search (without ``force``), the base
            scenario is over the memory budget, or the executor is misconfigured.
    """
    from ccarena.executor.clusters import check_executor
    from ccarena.executor.sizing import machine_limit, size_workers
    from ccarena.experiment import expand
    from ccarena.experiment.budget import check_budget
    from ccarena.search.outputs import (
        draw_figure,
        importance,
        trials_table,
        write_report,
        write_worst,
    )

    if trials < 1 or jobs < 1 or keep < 0:
        raise UserError("--trials and --jobs: give at least 1; --keep: at least 0")
    from ccarena.search.evolve import check_sampler

    space, goal = prepare(loaded, objective, over)
    sampler = check_sampler(space, sampler)
    make_sampler(sampler, seed, trials, jobs, space)  # an unknown or unusable one: said now
    base_plans = expand(loaded)
    check_budget(base_plans, max_memory_bytes)
    table_options = loaded.scenario.executor
    executor = executor or table_options
    if workers is not None:
        executor = executor.model_copy(update={"workers": workers})
    check_executor(executor)
    pool, executor, lines = size_workers(executor, table_options, jobs, jobs,
                                         machine_limit(base_plans))
    for line in lines:
        if notes is not None:
            notes(line)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out}: exists and is not a directory")
    earlier = [name for name in OWNED if (out / name).exists()]
    if earlier and not force:
        raise UserError(f"--out {out}: holds an earlier search ({earlier[0]}); add --force to "
                        "replace it, or give another --out")
    for name in earlier:
        path = out / name
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    out.mkdir(parents=True, exist_ok=True)
    result = run_search(loaded, space, goal, out=out, trials=trials, sampler=sampler, seed=seed,
                        jobs=jobs, executor=executor, workers=pool if executor.kind == "process"
                        else (executor.workers or jobs), max_memory_bytes=max_memory_bytes,
                        on_trial=on_trial)
    table = trials_table(result, space, goal)
    table.to_csv(out / "trials.csv", index=False)
    table.to_parquet(out / "trials.parquet", index=False)
    worst = write_worst(result, goal, out, keep, name=loaded.scenario.name, seed=seed)
    ranking = importance(result)
    figure = draw_figure(result, goal, space, ranking, out / "objective.png")
    shown = "ccarena's genetic algorithm over packet traces" if space.packet_traces() else sampler
    settings = {"scenario": loaded.source or loaded.scenario.name, "sampler": shown,
                "seed": seed, "jobs": jobs}
    report = write_report(result, goal, space, ranking, worst, out, settings=settings)
    return SearchOutcome(result=result, table=table, worst=worst, ranking=ranking,
                         objective=goal, space=space, out=out, report=report, figure=figure)
