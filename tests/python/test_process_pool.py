"""A pool worker that dies in the middle of a run (the OOM killer, ``kill -9``, a crash of the
engine's process) neither hangs nor stops the experiment: the runs it held are run again, and a
run that kills its process every time is recorded as failed, with the signal, while the others
complete (ccarena.executor.process_pool), and the user is told the worker died
(ccarena.WorkerDied), not that the engine failed. Scripts without the ``__main__`` guard and
scripts read from standard input: tests/python/test_api_scripts.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# The pool's task, wrapped: it counts each attempt at a run (a file per attempt) and kills its own
# process with SIGKILL at the run named by KILL_RULE ("always:<run_id>" or "once:<run_id>").
KILLER = '''
import os
import signal
from pathlib import Path

from ccarena.executor import process_pool

REAL = process_pool.pool_task


def task(t):
    root, record = t
    attempts = Path(root).parent / "attempts"
    attempts.mkdir(exist_ok=True)
    run_id = record["run_id"]
    n = len(list(attempts.glob(run_id + ".*")))
    (attempts / f"{run_id}.{n}").touch()
    kind, victim = os.environ["KILL_RULE"].split(":", 1)
    if run_id == victim and (kind == "always" or n == 0):
        os.kill(os.getpid(), signal.SIGKILL)
    return REAL(t)
'''

DRIVER = '''
import sys
sys.path.insert(0, {here!r})

import killer
from ccarena.executor import process_pool

process_pool.pool_task = killer.task

if __name__ == "__main__":
    import ccarena
    scenario = {{
        "name": "killed", "duration": "1s",
        "topology": {{"kind": "single_link", "link": {{"rate": "10Mbps", "delay": "5ms"}}}},
        "flows": [{{"from": "a", "to": "b", "flavor": "reno"}}],
        "sweep": {{"topology.link.delay": ["5ms", "10ms", "15ms", "20ms"]}},
    }}
    try:
        ccarena.run(scenario, {out!r}, jobs=2)
        print("COMPLETE")
    except ccarena.WorkerDied as err:
        print("DIED", err)
    except ccarena.EngineFault as err:
        print("FAULT", err)
'''

RUN_IDS = ["delay=5ms_r0", "delay=10ms_r0", "delay=15ms_r0", "delay=20ms_r0"]


def run_with_killer(tmp_path: Path, rule: str) -> tuple[str, Path]:
    (tmp_path / "killer.py").write_text(KILLER)
    out = tmp_path / "out"
    (tmp_path / "driver.py").write_text(DRIVER.format(here=str(tmp_path), out=str(out)))
    done = subprocess.run([sys.executable, str(tmp_path / "driver.py")], capture_output=True,
                          text=True, timeout=240, env={**os.environ, "KILL_RULE": rule})
    assert done.returncode == 0, done.stderr
    return done.stdout, out


def attempts(tmp_path: Path, run_id: str) -> int:
    return len(list((tmp_path / "attempts").glob(run_id + ".*")))


def test_a_worker_killed_once_costs_a_retry_not_the_run(tmp_path):
    victim = RUN_IDS[1]
    stdout, out = run_with_killer(tmp_path, f"once:{victim}")
    assert "COMPLETE" in stdout, stdout
    assert sorted(p.name for p in (out / "runs").iterdir()) == sorted(RUN_IDS)
    assert not (out / "failed").exists() or not any((out / "failed").iterdir())
    assert attempts(tmp_path, victim) == 2


@pytest.mark.parametrize("victim", [RUN_IDS[0], RUN_IDS[3]])
def test_a_run_that_kills_its_worker_every_time_is_recorded_failed_and_the_rest_complete(tmp_path, victim):
    stdout, out = run_with_killer(tmp_path, f"always:{victim}")
    # The worker's death, as such: not an engine fault.
    assert "DIED" in stdout and "FAULT" not in stdout and "SIGKILL" in stdout, stdout
    assert "killed by SIGKILL" in stdout and "jobs=" in stdout, stdout  # Python's terms
    assert sorted(p.name for p in (out / "runs").iterdir()) == sorted(set(RUN_IDS) - {victim})
    failure = json.loads((out / "failed" / f"{victim}.json").read_text())
    assert "killed by SIGKILL" in failure["error"] and failure["seed"] is not None
    assert failure["cause"] == "worker_died" and failure["exitcode"] == -9
    assert failure["spec"]["duration_ns"] == 1_000_000_000  # enough to replay it
    # Twice on a pool (each break re-runs what the pool held), then alone, where it is caught.
    assert attempts(tmp_path, victim) == 3
    summary = (out / "summary.parquet")
    assert summary.is_file()
    # Nothing half-written is left behind.
    assert not (out / ".tmp").exists() or not any((out / ".tmp").iterdir())
