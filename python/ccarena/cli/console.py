"""What the commands print to: ``stdout`` and ``stderr``, rich Consoles made on first use, and
Python's warnings made printable.

Every command prints through these two, so a test can reset them (``stdout._console = None``)
and the width a command draws at is decided in one place: the terminal's, ``COLUMNS`` when set,
else 120 columns when stdout is a pipe or file.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

from ccarena.errors import printable


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


class _TrimmedStdout:
    """``sys.stdout`` (looked up at each write, so a test's capture still sees the output) with
    the spaces rich pads each line to the console's width removed from the line ends: piped to a
    file, a diff or grep, a verdict line is the sentence it says."""

    def write(self, text: str) -> int:
        import re

        return sys.stdout.write(re.sub(r"[ \t]+(?=\n)", "", text))

    def __getattr__(self, name: str) -> Any:
        return getattr(sys.stdout, name)


def _make_stdout() -> Any:
    from rich.console import Console

    # On a terminal rich's padding is invisible (and may carry a background colour): kept.
    return Console(width=_stdout_width(), file=None if sys.stdout.isatty() else _TrimmedStdout())


def _make_stderr() -> Any:
    from rich.console import Console

    return Console(stderr=True)


stdout = _LazyConsole(_make_stdout)
"""The commands' standard output (a rich Console, made on first use)."""

stderr = _LazyConsole(_make_stderr)
"""The commands' standard error (a rich Console, made on first use)."""


def printable_warnings() -> None:
    """Print warnings with control characters shown as escapes: a library's warning may quote
    text read from a file (matplotlib names the glyph it cannot draw, an ESC of a flavor name)."""
    import warnings

    plain = warnings.formatwarning

    def formatted(message: Any, category: Any, filename: str, lineno: int, line: str | None = None) -> str:
        return plain(printable(str(message)), category, filename, lineno, line)

    warnings.formatwarning = formatted
