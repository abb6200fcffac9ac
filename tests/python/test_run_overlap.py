"""The front end's overlap of its own work with the engine's (issues 16 and 17), checked for
sameness, not speed: a run started in the background gives the tables a foreground run gives and
stops when asked; a run's tables written table by table (one on a thread) are the files
``write_run`` writes; summary.parquet built from what this process wrote equals the one read
back from disk; the command line's fast exit keeps exit statuses, atexit handlers and output."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from ccarena.backends.sim import SimBackend, run_spec
from ccarena.executor.run import execute_run, run_record
from ccarena.experiment import expand
from ccarena.scenario import load_scenario
from ccarena.store import ExperimentStore, build_summary

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "quickstart.toml"


def _plan(duration: str | None = None):
    raw = load_scenario(QUICKSTART).raw
    if duration is not None:
        raw = dict(raw, duration=duration)
    return expand(load_scenario(raw))[0]


def test_a_run_started_in_the_background_gives_the_foreground_tables() -> None:
    plan = _plan()
    seen: list[int] = []
    started = SimBackend().start(plan.resolved.spec, lambda now, end: seen.append(now))
    background = started.result().tables
    foreground = run_spec(plan.resolved.spec)
    assert set(background) == set(foreground)
    for name, table in foreground.items():
        pd.testing.assert_frame_equal(background[name], table, check_exact=True)
    assert seen and seen[-1] == plan.resolved.spec.duration_ns


def test_a_background_run_stops_when_cancelled() -> None:
    plan = _plan(duration="100000s")
    started = SimBackend().start(plan.resolved.spec)
    time.sleep(0.3)
    began = time.monotonic()
    started.cancel()
    assert time.monotonic() - began < 5.0
    with pytest.raises(KeyboardInterrupt):
        started.result()


def test_a_run_stored_with_its_engine_in_the_background_equals_one_stored_in_the_foreground(
        tmp_path: Path) -> None:
    plan = _plan()
    record = run_record(plan, "quickstart")
    fore = execute_run(str(tmp_path / "fore"), record, spec=plan.resolved.spec)
    back = execute_run(str(tmp_path / "back"), record, spec=plan.resolved.spec,
                       pending=SimBackend().start(plan.resolved.spec), keep_summary_inputs=True)
    assert fore["status"] == back["status"] == "complete"
    for name in ("flows", "samples", "queues", "links", "regions"):
        a = pq.read_table(tmp_path / "fore" / "runs" / plan.run_id / f"{name}.parquet")
        b = pq.read_table(tmp_path / "back" / "runs" / plan.run_id / f"{name}.parquet")
        assert a.schema.equals(b.schema, check_metadata=True), name
        assert a.equals(b), name
    # summary.parquet from what the process kept equals the one read back from the files
    store = ExperimentStore(tmp_path / "back")
    kept = build_summary(store, [plan.run_id], known={plan.run_id: back["summary_inputs"]})
    read = build_summary(store, [plan.run_id])
    pd.testing.assert_frame_equal(kept, read, check_exact=True)


def test_a_table_that_fails_in_the_background_leaves_no_run(tmp_path: Path) -> None:
    store = ExperimentStore(tmp_path)
    writer = store.start_run("r0")
    writer.add_table("flows", pd.DataFrame({"a": [1, 2]}))
    writer.add_table("samples", pd.DataFrame({"bad": [object()]}), background=True)
    with pytest.raises(Exception):
        writer.commit({"run_id": "r0"})
    assert not store.is_complete("r0")
    assert not any((tmp_path / ".tmp").iterdir())


def test_the_command_line_exit_keeps_the_status_atexit_handlers_and_output() -> None:
    code = ("import atexit, sys\n"
            "from ccarena.cli import exit_now\n"
            "atexit.register(lambda: print('atexit ran', flush=True))\n"
            "sys.stdout.write('buffered, not flushed')\n"
            "exit_now(int(sys.argv[1]) if sys.argv[1].isdigit() else sys.argv[1])\n")
    done = subprocess.run([sys.executable, "-c", code, "3"], capture_output=True, text=True)
    assert done.returncode == 3
    assert "atexit ran" in done.stdout and "buffered, not flushed" in done.stdout
    done = subprocess.run([sys.executable, "-c", code, "a message"], capture_output=True, text=True)
    assert done.returncode == 1 and "a message" in done.stderr


LONG_RUN = (Path(__file__).resolve().parents[1] / "data" / "long-run.toml").read_text()


@pytest.mark.parametrize("sig, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)],
                         ids=["sigterm", "ctrl-c"])
def test_a_signal_while_the_first_run_starts_stops_like_any_interruption(
        tmp_path: Path, sig: int, status: int) -> None:
    # The engine starts before the lock is taken and the summary's modules load; a signal then
    # (as soon as the lock's owner file exists) ends the command as an interruption does.
    scenario = tmp_path / "long.toml"
    scenario.write_text(LONG_RUN)
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "ccarena", "run", str(scenario), "--out",
                             str(out), "-j", "1", "-q", "--no-report"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (out / ".lock-owner.json").exists() and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.005)
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == status, stderr
    assert "Traceback" not in stderr
    assert "interrupted: 0 of 1 runs complete" in stderr, stderr
    assert not (out / "runs").exists() or not any((out / "runs").iterdir())


def test_the_command_line_process_leaves_the_engine_its_core() -> None:
    # numpy's OpenBLAS starts a worker per extra core that spins while idle (it took CPU from the
    # engine's thread); the command line's tuning keeps it to none, unless the user chose.
    probe = ("import os, sys\n"
             "if sys.argv[1] == 'tuned':\n"
             "    from ccarena.process_setup import tune_process; tune_process()\n"
             "import gc, numpy\n"
             "print(len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS'),"
             " gc.get_threshold()[0])\n")

    # What OpenBLAS reads for its thread count, cleared: another test's Dask nanny may have set
    # OMP_NUM_THREADS in this process's environment.
    blas = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
    clean = {k: v for k, v in os.environ.items() if k not in blas}

    def threads(mode: str, **env: str) -> list[str]:
        done = subprocess.run([sys.executable, "-c", probe, mode], capture_output=True, text=True,
                              env={**clean, **env}, check=True)
        return done.stdout.split()

    assert threads("tuned") == ["1", "1", "50000"]
    assert threads("tuned", OPENBLAS_NUM_THREADS="2")[1] == "2", "the user's choice is kept"
    if (os.cpu_count() or 1) > 1:
        assert int(threads("plain")[0]) > 1, "without it numpy starts BLAS threads (the check is real)"
