"""The Python API as a script or notebook user calls it (ccarena.run, ccarena.load): a sweep runs on
worker processes from a script without ``if __name__ == "__main__":`` and from ``python -`` on
standard input or as a module (``python -m``), as from a guarded script, and so do the report's
figure workers and a ``dask-local`` cluster's (ccarena's workers do not import the calling
script: ccarena.workers); a process that is importing a parent's script refuses to start a
second experiment; errors name the fix as the API's arguments (``force=True``, ``out=``) and the
command line's options from the command line; a worker that dies is reported as such."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import ccarena
import pytest

# The pool's task, wrapped: it notes the process running each run ("<run_id>.<pid>") and waits
# (up to 30 s) until both runs of the sweep are in progress, so the two runs are seen running at
# once, on two processes, whatever the order the workers start in.
RECORDER = '''
import os
import time
from pathlib import Path

from ccarena.executor import process_pool

REAL = process_pool.pool_task


def task(t):
    root, record = t
    marks = Path(root).parent / "pids"
    marks.mkdir(exist_ok=True)
    (marks / f"{record['run_id']}.{os.getpid()}").touch()
    deadline = time.monotonic() + 30
    while len(list(marks.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    return REAL(t)
'''

SWEEP = {"name": "script", "duration": "1s",
         "topology": {"kind": "single_link", "link": {"rate": "10Mbps", "delay": "5ms"}},
         "flows": [{"from": "a", "to": "b", "flavor": "reno"}],
         "sweep": {"topology.link.delay": ["5ms", "10ms"]}}
SCENARIO = repr(SWEEP)  # as a script spells it

# A script as a user writes it: run, then use the result. Printed on import, so a worker that
# re-executed it would print SCRIPT RAN again (workers share this process's stdout).
SCRIPT = '''
import os
import sys
sys.path.insert(0, {here!r})
print("SCRIPT RAN", os.getpid(), flush=True)

import recorder
import ccarena
from ccarena.executor import process_pool

process_pool.pool_task = recorder.task
scenario = {scenario}
{call}
'''

UNGUARDED = '''result = ccarena.run(scenario, {out!r}, jobs=2)
print("RUNS", len(result.summary))
'''

GUARDED = '''if __name__ == "__main__":
    result = ccarena.run(scenario, {out!r}, jobs=2)
    print("RUNS", len(result.summary))
'''


def run_script(tmp_path: Path, how: str) -> tuple[subprocess.CompletedProcess, Path]:
    (tmp_path / "recorder.py").write_text(RECORDER)
    out = tmp_path / "out"
    call = (GUARDED if how == "guarded file" else UNGUARDED).format(out=str(out))
    text = SCRIPT.format(here=str(tmp_path), scenario=SCENARIO, call=call)
    if how == "stdin":
        done = subprocess.run([sys.executable, "-"], input=text, capture_output=True, text=True,
                              timeout=180, cwd=tmp_path)
    elif how == "module":  # python -m: spawn would import it by name, as __mp_main__
        (tmp_path / "study.py").write_text(text)
        done = subprocess.run([sys.executable, "-m", "study"], capture_output=True, text=True,
                              timeout=180, cwd=tmp_path)
    else:
        (tmp_path / "script.py").write_text(text)
        done = subprocess.run([sys.executable, str(tmp_path / "script.py")], capture_output=True,
                              text=True, timeout=180, cwd=tmp_path)
    return done, out


@pytest.mark.parametrize("how", ["unguarded file", "stdin", "module", "guarded file"])
def test_a_script_runs_its_sweep_on_two_worker_processes_at_once(tmp_path, how):
    done, out = run_script(tmp_path, how)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "Warning" not in done.stderr, done.stderr
    # The workers did not execute the script again (it would print, and start a second experiment).
    assert done.stdout.count("SCRIPT RAN") == 1, done.stdout
    assert "RUNS 2" in done.stdout, done.stdout
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["delay=10ms_r0", "delay=5ms_r0"]
    assert (out / "summary.parquet").is_file() and not (out / "failed").exists()
    # Both runs were in progress at once, each on a worker process, neither in the script's.
    script_pid = int(done.stdout.split("SCRIPT RAN")[1].split()[0])
    marks = [p.name.rsplit(".", 1) for p in (tmp_path / "pids").iterdir()]
    assert sorted(run for run, _ in marks) == ["delay=10ms_r0", "delay=5ms_r0"], marks
    pids = {int(pid) for _, pid in marks}
    assert len(pids) == 2 and script_pid not in pids, (pids, script_pid)


def test_a_script_without_the_guard_draws_its_report_on_figure_workers(tmp_path):
    # The report's figure workers (ccarena.report.figures.FigureWork) are spawned too; they are
    # made to start here from the first task, and the script notes whether they did.
    out = tmp_path / "out"
    text = ('import os\nprint("SCRIPT RAN", flush=True)\nimport ccarena\n'
            'from ccarena.report import figures\n'
            'figures.PARALLEL_TASKS_MIN = 1\n'
            'class Work(figures.FigureWork):\n'
            '    def __init__(self, tasks, pool=None):\n'
            '        super().__init__(tasks, pool)\n'
            '        print("FIGURE WORKERS", self.pool is not None, flush=True)\n'
            'figures.FigureWork = Work\n'
            f'result = ccarena.run({SCENARIO}, {str(out)!r}, jobs=1, report=True)\n'
            'print("RUNS", len(result.summary))\n')
    (tmp_path / "script.py").write_text(text)
    done = subprocess.run([sys.executable, str(tmp_path / "script.py")], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("SCRIPT RAN") == 1 and "RUNS 2" in done.stdout, done.stdout
    if (os.cpu_count() or 1) > 1:
        assert "FIGURE WORKERS True" in done.stdout, done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    assert (out / "report.html").is_file()


def test_a_script_without_the_guard_runs_its_sweep_on_a_dask_local_cluster(tmp_path):
    pytest.importorskip("distributed")
    # The cluster's worker processes are started from its own threads, not by ccarena's pool.
    scenario = repr({**SWEEP, "executor": {"kind": "dask-local", "workers": 2}})
    text = ('import os\nprint("SCRIPT RAN", flush=True)\nimport ccarena\n'
            f'result = ccarena.run({scenario}, {str(tmp_path / "out")!r})\n'
            'print("RUNS", len(result.summary))\n')
    (tmp_path / "script.py").write_text(text)
    done = subprocess.run([sys.executable, str(tmp_path / "script.py")], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("SCRIPT RAN") == 1 and "RUNS 2" in done.stdout, done.stdout
    assert "Traceback" not in done.stderr, done.stderr


def test_a_process_importing_its_parents_script_refuses_to_start_an_experiment(tmp_path, monkeypatch):
    # What multiprocessing's spawn and forkserver children (a Dask worker's, the user's own pool)
    # are while they import the parent's __main__: an unguarded ccarena.run there is the
    # parent's call re-executed, and must not start a second experiment.
    monkeypatch.setattr(multiprocessing.current_process(), "_inheriting", True, raising=False)
    with pytest.raises(ccarena.UserError, match=r'if __name__ == "__main__":'):
        ccarena.run(dict(SWEEP), tmp_path / "nested", jobs=2)
    assert not (tmp_path / "nested").exists()


def test_a_directory_of_another_scenario_names_the_fix_as_arguments(tmp_path):
    scenario = dict(SWEEP)
    ccarena.run(scenario, tmp_path / "out", jobs=1)
    scenario["duration"] = "2s"
    with pytest.raises(ccarena.UserError) as caught:
        ccarena.run(scenario, tmp_path / "out", jobs=1)
    message = str(caught.value)
    assert "was made from a different scenario" in message
    assert "force=True" in message and "out=" in message and "--" not in message, message
    ccarena.run(scenario, tmp_path / "out", jobs=1, force=True)  # the fix it names works
    # The command line names its options.
    (tmp_path / "s.toml").write_text('name = "script"\nduration = "3s"\n[topology]\n'
                                     'kind = "single_link"\nlink = { rate = "10Mbps", delay = "5ms" }\n'
                                     '[[flows]]\nfrom = "a"\nto = "b"\nflavor = "reno"\n'
                                     '[sweep]\n"topology.link.delay" = ["5ms", "10ms"]\n')
    done = subprocess.run([sys.executable, "-m", "ccarena", "run", str(tmp_path / "s.toml"),
                           "--out", str(tmp_path / "out"), "-q", "--no-report", "-j", "1"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "--force" in done.stderr and "--out" in done.stderr and "force=True" not in done.stderr


def test_a_directory_another_run_is_writing_names_out_as_an_argument(tmp_path):
    root = tmp_path / "out"
    root.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from pathlib import Path; from ccarena.store.guard import experiment_lock\n"
        f"with experiment_lock(Path({str(root)!r})):\n"
        "    print('HELD', flush=True); sys.stdin.read()")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "HELD"
        with pytest.raises(ccarena.UserError) as caught:
            ccarena.run(dict(SWEEP), root, jobs=1)
    finally:
        holder.communicate("", timeout=60)
    message = str(caught.value)
    assert "another ccarena is writing this experiment" in message
    assert "out=" in message and "--out" not in message, message


# A command-line run whose pool task kills its worker at one run, every time.
KILLING_CLI = '''
import sys

from ccarena.executor import process_pool

import killer

process_pool.pool_task = killer.task
if __name__ == "__main__":
    from ccarena.cli import main
    sys.argv = ["ccarena", "run", {scenario!r}, "--out", {out!r}, "-q", "--no-report", "-j", "2"]
    main()
'''

KILLER = '''
import os
import signal

from ccarena.executor import process_pool

REAL = process_pool.pool_task


def task(t):
    if t[1]["run_id"] == "delay=10ms_r0":
        os.kill(os.getpid(), signal.SIGKILL)
    return REAL(t)
'''


def test_the_command_line_reports_a_dead_worker_in_one_line_naming_the_signal(tmp_path):
    (tmp_path / "killer.py").write_text(KILLER)
    (tmp_path / "s.toml").write_text('name = "script"\nduration = "1s"\n[topology]\n'
                                     'kind = "single_link"\nlink = { rate = "10Mbps", delay = "5ms" }\n'
                                     '[[flows]]\nfrom = "a"\nto = "b"\nflavor = "reno"\n'
                                     '[sweep]\n"topology.link.delay" = ["5ms", "10ms"]\n')
    (tmp_path / "driver.py").write_text(KILLING_CLI.format(scenario=str(tmp_path / "s.toml"),
                                                           out=str(tmp_path / "out")))
    done = subprocess.run([sys.executable, str(tmp_path / "driver.py")], capture_output=True,
                          text=True, timeout=180, cwd=tmp_path, env={**os.environ, "COLUMNS": "80"})
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "EngineFault" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    assert "run delay=10ms_r0" in errors[0] and "worker process running it was killed by SIGKILL" in errors[0]
    assert "--jobs" in errors[0] and "jobs=" not in errors[0], errors[0]
    assert (tmp_path / "out" / "runs" / "delay=5ms_r0").is_dir()


def test_a_failure_is_raised_as_the_workers_death_or_the_engines_fault_by_its_cause(tmp_path):
    # The record's cause decides (the process pool's run_alone and Dask's KilledWorker write
    # "worker_died"); both are RunFailed, and only an error raised while the run executed is
    # the engine's fault.
    from ccarena.executor import ExperimentOutcome
    from ccarena.experiment import expand
    from ccarena.scenario import load_scenario

    plans = expand(load_scenario(dict(SWEEP)))
    died = {"run_id": plans[0].run_id, "status": "failed", "cause": "worker_died", "exitcode": -9,
            "error": "ProcessDied: the worker process running it was killed by SIGKILL",
            "message": "the worker process running it was killed by SIGKILL"}
    fault = {"run_id": plans[1].run_id, "status": "failed", "cause": "run",
             "error": "PanicException: index out of bounds", "message": "index out of bounds"}
    outcome = ExperimentOutcome(root=tmp_path, plans=plans, failed=[died, fault])
    with pytest.raises(ccarena.WorkerDied) as caught:
        outcome.raise_for_failures()
    assert isinstance(caught.value, ccarena.RunFailed) and not isinstance(caught.value, ccarena.EngineFault)
    assert caught.value.exitcode == -9 and caught.value.run_id == plans[0].run_id
    assert str(caught.value).startswith(f"run {plans[0].run_id} (seed {plans[0].seed}): the worker "
                                        "process running it was killed by SIGKILL (1 more failed runs")
    engine = outcome.failure(fault)
    assert isinstance(engine, ccarena.EngineFault) and "PanicException: index out of bounds" in str(engine)
