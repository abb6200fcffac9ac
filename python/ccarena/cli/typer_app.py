"""The ``ccarena`` typer app: its global options (``--version``), every command registered in
one table, and :func:`main`, the process's entry point.

Every command follows one convention: it is a plain function in the module of its command group
(its parameters are its options, its docstring its help), registered here through
:func:`~ccarena.cli.exits.handles_errors`, so a bad input is a :class:`~ccarena.errors.UserError`
naming the field, printed as one line with exit status 2. The order of the table is the order
``ccarena --help`` lists the commands in.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import typer

from ccarena.cli import (
    adversarial_search,
    file_transfer,
    flavor_catalogue,
    flavor_identification,
    host_checks,
    measurement_import,
    network_drawing,
    scenario_runs,
    sql_query,
    stored_results,
    trace_generation,
)
from ccarena.cli.console import printable_warnings
from ccarena.cli.exits import exit_now, handles_errors, install_signal_handlers, interrupted_status

app = typer.Typer(
    name="ccarena",
    help="Compare TCP congestion controllers and UDP transports on network topologies.\n\n"
         "Quick start:  ccarena run examples/quickstart.toml",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
    rich_markup_mode=None,
)


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


COMMANDS: tuple[Callable[..., Any], ...] = (
    scenario_runs.run,
    stored_results.report,
    stored_results.plot,
    stored_results.compare,
    host_checks.calibrate,
    sql_query.query,
    adversarial_search.search,
    flavor_catalogue.flavors,
    flavor_identification.identify,
    scenario_runs.validate,
    network_drawing.topo,
    host_checks.doctor,
    file_transfer.send,
    file_transfer.recv,
)
"""The top-level commands, each named after its function, in the order the help lists them."""

GROUPS: tuple[tuple[str, str, tuple[Callable[..., Any], ...]], ...] = (
    ("import", "Import real measurements (iperf3 JSON, Flent data files, pcap captures) as an "
               "experiment directory.",
     (measurement_import.iperf3, measurement_import.flent, measurement_import.pcap)),
    ("trace", "Link capacity traces.", (trace_generation.gen,)),
)
"""The command groups after them: (name, help, its commands, each named after its function)."""


def _register() -> None:
    """Add every command of :data:`COMMANDS` and :data:`GROUPS` to :data:`app`, each through
    :func:`~ccarena.cli.exits.handles_errors`."""
    for command in COMMANDS:
        app.command()(handles_errors(command))
    for name, help_text, commands in GROUPS:
        group = typer.Typer(name=name, help=help_text, no_args_is_help=True, rich_markup_mode=None)
        for command in commands:
            group.command()(handles_errors(command))
        app.add_typer(group, name=name)


_register()


def main() -> None:
    """Entry point for ``python -m ccarena`` and the ``ccarena`` script; the process ends through
    :func:`~ccarena.cli.exits.exit_now` (an uncaught exception — a bug — ends it the usual way,
    with its traceback)."""
    install_signal_handlers()
    printable_warnings()
    try:
        try:
            app()
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            sys.exit(interrupted_status())
    except SystemExit as done:
        exit_now(done.code)
