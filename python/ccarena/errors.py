"""The two kinds of failure ccarena distinguishes.

A :class:`UserError` is a mistake the user can fix (a bad scenario file, a bad value, an unknown
node, a results directory made from another scenario). The CLI prints each of its problems as one
line on stderr and exits with status 2, without a traceback. Its message always names the field or the fix,
for example ``flows[2].flavor: unknown flavor 'cubik' (did you mean 'cubic'?)``.

An :class:`EngineFault` is a failure inside the simulator. It carries the run's id, seed and the
resolved spec (and where the spec was saved) so the run can be replayed exactly.
"""

from __future__ import annotations

from typing import Any, Sequence


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


class EngineFault(RuntimeError):
    """The engine failed on a run. ``run_id``, ``seed`` and ``spec`` replay it.

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
