"""``[executor]``: where an experiment's runs execute (docs/distributed.md).

``kind``: ``"process"`` (default: a pool of processes on this machine), ``"dask"`` (an existing
Dask scheduler at ``scheduler``, e.g. ``"tcp://head:8786"``), ``"dask-local"`` (a Dask
``LocalCluster`` of ``workers`` processes on this machine) or ``"slurm"`` (Dask workers started as
Slurm jobs through ``dask_jobqueue.SLURMCluster``: ``jobs`` jobs of ``cores`` cores and ``memory``
each, ``walltime``, ``queue``, ``account``, ``processes`` worker processes per job — default one
per core —, extra ``#SBATCH`` lines in ``job_extra_directives``, shell lines run before the worker
in ``job_script_prologue`` (``module load``, activating a virtual environment), the worker's
``python`` and network ``interface``). The command line's ``--executor``, ``--scheduler`` and
``--workers`` override the table. Which executor ran a run changes nothing in its results.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ccarena.quantities import StrictModel

EXECUTOR_KINDS = ("process", "dask", "dask-local", "slurm")
"""The executors ``--executor`` and ``[executor] kind`` accept."""


class ExecutorOptions(StrictModel):
    """``[executor]`` (see the module doc)."""

    kind: Literal["process", "dask", "dask-local", "slurm"] = "process"
    scheduler: str | None = None
    workers: int | None = Field(None, ge=1)
    cores: int | None = Field(None, ge=1)
    processes: int | None = Field(None, ge=1)
    memory: str | None = None
    walltime: str | None = None
    queue: str | None = None
    account: str | None = None
    jobs: int = Field(1, ge=1)
    job_extra_directives: list[str] = []
    job_script_prologue: list[str] = []
    python: str | None = None
    interface: str | None = None
