"""The ``ccarena`` command line (typer).

A user's mistake is one line on stderr (``error: <field>: <problem>``) and exit status 2, never a
traceback. An engine fault is one line naming the run, its seed and the file holding its spec, with
exit status 1. Ctrl-C keeps finished runs and exits with status 130 (SIGTERM: the same, status
143 — 128 plus the signal's number, as shells report it).
"""

from __future__ import annotations

import functools
import signal
import sys
from pathlib import Path
from typing import Any, Callable, Optional

import typer

from ccarena.errors import RunFailed, UserError, printable, terminal_text
from ccarena.importers import commands as _import_commands
from ccarena.traces.commands import gen as _trace_gen
from ccarena.transfer.commands import recv as _recv
from ccarena.transfer.commands import send as _send

app = typer.Typer(
    name="ccarena",
    help="Compare TCP congestion controllers and UDP transports on network topologies.\n\n"
         "Quick start:  ccarena run examples/quickstart.toml",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
    rich_markup_mode=None,
)

def _stdout_width() -> int | None:
    """The summary's width: the terminal's (rich reads it, or ``COLUMNS`` when set); 120 columns
    when stdout is a pipe or file and ``COLUMNS`` is unset."""
    import os

    return None if sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit() else 120


class _LazyConsole:
    """A rich Console made on first use (rich loads in ~50 ms: `ccarena run` starts the engine
    first and loads it while the engine works). Attribute access goes to the Console."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._console: Any = None

    def get(self) -> Any:
        """The Console (made now if it was not yet)."""
        if self._console is None:
            self._console = self._make()
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.get(), name)


def _make_stdout() -> Any:
    from rich.console import Console

    return Console(width=_stdout_width())


def _make_stderr() -> Any:
    from rich.console import Console

    return Console(stderr=True)


stdout = _LazyConsole(_make_stdout)
stderr = _LazyConsole(_make_stderr)

EXIT_USER_ERROR = 2
EXIT_ENGINE_FAULT = 1
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143

_stopped_by = signal.SIGINT
"""The signal that stopped the command (SIGINT unless SIGTERM arrived): its exit status is 128 + it."""


def _interrupted_status() -> int:
    return EXIT_TERMINATED if _stopped_by == signal.SIGTERM else EXIT_INTERRUPTED


def _on_sigterm(signum: int, frame: Any) -> None:  # noqa: ARG001
    """SIGTERM stops the command the way Ctrl-C does (finished runs kept), then exits 143."""
    global _stopped_by
    _stopped_by = signal.SIGTERM
    raise KeyboardInterrupt("terminated")


def _install_signal_handlers() -> None:
    """Ctrl-C raises KeyboardInterrupt even when the process started with SIGINT ignored (as
    ``nohup … &`` starts it), and SIGTERM stops like Ctrl-C."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _on_sigterm)


def _fail(message: str, code: int) -> None:
    """Print each problem of ``message`` (one per line) as ``error: …`` on stderr and exit."""
    sys.stdout.flush()
    for line in message.split("\n") or [""]:
        print(f"error: {printable(line)}", file=sys.stderr, flush=True)
    raise typer.Exit(code)


def handles_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """Turn UserError into one line + exit 2 and a failed run (RunFailed: an engine fault, a
    worker that died) into one line + exit 1."""
    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except UserError as err:
            _fail(str(err), EXIT_USER_ERROR)
        except RunFailed as err:
            _fail(str(err), EXIT_ENGINE_FAULT)

    return wrapper


def version_text() -> str:
    """``ccarena <package version> (engine <version>, git <revision>)``; the engine part reads
    ``engine not built`` when the compiled engine is missing."""
    from ccarena import __version__

    try:
        from ccarena import _engine

        engine = (f"engine {getattr(_engine, '__version__', None) or _engine.version()}, "
                  f"git {getattr(_engine, '__git_revision__', 'unknown')}")
    except ImportError:
        engine = "engine not built"
    return f"ccarena {__version__} ({engine})"


def _show_version(value: bool) -> None:
    if value:
        print(version_text())
        raise typer.Exit(0)


@app.callback()
def _global_options(
    version: bool = typer.Option(False, "--version", callback=_show_version, is_eager=True,
                                 help="Print the package, engine and git revision, then exit."),
) -> None:
    """Compare TCP congestion controllers and UDP transports on network topologies.

    Quick start:  ccarena run examples/quickstart.toml
    """


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


@app.command()
@handles_errors
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
) -> None:
    """Run a scenario: every sweep point and repeat, then print the summary and write the report.

    Finished runs are kept and skipped when the command is run again (Ctrl-C is safe).

    Examples:

      ccarena run examples/quickstart.toml

      ccarena run examples/reno-vs-loss.toml -j 4 --out results/loss

      ccarena run examples/quickstart.toml --force --no-report

      ccarena run examples/kernel-vs-sim.toml --backend sim,kernel     (needs root)

      ccarena run examples/seeds/001-lifo-real-sockets.toml --part tcp   (needs root)

      ccarena run study.toml --executor dask --scheduler tcp://head:8786 --out file:///shared/study
    """
    # Only what starting the first run needs is loaded before it: the summary's modules (pandas,
    # rich) load while the engine works (run_experiment's while_running).
    from ccarena.backends import parse_backend_names
    from ccarena.executor import run_experiment
    from ccarena.inputs import memory_budget, parse_max_memory
    from ccarena.report.formats import parse_formats
    from ccarena.scenario import load_scenario, select_parts
    from ccarena.store.location import results_path

    figure_formats = parse_formats(formats)
    memory = parse_max_memory(max_memory)
    with memory_budget(memory):  # trace files are read within it (a sweep's during expansion)
        loaded = load_scenario(scenario)
        if part:
            loaded = select_parts(loaded, part)
        root = results_path(out) if out is not None else results_path(results) / loaded.scenario.name
        outcome = run_experiment(loaded, root, jobs=jobs, force=force, console=stderr.get,
                                 show_progress=not quiet, backends=parse_backend_names(backend),
                                 max_memory_bytes=memory,
                                 executor=_executor_option(loaded.scenario.executor, executor,
                                                           scheduler, workers),
                                 while_running=_load_summary_modules)
    total = len(outcome.plans)
    done = len(outcome.completed) + len(outcome.skipped)
    _print_warnings(outcome.plans)
    if outcome.interrupted:
        # Before any import: a Ctrl-C inside numpy's import (while the engine started) leaves
        # numpy unloadable in this process, and the interruption must still end in one line.
        print(f"interrupted: {done} of {total} runs complete, kept in {root}; "
              "run the same command again to finish the rest", file=sys.stderr, flush=True)
        raise typer.Exit(_interrupted_status())
    from ccarena.results import Result
    if outcome.skipped:
        stderr.print(f"{len(outcome.skipped)} of {total} runs were already complete (skipped; "
                     "--force redoes them)")
    result = Result(root, outcome, deep=False)  # runs skipped now: framing checked only
    # With --json, stdout carries only the JSON; the paths go to stderr.
    where = stderr if as_json else stdout
    if done:
        with _working("aggregating the runs' summaries", quiet):
            result.summary  # noqa: B018 (read once here, under the status line)
        _print_store_warnings(result)  # runs found damaged among those already complete
        _print_summary(result, wide, as_json)
        if report:
            from ccarena.report.reuse import is_current

            path = root / "report.html"
            if not force and is_current(root, path, figure_formats):
                # Nothing it is drawn from changed (runs, scenario, report code, formats).
                where.print(f"report: {path} (reused: its inputs did not change; `ccarena "
                            "report` redraws it)", soft_wrap=True)
            else:
                from ccarena.report import write_report

                with _working("writing the report and its figures", quiet):
                    path = write_report(result, formats=figure_formats)
                where.print(f"report: {path}", soft_wrap=True)
    where.print(f"results: {root}", soft_wrap=True)
    outcome.raise_for_failures()


def _print_warnings(plans: Any) -> None:
    """``warning: …`` lines on stderr for runs that would not measure what they say
    (:mod:`ccarena.analysis.plan_checks`: a flavor built on ECN where nothing marks)."""
    from ccarena.analysis.plan_checks import plan_warnings

    for line in plan_warnings(plans):
        stderr.print(f"warning: {line}", markup=False, highlight=False)


def _load_summary_modules() -> None:
    """Load what printing the summary needs (pandas, rich), and the Consoles."""
    import ccarena.report.terminal  # noqa: F401
    import ccarena.results  # noqa: F401

    stdout.get()
    stderr.get()


def _working(what: str, quiet: bool) -> Any:
    """A spinner with ``what`` on stderr while the block runs (nothing when ``quiet`` or stderr is
    not a terminal)."""
    import contextlib

    if quiet or not stderr.is_terminal:
        return contextlib.nullcontext()
    return stderr.status(what + "…")


def _print_summary(result: Any, wide: bool, as_json: bool) -> None:
    """The summary table at the terminal's width (every column with ``wide``), or JSON."""
    from ccarena.report.terminal import summary_json, terminal_table

    if as_json:
        print(summary_json(result.summary), flush=True)
        return
    table = terminal_table(result.summary, result.parameters, f"{result.name}: summary",
                           width=stdout.width, wide=wide)
    _print_wide(table, wide)
    _print_verdict(result)


def _print_verdict(result: Any) -> None:
    """The verdict of each part after the summary table: which flavors differ beyond the noise
    (:mod:`ccarena.analysis.verdict`)."""
    from ccarena.report.terminal import verdict_renderable

    block = verdict_renderable(result)
    if block is not None:
        stdout.print(block, highlight=False)


def _print_wide(table: Any, wide: bool) -> None:
    """Print a table built for the terminal's width; with ``wide``, every column uncut: wider
    than the terminal (it wraps) rather than cropped."""
    from ccarena.report.terminal import table_width

    if wide and table_width(table) > stdout.width:
        from rich.console import Console

        Console(width=table_width(table)).print(table)
    else:
        stdout.print(table)


@app.command()
@handles_errors
def report(
    directory: Path = typer.Argument(..., help="Experiment directory (holds experiment.json)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o",
                                          help="Where to write the HTML [default: DIRECTORY/report.html]."),
    wide: bool = typer.Option(False, "--wide", help="Show every summary column, however wide."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON instead of a table."),
    formats: str = typer.Option("png", "--formats", help="Figure files: comma-separated png, svg, "
                                                         "pdf (the page embeds the PNGs)."),
) -> None:
    """Rebuild report.html and figures/ from stored results (no simulation).

    Example:

      ccarena report results/quickstart
    """
    from ccarena.report import write_report
    from ccarena.report.custom_plot import parse_formats
    from ccarena.results import Result
    from ccarena.store.files import check_output_file

    figure_formats = parse_formats(formats)
    result = Result(directory)
    check_output_file(output if output is not None else result.root / "report.html",
                      "--output" if output is not None else "report")
    result.require_runs()
    _print_store_warnings(result)
    _print_summary(result, wide, as_json)
    path = write_report(result, output, formats=figure_formats)
    _print_store_warnings(result)
    (stderr if as_json else stdout).print(f"report: {path}", soft_wrap=True)


@app.command()
@handles_errors
def plot(
    directory: Path = typer.Argument(..., help="Experiment directory (holds experiment.json)."),
    y: str = typer.Option("goodput", "--y", help="Metric: goodput, throughput, loss, retx, rtt, "
                                                  "rtt_p95, jain, stability, fct, slowdown, or any "
                                                  "summary column."),
    x: Optional[str] = typer.Option(None, "--x", help="Swept parameter (its path, or the path's "
                                                      "last part) or summary column [default: the "
                                                      "first swept parameter (a matrix's pair), "
                                                      "else flavor]."),
    hue: Optional[str] = typer.Option("flavor", "--hue", help="One colour per value of this column."),
    facet: Optional[str] = typer.Option(None, "--facet", help="One panel per value of this column."),
    kind: Optional[str] = typer.Option(None, "--kind", help="line, bar, box, cdf or heatmap "
                                                            "[default: line over a numeric x, "
                                                            "else bar]."),
    part: Optional[str] = typer.Option(None, "--part", help="Plot only this [[parts]] entry "
                                       "[default: one figure per part]."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Figure file without suffix "
                                       "[default: DIRECTORY/figures/plot-[PART-]Y-vs-X]."),
    formats: str = typer.Option("png", "--formats", help="Comma-separated: png, svg, pdf."),
) -> None:
    """Draw any stored metric against any swept parameter or column (no simulation). A matrix's
    runs are labelled by their pair (x = pair: "cubic vs reno"); an experiment with [[parts]]
    gets one figure per part (--part picks one).

    Examples:

      ccarena plot results/reno-vs-loss --y goodput --x loss

      ccarena plot results/matrix --y jain --x flavor --kind bar --formats png,pdf

      ccarena plot results/seed-004 --part matrix --y goodput

      ccarena plot results/dc --y fct --kind cdf
    """
    from ccarena.report import custom_plot, views
    from ccarena.results import Result
    from ccarena.store.files import check_output_file

    fmts = custom_plot.parse_formats(formats)
    result = Result(directory, deep=False)  # the summary is what is drawn
    result.require_runs()
    summary = result.summary
    _print_store_warnings(result)
    if not len(summary):
        raise UserError(f"{directory}: no finished runs to plot; run the scenario first")
    chosen = [v for v in views.select(result, part) if len(v.summary)]
    if not chosen:
        raise UserError(f"{directory}: no finished runs in part '{part}' to plot; run it first")
    if out is not None:  # a directory given as the figure's name is refused, not written beside
        check_output_file(out, "--out", example="plot")
    drawn = []
    for view in chosen:
        try:
            drawn.append(_plot_view(view, y, x, hue, facet, kind))
        except UserError as err:
            if len(chosen) == 1:
                raise
            raise UserError(f"{err} (or plot one part with --part NAME)") from None
    targets = []
    for view, (fig, slug) in zip(chosen, drawn):
        if out is not None:
            target = out if len(chosen) == 1 else out.with_name(f"{out.name}-{view.part}")
        else:
            prefix = f"{view.part}-" if len(chosen) > 1 or part else ""
            target = result.root / "figures" / f"plot-{prefix}{slug}"
        for fmt in fmts:  # every file checked before any is written
            check_output_file(target.with_suffix("." + fmt), "--out" if out is not None else "figure",
                              example="plot")
        targets.append(target)
    for (fig, _), target in zip(drawn, targets):
        for written in custom_plot.save_all(fig, target, fmts):
            print(f"figure: {written}", flush=True)


def _plot_view(view: Any, y: str, x: Optional[str], hue: Optional[str], facet: Optional[str],
               kind: Optional[str]) -> tuple[Any, str]:
    """The figure of ``ccarena plot`` for one part (a :class:`ccarena.report.views.View`) and
    the file-name slug ``Y-vs-X``."""
    from ccarena.report import custom_plot

    summary = view.summary
    where = f"part '{view.part}'" if view.part else "this experiment"
    y_col = custom_plot.resolve_column(summary, y, "--y", where)
    x_name = x or (view.parameters[0] if view.parameters else "flavor")
    x_col = custom_plot.resolve_column(summary, x_name, "--x", where) if kind != "cdf" else None
    if kind is None:  # a line needs numbers along x: flavors or labels are bars
        kind = custom_plot.default_kind(summary, x_col)
    hue_col = custom_plot.resolve_column(summary, hue, "--hue", where) if hue else None
    facet_col = custom_plot.resolve_column(summary, facet, "--facet", where) if facet else None
    title = f"{view.name}: {custom_plot.heading(y_col)}" + (f" vs {x_col}" if x_col else " (CDF)")
    fig = custom_plot.plot(summary, y_col, x_col, hue_col, facet_col, kind, title)
    slug = "".join(c if c.isalnum() else "_" for c in f"{y}-vs-{x_col or 'cdf'}")
    return fig, slug


@app.command()
@handles_errors
def compare(
    dir_a: Path = typer.Argument(..., help="Experiment A (the reference)."),
    dir_b: Path = typer.Argument(..., help="Experiment B."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Directory for the overlay "
                                       "figures [default: DIR_B/compare]."),
    part: Optional[str] = typer.Option(None, "--part", help="Compare only this [[parts]] entry "
                                       "(an experiment without parts is compared whole) "
                                       "[default: every part both have]."),
    as_json: bool = typer.Option(False, "--json", help="Print the matched rows as JSON."),
    wide: bool = typer.Option(False, "--wide", help="Show every metric, however wide."),
) -> None:
    """Two stored experiments side by side: each metric in A and B and the difference with its
    95% CI, per shared sweep point (matrix pair, part) and flavor; a figure per metric (a numeric
    sweep as lines, A solid and B dashed; flavors or pairs as side-by-side bars, B hatched).

    Examples:

      ccarena compare results/before results/after

      ccarena compare results/seed-004-a results/seed-004-b --part matrix
    """
    from ccarena.report import compare_experiments as cmp
    from ccarena.report import plots
    from ccarena.results import Result

    a, b = Result(dir_a, deep=False), Result(dir_b, deep=False)  # the summaries are compared
    for result in (a, b):
        result.require_runs()
        result.summary  # noqa: B018 (read here: a damaged file is said before the table)
        _print_store_warnings(result)
    if not len(a.summary) or not len(b.summary):
        raise UserError(f"{dir_a if not len(a.summary) else dir_b}: no finished runs to compare")
    compared = []
    for label, view_a, view_b in cmp.paired_views(a, b, part):
        if not len(view_a.summary) or not len(view_b.summary):
            empty = dir_a if not len(view_a.summary) else dir_b
            raise UserError(f"{empty}: no finished runs in part '{label}' to compare")
        merged, keys = cmp.compare_table(view_a, view_b)
        compared.append((label, merged, keys))
    if as_json:
        import pandas as pd

        rows = pd.concat([m.assign(part=label) if label else m for label, m, _ in compared],
                         ignore_index=True)
        print(rows.to_json(orient="records", double_precision=15), flush=True)
        return
    name_a, name_b = dir_a.name or "A", dir_b.name or "B"
    if name_a == name_b:
        name_a, name_b = "A", "B"
    # One colour per flavor across the figures, in the order the flavors appear.
    plots.set_flavor_order([*a.summary["flavor"].astype(str), *b.summary["flavor"].astype(str)])
    target = out if out is not None else dir_b / "compare"
    figures = []
    for label, merged, keys in compared:
        table = cmp.terminal_table(merged, keys, name_a, name_b, width=stdout.width, wide=wide,
                                   part=label)
        _print_wide(table, wide)
        figures += cmp.write_figures(merged, keys, name_a, name_b, target, part=label)
    for path in figures:
        print(f"figure: {path}", flush=True)


@app.command()
@handles_errors
def calibrate(
    quick: bool = typer.Option(False, "--quick", help="The quick suite: 1 BDP only, shorter runs "
                                                      "(under 3 minutes; the full suite under 15)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o",
                                       help="Experiment directory [default: RESULTS/ccarena-calibration"
                                            "[-quick]]."),
    results: Path = typer.Option(Path("results"), "--results", help="Parent of the experiment directory."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1,
                                       help="Worker processes for the simulator's runs [default: all "
                                            "cores]; kernel runs go one at a time."),
    repeats: int = typer.Option(1, "--repeats", "-r", min=1,
                                help="Runs per cell on each backend, each with its own seed; cells "
                                     "compare the means (a 30 s deep-buffer pair is decided by its "
                                     "start-up: repeats narrow that spread, at N times the time)."),
    resume: bool = typer.Option(False, "--resume",
                                help="Keep runs already complete in the directory (after Ctrl-C); "
                                     "by default every run is done again."),
    report: bool = typer.Option(True, "--report/--no-report", help="Write report.html and figures."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars."),
) -> None:
    """Check the simulator against this machine's Linux TCP stack (needs root).

    Runs a fixed suite of small dumbbell scenarios (20 Mbit/s, 40 ms RTT) on the simulator and on
    the kernel backend for every flavor the kernel offers: single-flow utilization and RTT floor,
    same-flavor pairs, every mixed pair at 0.5, 1 and 4 BDP of buffer (1 BDP with --quick), and 1%
    random loss. Prints, per cell, sim vs kernel (the first flow's share, the total goodput, the
    utilization, the RTT floor) with the difference and a verdict against the bands, and stores
    the table as calibration.parquet beside the runs.

    The exit status is 0 whether or not every cell is within its band: a calibration is a
    measurement, and the cells outside are named.

    Examples:

      sudo ccarena calibrate --quick

      sudo ccarena calibrate --out results/calibration -j 2

      sudo ccarena calibrate --repeats 3
    """
    from ccarena.analysis.calibration import CALIBRATION_NAME, verdict_line
    from ccarena.executor.calibration import run_calibration
    from ccarena.report import write_report
    from ccarena.report.calibration import bands_text
    from ccarena.report.calibration import terminal_table as calibration_terminal_table
    from ccarena.results import Result

    from rich.console import Console

    root = out if out is not None else results / (CALIBRATION_NAME + ("-quick" if quick else ""))
    outcome, table = run_calibration(root, quick=quick, repeats=repeats, jobs=jobs, resume=resume,
                                     console=stderr.get(), show_progress=not quiet)
    if outcome.interrupted:
        done = len(outcome.completed) + len(outcome.skipped)
        print(f"interrupted: {done} of {len(outcome.plans)} runs complete, kept in {root}; "
              "run `ccarena calibrate --resume` with the same options to finish the rest",
              file=sys.stderr, flush=True)
        raise typer.Exit(_interrupted_status())
    narrow = Console(width=80, force_terminal=stdout.is_terminal)
    if len(table):
        narrow.print(calibration_terminal_table(table))
    narrow.print(bands_text(), highlight=False)
    narrow.print(verdict_line(table), highlight=False)
    if report and (root / "summary.parquet").is_file():
        stdout.print(f"report: {write_report(Result(root, outcome))}", soft_wrap=True)
    stdout.print(f"results: {root}", soft_wrap=True)
    outcome.raise_for_failures()


@app.command()
@handles_errors
def query(
    directory: Path = typer.Argument(..., help="Experiment directory."),
    sql: str = typer.Argument(..., help="SQL (DuckDB). Views: summary, flows, samples, queues, links, regions."),
    csv: bool = typer.Option(False, "--csv", help="Print CSV instead of a table."),
    part: Optional[str] = typer.Option(None, "--part", help="Views of this [[parts]] entry's runs "
                                       "only [default: every run]."),
    unsafe_sql: bool = typer.Option(False, "--unsafe-sql", help="Allow any SQL: reading and "
                                    "writing any file, ATTACH, extensions [default: SELECT over "
                                    "this experiment's files only]."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Print at most N rows "
                                        "[default: 1000 in a table (the count of the rest is "
                                        "said), every row with --csv]."),
) -> None:
    """Run SQL (DuckDB) over an experiment's Parquet files.

    Views: summary (summary.parquet) and flows, samples, queues, links, regions (every run's file,
    with a run_id column); with --part, the part's rows and runs only (a matrix's summary then
    has a pair column, "cubic vs reno"). Paths in the SQL are relative to DIRECTORY. The SQL
    reads only files under DIRECTORY and only SELECT (SHOW, DESCRIBE, SUMMARIZE) runs, unless
    --unsafe-sql is given.

    Examples:

      ccarena query results/quickstart "SELECT name, goodput_mean_bps/1e6 AS mbps FROM summary"

      ccarena query results/loss "SELECT run_id, max(backlog_packets) FROM queues GROUP BY run_id"

      ccarena query results/loss "SELECT * FROM 'runs/*/flows.parquet'" --csv

      ccarena query results/seed-004 "SELECT pair, avg(goodput_mean_bps) FROM summary GROUP BY pair" --part matrix
    """
    import contextlib

    import duckdb

    from ccarena.results import Result
    from ccarena.store import query_access
    from ccarena.store.query import fetch_rows, stream_rows

    result = Result(directory, deep=False)  # experiment.json checked: one line when it cannot be
    con = duckdb.connect()
    if unsafe_sql:
        # Confined, relative paths are resolved by working in the directory (query_access.inside),
        # which also works where the search path does not: a name holding ',' or '\'.
        con.execute("SET file_search_path = ?", [str(directory.resolve())])
    con.execute("SET enable_progress_bar = false")  # a long query's bar would go into the CSV
    _query_views(con, result, part)
    _print_store_warnings(result)
    if not unsafe_sql:
        query_access.confine(con, directory)
    try:
        with contextlib.nullcontext() if unsafe_sql else query_access.inside(directory):
            if not unsafe_sql:
                query_access.check_statements(con, sql)
            if csv:  # streamed batch by batch: any number of rows in bounded memory
                columns, batches = stream_rows(con, sql, limit)
                _write_csv(columns, batches)
                return
            found = fetch_rows(con, sql, limit or QUERY_TABLE_ROWS)
    except duckdb.Error as err:
        denied = None if unsafe_sql else query_access.refusal(err)
        raise UserError(denied or f"query: {(str(err).splitlines() or [type(err).__name__])[0]}") from None
    from rich.table import Table

    table = Table()
    for c in found.columns:
        table.add_column(terminal_text(c))
    for row in found.rows:
        table.add_row(*["" if v is None else (f"{v:.6g}" if isinstance(v, float) else terminal_text(v))
                        for v in row])
    stdout.print(table)
    if found.more != 0:
        more = "more rows" if found.more is None else f"{found.more:,} more " + (
            "row" if found.more == 1 else "rows")
        stdout.print(f"the first {len(found.rows):,} rows shown; {more} not shown (--limit N "
                     "shows more, --csv prints every row)", soft_wrap=True, markup=False,
                     highlight=False)


QUERY_TABLE_ROWS = 1000
"""Rows ``ccarena query`` prints in a table unless ``--limit`` says otherwise."""


def _write_csv(columns: list[str], batches: Any) -> None:
    """``columns`` and the rows of ``batches`` as CSV on stdout. Text read from the files keeps
    its content but never reaches the terminal as control characters (an escape sequence in a
    flavor name would retitle or clear it)."""
    import csv as csv_module

    writer = csv_module.writer(sys.stdout)
    writer.writerow([printable(c, keep="\n\t") for c in columns])
    for rows in batches:
        writer.writerows([printable(v, keep="\n\t") if isinstance(v, str) else v for v in row]
                         for row in rows)


def _print_store_warnings(result: Any) -> None:
    """A ``warning: …`` line on stderr for each stored file found damaged since the last call (a
    run left out, a summary built again: :attr:`ccarena.results.Result.warnings`)."""
    sys.stdout.flush()
    for line in result.pop_warnings():
        print(f"warning: {printable(line)}", file=sys.stderr, flush=True)


def _query_views(con: Any, result: Any, part: str | None) -> None:
    """The query views (:func:`ccarena.store.query.create_views`) over the experiment's readable
    runs (damaged ones left out): ``summary`` is summary.parquet, or the summary without the
    runs left out (built again when summary.parquet itself is damaged). With ``part``
    (``query --part``), ``summary`` is the part's :class:`ccarena.report.views.View` (its rows
    and swept columns, ``pair`` for a matrix) and the per-run views cover the part's runs only.

    Raises:
        UserError: no such part (the message lists the parts); every run is damaged."""
    from ccarena.store.query import create_views
    from ccarena.store.verify import parquet_problem

    result.require_runs()
    if part is not None:
        from ccarena.report import views

        [view] = views.select(result, part)
        create_views(con, result.store, view.run_ids, view.summary)
        return
    run_ids = result.run_ids
    stored = result.root / "summary.parquet"
    whole = not result.damaged and parquet_problem(stored, "summary") is None
    summary = None if whole or not stored.exists() else result.summary
    create_views(con, result.store, run_ids, summary)


@app.command()
@handles_errors
def flavors(
    name: Optional[str] = typer.Argument(None, help="One flavor: its parameters, defaults and "
                                                    "source [default: list every flavor]."),
) -> None:
    """List every flavor (TCP congestion controllers from the engine, UDT, UDP transports) with
    its family, or show one flavor's parameters.

    Examples:

      ccarena flavors

      ccarena flavors cubic
    """
    from ccarena.flavors import catalogue_rows, describe

    if name is not None:
        for line in describe(name, width=stdout.width):
            stdout.print(line, highlight=False, markup=False, soft_wrap=True)
        return
    from rich import box
    from rich.table import Table

    # Names and families are never cut (they are what one types); the source takes what is left.
    table = Table(title="flavors", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False,
                  caption="`ccarena flavors NAME`: what a flavor does, its parameters and source",
                  caption_justify="left")
    rows = catalogue_rows()
    widths = [max(len(heading), *(len(r[i]) for r in rows))
              for i, heading in enumerate(("name", "family", "recovery"))]
    for heading, wide in zip(("name", "family", "recovery"), widths):
        table.add_column(heading, no_wrap=True, min_width=wide)
    # Each boundary between columns takes 3 characters (padding, rule, padding).
    rest = max(stdout.width - sum(widths) - 3 * len(widths), 10)
    table.add_column("source", no_wrap=True, overflow="ellipsis", max_width=rest)
    for row in rows:
        table.add_row(*row)
    stdout.print(table, highlight=False)


@app.command()
@handles_errors
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
    _print_warnings(plans)


def _count(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1 (``"1 run"``, ``"3 runs"``)."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


@app.command()
@handles_errors
def topo(
    scenario: Path = typer.Argument(..., help="Scenario file (TOML)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o",
                                       help="Drawing: .svg, .png or .pdf [default: <scenario>-topology.svg]."),
    part: Optional[str] = typer.Option(None, "--part", help="The part whose network to draw [default: the first]."),
) -> None:
    """Draw the scenario's network: layers for trees (hosts at the bottom), link classes coloured
    with their rates, and describe it.

    Examples:

      ccarena topo examples/quickstart.toml

      ccarena topo fat-tree.toml --out topo.png
    """
    from ccarena.report.topology_figure import write_topology
    from ccarena.scenario import load_scenario

    loaded = load_scenario(scenario)
    parts = {p.name: p for p in loaded.parts}
    if part is not None and part not in parts:
        raise UserError(f"--part: no part '{part}'; parts: {', '.join(parts)}")
    topology = (parts[part] if part is not None else loaded.parts[0]).scenario.topology
    for line in topology.describe():
        stdout.print(line, highlight=False)
    path = write_topology(topology, out if out is not None else Path(f"{scenario.stem}-topology.svg"))
    stdout.print(f"drawing: {path}", highlight=False, soft_wrap=True)


@app.command()
@handles_errors
def doctor(
    cleanup: bool = typer.Option(False, "--cleanup",
                                 help="Remove every leftover ccarena namespace, link and process."),
    tag: Optional[str] = typer.Option(None, "--tag",
                                      help="With --cleanup: only runs whose tag starts with TAG."),
) -> None:
    """Check what the kernel backend can use here (root, namespaces, qdiscs, netem or the relay,
    nftables, tools, congestion controllers, MPTCP), or clean up after killed runs.

    Examples:

      ccarena doctor

      ccarena doctor --cleanup
    """
    from ccarena.backends.kernel.doctor import cleanup_report, doctor_table

    if cleanup:
        lines, ok = cleanup_report(tag)
        for line in lines:
            stdout.print(line, highlight=False)
        if not ok:
            raise typer.Exit(EXIT_ENGINE_FAULT)
        return
    stdout.print(doctor_table())


# ccarena send / ccarena recv: file transfer over ccarena's transport on UDP.
app.command(name="send")(handles_errors(_send))
app.command(name="recv")(handles_errors(_recv))

# ccarena import iperf3|flent: real measurements as an experiment directory.
import_app = typer.Typer(help="Import real measurements (iperf3 JSON, Flent data files) as an "
                              "experiment directory.", no_args_is_help=True, rich_markup_mode=None)
import_app.command(name="iperf3")(handles_errors(_import_commands.iperf3))
import_app.command(name="flent")(handles_errors(_import_commands.flent))
app.add_typer(import_app, name="import")
# ccarena trace gen: synthetic link capacity traces (ccarena.traces).
trace_app = typer.Typer(name="trace", help="Link capacity traces.", no_args_is_help=True, rich_markup_mode=None)
trace_app.command(name="gen")(handles_errors(_trace_gen))
app.add_typer(trace_app, name="trace")


def main() -> None:
    """Entry point for ``python -m ccarena`` and the ``ccarena`` script; the process ends through
    :func:`exit_now` (an uncaught exception — a bug — ends it the usual way, with its traceback)."""
    _install_signal_handlers()
    _printable_warnings()
    try:
        try:
            app()
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            sys.exit(_interrupted_status())
    except SystemExit as done:
        exit_now(done.code)


def _printable_warnings() -> None:
    """Print warnings with control characters shown as escapes: a library's warning may quote
    text read from a file (matplotlib names the glyph it cannot draw, an ESC of a flavor name)."""
    import warnings

    plain = warnings.formatwarning

    def formatted(message: Any, category: Any, filename: str, lineno: int, line: str | None = None) -> str:
        return plain(printable(str(message)), category, filename, lineno, line)

    warnings.formatwarning = formatted


def exit_now(code: object) -> None:
    """End the process with exit status ``code`` (as ``SystemExit`` reads it: None is 0, an int is
    itself, anything else is printed on stderr and is 1), without the interpreter's teardown.

    With pandas and pyarrow loaded, tearing the interpreter down (every module's objects freed
    one by one) took a third of a second after a command had finished. Everything a normal exit
    does that matters here is done first: the ``atexit`` handlers run (multiprocessing, logging,
    temporary files, thread pools), and stdout and stderr are flushed (a flush that fails makes
    the status 120, as Python's own exit does). While a non-daemon thread is still running, the
    process exits the usual way instead, which waits for it.
    """
    import atexit
    import os
    import threading

    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        print(code, file=sys.stderr)
        status = 1
    if any(t is not threading.main_thread() and not t.daemon and t.is_alive()
           for t in threading.enumerate()):
        sys.exit(status)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            status = 120
    os._exit(status)


if __name__ == "__main__":
    main()
