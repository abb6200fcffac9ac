"""Dask clusters for an experiment's runs (docs/distributed.md): a client of an existing scheduler
(``dask``), a ``LocalCluster`` of worker processes on this machine (``dask-local``), or workers
started as Slurm jobs by ``dask_jobqueue.SLURMCluster`` (``slurm``). ccarena starts no cluster
code of its own; it only chooses these engines' arguments.

Every worker is one single-threaded process: a run is CPU-bound and holds the GIL in its metrics,
so threads would only contend.

Nothing here may hang or end in a traceback on a machine that cannot run the executor: a missing
``[dask]`` extra or a missing ``sbatch`` is found before anything starts (:func:`check_executor`),
a scheduler is reached within a few seconds or not at all (:func:`probe_scheduler`), and Slurm is
asked whether it would take the job before any job is submitted (:func:`check_submission`).
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ccarena.errors import UserError
from ccarena.executor.sizing import usable_cores
from ccarena.scenario import ExecutorOptions
from ccarena.workers import spawned_without_main

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


CONNECT_TIMEOUT_S = 5.0
"""How long ccarena tries to reach a scheduler (connect, handshake, identity) unless Dask's
``distributed.comm.timeouts.connect`` is set to something other than Dask's own default (30 s,
made for workers that wait for a scheduler to come up, not for a user waiting at a prompt)."""

SUBMIT_COMMAND = "sbatch"
"""Slurm's submission command (``SLURMCluster.job_cls.submit_command``)."""
SUBMIT_CHECK_TIMEOUT_S = 20.0
"""How long ``sbatch --test-only`` may take to answer (it asks the Slurm controller)."""


def _connect_timeout_s() -> float:
    """How long to try reaching a scheduler: :data:`CONNECT_TIMEOUT_S`, or Dask's
    ``distributed.comm.timeouts.connect`` (``DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT``) when the
    user set it to another value than Dask's default."""
    import dask.config
    import distributed  # noqa: F401  (registers Dask's defaults for distributed.*)
    from dask.utils import parse_timedelta

    key = "distributed.comm.timeouts.connect"
    shipped = None
    for defaults in dask.config.defaults:
        try:
            shipped = defaults["distributed"]["comm"]["timeouts"]["connect"]
        except (KeyError, TypeError):
            continue
    configured = dask.config.get(key)
    if shipped is not None and parse_timedelta(configured, "s") == parse_timedelta(shipped, "s"):
        return CONNECT_TIMEOUT_S
    return float(parse_timedelta(configured, "s"))


def probe_scheduler(address: str, timeout_s: float) -> None:
    """Check, within ``timeout_s`` in all, that a Dask scheduler answers at ``address``: connect,
    handshake and ask its identity. ``distributed.Client`` bounds only the connect: a server that
    accepts and never answers (an HTTP server, a silent port) held it forever, and one that
    answers garbage ended in a traceback (a frame length read as 3 EiB: ``MemoryError``).

    Raises:
        UserError: nothing answers in time, or what answers is not a Dask scheduler.
    """
    import asyncio  # here: off the command line's start-up path

    from distributed.core import rpc

    async def identity() -> Any:
        remote = rpc(address, timeout=timeout_s)
        try:
            return await asyncio.wait_for(remote.identity(), timeout_s)
        finally:
            await remote.close_rpc()

    # A daemon thread of its own: this thread may already run an event loop (a notebook's), and
    # a probe stuck past its deadline must not hold the interpreter's exit.
    done: cf.Future = cf.Future()

    def ask() -> None:
        try:
            done.set_result(asyncio.run(identity()))
        except BaseException as err:  # noqa: BLE001  (handed to the waiting thread)
            done.set_exception(err)

    threading.Thread(target=ask, name="ccarena-probe", daemon=True).start()
    try:
        answer = done.result(timeout=timeout_s + 2)
    except (OSError, TimeoutError, asyncio.TimeoutError, cf.TimeoutError) as err:
        reason = str(err).splitlines()[0] if str(err) else f"no answer within {timeout_s:g} s"
        raise UserError(f"--scheduler {address}: cannot reach a Dask scheduler ({reason}); "
                        "start one with `dask scheduler` or check the address") from None
    except Exception as err:  # noqa: BLE001  (whatever a non-Dask peer makes the parser raise)
        raise UserError(f"--scheduler {address}: what answers there is not a Dask scheduler "
                        f"({type(err).__name__}); check the address and port") from None
    kind = answer.get("type") if isinstance(answer, dict) else None
    if kind != "Scheduler":
        raise UserError(f"--scheduler {address}: a Dask {kind or 'service'} answers there, not a "
                        "scheduler; give the scheduler's address (`dask scheduler` prints it)")


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


def check_submission(cluster: Any) -> None:
    """Ask Slurm whether it would take ``cluster``'s job script (``sbatch --test-only``, which
    submits nothing), so that a refused job (a wrong partition or account, an unreachable
    controller) is one line now instead of the cluster retrying the submission forever with a
    traceback each time.

    Raises:
        UserError: sbatch refuses the script, fails, or does not answer within
            :data:`SUBMIT_CHECK_TIMEOUT_S`.
    """
    try:
        done = subprocess.run([SUBMIT_COMMAND, "--test-only"], input=cluster.job_script(),
                              capture_output=True, text=True, timeout=SUBMIT_CHECK_TIMEOUT_S,
                              check=False)
    except subprocess.TimeoutExpired:
        raise UserError(f"--executor slurm: `{SUBMIT_COMMAND} --test-only` did not answer within "
                        f"{SUBMIT_CHECK_TIMEOUT_S:g} s; is the Slurm controller reachable "
                        "(`sinfo`)?") from None
    except OSError as err:
        raise UserError(f"--executor slurm: cannot run {SUBMIT_COMMAND} ({err.strerror}); run "
                        "ccarena where Slurm's commands are, or choose another --executor") from None
    if done.returncode != 0:
        said = [line.strip() for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        reason = said[-1] if said else f"exit status {done.returncode}"
        raise UserError(f"--executor slurm: Slurm refuses the job ({reason[:300]}); check [executor] "
                        "queue, account, cores, memory and walltime")


def _need(module: str, kind: str) -> None:
    """Import ``module`` (a part of the ``[dask]`` extra) or say in one line that it is missing.

    Raises:
        UserError: ``module`` cannot be imported.
    """
    try:
        __import__(module)
    except ImportError as err:
        raise UserError(f"--executor {kind} needs {module.replace('_', '-')}, which is not "
                        f"importable ({err}): pip install 'ccarena[dask]'") from None


def check_executor(options: ExecutorOptions) -> None:
    """Check what can be checked of ``options`` before anything is written or started: the
    ``[dask]`` extra is importable, ``sbatch`` is on ``PATH`` for Slurm, a scheduler address is
    well-formed, a Slurm table has ``cores`` and ``memory``.

    Raises:
        UserError: the first of these that fails, in one line.
    """
    if options.kind == "process":
        return
    if options.kind == "dask":
        check_scheduler_address(options.scheduler)
    elif options.kind == "slurm":
        slurm_cluster_arguments(options)
    _need("distributed", options.kind)
    if options.kind == "slurm":
        _need("dask_jobqueue", options.kind)
        if shutil.which(SUBMIT_COMMAND) is None:
            raise UserError(f"--executor slurm: {SUBMIT_COMMAND} is not on PATH (this machine is "
                            "not a Slurm submit host); run ccarena on the cluster's login node, or "
                            "choose another --executor")


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
        timeout_s = _connect_timeout_s()
        probe_scheduler(address, timeout_s)
        try:
            client = Client(address, timeout=timeout_s)
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
        try:
            check_submission(cluster)
        except BaseException:
            cluster.close()
            raise
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
    """Worker processes of a ``dask-local`` cluster by default: the cores this process may use
    (:func:`ccarena.executor.sizing.usable_cores`)."""
    return usable_cores()
