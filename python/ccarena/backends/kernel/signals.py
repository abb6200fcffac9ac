"""SIGTERM during the kernel backend's work: raised as KeyboardInterrupt in the process that set it,
so the namespaces and processes a run or a probe started are cleaned up; a forked helper
(pyroute2's namespace child) just exits."""

from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from typing import Any, Iterator


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """While active (main thread only), SIGTERM raises KeyboardInterrupt, so cleanup runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    owner = os.getpid()

    def handler(signum: int, frame: Any) -> None:  # noqa: ARG001
        if os.getpid() != owner:  # a forked helper (pyroute2's netns child) must just exit
            os._exit(128 + signum)
        if callable(previous):  # the CLI's handler records SIGTERM for its exit status
            previous(signum, frame)
        raise KeyboardInterrupt("SIGTERM")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
