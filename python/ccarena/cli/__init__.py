"""The ``ccarena`` command line (typer), one module per command group.

A user's mistake is one line on stderr (``error: <field>: <problem>``) and exit status 2, never a
traceback. An engine fault is one line naming the run, its seed and the file holding its spec, with
exit status 1. Ctrl-C keeps finished runs and exits with status 130 (SIGTERM: the same, status
143 — 128 plus the signal's number, as shells report it).

- :mod:`.typer_app`: the typer app, ``--version``, the table registering every command, :func:`main`;
- :mod:`.console`: the ``stdout`` and ``stderr`` Consoles every command prints to;
- :mod:`.exits`: exit statuses, error lines (:func:`handles_errors`), signals, the fast exit;
- :mod:`.output`: what several commands print alike (summary, verdict, warnings, spinner);
- the command groups: :mod:`.scenario_runs` (``run``, ``validate``), :mod:`.stored_results`
  (``report``, ``plot``, ``compare``), :mod:`.sql_query` (``query``), :mod:`.flavor_catalogue`
  (``flavors``), :mod:`.network_drawing` (``topo``), :mod:`.host_checks` (``doctor``,
  ``calibrate``), :mod:`.file_transfer` (``send``, ``recv``), :mod:`.measurement_import`
  (``import iperf3``, ``import flent``), :mod:`.trace_generation` (``trace gen``).

A new command is a function in its group's module and one line in :data:`.typer_app.COMMANDS` (or
:data:`.typer_app.GROUPS`).
"""

from ccarena.cli.typer_app import app, main, version_text
from ccarena.cli.console import stderr, stdout
from ccarena.cli.exits import exit_now, handles_errors

__all__ = ["app", "exit_now", "handles_errors", "main", "stderr", "stdout", "version_text"]
