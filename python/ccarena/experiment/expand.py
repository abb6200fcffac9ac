"""Experiments: a scenario's ``[[parts]]``, ``[sweep]`` grid or ``[matrix]``, and repeats, expanded
into runs.

Each grid point is the scenario with one value per swept field path set; each point runs
``repeats`` times. Repeat r of every point uses the same seed (:func:`derive_seed`), so points are
compared on common random numbers (the same loss pattern for the same repeat). Run ids are stable
and readable: built from the swept values (``loss=0.5pct_r0``), not from positions, so adding a
value to a sweep does not rename the runs already stored. A ``[matrix]`` point is one ordered pair
of flavors (``cubic-vs-reno``); a part's runs carry the part's name (``loss__loss=1pct_r0``).
A sweep path may use ``[*]`` to set a field of every entry (``"flows[*].flavor"``).
"""

from __future__ import annotations

import hashlib
import itertools
import re
from dataclasses import dataclass
from typing import Any

from ccarena.backends import reference_backend
from ccarena.errors import UserError
from ccarena.experiment.resolve import ResolvedRun, resolve_run
from ccarena.scenario import (
    LoadedScenario,
    Scenario,
    matrix_flows,
    validate_scenario,
    without_sweep,
)
from ccarena.scenario.paths import parse_path, set_path


def derive_seed(scenario_seed: int, repeat: int) -> int:
    """The seed of repeat ``repeat``: the scenario's seed for repeat 0, else 32 bits drawn from
    ``numpy.random.SeedSequence([scenario_seed, repeat])`` (deterministic, well mixed)."""
    if repeat == 0:
        return int(scenario_seed)
    import numpy as np  # only repeats need it: a single run starts without numpy

    state = np.random.SeedSequence([int(scenario_seed), int(repeat)]).generate_state(1, np.uint32)
    return int(state[0])


def _slug(value: Any) -> str:
    text = str(value).replace("%", "pct")
    return re.sub(r"[^A-Za-z0-9.=-]+", "_", text).strip("_") or "x"


def _short_names(paths: list[str]) -> dict[str, str]:
    """Each path's last field name, or the whole path where two paths share a last name."""
    last = {p: str([t for t in parse_path(p) if isinstance(t, str)][-1]) for p in paths}
    out = {}
    for p in paths:
        clash = sum(1 for q in paths if last[q] == last[p]) > 1
        out[p] = _slug(p.replace("[", "").replace("]", "")) if clash else last[p]
    return out


@dataclass(frozen=True)
class RunPlan:
    """One run of an experiment.

    Attributes:
        run_id: stable, readable id (the run's directory name).
        point: index of the grid point (0 without a sweep).
        repeat: repeat index.
        seed: the run's seed (:func:`derive_seed`).
        params: swept field path → value as written (empty without a sweep).
        raw: the run's scenario as written (swept values set, no ``[sweep]``).
        scenario: the run's validated scenario.
        resolved: the engine spec and derived facts.
        part: the ``[[parts]]`` entry the run belongs to ("" without parts).
        matrix: ``(row flavor, column flavor)`` for a ``[matrix]`` run, else None.
        backend: the backend that runs it (set by :func:`ccarena.experiment.runids.apply_backends`;
            default the simulator, :func:`ccarena.backends.reference_backend`; another backend's
            run id ends in ``@<backend>``).
    """

    run_id: str
    point: int
    repeat: int
    seed: int
    params: dict[str, Any]
    raw: dict[str, Any]
    scenario: Scenario
    resolved: ResolvedRun
    part: str = ""
    matrix: tuple[str, str] | None = None
    backend: str = reference_backend()


def expand(loaded: LoadedScenario) -> list[RunPlan]:
    """Every run of the experiment: per part (file order), the grid points (file order, last path
    varying fastest) or matrix pairs (row-major) × repeats. Points are numbered across parts.

    Raises:
        UserError: a combination of swept values is not a valid scenario.
    """
    plans: list[RunPlan] = []
    for part in loaded.parts:
        plans += _expand_part(part.raw, part.scenario, part.name, first_point=len({p.point for p in plans}))
    return plans


def _matrix_points(base: dict[str, Any], scenario: Scenario) -> list[tuple[dict[str, Any], dict[str, Any], str, tuple[str, str]]]:
    """``(raw, params, point id, (row, col))`` per ordered pair of a ``[matrix]``: the row flavor
    on flows[0], the column flavor on flows[1] starting ``stagger`` after flows[0]."""
    matrix = scenario.matrix
    assert matrix is not None
    raw = {k: v for k, v in matrix_flows(base).items() if k != "matrix"}
    second_start = scenario.flows[0].start_ns + matrix.stagger_ns
    out = []
    for row, col in matrix.pairs():
        point = set_path(raw, "flows[0].flavor", row)
        point = set_path(point, "flows[1].flavor", col)
        point = set_path(point, "flows[1].start", f"{second_start}ns")
        out.append((point, {"matrix_row": row, "matrix_col": col}, f"{row}-vs-{col}", (row, col)))
    return out


def _expand_part(raw_part: dict[str, Any], scenario: Scenario, part: str, first_point: int) -> list[RunPlan]:
    sweep = scenario.sweep
    base = without_sweep(raw_part)
    points: list[tuple[dict[str, Any], dict[str, Any], str, tuple[str, str] | None]] = []
    if scenario.matrix is not None:
        repeats = scenario.matrix.repeats
        points = list(_matrix_points(base, scenario))
    else:
        parameters = sweep.parameters if sweep else {}
        repeats = sweep.repeats if sweep else 1
        paths = list(parameters)
        short = _short_names(paths)
        point_ids: set[str] = set()
        for point, combo in enumerate(itertools.product(*parameters.values()) if paths else [()]):
            raw = base
            params = dict(zip(paths, combo))
            for path, value in params.items():
                raw = set_path(raw, path, value)
            point_id = "_".join(f"{short[p]}={_slug(v)}" for p, v in params.items())
            if len(point_id) > 80:
                point_id = "p" + hashlib.sha256(point_id.encode()).hexdigest()[:10]
            if point_id in point_ids:
                point_id = f"{point_id}_p{point}"
            point_ids.add(point_id)
            points.append((raw, params, point_id, None))
    plans: list[RunPlan] = []
    for offset, (raw, params, point_id, pair) in enumerate(points):
        try:
            # A point that sets nothing is the part's scenario, validated already.
            point_scenario = scenario if raw is base else validate_scenario(raw)
        except UserError as err:
            shown = ", ".join(f"{p} = {v!r}" for p, v in params.items())
            where = f"part '{part}', " if part else ""
            raise UserError(f"{where}sweep point {shown}: {err}") from None
        prefix = f"{part}__" if part else ""
        for repeat in range(repeats):
            seed = derive_seed(scenario.seed, repeat)
            run_id = f"{prefix}{point_id}_r{repeat}" if point_id else f"{prefix}r{repeat}"
            plans.append(RunPlan(run_id=run_id, point=first_point + offset, repeat=repeat, seed=seed,
                                 params=params, raw=raw, scenario=point_scenario,
                                 resolved=resolve_run(point_scenario, seed), part=part, matrix=pair))
    return plans
