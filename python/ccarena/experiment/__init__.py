"""Experiments: a validated scenario expanded into runs, each with its run spec.

- :mod:`ccarena.experiment.expand`: ``[[parts]]``, ``[sweep]`` grids, ``[matrix]`` pairs and
  repeats → :class:`RunPlan` per run, with seeds derived for repeats;
- :mod:`ccarena.experiment.resolve`: a point's scenario → its :class:`ccarena.runspec.RunSpec`
  (the topology built once) and the facts metrics need (paths, base RTTs);
- :mod:`ccarena.experiment.runids`: each run once per backend, with its run id;
- :mod:`ccarena.experiment.calibration_suite`: ``ccarena calibrate``'s suite as a scenario dict.
"""

from ccarena.experiment.expand import RunPlan, derive_seed, expand
from ccarena.experiment.resolve import ResolvedRun, resolve_run
from ccarena.experiment.runids import apply_backends, run_id_for, sim_twin

__all__ = ["ResolvedRun", "RunPlan", "apply_backends", "derive_seed", "expand", "resolve_run",
           "run_id_for", "sim_twin"]
