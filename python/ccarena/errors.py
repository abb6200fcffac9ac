"""The kinds of failure ccarena distinguishes.

A :class:`UserError` is a mistake the user can fix (a bad scenario file, a bad value, an unknown
node, a results directory made from another scenario). The CLI prints each of its problems as one
line on stderr and exits with status 2, without a traceback. Its message always names the field or the fix,
for example ``flows[2].flavor: unknown flavor 'cubik' (did you mean 'cubic'?)``, and names an
option the way the user sets it: ``--force`` on the command line, ``force=True`` from Python
(:func:`option`, :func:`python_api`).

A :class:`RunFailed` is a run that did not complete: an :class:`EngineFault` (the simulator, a
backend or the metrics failed on it) or a :class:`WorkerDied` (the process running it ended
without returning it: a signal such as the out-of-memory killer's SIGKILL, or an exit). Both carry
the run's id, seed and the resolved spec (and where the spec was saved) so the run can be
replayed exactly.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator, Sequence

_FRONT_END: ContextVar[str] = ContextVar("ccarena_front_end", default="cli")
"""Who called ccarena in this context: ``"cli"`` (the default) or ``"python"`` (the API)."""

_OPTIONS = {
    # name: (command line, Python API)
    "force": ("--force", "force=True"),
    "out": ("--out", "out=..."),
    "jobs": ("--jobs", "jobs=..."),
}


@contextmanager
def python_api() -> Iterator[None]:
    """Within the block, messages name options as the Python API takes them (:func:`option`):
    ``ccarena.run`` and ``ccarena.load`` run inside it."""
    token = _FRONT_END.set("python")
    try:
        yield
    finally:
        _FRONT_END.reset(token)


def option(name: str) -> str:
    """How the user sets the option ``name`` (``"force"``, ``"out"``, ``"jobs"``) where they
    called ccarena: ``--force`` on the command line, ``force=True`` inside :func:`python_api`.

    Raises:
        KeyError: ``name`` is not an option both front ends take.
    """
    cli, python = _OPTIONS[name]
    return python if _FRONT_END.get() == "python" else cli


class UserError(Exception):
    """A mistake in the user's input: each problem one line that names the field and the fix.

    ``problems`` holds the lines (``message`` first, then ``more``, e.g. every field a scenario
    gets wrong); ``str(err)`` joins them with newlines, so a single problem is a single line.
    """

    def __init__(self, message: str, more: Sequence[str] = ()) -> None:
        self.problems = [line.replace("\n", " ") for line in (message, *more)]
        super().__init__("\n".join(self.problems))

    def prefixed(self, prefix: str) -> "UserError":
        """The same problems, each line starting with ``prefix`` (e.g. the scenario file)."""
        return UserError(prefix + self.problems[0], [prefix + p for p in self.problems[1:]])


class RunTooLarge(UserError):
    """A run stopped by the engine at its memory budget: too large for this machine (one line,
    exit 2; the runs already finished are kept)."""


class FieldError(ValueError):
    """A validation error about the field at ``field`` (a path like ``flows[1].to``).

    Raised inside pydantic validators; :func:`ccarena.scenario.format_validation_error` joins
    ``field`` to the location pydantic reports, so the final message names the exact field.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class FieldErrors(ValueError):
    """Several :class:`FieldError` found by one validator (every unknown node of every flow, not
    only the first), raised together so that a file's mistakes are all listed in one pass; each
    becomes its own line."""

    def __init__(self, errors: list[FieldError]) -> None:
        super().__init__("; ".join(f"{e.field}: {e.message}" for e in errors))
        self.errors = list(errors)


class RunFailed(RuntimeError):
    """A run did not complete (:class:`EngineFault` or :class:`WorkerDied`); the other runs of
    the experiment are kept. ``run_id``, ``seed`` and ``spec`` replay it.

    Attributes:
        run_id: the run's id in the experiment.
        seed: the run's seed (also inside ``spec``).
        spec: the resolved engine spec (a dict) the run was started with.
        replay_path: where the spec was written as JSON, if it was.
    """

    def __init__(self, message: str, *, run_id: str, seed: int, spec: dict[str, Any],
                 replay_path: str | None = None) -> None:
        where = f"; replay with the spec in {replay_path}" if replay_path else ""
        super().__init__(f"run {run_id} (seed {seed}): {message}{where}")
        self.run_id = run_id
        self.seed = seed
        self.spec = spec
        self.replay_path = replay_path


class EngineFault(RunFailed):
    """The engine (or a backend, or the metrics) failed on a run: an error raised while the run
    executed, recorded with its traceback in ``failed/<run_id>.json``."""


class WorkerDied(RunFailed):
    """The worker process running a run ended without returning it: killed by a signal (the
    kernel's out-of-memory killer sends SIGKILL; ``kill -9``) or exited. The run was retried and
    then run alone, so it is the run that ends its process, not a neighbour's; nothing says the
    engine failed.

    Attributes:
        exitcode: the process's exit status as :mod:`multiprocessing` gives it (−N for signal
            N), or None when unknown.
    """

    def __init__(self, message: str, *, run_id: str, seed: int, spec: dict[str, Any],
                 replay_path: str | None = None, exitcode: int | None = None) -> None:
        super().__init__(message, run_id=run_id, seed=seed, spec=spec, replay_path=replay_path)
        self.exitcode = exitcode


def printable(text: str, keep: str = "") -> str:
    """``text`` with control characters (a NUL, an escape sequence) shown as escapes, so an error
    quoting the user's input stays one readable line and cannot drive the terminal. Characters in
    ``keep`` (``"\\n\\t"`` for a CSV field, which quotes them) are left as they are."""
    return "".join(c if c.isprintable() or c in keep else repr(c)[1:-1] for c in text)


def terminal_text(value: object) -> str:
    """``str(value)`` safe for a rich table cell, column heading or title: control characters
    shown as escapes (:func:`printable`) and rich markup escaped (``[/x]`` shown as is).

    Text read from a file — a flavor or flow name in an imported iperf3 JSON, a column of a
    stored Parquet file — can then neither drive the terminal (retitle it with ``ESC ] 0;``,
    clear it with ``ESC [ 2J``), nor style itself or become a hyperlink through rich markup, nor
    end the command with rich's ``MarkupError``. Apply it once per string: escaping twice would
    show the escapes."""
    from rich.markup import escape

    return escape(printable(str(value)))
