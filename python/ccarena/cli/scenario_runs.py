"""``ccarena run SCENARIO`` and ``ccarena validate SCENARIO``: run a scenario's every sweep point
and repeat (then print the summary and write the report), or check it without running."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import typer

from ccarena.cli.console import stderr, stdout
from ccarena.cli.exits import interrupted_status
from ccarena.cli.output import (
    load_report_modules,
    load_summary_modules,
    print_plan_warnings,
    print_store_warnings,
    print_summary,
    print_unsplit_runs,
    working,
)
from ccarena.cli.stored_results import stop_report_workers
from ccarena.errors import UserError, printable


def _executor_option(table: Any, kind: str | None, scheduler: str | None,
                     workers: int | None) -> Any:
    """The scenario's ``[executor]`` with ``--executor``, ``--scheduler`` and ``--workers`` laid over.

    Raises:
        UserError: an unknown executor.
    """
    from ccarena.scenario import EXECUTOR_KINDS

    if kind is not None and kind not in EXECUTOR_KINDS:
        raise UserError(f"--executor: unknown executor '{printable(kind)}' (choose from "
                        f"{', '.join(EXECUTOR_KINDS)})")
    if kind is None and scheduler is not None:
        kind = "dask"  # a scheduler address says where the runs go
    given = {"kind": kind, "scheduler": scheduler, "workers": workers}
    return table.model_copy(update={k: v for k, v in given.items() if v is not None})


def run(
    scenario: Path = typer.Argument(..., help="Scenario file (TOML).", show_default=False),
    out: Optional[str] = typer.Option(None, "--out", "-o",
                                      help="Experiment directory, a path or a file:// URL "
                                           "[default: RESULTS/<name>]."),
    results: str = typer.Option("results", "--results", help="Parent of the experiment directory."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1,
                                       help="Worker processes [default: all cores; at most one "
                                            "per core, per run and what memory holds]."),
    executor: Optional[str] = typer.Option(
        None, "--executor", help="process (a local pool), dask (--scheduler), dask-local "
                                 "(--workers) or slurm ([executor] table) [default: the scenario's "
                                 "[executor] kind, else process]."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler",
                                            help="Dask scheduler address, e.g. tcp://HOST:8786."),
    workers: Optional[int] = typer.Option(None, "--workers", min=1,
                                          help="dask-local worker processes [default: --jobs, else all "
                                               "cores; bounded as --jobs is]."),
    force: bool = typer.Option(False, "--force", help="Redo runs that are already complete."),
    report: bool = typer.Option(True, "--report/--no-report", help="Write report.html and figures."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars."),
    backend: Optional[str] = typer.Option(
        None, "--backend", "-b",
        help="sim, kernel, udp, or several side by side (sim,kernel,udp) [default: the "
             "scenario's backend]."),
    part: Optional[list[str]] = typer.Option(
        None, "--part", help="Run only this [[parts]] entry (repeat for several) [default: all]."),
    max_memory: Optional[str] = typer.Option(
        None, "--max-memory", help="Refuse a run estimated to need more memory than this, e.g. 8GB "
                                   "[default: half this machine's memory]."),
    wide: bool = typer.Option(False, "--wide", help="Show every summary column, however wide."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON (one object per "
                                                       "flow of each run) instead of a table."),
    formats: str = typer.Option("png", "--formats", help="Figure files: comma-separated png, svg, "
                                                         "pdf (the page embeds the PNGs)."),
    threads: Optional[int] = typer.Option(
        None, "--threads", min=1, max=256,
        help="Threads each simulated run may use, its network split between them (results "
             "identical to one thread's) [default: the scenario's [engine] threads, else 1]."),
) -> None:
    """Run a scenario: every sweep point and repeat, then print the summary and write the report.

    Finished runs are kept and skipped when the command is run again (Ctrl-C is safe).

    Examples:

      ccarena run examples/quickstart.toml

      ccarena run examples/reno-vs-loss.toml -j 4 --out results/loss

      ccarena run examples/quickstart.toml --force --no-report

      ccarena run big-fat-tree.toml --threads 2

      ccarena run examples/kernel-vs-sim.toml --backend sim,kernel     (needs root)

      ccarena run examples/seeds/001-lifo-real-sockets.toml --part tcp   (needs root)

      ccarena run study.toml --executor dask --scheduler tcp://head:8786 --out file:///shared/study
    """
    # Only what starting the first run needs is loaded before it: the summary's modules (pandas,
    # rich) and the report's (matplotlib) load while the engine works (run_experiment's
    # while_running; the run's engine_s in run.json is the engine's own time all the same).
    from ccarena.backends import parse_backend_names
    from ccarena.executor import run_experiment
    from ccarena.inputs import memory_budget, parse_max_memory
    from ccarena.report.formats import parse_formats
    from ccarena.scenario import load_scenario, select_parts
    from ccarena.scenario.loading import with_engine_threads
    from ccarena.store.location import results_path

    figure_formats = parse_formats(formats)
    memory = parse_max_memory(max_memory)
    with memory_budget(memory):  # trace files are read within it (a sweep's during expansion)
        loaded = load_scenario(scenario)
        if part:
            loaded = select_parts(loaded, part)
        if threads is not None:
            loaded = with_engine_threads(loaded, threads)
        root = results_path(out) if out is not None else results_path(results) / loaded.scenario.name
        outcome = run_experiment(loaded, root, jobs=jobs, force=force, console=stderr.get,
                                 show_progress=not quiet, backends=parse_backend_names(backend),
                                 max_memory_bytes=memory,
                                 executor=_executor_option(loaded.scenario.executor, executor,
                                                           scheduler, workers),
                                 while_running=load_report_modules if report else load_summary_modules)
    total = len(outcome.plans)
    done = len(outcome.completed) + len(outcome.skipped)
    print_plan_warnings(outcome.plans)
    print_unsplit_runs(outcome)
    if outcome.interrupted:
        # Before any import: a Ctrl-C inside numpy's import (while the engine started) leaves
        # numpy unloadable in this process, and the interruption must still end in one line.
        print(f"interrupted: {done} of {total} runs complete, kept in {root}; "
              "run the same command again to finish the rest", file=sys.stderr, flush=True)
        raise typer.Exit(interrupted_status())
    path = root / "report.html"
    reused, pool, workers = False, None, None
    if done and report:
        from ccarena.report.report_pool import spawn_for
        from ccarena.report.reuse import is_current

        # Nothing it is drawn from changed (runs, scenario, report code, formats): kept.
        reused = not force and is_current(root, path, figure_formats)
        if not reused:
            # The report's workers start now: their imports run beside this process's.
            pool = spawn_for(root)
    try:
        from ccarena.results import Result
        if outcome.skipped:
            stderr.print(f"{len(outcome.skipped)} of {total} runs were already complete (skipped; "
                         "--force redoes them)")
        result = Result(root, outcome, deep=False)  # runs skipped now: framing checked only
        if done:
            with working("aggregating the runs' summaries", quiet):
                result.summary  # noqa: B018 (read once here, under the status line)
            if report and not reused:
                from ccarena.report.html import start_workers

                # They get their work (and draw) while the summary is printed.
                workers, pool = start_workers(result, path, figure_formats, pool=pool), None
            print_store_warnings(result)  # runs found damaged among those already complete
            print_summary(result, wide, as_json)
    except BaseException:
        stop_report_workers(pool, workers)
        raise
    # With --json, stdout carries only the JSON; the paths go to stderr.
    where = stderr if as_json else stdout
    if done:
        if reused:
            where.print(f"report: {path} (reused: its inputs did not change; `ccarena "
                        "report` redraws it)", soft_wrap=True)
        elif report:
            from ccarena.report import write_report

            with working("writing the report and its figures", quiet):
                path = write_report(result, formats=figure_formats, workers=workers)
            where.print(f"report: {path}", soft_wrap=True)
    where.print(f"results: {root}", soft_wrap=True)
    outcome.raise_for_failures()


def validate(
    scenario: Path = typer.Argument(..., help="Scenario file (TOML)."),
    max_memory: Optional[str] = typer.Option(
        None, "--max-memory", help="The per-run memory budget to check against, e.g. 8GB "
                                   "[default: half this machine's memory]."),
) -> None:
    """Check a scenario file without running it: schema, units, nodes, flows, every sweep point,
    and each run's estimated memory against the budget.

    Example:

      ccarena validate examples/quickstart.toml
    """
    from ccarena.experiment import expand
    from ccarena.experiment.budget import check_budget
    from ccarena.inputs import memory_budget, parse_max_memory
    from ccarena.scenario import load_scenario

    memory = parse_max_memory(max_memory)
    with memory_budget(memory):  # trace files are read within it (a sweep's during expansion)
        loaded = load_scenario(scenario)
        plans = expand(loaded)
    check_budget(plans, memory)
    s = loaded.scenario
    if len(loaded.parts) > 1 or loaded.parts[0].name:
        counts = {p.name: sum(1 for plan in plans if plan.part == p.name) for p in loaded.parts}
        listing = ", ".join(f"{name} ({n})" for name, n in counts.items())
        stdout.print(f"{scenario}: ok — {s.name}: {len(loaded.parts)} parts, {_count(len(plans), 'run')}: "
                     f"{listing}", soft_wrap=True)
    else:
        # One line however long the path (soft_wrap: the terminal folds it, a pipe gets it whole).
        stdout.print(f"{scenario}: ok — {s.name}: {s.topology.kind}, {_count(len(s.flows), 'flow')}, "
                     f"{_count(len(plans), 'run')}", soft_wrap=True)
    for line in s.topology.describe():
        stdout.print(f"  {line}", highlight=False)
    stdout.print(f"  {host_model_line(s)}", highlight=False)
    print_plan_warnings(plans)


def host_model_line(scenario: Any) -> str:
    """``host model: …`` for ``validate``: the scenario's (or the default, ``rfc`` alone and
    ``linux`` beside a real-TCP backend) and the flows that choose their own."""
    own = [f"{flow.name or flow.flavor} {flow.host}" for flow in scenario.flows if flow.host is not None]
    model = scenario.host or "rfc (linux beside --backend kernel)"
    return f"host model: {model}" + (f"; flows: {', '.join(own)}" if own else "")


def _count(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1 (``"1 run"``, ``"3 runs"``)."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
