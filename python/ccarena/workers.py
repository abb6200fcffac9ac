"""Worker processes that do not import the calling program's ``__main__``.

``multiprocessing``'s spawn start method (and forkserver's) makes every child import the parent's
``__main__`` before it runs its task: a script file is executed again under the name
``__mp_main__``, so a script that calls :func:`ccarena.run` at its top level, without
``if __name__ == "__main__":``, would start its experiment again in every worker (and a script
read from standard input cannot be imported at all). ccarena's workers (the run pool's, the
report's figure workers, a ``dask-local`` cluster's) need nothing of ``__main__``: their tasks are
plain data and ccarena's own functions, named by module. So they are spawned as usual (a fresh
interpreter each) but told not to import it: the one piece of a child's preparation data that
names ``__main__`` (``init_main_from_name`` / ``init_main_from_path``, read by
``multiprocessing.spawn.prepare``) is left out for them, and only for them.

Not ``fork``: the parent may hold threads (rich's display, the engine's, a notebook's), and a
forked child inherits whatever lock one of them held. Not ``forkserver``: its children import
``__main__`` as spawn's do.
"""

from __future__ import annotations

import multiprocessing.context
import multiprocessing.spawn
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

_launching = threading.local()
"""``worker`` is True while this thread starts a :class:`WorkerProcess`."""

_scopes = [0]
"""How many :func:`spawned_without_main` blocks are open (any thread)."""
_scopes_lock = threading.Lock()


def _preparation_data(original: Callable[[str], dict[str, Any]]) -> Callable[[str], dict[str, Any]]:
    """``multiprocessing.spawn.get_preparation_data`` (what a spawned child is told to set up
    before it runs its target), without the import of ``__main__`` for a :class:`WorkerProcess`
    and within :func:`spawned_without_main`, unchanged for every other process."""
    def get_preparation_data(name: str) -> dict[str, Any]:
        data = original(name)
        if getattr(_launching, "worker", False) or _scopes[0]:
            data.pop("init_main_from_name", None)
            data.pop("init_main_from_path", None)
        return data

    get_preparation_data.ccarena_original = original  # type: ignore[attr-defined]
    return get_preparation_data


def _hook_preparation() -> None:
    """Install :func:`_preparation_data` once (idempotent). Every spawning ``Popen`` (POSIX,
    Windows, forkserver) reads the function from the module when it starts a process."""
    current = multiprocessing.spawn.get_preparation_data
    if not hasattr(current, "ccarena_original"):
        multiprocessing.spawn.get_preparation_data = _preparation_data(current)


@contextmanager
def spawned_without_main() -> Iterator[None]:
    """Within the block, every process spawned by this program, from any thread, skips the
    import of ``__main__`` as a :class:`WorkerProcess` does: for worker processes ccarena does
    not start itself (a ``dask-local`` cluster's, started and restarted from the cluster's own
    threads while it lives). A process the user's own code spawns meanwhile skips it too."""
    _hook_preparation()
    with _scopes_lock:
        _scopes[0] += 1
    try:
        yield
    finally:
        with _scopes_lock:
            _scopes[0] -= 1


class WorkerProcess(multiprocessing.context.SpawnProcess):
    """A spawned process that does not import the parent's ``__main__`` (see the module's
    text); everything else as ``multiprocessing``'s spawn. Its task must not be defined in
    ``__main__``."""

    @staticmethod
    def _Popen(process_obj: Any) -> Any:
        # Popen computes the child's preparation data in this thread, inside this call.
        _hook_preparation()
        before = getattr(_launching, "worker", False)
        _launching.worker = True
        try:
            return multiprocessing.context.SpawnProcess._Popen(process_obj)
        finally:
            _launching.worker = before


class WorkerContext(multiprocessing.context.SpawnContext):
    """The spawn context whose processes are :class:`WorkerProcess`."""

    Process = WorkerProcess


WORKER_CONTEXT = WorkerContext()
"""The ``mp_context`` of ccarena's process pools (runs, figures)."""
