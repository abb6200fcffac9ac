"""Each run on each backend asked for (``--backend sim,kernel`` runs both side by side).

A run of a non-sim backend has the id of the same run on the simulator plus ``@<backend>``
(``r0`` and ``r0@kernel``), so sim run ids never change and each kernel run sits beside its
simulated twin: the same resolved spec (but for the host model, below), the same seed.

Each run gets its host model here (:mod:`ccarena.experiment.host_model`): the scenario's or the
flow's ``host``, else ``"linux"`` when a real-TCP backend (Linux's own stack) is among the run's
backends — so the simulated twin of a kernel run models a Linux host — else ``"rfc"``. A run on a
real-TCP backend always recovers as Linux does.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from ccarena.backends import real_tcp_backends, reference_backend, sim_twin
from ccarena.experiment.expand import RunPlan
from ccarena.experiment.host_model import (LINUX_HOST_PARAMS, LINUX_LINK_JITTER, LINUX_RECOVERY,
                                           with_host_model, with_real_tcp_host)

TWIN_LINK_JITTER = LINUX_LINK_JITTER
"""The link jitter a simulated twin of a kernel run gets (the ``linux`` host model's)."""
__all__ = ["LINUX_HOST_PARAMS", "LINUX_RECOVERY", "REAL_TCP_BACKENDS", "SIMULATOR", "TWIN_LINK_JITTER",
           "apply_backends", "run_id_for", "sim_twin"]

REAL_TCP_BACKENDS = real_tcp_backends()
"""Backends whose TCP is Linux's own (they declare ``real_tcp``, :mod:`ccarena.backends`): runs
on them use :data:`LINUX_RECOVERY`, and the runs beside them default to the ``linux`` host model."""

SIMULATOR = reference_backend()
"""The simulator's backend name: its run ids carry no ``@<backend>``."""


def run_id_for(run_id: str, backend: str) -> str:
    """The run id on ``backend``: unchanged for sim, ``<id>@<backend>`` otherwise."""
    return run_id if backend == SIMULATOR else f"{run_id}@{backend}"


def apply_backends(plans: Sequence[RunPlan], backends: Sequence[str] | None) -> list[RunPlan]:
    """Each plan once per backend (default: its scenario's ``backend``), ids per
    :func:`run_id_for`, each with its host model (:mod:`ccarena.experiment.host_model`): a
    real-TCP backend's run as Linux's (:func:`~ccarena.experiment.host_model.with_real_tcp_host`),
    every other's as the scenario or flow chooses, ``"linux"`` by default when a real-TCP backend is
    among the run's backends (:func:`~ccarena.experiment.host_model.with_host_model`)."""
    out = []
    for plan in plans:
        chosen = list(backends or [plan.scenario.backend])
        beside_real_tcp = any(b in REAL_TCP_BACKENDS for b in chosen)
        for backend in chosen:
            one = with_real_tcp_host(plan) if backend in REAL_TCP_BACKENDS else with_host_model(plan, beside_real_tcp)
            out.append(dataclasses.replace(one, backend=backend,
                                           run_id=run_id_for(plan.run_id, backend)))
    return out
