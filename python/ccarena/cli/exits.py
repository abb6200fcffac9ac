"""How a command ends: its exit status, its error lines, and the process's fast exit.

A user's mistake (:class:`~ccarena.errors.UserError`) is one line per problem on stderr
(``error: <field>: <problem>``) and exit status 2, never a traceback; a failed run
(:class:`~ccarena.errors.RunFailed`: an engine fault, a worker that died) is one line naming the
run, its seed and the file holding its spec, with exit status 1. Ctrl-C keeps finished runs and
exits with status 130; SIGTERM does the same with status 143 (128 plus the signal's number, as
shells report it).
"""

from __future__ import annotations

import functools
import signal
import sys
from typing import Any, Callable

import typer

from ccarena.errors import RunFailed, UserError, printable

EXIT_USER_ERROR = 2
EXIT_ENGINE_FAULT = 1
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143

_stopped_by = signal.SIGINT
"""The signal that stopped the command (SIGINT unless SIGTERM arrived): its exit status is 128 + it."""


def interrupted_status() -> int:
    """The exit status of a command that was stopped: 143 after SIGTERM, else 130 (Ctrl-C)."""
    return EXIT_TERMINATED if _stopped_by == signal.SIGTERM else EXIT_INTERRUPTED


def _on_sigterm(signum: int, frame: Any) -> None:  # noqa: ARG001
    """SIGTERM stops the command the way Ctrl-C does (finished runs kept), then exits 143."""
    global _stopped_by
    _stopped_by = signal.SIGTERM
    raise KeyboardInterrupt("terminated")


def install_signal_handlers() -> None:
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
