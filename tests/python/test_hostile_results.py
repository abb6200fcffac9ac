"""Stored results verified on read (issue 37, "Stored results"): ``ccarena report``, ``query``,
``plot`` and ``compare`` on an experiment whose files are cut short, overwritten, of another
schema or of the wrong shape name the file (and its run) in one line and go on without the run
(exit 0, one ``warning:`` line per run left out), or end in one ``error:`` line and exit 2 when
nothing is left or experiment.json itself cannot be read — never a traceback. ``query`` works in
a directory whose name holds glob characters or quotes, refuses an empty statement and prints a
bounded part of a huge result; ``report -o`` and ``plot -o`` refuse directories, symbolic links,
devices, FIFOs and places where no file can be written.

The experiment is made once: the quickstart scenario cut to 2 s, swept over two bottleneck
delays (two runs). Each test corrupts a copy of it.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

BROKEN = "delay=10ms_r0"
"""The run the tests damage."""
KEPT = "delay=18ms_r0"
"""The run left intact."""

TABLES = ("flows", "samples", "queues", "links", "regions")


def ccarena(*args: object, timeout: float = 300) -> subprocess.CompletedProcess:
    """`python -m ccarena ARGS` at 80 columns, its output captured."""
    env = dict(os.environ, COLUMNS="80")
    return subprocess.run([sys.executable, "-m", "ccarena", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=env)


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def no_traceback(done: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in done.stderr + done.stdout, done.stderr[-3000:]


def one_error(done: subprocess.CompletedProcess, *words: str) -> str:
    """Exit 2 and exactly one stderr line, an ``error:`` naming each of ``words``."""
    no_traceback(done)
    assert done.returncode == 2, (done.returncode, done.stderr)
    [line] = lines(done.stderr)
    assert line.startswith("error: ")
    for word in words:
        assert word in line, line
    return line


def went_on(done: subprocess.CompletedProcess, *words: str) -> str:
    """Exit 0 and exactly one stderr line, a ``warning:`` naming each of ``words``."""
    no_traceback(done)
    assert done.returncode == 0, done.stderr
    [line] = lines(done.stderr)
    assert line.startswith("warning: ")
    for word in words:
        assert word in line, line
    return line


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> Path:
    """A finished two-run experiment (left untouched: tests damage copies of it)."""
    where = tmp_path_factory.mktemp("stored")
    text = (EXAMPLES / "quickstart.toml").read_text()
    text = text.replace('duration = "20s"', 'duration = "2s"').replace('start = "2s"', 'start = "0.5s"')
    text += '\n[sweep]\n"topology.bottleneck.delay" = ["10ms", "18ms"]\n'
    scenario = where / "quickstart.toml"
    scenario.write_text(text)
    done = ccarena("run", scenario, "--out", where / "base", "--no-report", "--quiet")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (where / "base" / "runs").iterdir()) == [BROKEN, KEPT]
    return where / "base"


@pytest.fixture
def copy(stored, tmp_path) -> Path:
    """A copy of the stored experiment, to damage."""
    target = tmp_path / "exp"
    shutil.copytree(stored, target)
    return target


def truncate(path: Path, size: int = 100) -> None:
    with open(path, "r+b") as f:
        f.truncate(size)


# ---------------------------------------------------------------------------- damaged runs

@pytest.mark.parametrize("table", TABLES)
def test_report_leaves_out_a_run_whose_table_is_cut_short(copy, table):
    truncate(copy / "runs" / BROKEN / f"{table}.parquet")
    done = ccarena("report", copy)
    went_on(done, BROKEN, f"{table}.parquet", "cut short")
    page = (copy / "report.html").read_text()
    assert f"Run {BROKEN} is left out" in page
    assert "1 of 2 runs complete" in page
    # The run's own figures are not drawn; the other run's are.
    figures = {p.name for p in (copy / "figures").iterdir()}
    assert any(name.startswith(KEPT) for name in figures)
    assert not any(name.startswith(BROKEN) for name in figures)


def test_query_plot_and_compare_leave_out_a_damaged_run(copy, stored, tmp_path):
    truncate(copy / "runs" / BROKEN / "flows.parquet")
    done = ccarena("query", copy, "SELECT count(DISTINCT run_id) AS n FROM flows", "--csv")
    went_on(done, BROKEN, "flows.parquet")
    assert done.stdout.split() == ["n", "1"]
    done = ccarena("query", copy, "SELECT DISTINCT run_id FROM summary", "--csv")
    went_on(done, BROKEN)
    assert done.stdout.split() == ["run_id", KEPT]
    done = ccarena("plot", copy, "--y", "goodput", "-o", tmp_path / "fig")
    went_on(done, BROKEN)
    assert (tmp_path / "fig.png").is_file()
    done = ccarena("compare", stored, copy, "-o", tmp_path / "cmp")
    went_on(done, BROKEN)
    assert "18ms" in done.stdout and "10ms" not in done.stdout


def test_a_run_json_cut_short_or_of_the_wrong_shape_leaves_its_run_out(copy):
    truncate(copy / "runs" / BROKEN / "run.json")
    went_on(ccarena("report", copy), BROKEN, "run.json", "not valid JSON (line")
    record = json.loads((copy / "runs" / KEPT / "run.json").read_text())
    (copy / "runs" / KEPT / "run.json").write_text(json.dumps(dict(record, point="zero")))
    # Both runs damaged now: nothing is left to show.
    one_error(ccarena("report", copy), "no stored run can be read", "1 more damaged run")


@pytest.mark.parametrize("how", ["other table", "samples as flows", "typed otherwise"])
def test_a_table_of_another_schema_leaves_its_run_out(copy, how):
    path = copy / "runs" / BROKEN / "flows.parquet"
    if how == "other table":
        pq.write_table(pa.table({"x": [1, 2], "y": ["a", "b"]}), path)
    elif how == "samples as flows":
        shutil.copy(copy / "runs" / BROKEN / "samples.parquet", path)
    else:
        table = pq.read_table(path)
        flow = [str(v) for v in table.column("flow").to_pylist()]
        pq.write_table(table.set_column(table.schema.get_field_index("flow"), "flow", pa.array(flow)), path)
    went_on(ccarena("report", copy), BROKEN, "flows.parquet", "another schema")
    assert f"Run {BROKEN} is left out" in (copy / "report.html").read_text()


def test_a_table_that_is_a_fifo_or_a_device_leaves_its_run_out(copy):
    path = copy / "runs" / BROKEN / "samples.parquet"
    path.unlink()
    os.mkfifo(path)  # opening it would block forever
    done = ccarena("query", copy, "SELECT count(*) FROM samples", timeout=60)
    went_on(done, BROKEN, "samples.parquet", "not a regular file")


def test_a_damaged_summary_is_built_again_from_the_runs(copy, stored):
    expected = ccarena("query", stored, "SELECT run_id, flow, goodput_mean_bps FROM summary "
                                        "ORDER BY run_id, flow", "--csv")
    for damage in ("cut short", "another schema"):
        if damage == "cut short":
            truncate(copy / "summary.parquet")
        else:
            pq.write_table(pa.table({"x": [1]}), copy / "summary.parquet")
        done = ccarena("query", copy, "SELECT run_id, flow, goodput_mean_bps FROM summary "
                                      "ORDER BY run_id, flow", "--csv")
        went_on(done, "summary.parquet", damage, "built again")
        assert done.stdout == expected.stdout
    went_on(ccarena("report", copy), "summary.parquet", "built again")


# ---------------------------------------------------------------------------- experiment.json

EXPERIMENT_DAMAGE = {
    "cut short": (lambda text: text[:100], "not valid JSON (line"),
    "a list": (lambda text: "[1, 2]", "a JSON list, not an object"),
    "runs a string": (lambda text: json.dumps(dict(json.loads(text), runs="r0")), "'runs' must be a list"),
    "no name": (lambda text: json.dumps({k: v for k, v in json.loads(text).items() if k != "name"}),
                "'name' must be a string"),
    "a run without id": (lambda text: json.dumps(dict(json.loads(text), runs=[{"point": 0}])),
                         "runs[0] must be an object with a string 'run_id'"),
    "version not a number": (lambda text: json.dumps(dict(json.loads(text), format_version="two")),
                             "'format_version' must be an integer"),
    "nested too deep": (lambda text: "[" * 100_000 + "]" * 100_000, "nested too deep"),
    "not UTF-8": (lambda text: "\udcff", "not UTF-8"),
}


@pytest.mark.parametrize("damage", EXPERIMENT_DAMAGE)
def test_an_unreadable_experiment_json_is_one_line(copy, stored, tmp_path, damage):
    change, said = EXPERIMENT_DAMAGE[damage]
    path = copy / "experiment.json"
    path.write_bytes(change(path.read_text()).encode("utf-8", "surrogateescape"))
    one_error(ccarena("report", copy), "experiment.json", said)
    if damage == "cut short":  # the other commands read it the same way
        one_error(ccarena("query", copy, "SELECT 1"), "experiment.json", said)
        one_error(ccarena("plot", copy, "-o", tmp_path / "fig"), "experiment.json", said)
        one_error(ccarena("compare", stored, copy, "-o", tmp_path / "cmp"), "experiment.json", said)


def test_every_run_damaged_is_one_line_for_each_command(copy, stored, tmp_path):
    for run in (BROKEN, KEPT):
        truncate(copy / "runs" / run / "flows.parquet")
    for args in (("report", copy), ("query", copy, "SELECT 1"), ("plot", copy, "-o", tmp_path / "f"),
                 ("compare", stored, copy, "-o", tmp_path / "c")):
        one_error(ccarena(*args), "no stored run can be read", "flows.parquet")


# ---------------------------------------------------------------------------- query

@pytest.mark.parametrize("name", ["it's", "back\\slash", "br[ack]et", "st*r?", "br{a,b}ce"])
def test_query_works_where_the_directory_name_holds_glob_characters(stored, tmp_path, name):
    root = tmp_path / name
    shutil.copytree(stored, root)
    for sql in ("SELECT count(*) AS n FROM flows", "SELECT count(*) AS n FROM 'runs/*/flows.parquet'",
                "SELECT count(*) AS n FROM summary"):
        done = ccarena("query", root, sql, "--csv")
        no_traceback(done)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["n", "4"], (sql, done.stdout)


@pytest.mark.parametrize("sql", ["", "   ", "-- a comment only\n", ";"])
def test_an_empty_query_is_one_line(stored, sql):
    one_error(ccarena("query", stored, "--", sql), "holds no statement")


def test_a_huge_result_prints_the_first_rows_and_counts_the_rest(stored):
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.monotonic()
    done = ccarena("query", stored, "SELECT i, i * 2 AS j FROM range(100000000) t(i)", timeout=120)
    elapsed = time.monotonic() - started
    no_traceback(done)
    assert done.returncode == 0, done.stderr
    assert lines(done.stdout)[-1].startswith("the first 1,000 rows shown; 99,999,000 more rows not shown")
    rows = [line for line in lines(done.stdout) if line.startswith("│")]
    assert len(rows) == 1000 and rows[-1].startswith("│ 999 ")
    # 10⁸ rows fetched whole took gigabytes; the stream holds a thousand.
    peak_mb = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    assert peak_mb < 1024, peak_mb
    assert elapsed < 60, elapsed
    done = ccarena("query", stored, "SELECT * FROM range(10) t(i)", "--limit", "3")
    assert "7 more rows not shown" in done.stdout
    done = ccarena("query", stored, "SELECT * FROM range(100000000) t(i)", "--csv", "--limit", "5")
    assert done.returncode == 0 and done.stdout.split() == ["i", "0", "1", "2", "3", "4"]


# ---------------------------------------------------------------------------- -o targets

def _targets(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Hostile places to write to: (path, what the one line says)."""
    (tmp_path / "a-dir").mkdir()
    (tmp_path / "to-stdout").symlink_to("/dev/stdout")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    os.mkfifo(tmp_path / "fifo")
    out = {"directory": (tmp_path / "a-dir", "is a directory"),
           "symlink to /dev/stdout": (tmp_path / "to-stdout", "symbolic link"),
           "dangling symlink": (tmp_path / "dangling", "symbolic link"),
           "fifo": (tmp_path / "fifo", "not a regular file"),
           "/proc": (Path("/proc/ccarena-x"), "cannot write files in /proc")}
    if os.geteuid() == 0:  # a device node of its own (never /dev/null: it would be replaced)
        os.mknod(tmp_path / "device", stat.S_IFCHR | 0o666, os.makedev(1, 3))
        out["device"] = (tmp_path / "device", "not a regular file")
    return out


def _unchanged(tmp_path: Path) -> None:
    assert (tmp_path / "a-dir").is_dir() and not any((tmp_path / "a-dir").iterdir())
    assert os.readlink(tmp_path / "to-stdout") == "/dev/stdout"
    assert (tmp_path / "dangling").is_symlink() and not (tmp_path / "nowhere").exists()
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode)
    if (tmp_path / "device").exists():
        assert stat.S_ISCHR(os.lstat(tmp_path / "device").st_mode)


def test_report_output_refuses_what_is_not_a_regular_file(stored, tmp_path):
    for what, (path, said) in _targets(tmp_path).items():
        one_error(ccarena("report", stored, "-o", path, timeout=60), "--output", said)
    _unchanged(tmp_path)


def test_plot_out_refuses_what_is_not_a_regular_file(stored, tmp_path):
    targets = _targets(tmp_path)
    (tmp_path / "fig.png").symlink_to("/dev/stdout")  # the file --out fig would write
    targets["figure file a symlink"] = (tmp_path / "fig", "symbolic link")
    for what, (path, said) in targets.items():
        one_error(ccarena("plot", stored, "-o", path, timeout=60), "--out", said)
    _unchanged(tmp_path)
    assert os.readlink(tmp_path / "fig.png") == "/dev/stdout"


# ---------------------------------------------------------------------------- Python API

def test_the_api_leaves_damaged_runs_out_and_names_them(copy):
    import ccarena
    from ccarena.store import DamagedFile, ExperimentStore

    truncate(copy / "runs" / BROKEN / "regions.parquet")
    result = ccarena.load(copy)
    assert result.run_ids == [KEPT]
    assert set(result.damaged) == {BROKEN}
    assert result.damaged[BROKEN].path.name == "regions.parquet"
    assert set(result.regions["run_id"]) == {KEPT}
    assert set(result.summary["run_id"]) == {KEPT}
    with pytest.raises(DamagedFile, match="regions.parquet: is not a complete Parquet file"):
        ExperimentStore(copy).read_table(BROKEN, "regions")


def test_a_table_damaged_inside_an_intact_frame_is_left_out_when_read(copy):
    """The framing check passes (magic at both ends, footer intact); the pages are zeros: the
    run is found damaged when its table is read in full, and left out then."""
    from ccarena.results import Result

    path = copy / "runs" / BROKEN / "samples.parquet"
    data = bytearray(path.read_bytes())
    footer = int.from_bytes(data[-8:-4], "little")
    data[4:len(data) - 8 - footer] = bytes(len(data) - 12 - footer)
    path.write_bytes(bytes(data))
    result = Result(copy)
    assert BROKEN not in result.damaged  # footer and schema are fine
    samples = result.samples
    assert set(samples["run_id"]) == {KEPT}
    assert BROKEN in result.damaged and "samples.parquet" in result.pop_warnings()[0]
