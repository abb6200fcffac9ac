"""Sweeps on Dask (docs/distributed.md): a sweep on a 2-worker LocalCluster gives the process pool's
results; a worker killed mid-sweep loses no run and duplicates none; Ctrl-C keeps the finished
runs and a rerun does the rest; a second completion of a run keeps the first; a bad scheduler
address is one line; the Slurm recipe builds the job script it documents."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from ccarena.cli import app
from ccarena.errors import UserError
from ccarena.executor import run_experiment
from ccarena.executor.clusters import (
    LOCAL_SCHEDULER_HTTP,
    check_scheduler_address,
    dask_client,
    slurm_cluster,
    slurm_cluster_arguments,
)
from ccarena.executor.dask_pool import dask_task
from ccarena.executor.run import run_record
from ccarena.experiment import expand
from ccarena.scenario import ExecutorOptions, load_scenario
from ccarena.store import ExperimentStore
from ccarena.store.guard import StoreError
from ccarena.store.location import results_path
from distributed import Client, LocalCluster
from typer.testing import CliRunner

# 5 loss rates × 8 repeats = 40 runs of 0.2 s simulated at 2 Mb/s (a few ms of engine each).
SWEEP = """
name = "dask-sweep"
duration = "0.2s"
seed = 3

[topology]
kind = "single_link"
link = { rate = "2Mbps", delay = "5ms", queue = { limit = "50pkt" } }

[[flows]]
from = "a"
to = "b"
flavor = "reno"

[sweep]
"topology.link.loss" = ["0%", "0.1%", "0.5%", "1%", "2%"]
repeats = 8
"""
RUNS = 40


@pytest.fixture(scope="module")
def scenario(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("scenario") / "sweep.toml"
    path.write_text(SWEEP)
    return path


@pytest.fixture(scope="module")
def pool_root(scenario, tmp_path_factory) -> Path:
    """The process pool's results: the reference every Dask run must equal."""
    root = tmp_path_factory.mktemp("pool") / "out"
    outcome = run_experiment(load_scenario(scenario), root, jobs=2, show_progress=False)
    assert len(outcome.completed) == RUNS and not outcome.failed
    return root


@pytest.fixture(scope="module")
def pool_summary(pool_root) -> pd.DataFrame:
    return comparable(pool_root)


@pytest.fixture(scope="module")
def cluster():
    """A LocalCluster of 2 single-threaded worker processes, reached by address (``--executor dask``),
    with a client of its own already open in this process, as a notebook user has one."""
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      scheduler_kwargs=LOCAL_SCHEDULER_HTTP) as lc, \
            Client(lc):
        yield lc


def comparable(root: Path) -> pd.DataFrame:
    """summary.parquet in run order (what the executors must agree on)."""
    df = pd.read_parquet(root / "summary.parquet")
    return df.sort_values(["run_id", "flow"]).reset_index(drop=True)


def run_dirs(root: Path) -> dict[str, str]:
    """run id → digest of every file of the run directory."""
    out = {}
    for d in sorted((root / "runs").iterdir()):
        out[d.name] = hashlib.sha256(b"".join(f.read_bytes() for f in sorted(d.iterdir()))).hexdigest()
    return out


def assert_whole(root: Path, n: int) -> None:
    """Exactly ``n`` run directories, each whole, and no stray temporary directory."""
    dirs = sorted((root / "runs").iterdir())
    assert len(dirs) == n
    for d in dirs:
        names = {p.name for p in d.iterdir()}
        assert {"run.json", "flows.parquet", "samples.parquet", "queues.parquet", "links.parquet",
                "regions.parquet"} == names, d
    assert not (root / ".tmp").exists() or not any((root / ".tmp").iterdir())


def test_a_sweep_on_dask_equals_the_process_pool(scenario, pool_summary, cluster, tmp_path):
    lc = cluster
    root = tmp_path / "dask"
    outcome = run_experiment(load_scenario(scenario), root, show_progress=False,
                             executor=ExecutorOptions(kind="dask", scheduler=lc.scheduler_address))
    assert len(outcome.completed) == len(set(outcome.completed)) == RUNS and not outcome.failed
    assert_whole(root, RUNS)
    pd.testing.assert_frame_equal(comparable(root), pool_summary)


def test_killing_a_worker_mid_sweep_loses_no_run_and_duplicates_none(scenario, pool_summary, cluster,
                                                                      tmp_path):
    lc = cluster
    root = tmp_path / "killed"
    killed: dict[str, object] = {}
    # Half the repeats (20 runs): the same run ids and seeds as the pool's first 4 repeats.
    half = scenario.with_name("half.toml")
    half.write_text(SWEEP.replace("repeats = 8", "repeats = 4"))
    runs = RUNS // 2

    def kill_one_worker() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            done = len(list((root / "runs").iterdir())) if (root / "runs").is_dir() else 0
            busy = [ws.address for ws in list(lc.scheduler.workers.values()) if ws.processing]
            if done >= 4 and busy:  # mid-sweep, and the worker holds a run
                nanny = next(n for n in lc.workers.values() if n.worker_address == busy[0])
                pid = nanny.process.pid
                os.kill(pid, signal.SIGKILL)
                killed.update(worker=busy[0], pid=pid, done=done)
                return
            time.sleep(0.01)

    killer = threading.Thread(target=kill_one_worker)
    killer.start()
    try:
        outcome = run_experiment(load_scenario(half), root, show_progress=False,
                                 executor=ExecutorOptions(kind="dask", scheduler=lc.scheduler_address))
    finally:
        killer.join()
    assert killed, "no worker was killed"
    assert killed["done"] < runs, "the sweep was over before the kill"
    assert len(outcome.completed) == len(set(outcome.completed)) == runs and not outcome.failed
    assert_whole(root, runs)
    reference = pool_summary[pool_summary["run_id"].isin(outcome.completed)].reset_index(drop=True)
    assert len(reference) == runs
    pd.testing.assert_frame_equal(comparable(root), reference)
    deadline = time.monotonic() + 60  # the nanny restarts it (for the tests after this one)
    while len(lc.scheduler.workers) < 2:
        assert time.monotonic() < deadline, "the killed worker was not restarted"
        time.sleep(0.05)


def test_a_second_completion_of_a_run_keeps_the_first(scenario, pool_root, tmp_path):
    loaded = load_scenario(scenario)
    root = pool_root
    store = ExperimentStore(root)
    before = run_dirs(root)
    plan = expand(loaded)[7]
    record = run_record(plan, loaded.scenario.name)
    # A retried task whose run is stored: nothing is redone.
    assert dask_task(str(root), record, False, None)["reused"] is True
    # Two writers of one run racing: the second rename finds the first complete copy and yields.
    tables = {name: store.read_table(plan.run_id, name) for name in ("flows", "samples")}
    assert store.write_run(plan.run_id, {"run_id": plan.run_id, "other": 1}, tables, replace=False) \
        == store.run_dir(plan.run_id)
    assert run_dirs(root) == before
    assert not (root / ".tmp").exists() or not any((root / ".tmp").iterdir())
    # A worker that does not see the experiment directory refuses rather than write elsewhere.
    with pytest.raises(StoreError, match="does not see the experiment directory"):
        dask_task(str(tmp_path / "elsewhere"), record, False, None)


def test_ctrl_c_on_dask_local_keeps_finished_runs_and_a_rerun_does_the_rest(tmp_path):
    """Through the command line, as a user stops it: SIGINT to the whole process group."""
    longer = SWEEP.replace('"0.2s"', '"20s"').replace("2Mbps", "100Mbps").replace("repeats = 8",
                                                                                 "repeats = 2")
    (tmp_path / "sweep.toml").write_text(longer)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "ccarena", "run", "sweep.toml", "--out", f"file://{out}",
           "--executor", "dask-local", "--workers", "2", "-q", "--no-report"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not (out / "runs").is_dir() or len(list((out / "runs").iterdir())) < 2:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C at a terminal: the whole process group
        _, stderr = proc.communicate(timeout=60)
        deadline = time.monotonic() + 30  # every worker process of the cluster is gone too
        while _group_alive(proc.pid):
            assert time.monotonic() < deadline, "worker processes outlived the command"
            time.sleep(0.1)
    finally:
        if _group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.wait()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "interrupted" in stderr, stderr
    kept = run_dirs(out)
    assert 2 <= len(kept) < 10, stderr
    assert f"interrupted: {len(kept)} of 10 runs complete" in stderr, stderr
    assert_whole(out, len(kept))

    # The rest on the default executor (in this process with -j 1): resume works across executors.
    rerun = subprocess.run([*cmd[:cmd.index("--executor")], "-j", "1", "-q", "--no-report"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{len(kept)} of 10 runs were already complete" in rerun.stderr, rerun.stderr
    after = run_dirs(out)
    assert len(after) == 10
    assert all(after[k] == v for k, v in kept.items()), "a kept run was redone"


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def test_a_bad_scheduler_address_is_one_line(scenario, monkeypatch, tmp_path):
    monkeypatch.setenv("DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT", "1s")
    import dask.config

    dask.config.refresh()
    try:
        for address, why in [("tcp://127.0.0.1:1", "cannot reach a Dask scheduler"),
                             ("127.0.0.1:8786", "not a Dask scheduler address"),
                             ("tcp://head", "not a Dask scheduler address")]:
            out = tmp_path / address.replace("/", "_").replace(":", "_")
            done = CliRunner().invoke(app, ["run", str(scenario), "--out", str(out), "--executor",
                                            "dask", "--scheduler", address, "-q", "--no-report"])
            lines = done.stderr.strip().splitlines() if done.stderr_bytes is not None else []
            assert done.exit_code == 2, (address, done.output)
            assert len(lines) == 1 and lines[0].startswith(f"error: --scheduler {address}: "), lines
            assert why in lines[0]
            if "not a Dask scheduler address" in why:  # refused before anything is written
                assert not out.exists()
    finally:
        monkeypatch.delenv("DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT")
        dask.config.refresh()
    done = CliRunner().invoke(app, ["run", str(scenario), "--executor", "spark"])
    assert done.exit_code == 2 and "unknown executor 'spark'" in done.stderr


def _listening_ports() -> set[int]:
    """TCP ports this process listens on (from /proc/net/tcp: state 0A, the local port in hex)."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed meanwhile (the cluster's threads open and close sockets)
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def test_a_local_cluster_leaves_the_dashboard_port_free():
    # Without a dashboard a Dask scheduler still serves HTTP, by default on 8787: a dask-local
    # experiment took that port from a user's own dashboard or a second experiment.
    before = _listening_ports()
    with dask_client(ExecutorOptions(kind="dask-local", workers=1), default_workers=1):
        opened = _listening_ports() - before
    assert opened, "the cluster's scheduler listens somewhere"
    assert 8787 not in opened
    assert LOCAL_SCHEDULER_HTTP["dashboard_address"].startswith("127.0.0.1:")


def test_the_slurm_recipe_builds_its_job_script():
    options = ExecutorOptions(kind="slurm", cores=8, memory="16GB", walltime="01:30:00", queue="short",
                              account="netlab", jobs=4,
                              job_script_prologue=["source /shared/venv/bin/activate"])
    args = slurm_cluster_arguments(options)
    assert args["processes"] == 8 and args["cores"] == 8  # one single-threaded worker per core
    cluster = slurm_cluster(options)  # its scheduler starts here; no job is submitted
    try:
        script = cluster.job_script()
    finally:
        cluster.close()
    for line in ["#SBATCH -p short", "#SBATCH -A netlab", "#SBATCH --cpus-per-task=8",
                 "#SBATCH --mem=15G", "#SBATCH -t 01:30:00", "source /shared/venv/bin/activate"]:
        assert line in script, script
    assert "--nthreads 1" in script and "--nworkers 8" in script and sys.executable in script
    with pytest.raises(UserError, match="executor.memory"):
        slurm_cluster_arguments(ExecutorOptions(kind="slurm", cores=8))


def test_results_locations(tmp_path):
    assert results_path(f"file://{tmp_path}/x") == tmp_path / "x"
    assert results_path(f"local://{tmp_path}/x") == tmp_path / "x"
    assert results_path("plain/dir") == Path("plain/dir")
    with pytest.raises(UserError, match=r"s3:// is not supported"):
        results_path("s3://bucket/study")
    assert check_scheduler_address("tcp://10.0.0.5:8786") == "tcp://10.0.0.5:8786"
    assert load_scenario({**_minimal(), "executor": {"kind": "dask-local", "workers": 3}}) \
        .scenario.executor.workers == 3
    with pytest.raises(UserError, match="executor"):
        load_scenario({**_minimal(), "executor": {"kind": "spark"}})


def _minimal() -> dict:
    return {"duration": "1s", "topology": {"kind": "single_link", "link": {"rate": "1Mbps", "delay": "1ms"}},
            "flows": [{"from": "a", "to": "b", "flavor": "reno"}]}
