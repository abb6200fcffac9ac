"""Executors that cannot run away (issue 37): a worker count far above the machine's is lowered
with one line and never started (counted from /proc while the command runs); a missing ``[dask]``
extra, a missing or refusing ``sbatch`` and an unreachable or impostor scheduler are each one line
and exit status 2 within seconds, never a hang or a traceback."""

from __future__ import annotations

import io
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from ccarena.errors import python_api
from ccarena.executor import run_experiment
from ccarena.executor.clusters import CONNECT_TIMEOUT_S, _connect_timeout_s
from ccarena.executor.sizing import (
    MachineLimit,
    available_memory_bytes,
    machine_limit,
    size_workers,
    slurm_jobs,
    usable_cores,
)
from ccarena.experiment import expand
from ccarena.scenario import ExecutorOptions, load_scenario

TINY = """
name = "tiny"
duration = "0.2s"
seed = 1

[topology]
kind = "single_link"
link = { rate = "2Mbps", delay = "5ms", queue = { limit = "50pkt" } }

[[flows]]
from = "a"
to = "b"
flavor = "reno"

[sweep]
"topology.link.loss" = ["0%", "1%"]
"""
SLURM = TINY + """
[executor]
kind = "slurm"
cores = 2
memory = "2GB"
"""


def _write(tmp_path: Path, text: str = TINY) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(text)
    return path


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_")}
    env.update(COLUMNS="80", **extra)
    return env


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from each process's parent in /proc/*/stat)."""
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parent[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [pid]
    while frontier:
        p = frontier.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        found += kids
        frontier += kids
    return found


def _rss_bytes(pids: list[int]) -> int:
    total = 0
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


LASTING_S = 0.3


def _watch(cmd: list[str], cwd: Path, timeout_s: float, env: dict[str, str] | None = None):
    """Run ``cmd``; returns (process, stdout, stderr, seconds, most descendants at once that had
    lived ``LASTING_S`` or longer, peak resident memory of the whole tree in bytes).

    A process counts once it has lasted: a worker's own short helper (Dask's worker runs
    ``uname -p`` for its version report, ~15 ms) is not one of the processes the run started."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env or _env(), start_new_session=True)
    most, peak = 0, 0
    first_seen_s: dict[int, float] = {}
    out: dict[str, str] = {}
    reader = threading.Thread(target=lambda: out.update(zip(("out", "err"), proc.communicate())))
    reader.start()
    try:
        while proc.poll() is None:
            kids = _descendants(proc.pid)
            now_s = time.monotonic()
            lasting = [k for k in kids if now_s - first_seen_s.setdefault(k, now_s) >= LASTING_S]
            most = max(most, len(lasting))
            peak = max(peak, _rss_bytes([proc.pid, *kids]))
            assert time.monotonic() - start < timeout_s, f"still running after {timeout_s} s"
            time.sleep(0.02)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
        reader.join()
    return proc, out["out"], out["err"], time.monotonic() - start, most, peak


CCARENA = [sys.executable, "-m", "ccarena"]


@pytest.mark.parametrize("asked", [["-j", "1000"], ["--executor", "dask-local", "--workers", "1000"]],
                         ids=["pool-jobs", "dask-local-workers"])
def test_a_thousand_workers_on_two_runs_start_at_most_the_bounded_few(tmp_path, asked):
    # Before: dask-local had 25-28 processes and ~600 MB after 7 s and was still starting more.
    scenario = _write(tmp_path)
    proc, _, err, seconds, most, peak = _watch(
        [*CCARENA, "run", str(scenario), "--out", "out", "-q", "--no-report", *asked], tmp_path, 120)
    assert proc.returncode == 0, err
    lines = [line for line in err.splitlines() if line.strip()]
    flag = "--jobs" if asked[0] == "-j" else "--workers"
    match = re.fullmatch(rf"{flag} 1000: using (\d) workers? \((\d+) cores?, .*2 runs\)", lines[0])
    assert match, err
    used = int(match[1])
    assert used <= min(2, usable_cores()) and int(match[2]) == usable_cores()
    assert len(lines) == 1, err  # the only line on stderr (-q: no progress)
    # The workers, and multiprocessing's resource tracker; nothing more.
    assert most <= used + 1, (most, used)
    assert peak < 1.5e9, peak
    assert len(list((tmp_path / "out" / "runs").iterdir())) == 2


def test_a_count_the_machine_allows_says_nothing(tmp_path):
    scenario = _write(tmp_path)
    done = subprocess.run([*CCARENA, "run", str(scenario), "--out", "out", "-q", "--no-report",
                           "-j", "1"], cwd=tmp_path, capture_output=True, text=True, env=_env())
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_the_memory_available_bounds_the_workers(tmp_path, monkeypatch):
    # Runs estimated at ~X each on a machine with memory for one worker: run one at a time (here,
    # in this process: no pool is started), with the line naming the memory.
    import ccarena.executor.sizing as sizing
    from rich.console import Console

    monkeypatch.setattr(sizing, "available_memory_bytes", lambda: sizing.WORKER_BASELINE_BYTES)
    monkeypatch.setattr(sizing, "usable_cores", lambda: 8)
    loaded = load_scenario(_write(tmp_path))
    text = io.StringIO()
    outcome = run_experiment(loaded, tmp_path / "out", jobs=16, show_progress=False,
                             console=Console(file=text, width=200))
    assert sorted(outcome.completed) == ["loss=0pct_r0", "loss=1pct_r0"]
    assert re.fullmatch(r"--jobs 16: using 1 worker \(8 cores, memory for 1 at ~[\d.]+ MB each, "
                        r"2 runs\)\n", text.getvalue()), text.getvalue()


def test_worker_bounds():
    limit = MachineLimit(cores=2, worker_bytes=3e8, memory_workers=40)
    assert limit.workers(None, 400) == 2 and limit.workers(1000, 2) == 2 and limit.workers(1, 9) == 1
    assert limit.note(1000, 2, "--jobs 1000") == "--jobs 1000: using 2 workers (2 cores, 2 runs)"
    assert limit.note(2, 1, "--jobs 2") is None  # fewer runs than workers is the rule, no news
    assert limit.note(None, 9, "") is None
    tight = MachineLimit(cores=64, worker_bytes=1.2e9, memory_workers=13)
    assert tight.workers(None, 400) == 13
    assert tight.note(64, 400, "--workers 64") == \
        "--workers 64: using 13 workers (64 cores, memory for 13 at ~1.2 GB each, 400 runs)"
    plans = expand(load_scenario({"name": "m", "duration": "1s", "topology": {
        "kind": "single_link", "link": {"rate": "1Mbps", "delay": "1ms"}},
        "flows": [{"from": "a", "to": "b", "flavor": "reno"}]}))
    measured = machine_limit(plans, cores=4, available_bytes=10**9)
    assert measured.cores == 4 and measured.memory_workers == int(10**9 // measured.worker_bytes)
    assert machine_limit(plans, cores=4, available_bytes=0).memory_workers == 1
    assert slurm_jobs(100, 2, 32) == 1 and slurm_jobs(8, 1000, 32) == 8 and slurm_jobs(3, 65, 32) == 3


def test_how_the_count_was_asked_is_named():
    limit = MachineLimit(cores=2, worker_bytes=3e8, memory_workers=None)
    table = ExecutorOptions(kind="dask-local", workers=500)
    pool, sized, notes = size_workers(table, table, None, 10, limit)
    assert sized.workers == 2 and notes == ["[executor] workers = 500: using 2 workers (2 cores, 10 runs)"]
    given = table.model_copy(update={"workers": 1000})
    assert size_workers(given, table, None, 10, limit)[2][0].startswith("--workers 1000: ")
    local = ExecutorOptions(kind="dask-local")
    assert size_workers(local, local, 9, 10, limit)[2][0].startswith("--jobs 9: ")
    with python_api():
        process = ExecutorOptions()
        pool, _, notes = size_workers(process, process, 1000, 2, limit)
    assert pool == 2 and notes == ["jobs=1000: using 2 workers (2 cores, 2 runs)"]
    slurm = ExecutorOptions(kind="slurm", cores=32, memory="64GB", jobs=100)
    _, sized, notes = size_workers(slurm, slurm, None, 40, limit)
    assert sized.jobs == 2 and notes == ["[executor] jobs = 100: submitting 2 jobs (40 runs, "
                                         "32 workers per job)"]


def test_cores_and_memory_from_cgroup_limits(tmp_path):
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert usable_cores(tmp_path) == min(2, len(os.sched_getaffinity(0)))
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert usable_cores(tmp_path) == len(os.sched_getaffinity(0))
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 8000000 kB\nMemAvailable: 4000000 kB\n")
    assert available_memory_bytes(tmp_path, meminfo) == 4_096_000_000
    (tmp_path / "memory.max").write_text("3000000000\n")
    (tmp_path / "memory.current").write_text("1000000000\n")
    assert available_memory_bytes(tmp_path, meminfo) == 2_000_000_000


# A program that runs the command line with some modules made unimportable, as on a machine
# without the [dask] extra.
BLOCKED = """
import sys
from importlib.abc import MetaPathFinder
BLOCKED = set(sys.argv[1].split(","))
class Block(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block())
sys.argv = ["ccarena", *sys.argv[2:]]
from ccarena.__main__ import main
main()
"""


@pytest.mark.parametrize("blocked,args,says", [
    ("distributed,dask_jobqueue", ["--executor", "dask-local", "--workers", "2"], "needs distributed"),
    ("distributed,dask_jobqueue", ["--scheduler", "tcp://127.0.0.1:8786"], "needs distributed"),
    ("distributed,dask_jobqueue", ["--executor", "slurm"], "needs distributed"),
    ("dask_jobqueue", ["--executor", "slurm"], "needs dask-jobqueue"),
], ids=["dask-local", "scheduler", "slurm-no-dask", "slurm-no-jobqueue"])
def test_a_missing_extra_is_one_line(tmp_path, blocked, args, says):
    scenario = _write(tmp_path, SLURM if "slurm" in args else TINY)
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", BLOCKED, blocked, "run", str(scenario), "--out",
                           "out", "-q", "--no-report", *args], cwd=tmp_path, capture_output=True,
                          text=True, env=_env(), timeout=60)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: --executor ") and says in lines[0], lines
    assert "pip install 'ccarena[dask]'" in lines[0]
    assert not (tmp_path / "out").exists()  # said before anything is written or started
    assert time.monotonic() - start < 20


def test_slurm_without_sbatch_is_one_line_at_once(tmp_path):
    # Before: 60-90 s of tornado tracebacks (the cluster retrying a submission that cannot run).
    path = os.path.dirname(sys.executable)
    if shutil.which("sbatch", path=path):
        pytest.skip("sbatch sits beside this Python")
    scenario = _write(tmp_path, SLURM)
    start = time.monotonic()
    done = subprocess.run([*CCARENA, "run", str(scenario), "--out", "out", "-q", "--no-report"],
                          cwd=tmp_path, capture_output=True, text=True, env=_env(PATH=path),
                          timeout=60)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "sbatch is not on PATH" in lines[0], lines
    assert not (tmp_path / "out").exists()
    assert time.monotonic() - start < 15


def test_a_refusing_sbatch_is_one_line_and_nothing_is_submitted(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "sbatch.log"
    fake = bin_dir / "sbatch"
    fake.write_text(f'#!/bin/sh\necho "$@" >> {log}\n'
                    'echo "sbatch: error: invalid partition specified: compute" >&2\nexit 1\n')
    fake.chmod(0o755)
    scenario = _write(tmp_path, SLURM)
    start = time.monotonic()
    done = subprocess.run([*CCARENA, "run", str(scenario), "--out", "out", "-q", "--no-report"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env=_env(PATH=f"{bin_dir}:{os.path.dirname(sys.executable)}:/usr/bin:/bin"))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Slurm refuses the job (sbatch: error: invalid partition " \
        "specified: compute)" in lines[0], lines
    assert log.read_text().split() == ["--test-only"]  # asked, never submitted
    assert time.monotonic() - start < 30


def _serve(behaviour: str) -> tuple[socket.socket, int]:
    """A loopback TCP server that is no Dask scheduler: ``silent`` accepts and never answers,
    ``garbage`` answers bytes a Dask peer reads as an absurd frame length."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            held.append(conn)
            if behaviour == "garbage":
                conn.sendall(b"\xff" * 64)

    threading.Thread(target=serve, daemon=True).start()
    return server, server.getsockname()[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("peer", ["nobody", "silent", "garbage"])
def test_an_unreachable_or_impostor_scheduler_is_one_line_within_seconds(tmp_path, peer):
    # Before: a silent port or an HTTP server held the command forever (Dask bounds only the
    # connect, not the handshake); garbage ended in a MemoryError traceback; nobody: 30 s.
    server = None
    if peer == "nobody":
        port = _free_port()
    else:
        server, port = _serve(peer)
    address = f"tcp://127.0.0.1:{port}"
    try:
        start = time.monotonic()
        done = subprocess.run([*CCARENA, "run", str(_write(tmp_path)), "--out", "out", "-q",
                               "--no-report", "--scheduler", address], cwd=tmp_path,
                              capture_output=True, text=True, env=_env(), timeout=60)
        seconds = time.monotonic() - start
    finally:
        if server is not None:
            server.close()
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: --scheduler {address}: "), lines
    assert ("cannot reach a Dask scheduler" if peer != "garbage" else "not a Dask scheduler") \
        in lines[0]
    assert seconds < 12, seconds


def test_the_connect_timeout_is_seconds_unless_the_user_set_dask_s(monkeypatch):
    import dask.config

    for name in [k for k in os.environ if k.startswith("DASK_DISTRIBUTED__COMM__TIMEOUTS")]:
        monkeypatch.delenv(name)
    dask.config.refresh()
    try:
        assert _connect_timeout_s() == CONNECT_TIMEOUT_S <= 10
        monkeypatch.setenv("DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT", "45s")
        dask.config.refresh()
        assert _connect_timeout_s() == 45
    finally:
        monkeypatch.delenv("DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT", raising=False)
        dask.config.refresh()


def test_a_scheduler_without_workers_says_so_and_runs_once_one_joins(tmp_path):
    from distributed import LocalCluster
    from rich.console import Console

    text = io.StringIO()
    with LocalCluster(n_workers=0, threads_per_worker=1, processes=True, dashboard_address=None,
                      scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}) as cluster:
        def join_when_told() -> None:
            deadline = time.monotonic() + 60
            while "no workers yet" not in text.getvalue() and time.monotonic() < deadline:
                time.sleep(0.05)
            cluster.scale(1)

        joiner = threading.Thread(target=join_when_told, daemon=True)
        joiner.start()
        outcome = run_experiment(load_scenario(_write(tmp_path)), tmp_path / "out", show_progress=False,
                                 console=Console(file=text, width=200),
                                 executor=ExecutorOptions(kind="dask", scheduler=cluster.scheduler_address))
        joiner.join()
    assert sorted(outcome.completed) == ["loss=0pct_r0", "loss=1pct_r0"]
    assert text.getvalue() == (f"Dask scheduler {cluster.scheduler_address} has no workers yet: the runs "
                               f"start when one joins (`dask worker {cluster.scheduler_address}`)\n")
