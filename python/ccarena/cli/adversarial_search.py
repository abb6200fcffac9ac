"""``ccarena search SCENARIO --objective … --over …``: look for the scenario points (field values,
link capacity traces) that score worst for the flavors under test (:mod:`ccarena.search`)."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from ccarena.cli.console import stderr, stdout


def search(
    scenario: Path = typer.Argument(..., help="Scenario file (TOML) without [sweep].",
                                    show_default=False),
    objective: str = typer.Option(..., "--objective",
                                  help="min-jain, max-starvation, max-p99-delay, max-stall, or "
                                       "max:EXPR / min:EXPR over metrics (docs/search.md)."),
    over: list[str] = typer.Option(..., "--over",
                                   help="FIELD=LO:HI (log:LO:HI), FIELD=a|b|c, or "
                                        "trace:LINK=square|on-off|random-walk|steps[:N]|packets[:MS]"
                                        "[,P=LO:HI]; "
                                        "repeat for several."),
    trials: int = typer.Option(40, "--trials", "-n", min=1, help="Points to try."),
    sampler: Optional[str] = typer.Option(None, "--sampler",
                                          help="tpe, cmaes (needs the cmaes package), ga "
                                               "(NSGA-II; with a packets trace ccarena's own GA), "
                                               "random, or grid (an equal-budget grid) "
                                               "[default: tpe; ga with a packets trace]."),
    seed: int = typer.Option(0, "--seed", help="Sampler seed: the same seed and --jobs give the "
                                               "same trials."),
    jobs: int = typer.Option(4, "--jobs", "-j", min=1,
                             help="Trials per batch, run in parallel (fewer processes on a "
                                  "smaller machine; the trials do not change)."),
    executor: Optional[str] = typer.Option(None, "--executor",
                                           help="process, dask (--scheduler), dask-local or "
                                                "slurm [default: the scenario's, else process]."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler",
                                            help="Dask scheduler address, e.g. tcp://HOST:8786."),
    workers: Optional[int] = typer.Option(None, "--workers", min=1,
                                          help="dask-local worker processes [default: --jobs]."),
    out: Optional[str] = typer.Option(None, "--out", "-o",
                                      help="Search directory [default: RESULTS/<name>-search]."),
    results: str = typer.Option("results", "--results", help="Parent of the search directory."),
    keep: int = typer.Option(3, "--keep", min=0,
                             help="Worst cases written as scenario files and run again."),
    force: bool = typer.Option(False, "--force", help="Replace an earlier search in --out."),
    max_memory: Optional[str] = typer.Option(None, "--max-memory",
                                             help="Per-run memory budget, e.g. 8GB [default: "
                                                  "half this machine's memory]."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Search a scenario's fields and link traces for the worst case of an objective.

    Each trial is the scenario with the --over fields set by an Optuna sampler (with a
    trace:LINK=packets trace, by ccarena's genetic algorithm over its delivery times), run on the
    simulator; batches of --jobs trials run in parallel. Writes trials.csv, the worst cases as
    scenario files with their runs (worst/), objective.png and report.md.

    Examples (s.toml: examples/search-bbr-shallow.toml; more in docs/search.md):

      ccarena search s.toml --objective min-jain --over flows.1.start=0s:4s

      ccarena search s.toml --objective max-stall --over trace:bottleneck=square

      ccarena search s.toml --objective min-jain --over trace:bottleneck=packets:5

      ccarena search s.toml --objective min-jain --sampler grid -j 8 --over
      topology.bottleneck.queue.limit=2pkt:200pkt --executor dask-local
    """
    from ccarena.cli.scenario_runs import _executor_option
    from ccarena.inputs import memory_budget, parse_max_memory
    from ccarena.scenario import load_scenario
    from ccarena.search import search as run_search
    from ccarena.store.location import results_path

    memory = parse_max_memory(max_memory)
    with memory_budget(memory):
        loaded = load_scenario(scenario)
    root = results_path(out) if out is not None \
        else results_path(results) / f"{loaded.scenario.name}-search"
    options = _executor_option(loaded.scenario.executor, executor, scheduler, None)
    progress, on_trial = _progress(trials, quiet)
    with progress:
        outcome = run_search(loaded, objective=objective, over=over, out=root, trials=trials,
                             sampler=sampler, seed=seed, jobs=jobs, executor=options, keep=keep,
                             force=force, max_memory_bytes=memory, workers=workers,
                             on_trial=on_trial,
                             notes=lambda line: stderr.print(line, markup=False,
                                                             highlight=False, soft_wrap=True))
    for line in summary_lines(outcome):
        stdout.print(line, markup=False, highlight=False, soft_wrap=True)


def _progress(trials: int, quiet: bool) -> tuple[Any, Any]:
    """A progress bar over the trials (on stderr) and the callback that advances it with the best
    value so far."""
    from ccarena.executor.local import progress_bar

    bar = progress_bar(stderr.get(), not quiet and sys.stderr.isatty())
    task = bar.add_task("search", total=trials)

    def on_trial(trial: Any, best: Any) -> None:
        shown = f"best {best.value:.4g}" if best is not None else "no value yet"
        bar.update(task, advance=1, description=f"search ({shown})")

    return bar, on_trial


def summary_lines(outcome: Any) -> list[str]:
    """What the command prints at the end (each line ≤ 80 columns but paths): the best value,
    its fields, and where the files are."""
    from ccarena.search.outputs import ranked, show_value

    result, goal = outcome.result, outcome.objective
    done = result.complete()
    failed = len(result.trials) - len(done)
    lines = [f"{goal.name}: {len(result.trials)} trials, {len(done)} complete"
             + (f", {failed} failed" if failed else "") + f" ({result.wall_s:.0f} s on "
             f"{result.where})"]
    best = ranked(result, goal)
    if not best:
        reasons = sorted({t.error for t in result.trials})
        lines.append(f"no trial completed; first reason: {reasons[0] if reasons else '?'}")
    else:
        top = best[0]
        lines.append(f"best: {goal.label} = {top.value:.4g} (trial {top.number})")
        units = outcome.space.units()
        width = max(len(n) for n in units)
        for name, unit in units.items():
            share = outcome.ranking.get(name, math.nan)
            weight = f"  importance {share:.2f}" if math.isfinite(share) else ""
            lines.append(f"  {name:<{width}} = {show_value(top.params.get(name), unit)}{weight}")
    out = outcome.out
    if outcome.worst:
        lines.append(f"worst cases: {out / 'worst'} ({len(outcome.worst)} scenarios, "
                     "each run)")
    lines.append(f"trials: {out / 'trials.csv'}")
    lines.append(f"report: {outcome.report}")
    return lines
