"""run.json's ``timing`` holds the engine's own time beside the run's wall time (issue 35, item
4): ``engine_s`` (building and running the simulation, on the engine's thread), its build part,
the engine thread's CPU seconds and simulated seconds per engine second, whichever way the run was
started (in the caller's thread, or on the engine's own thread while the caller loads the rest)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ccarena.backends.sim import SimBackend
from ccarena.executor.run import execute_run, run_record
from ccarena.experiment import expand
from ccarena.runspec import RunSpec
from ccarena.scenario import load_scenario

SCENARIO = {"name": "timed", "duration": "3s",
            "topology": {"kind": "dumbbell", "pairs": 4, "bottleneck": {"rate": "50Mbps", "delay": "10ms"}},
            "flows": [{"from": f"left{i}", "to": f"right{i}", "flavor": "cubic"} for i in range(4)]}


@pytest.mark.parametrize("started", ["in the caller", "on the engine's thread"])
def test_the_engine_time_is_stored_apart_from_the_wall_time(tmp_path: Path, started: str) -> None:
    plan = expand(load_scenario(SCENARIO))[0]
    record = run_record(plan, "timed")
    pending = None
    if started != "in the caller":
        pending = SimBackend().start(RunSpec.from_dict(record["spec"]))
    outcome = execute_run(str(tmp_path), record, pending=pending)
    assert outcome["status"] == "complete", outcome
    timing = json.loads((tmp_path / "runs" / plan.run_id / "run.json").read_text())["timing"]
    engine_s, wall_s = timing["engine_s"], timing["wall_s"]
    assert 0 < timing["engine_build_s"] < engine_s <= wall_s
    # The engine's thread worked (a 3 s, 4-flow run is tens of ms of CPU), never more than its
    # wall time allows (the thread runs on one CPU at a time).
    assert 0 < timing["engine_cpu_s"] <= engine_s * 1.05 + 0.01
    assert math.isclose(timing["simulated_per_engine_s"], 3.0 / engine_s)
    assert timing["simulated_per_engine_s"] >= timing["simulated_per_wall"]
