"""How many worker processes an experiment may start on this machine: at most one per core it may
use, as many as its available memory holds of the largest run, and one per run. A count asked for
(``--jobs``, ``--workers``, ``[executor] workers``) above what the machine allows is lowered, with
one line saying so: ``--jobs 1000: using 2 workers (2 cores, 2 runs)``.

The memory a worker needs is its own interpreter with ccarena loaded (:data:`WORKER_BASELINE_BYTES`)
plus the largest pending run's estimate (:func:`ccarena.experiment.budget.estimate_run`, which
``--max-memory`` already caps: a run estimated above the budget is refused before anything
starts). The budget itself is not reserved per worker: by default it is half the machine, which
would allow two workers on any machine whatever the runs' size; the engine's own stop at the
budget (:data:`ccarena.backends.MEMORY_BUDGET_ENV`) stays the backstop for a run that outgrows
its estimate.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ccarena.errors import option
from ccarena.experiment import RunPlan
from ccarena.experiment.budget import estimate_run
from ccarena.scenario import ExecutorOptions
from ccarena.units import format_bytes

WORKER_BASELINE_BYTES = 200 * 10**6
"""Resident memory of an idle worker with ccarena loaded (numpy, pandas, pyarrow, the engine):
measured 140 MB for a process-pool worker and 175 MB for a ``dask-local`` worker after a small
run (Python 3.11, x86-64), rounded up."""

CGROUP_ROOT = Path("/sys/fs/cgroup")
"""Where a cgroup-v2 container sees its own limits (``cpu.max``, ``memory.max``)."""


def usable_cores(cgroup: Path = CGROUP_ROOT) -> int:
    """The cores this process may run on: its CPU affinity (``taskset``, cpusets), lowered to a
    cgroup-v2 CPU quota (``cpu.max``, ``"200000 100000"`` = 2 cores, rounded up) when one is set.
    At least 1."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    try:
        quota, period = (cgroup / "cpu.max").read_text().split()[:2]
        if quota != "max":
            cores = min(cores, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError):  # no cgroup v2, or no quota
        pass
    return max(1, cores)


def available_memory_bytes(cgroup: Path = CGROUP_ROOT,
                           meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """Memory new processes can take without swapping: Linux's ``MemAvailable``, lowered to what a
    cgroup-v2 limit leaves (``memory.max`` − ``memory.current``); the free physical pages where
    ``/proc/meminfo`` does not exist; None when nothing says."""
    available: int | None = None
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                available = int(line.split()[1]) * 1024
                break
    except (OSError, ValueError, IndexError):
        pass
    if available is None:
        try:
            available = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            pass
    try:
        limit = (cgroup / "memory.max").read_text().strip()
        if limit != "max":
            left = int(limit) - int((cgroup / "memory.current").read_text())
            available = left if available is None else min(available, left)
    except (OSError, ValueError):
        pass
    return None if available is None else max(0, available)


@dataclass(frozen=True)
class MachineLimit:
    """What this machine allows an experiment's workers.

    Attributes:
        cores: cores this process may use (:func:`usable_cores`).
        worker_bytes: memory one worker needs (baseline + the largest run's estimate), bytes.
        memory_workers: workers the available memory holds at ``worker_bytes`` each (at least
            1), or None when the available memory is unknown.
        threads_per_run: threads a run uses (the most any run's ``[engine] threads`` asks).
    """

    cores: int
    worker_bytes: float
    memory_workers: int | None
    threads_per_run: int = 1

    @property
    def most(self) -> int:
        """Workers this machine allows, whatever the runs: ``min(cores / threads per run,
        memory_workers)``, at least 1."""
        by_cores = max(1, self.cores // self.threads_per_run)
        return min(by_cores, self.memory_workers or by_cores)

    def workers(self, asked: int | None, runs: int) -> int:
        """Workers to start for ``runs`` runs: ``asked`` (None: as many as allowed), at most
        :attr:`most` and one per run; at least 1."""
        wanted = asked if asked is not None else self.most
        return max(1, min(wanted, self.most, runs))

    def note(self, asked: int | None, runs: int, how: str) -> str | None:
        """The line saying that ``asked`` workers (set as ``how``, e.g. ``--jobs 1000``) were
        lowered because of the machine, or None (nothing asked, or the machine allows it; fewer
        runs than workers is no news: one worker per run is the rule).
        ``--jobs 1000: using 2 workers (2 cores, 2 runs)``."""
        if asked is None or asked <= self.most:
            return None
        used = self.workers(asked, runs)
        why = [f"{self.cores} core{'s' if self.cores != 1 else ''}"]
        if self.threads_per_run > 1:
            why.append(f"{self.threads_per_run} threads per run")
        if self.memory_workers is not None and self.memory_workers < self.cores:
            why.append(f"memory for {self.memory_workers} at ~{format_bytes(self.worker_bytes)} "
                       "each")
        why.append(f"{runs} run{'s' if runs != 1 else ''}")
        return f"{how}: using {used} worker{'s' if used != 1 else ''} ({', '.join(why)})"


def machine_limit(plans: Iterable[RunPlan], *, cores: int | None = None,
                  available_bytes: int | None = None) -> MachineLimit:
    """The :class:`MachineLimit` for running ``plans`` here (their estimates give a worker's
    memory).

    Args:
        plans: the runs the workers will execute.
        cores: cores to assume (default :func:`usable_cores`).
        available_bytes: memory to assume, bytes (default :func:`available_memory_bytes`).
    """
    cores = cores if cores is not None else usable_cores()
    plans = list(plans)
    largest = max((estimate_run(p.resolved.spec, p.resolved.derived).memory_bytes for p in plans),
                  default=0.0)
    worker_bytes = WORKER_BASELINE_BYTES + largest
    available = available_bytes if available_bytes is not None else available_memory_bytes()
    memory_workers = None if available is None else max(1, int(available // worker_bytes))
    threads = max((p.scenario.engine.threads for p in plans if p.backend == "sim"), default=1)
    return MachineLimit(cores=cores, worker_bytes=worker_bytes, memory_workers=memory_workers,
                        threads_per_run=threads)


def slurm_jobs(asked: int, runs: int, workers_per_job: int) -> int:
    """Slurm jobs to submit: ``asked``, but no more than ``runs`` need at ``workers_per_job``
    single-threaded workers each (a job whose workers would find no run is not submitted);
    at least 1."""
    return max(1, min(asked, math.ceil(runs / max(1, workers_per_job))))


def asked_jobs(count: int) -> str:
    """How the user set ``jobs`` to ``count``: ``--jobs 8`` on the command line, ``jobs=8`` from
    Python (:func:`ccarena.errors.option`)."""
    flag = option("jobs")
    return flag.replace("...", str(count)) if flag.endswith("...") else f"{flag} {count}"


def size_workers(executor: ExecutorOptions, table: ExecutorOptions, jobs: int | None, runs: int,
                 limit: MachineLimit) -> tuple[int, ExecutorOptions, list[str]]:
    """The process pool's workers, the executor with its worker (``dask-local``) or job
    (``slurm``) count bounded for ``runs`` runs, and the lines saying what was lowered.

    Args:
        executor: the executor as given (``table`` with the command line's options laid over).
        table: the scenario's ``[executor]`` (to tell its ``workers`` from ``--workers``).
        jobs: ``--jobs`` / ``jobs=``, or None.
        runs: runs to execute on workers.
        limit: what this machine allows (:func:`machine_limit`).
    """
    notes: list[str | None] = []
    pool = limit.workers(jobs, runs)
    if executor.kind == "process" and jobs is not None:
        notes.append(limit.note(jobs, runs, asked_jobs(jobs)))
    elif executor.kind == "dask-local":
        asked = executor.workers if executor.workers is not None else jobs
        if executor.workers is None:
            how = asked_jobs(jobs) if jobs is not None else ""
        elif executor.workers == table.workers:
            how = f"[executor] workers = {executor.workers}"
        else:
            how = f"--workers {executor.workers}"
        notes.append(limit.note(asked, runs, how))
        executor = executor.model_copy(update={"workers": limit.workers(asked, runs)})
    elif executor.kind == "slurm":
        per_job = executor.processes or executor.cores or 1
        submit = slurm_jobs(executor.jobs, runs, per_job)
        if submit < executor.jobs:
            notes.append(f"[executor] jobs = {executor.jobs}: submitting {submit} "
                         f"job{'s' if submit != 1 else ''} ({runs} run{'s' if runs != 1 else ''}, "
                         f"{per_job} worker{'s' if per_job != 1 else ''} per job)")
        executor = executor.model_copy(update={"jobs": submit})
    return pool, executor, [n for n in notes if n]
