"""Dask clusters for an experiment's runs (docs/distributed.md): a client of an existing scheduler
(``dask``), a ``LocalCluster`` of worker processes on this machine (``dask-local``), or workers
started as Slurm jobs by ``dask_jobqueue.SLURMCluster`` (``slurm``). ccarena starts no cluster
code of its own; it only chooses these engines' arguments.

Every worker is one single-threaded process: a run is CPU-bound and holds the GIL in its metrics,
so threads would only contend.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ccarena.errors import UserError
from ccarena.workers import spawned_without_main
from ccarena.scenario import ExecutorOptions

if TYPE_CHECKING:
    from distributed import Client

SCHEDULER_SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")
"""Address schemes of a Dask scheduler (``distributed``'s communication backends)."""


def check_scheduler_address(address: str | None) -> str:
    """The scheduler address, checked for form (``tcp://HOST:PORT``).

    Raises:
        UserError: missing, or not ``scheme://host:port`` with a Dask scheme.
    """
    if not address:
        raise UserError("--executor dask needs the scheduler's address: --scheduler tcp://HOST:8786 "
                        "(or scheduler = \"tcp://HOST:8786\" in [executor])")
    try:
        parts = urlsplit(address)
        port = parts.port
    except ValueError:
        parts, port = None, None
    if (parts is None or parts.scheme not in SCHEDULER_SCHEMES or not parts.hostname or port is None
            or parts.path not in ("", "/") or parts.query or parts.fragment):
        raise UserError(f"--scheduler {address}: not a Dask scheduler address; write it as "
                        "tcp://HOST:PORT (e.g. tcp://10.0.0.5:8786)")
    return address


def _connect_timeout_s() -> float:
    """How long to try reaching a scheduler: Dask's ``distributed.comm.timeouts.connect``
    (``DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT``; 30 s by default)."""
    import dask.config
    from dask.utils import parse_timedelta

    return float(parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), "s"))


LOCAL_SCHEDULER_HTTP = {"dashboard_address": "127.0.0.1:0"}
"""A local cluster's scheduler HTTP server: on a free loopback port. Without a dashboard the
scheduler still serves its HTTP routes, by default on port 8787, which a second cluster on the
machine (or a user's own dashboard) would then hold."""


def slurm_cluster_arguments(options: ExecutorOptions) -> dict[str, Any]:
    """``SLURMCluster``'s keyword arguments for ``[executor] kind = "slurm"``.

    Raises:
        UserError: ``cores`` or ``memory`` missing (Slurm needs both per job).
    """
    missing = [name for name in ("cores", "memory") if getattr(options, name) is None]
    if missing:
        raise UserError(f"executor.{missing[0]}: [executor] kind = \"slurm\" needs cores and memory "
                        "per job (e.g. cores = 32, memory = \"64GB\", walltime = \"02:00:00\")")
    args: dict[str, Any] = {
        "cores": options.cores,
        "processes": options.processes or options.cores,
        "memory": options.memory,
        "python": options.python or sys.executable,
        "job_extra_directives": list(options.job_extra_directives),
        "job_script_prologue": list(options.job_script_prologue),
    }
    for name in ("walltime", "queue", "account", "interface"):
        if getattr(options, name) is not None:
            args[name] = getattr(options, name)
    return args


def slurm_cluster(options: ExecutorOptions) -> Any:
    """A ``dask_jobqueue.SLURMCluster`` built from ``[executor]`` (its scheduler starts in this
    process; nothing is submitted until it is scaled)."""
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError:
        raise UserError("--executor slurm needs dask-jobqueue: pip install 'ccarena[dask]'") from None

    return SLURMCluster(**slurm_cluster_arguments(options))


def check_executor(options: ExecutorOptions) -> None:
    """Check what can be checked of ``options`` before anything is written or started.

    Raises:
        UserError: a Dask executor without a well-formed scheduler address, or a Slurm table
            missing ``cores`` or ``memory``.
    """
    if options.kind == "dask":
        check_scheduler_address(options.scheduler)
    elif options.kind == "slurm":
        slurm_cluster_arguments(options)


@contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored while worker processes start: they inherit it (Python keeps an ignored
    SIGINT ignored), so a Ctrl-C at the terminal, sent to the whole process group, reaches only
    this process, which cancels the tasks and closes the cluster in order."""
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: nothing to arrange
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def dask_client(options: ExecutorOptions, default_workers: int) -> Iterator[tuple[Client, str]]:
    """A ``distributed.Client`` for ``options.kind`` and a description of where runs go; the
    cluster ccarena started (if any) is closed on exit, however the block ends. A
    ``dask-local`` cluster's worker processes (started, and restarted, from the cluster's threads
    while it lives) do not import this program's ``__main__``
    (:func:`ccarena.workers.spawned_without_main`): a script without the
    ``__main__`` guard would run its experiment again in each.

    Args:
        options: the executor (``kind`` ``dask``, ``dask-local`` or ``slurm``).
        default_workers: worker processes of a ``dask-local`` cluster without ``workers``.

    Raises:
        UserError: a bad or unreachable scheduler address, or a Slurm table missing a field.
    """
    with ExitStack() as scope:
        if options.kind == "dask-local":
            scope.enter_context(spawned_without_main())
        with _dask_client(options, default_workers) as client_and_where:
            yield client_and_where


@contextmanager
def _dask_client(options: ExecutorOptions, default_workers: int) -> Iterator[tuple[Client, str]]:
    """:func:`dask_client`, without the scope of its workers' start."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise UserError(f"--executor {options.kind} needs Dask: pip install 'ccarena[dask]'") from None
    cluster: Any = None
    if options.kind == "dask":
        address = check_scheduler_address(options.scheduler)
        try:
            client = Client(address, timeout=_connect_timeout_s())
        except (OSError, TimeoutError) as err:
            reason = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise UserError(f"--scheduler {address}: cannot reach a Dask scheduler ({reason}); "
                            "start one with `dask scheduler` or check the address") from None
        where = f"Dask scheduler {address}"
    elif options.kind == "dask-local":
        workers = options.workers or default_workers
        # Its workers' own logs are silenced: a run's failure comes back through its future, and a
        # worker closing under a busy machine logs lost heartbeats that mean nothing to the user.
        with _sigint_ignored():
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                   dashboard_address=None, silence_logs=logging.CRITICAL,
                                   scheduler_kwargs=LOCAL_SCHEDULER_HTTP)
        client = Client(cluster)
        where = f"{workers} Dask workers"
    elif options.kind == "slurm":
        cluster = slurm_cluster(options)
        cluster.scale(jobs=options.jobs)
        client = Client(cluster)
        where = f"Slurm ({options.jobs} jobs × {options.processes or options.cores} workers)"
    else:
        raise ValueError(f"not a Dask executor: {options.kind}")
    try:
        yield client, where
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def default_worker_count() -> int:
    """Worker processes of a ``dask-local`` cluster by default: this machine's cores."""
    return os.cpu_count() or 1
