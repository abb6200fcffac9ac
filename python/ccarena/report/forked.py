"""A report's drawing shared with a forked copy of its own process.

A run of many flows gets no per-run figures (:data:`ccarena.report.figures.MANY_FLOWS`), so the
report's spawned workers (:mod:`ccarena.report.report_pool`) have nothing to draw, and a spawned
worker would spend ~1.5 s of a core importing matplotlib and pandas before its first figure. A
child forked from the report's process once it has loaded them starts drawing in milliseconds,
with this process's tables, colours and fonts already in memory; ``ccarena run`` of 100 flows
drew its four figures one after the other, ~1 s of its critical path (issue 29).

Forking is safe only where nothing else runs: :func:`can_fork` asks for Linux (macOS's system
libraries are not fork-safe), a second core and no thread but the calling one (a forked child
inherits whatever lock another thread held: rich's spinner, the engine's, a notebook's). Where it
cannot fork, :class:`ForkedCall` runs its function here when asked for the result.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Callable


def can_fork() -> bool:
    """True when a :class:`ForkedCall` may fork: on Linux, with at least two cores this process
    may run on, and no other thread alive in it."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        cores = len(os.sched_getaffinity(0))
    except OSError:  # a sandbox that denies it
        cores = os.cpu_count() or 1
    return cores >= 2 and threading.active_count() == 1


class ForkedCall:
    """``fn()`` (no arguments; a closure over what it needs) running in a forked child process
    from construction (when :func:`can_fork`), its return value sent back pickled; else run here
    by :meth:`result`.

    The child inherits this process's memory as it is at construction (loaded modules, module
    state, open figures: open none). It exits without Python's shutdown (``os._exit``), so that
    freeing pandas' and matplotlib's objects does not keep it alive."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.process: Any = None
        self.connection: Any = None
        self._done = False
        self._value: Any = None
        if not can_fork():
            return
        import multiprocessing

        context = multiprocessing.get_context("fork")
        receiving, sending = context.Pipe(duplex=False)
        self.process = context.Process(target=_answer, args=(fn, sending), daemon=True,
                                       name="ccarena-report-fork")
        self.process.start()
        sending.close()  # the child's end: EOF here when the child dies
        self.connection = receiving

    @property
    def forked(self) -> bool:
        """True when a child runs ``fn`` (else :meth:`result` runs it here)."""
        return self.process is not None

    def result(self) -> Any:
        """``fn()``'s return value: the child's (waiting for it), or run here when there is no
        child or the child failed; the same value when asked again. A failure in the child is
        not carried over: ``fn`` is then run here, where its exception (if it is one)
        propagates with its own traceback."""
        if self._done:
            return self._value
        ok, value = False, None
        if self.process is not None:
            try:
                ok, value = self.connection.recv()
            except (EOFError, OSError):  # the child died before answering (killed, out of memory)
                pass
            finally:
                self.connection.close()
                self.process.join()
                self.process = None
        self._value = value if ok else self.fn()
        self._done = True
        return self._value

    def stop(self) -> None:
        """Stop the child at once, whatever it is doing (Ctrl-C or a failure here)."""
        if self.process is not None:
            self.process.terminate()
            self.process.join()
            self.connection.close()
            self.process = None


def _answer(fn: Callable[[], Any], connection: Any) -> None:
    """In the child: send ``(True, fn())``, or ``(False, None)`` when ``fn`` raised or its value
    cannot be pickled (the parent then runs ``fn`` itself); then exit at once."""
    try:
        try:
            connection.send((True, fn()))
        except Exception:  # the parent runs fn itself and sees the error there
            connection.send((False, None))
        connection.close()
    finally:
        os._exit(0)
