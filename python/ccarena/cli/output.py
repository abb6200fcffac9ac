"""What several commands print the same way: the summary table (or JSON) with its verdict, a
table wider than the terminal, warnings about runs and about damaged stored files, and a
spinner while a slow step works."""

from __future__ import annotations

import sys
from typing import Any

from ccarena.cli.console import stderr, stdout
from ccarena.errors import UserError, printable


def print_plan_warnings(plans: Any) -> None:
    """``warning: …`` lines on stderr for runs that would not measure what they say
    (:mod:`ccarena.analysis.plan_checks`: a flavor built on ECN where nothing marks)."""
    from ccarena.analysis.plan_checks import plan_warnings

    for line in plan_warnings(plans):
        stderr.print(f"warning: {line}", markup=False, highlight=False)


def print_unsplit_runs(outcome: Any) -> None:
    """A ``note: …`` line on stderr when runs executed now asked for ``[engine] threads`` > 1
    but ran on one thread (run.json's ``timing.engine_parts`` is 1): the engine keeps a network
    whole when a split would change its results or cannot gain (``ccarena_sim::parallel``)."""
    asked = {p.run_id for p in outcome.plans if p.backend == "sim" and p.scenario.engine.threads > 1}
    ran = [run_id for run_id in outcome.completed if run_id in asked]
    if not ran:
        return
    from ccarena.store.experiment_store import ExperimentStore

    store = ExperimentStore(outcome.root)

    def parts(run_id: str) -> Any:
        try:
            return store.read_run_record(run_id).get("timing", {}).get("engine_parts")
        except UserError:  # damaged since: the summary's checks report it
            return None

    whole = sum(1 for run_id in ran if parts(run_id) == 1)
    if whole:
        stderr.print(f"note: {whole} of {len(ran)} runs asking for [engine] threads > 1 ran on one "
                     "thread: a pcap capture, MPTCP or linux-host TCP flows, links of zero delay or "
                     "links changed by [[events]] keep a network whole", markup=False, highlight=False)


def print_store_warnings(result: Any) -> None:
    """A ``warning: …`` line on stderr for each stored file found damaged since the last call (a
    run left out, a summary built again: :attr:`ccarena.results.Result.warnings`)."""
    sys.stdout.flush()
    for line in result.pop_warnings():
        print(f"warning: {printable(line)}", file=sys.stderr, flush=True)


def load_summary_modules() -> None:
    """Load what printing the summary needs (pandas, rich), and the Consoles."""
    import ccarena.report.terminal  # noqa: F401
    import ccarena.results  # noqa: F401

    stdout.get()
    stderr.get()


def load_report_modules() -> None:
    """Load what printing the summary and writing the report (matplotlib, jinja2) need, and
    what its verdict needs (scipy.special) while the engine still works: ``ccarena run`` calls
    it while the engine works on its thread, so that ~1 s of imports overlaps the run instead of
    following it."""
    load_summary_modules()
    import ccarena.report.html  # noqa: F401
    from ccarena.backends.sim import engine_working

    # Last, and only while the engine still works beside it (then it costs nothing): after a
    # short run, the verdict imports it on first use (ccarena.analysis.verdict), once the
    # report's figures are drawing in forked children, beside them instead of before them.
    if engine_working():
        import scipy.special  # noqa: F401  (the verdict's intervals)


def working(what: str, quiet: bool) -> Any:
    """A spinner with ``what`` on stderr while the block runs (nothing when ``quiet`` or stderr is
    not a terminal)."""
    import contextlib

    if quiet or not stderr.is_terminal:
        return contextlib.nullcontext()
    return stderr.status(what + "…")


def print_summary(result: Any, wide: bool, as_json: bool) -> None:
    """The summary table at the terminal's width (every column with ``wide``), or JSON."""
    from ccarena.report.terminal import summary_json, terminal_table

    if as_json:
        print(summary_json(result.summary), flush=True)
        return
    # Every part's swept fields: parts may sweep different ones (terminal_table keeps each
    # part's own).
    params = list(dict.fromkeys([*result.parameters, *(p for part in result.parts()
                                                       for p in part.parameters)]))
    summary = result.summary
    if "backend" in summary and summary["backend"].nunique() > 1:  # --backend sim,kernel
        params.append("backend")
    table = terminal_table(result.summary, params, f"{result.name}: summary",
                           width=stdout.width, wide=wide)
    print_wide(table, wide)
    _print_verdict(result)


def _print_verdict(result: Any) -> None:
    """The verdict of each part after the summary table: which flavors differ beyond the noise
    (:mod:`ccarena.analysis.verdict`)."""
    from ccarena.report.terminal import verdict_renderable

    block = verdict_renderable(result)
    if block is not None:
        stdout.print(block, highlight=False)


def print_wide(table: Any, wide: bool) -> None:
    """Print a table built for the terminal's width; with ``wide``, every column uncut: wider
    than the terminal (it wraps) rather than cropped."""
    from ccarena.report.terminal import table_width

    if wide and table_width(table) > stdout.width:
        from rich.console import Console

        Console(width=table_width(table)).print(table)
    else:
        stdout.print(table)
