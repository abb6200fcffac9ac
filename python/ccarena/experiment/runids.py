"""Each run on each backend asked for (``--backend sim,kernel`` runs both side by side).

A run of a non-sim backend has the id of the same run on the simulator plus ``@<backend>``
(``r0`` and ``r0@kernel``), so sim run ids never change and each kernel run sits beside its
simulated twin: the same resolved spec, the same seed.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from ccarena.experiment.expand import RunPlan


def run_id_for(run_id: str, backend: str) -> str:
    """The run id on ``backend``: unchanged for sim, ``<id>@<backend>`` otherwise."""
    return run_id if backend == "sim" else f"{run_id}@{backend}"


def sim_twin(run_id: str) -> tuple[str, str]:
    """``"r0@kernel"`` → ``("r0", "kernel")``; a sim id → ``(id, "sim")``."""
    if "@" in run_id:
        base, backend = run_id.rsplit("@", 1)
        return base, backend
    return run_id, "sim"


def apply_backends(plans: Sequence[RunPlan], backends: Sequence[str] | None) -> list[RunPlan]:
    """Each plan once per backend (default: its scenario's ``backend``), ids per
    :func:`run_id_for`."""
    out = []
    for plan in plans:
        for backend in (backends or [plan.scenario.backend]):
            out.append(dataclasses.replace(plan, backend=backend,
                                           run_id=run_id_for(plan.run_id, backend)))
    return out
