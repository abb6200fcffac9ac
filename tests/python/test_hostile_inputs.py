"""Hostile input files (issue 37): every file a user hands ccarena — an iperf3 or Flent import, a
link's trace — is read within bounds. Each probe runs the CLI in a subprocess under an
address-space limit (:data:`MEMORY_BOUND_BYTES`) and a timeout, and must end with exit status 2
and ONE line naming the file and what is wrong: a wrong inner shape of an iperf3 file (named by
its key path), JSON nested 100,000 deep, ``/dev/zero``, a FIFO with no writer (never a hang), a
directory, a gzip bomb, a 1 GB file (a sparse fake), a trace with more lines than the memory
budget holds (with and without ``--max-memory``); a trace's error names the line by its number,
never its text. The readers of :mod:`ccarena.inputs` are checked in-process too.
"""

from __future__ import annotations

import copy
import gzip
import json
import os
import resource
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest
from ccarena import inputs
from ccarena.importers import flent, iperf3
from ccarena.importers.model import ImportProblem
from hypothesis import given, settings
from hypothesis import strategies as st

DATA = Path(__file__).resolve().parents[1] / "data" / "iperf3"
"""Real iperf3 3.12 files (tests/data/iperf3/README.md)."""

MEMORY_BOUND_BYTES = 1_500_000_000
"""Address space each probe's ccarena may use (the unbounded reads these probes once made took
2.7 to 6 GB)."""

TIMEOUT_S = 60
"""Each probe must end within this (the FIFO probes once hung for ever)."""


def _bounded() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BOUND_BYTES, MEMORY_BOUND_BYTES))


def ccarena(*args: Any, cwd: Path) -> tuple[int, str, str]:
    """``ccarena ARGS`` in a subprocess within the memory bound and the timeout: (exit status,
    stdout, stderr)."""
    env = dict(os.environ, COLUMNS="80")
    env.pop("CCARENA_MAX_MEMORY_BYTES", None)
    done = subprocess.run([sys.executable, "-m", "ccarena", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT_S, preexec_fn=_bounded)
    return done.returncode, done.stdout, done.stderr


def one_error_line(done: tuple[int, str, str], *needles: str) -> str:
    """The one ``error:`` line of a refused command (exit 2), holding each of ``needles``."""
    code, out, err = done
    assert code == 2, (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def real(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.json").read_text())


# --- iperf3 files of the right outline with a wrong inner shape -------------------------------


def _set(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


WRONG_SHAPES = [
    (("intervals", 1, "streams", 0), "oops", "intervals[1].streams[0]: expected an object, got a string"),
    (("start",), [1, 2], "start: expected an object, got a list"),
    (("start", "test_start"), "TCP", "start.test_start: expected an object, got a string"),
    (("start", "timestamp"), 17, "start.timestamp: expected an object, got a number"),
    (("start", "connecting_to"), ["h"], "start.connecting_to: expected an object, got a list"),
    (("end", "streams"), 7, "end.streams: expected a list, got a number"),
    (("end", "streams", 0, "sender"), "x", "end.streams[0].sender: expected an object, got a string"),
    (("intervals", 0, "streams"), {"socket": 5}, "intervals[0].streams: expected a list, got an object"),
    (("intervals", 0, "streams", 0, "socket"), True, "intervals[0].streams[0].socket: expected a whole number"),
    (("intervals", 0, "streams", 0, "rtt"), "7", "intervals[0].streams[0].rtt: expected a number, got a string"),
    (("intervals", 0, "streams", 0, "bytes"), 10**400, "intervals[0].streams[0].bytes: expected a number within range"),
    (("intervals", 1), {"sum": {}}, 'intervals[1]: has no "streams"'),
]


@pytest.mark.parametrize("path, value, message", WRONG_SHAPES, ids=[m.split(":")[0] for _, _, m in WRONG_SHAPES])
def test_a_wrong_inner_shape_of_an_iperf3_file_is_one_line_naming_the_key(tmp_path, path, value, message):
    (tmp_path / "bad.json").write_text(json.dumps(_set(real("tcp-default"), path, value)))
    one_error_line(ccarena("import", "iperf3", "bad.json", "-o", "out", cwd=tmp_path), "bad.json: " + message)
    assert not (tmp_path / "out").exists()


def test_a_bad_server_output_is_left_out_with_a_warning_not_a_traceback(tmp_path):
    doc = _set(real("tcp-default"), ("server_output_json", "intervals", 0), "oops")
    (tmp_path / "half.json").write_text(json.dumps(doc))
    code, out, err = ccarena("import", "iperf3", "half.json", "-o", "out", cwd=tmp_path)
    assert code == 0, err
    assert "server_output_json.intervals[0]: expected an object, got a string" in err, err
    assert "Traceback" not in err


def _write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc))
    return path


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path in ``node`` (the first two items of each list)."""
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node[:2]):
            out += _paths(v, prefix + (i,))
    return out


@pytest.mark.parametrize("name", ["tcp-bidir", "udp-20M"])
def test_any_value_of_an_iperf3_file_replaced_is_imported_or_one_problem(tmp_path, name):
    """Every value of a real file (TCP with both halves, UDP) replaced by each wrong kind: the
    parser returns a run or raises ImportProblem, never another exception."""
    doc = real(name)
    path = tmp_path / "x.json"
    for key_path in _paths(doc):
        for wrong in ("s", [1], {"a": 1}, -1, None, True, 10**400):
            path.write_text(json.dumps(_set(doc, key_path, wrong)))
            try:
                iperf3.about(iperf3.parse(path))
            except ImportProblem as err:
                assert "\n" not in str(err)


FLENT_DOC = {
    "version": 3, "x_values": [0.2, 0.4, 0.6],
    "results": {"TCP upload": [10.0, None, 12.0], "TCP upload sum": [10.0, 11.0, 12.0],
                "Ping (ms) ICMP": [20.0, 21.0, None]},
    "metadata": {"NAME": "rrul", "TITLE": "t", "TIME": "2024-05-01T12:00:00Z", "HOSTS": ["h"],
                 "LENGTH": 1, "STEP_SIZE": 0.2,
                 "SERIES_META": {"TCP upload": {"UNITS": "Mbits/s", "CONG_CONTROL": "cubic",
                                                "MEAN_VALUE": 11.0, "TCP_MSS": "1448"},
                                 "Ping (ms) ICMP": {"UNITS": "ms"}}},
    "raw_values": {"Ping (ms) ICMP": [{"t": 1.7e9, "val": 20.0}, {"t": 1.7e9 + 0.1, "val": 21.0}]},
}
"""A small Flent data file (format 3) with a throughput series, its sum and a ping."""


def test_any_value_of_a_flent_file_replaced_is_imported_or_one_problem(tmp_path):
    doc = FLENT_DOC
    flent.parse(_write(tmp_path / "ok.flent", doc))  # the file itself imports
    path = tmp_path / "x.flent"
    for key_path in _paths(doc):
        for wrong in ("s", [1], {"a": 1}, -1, None, True, 10**400):
            path.write_text(json.dumps(_set(doc, key_path, wrong)))
            try:
                flent.about(flent.parse(path))
            except ImportProblem as err:
                assert "\n" not in str(err)


# --- files that are not what they claim -------------------------------------------------------


def test_json_nested_100000_deep_is_one_line(tmp_path):
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "open.json").write_text('{"start": ' + "[" * 100_000)  # invalid as well as deep
    for name in ("deep.json", "open.json"):
        one_error_line(ccarena("import", "iperf3", name, "-o", "out", cwd=tmp_path), name, "deep")
    one_error_line(ccarena("import", "flent", "deep.json", "-o", "out", cwd=tmp_path), "deep.json", "deep")


def test_a_number_of_5000_digits_is_one_line(tmp_path):
    (tmp_path / "big.json").write_text('{"start": {}, "intervals": [' + "9" * 5000 + '], "end": {}}')
    one_error_line(ccarena("import", "iperf3", "big.json", "-o", "out", cwd=tmp_path), "big.json", "digits")


@pytest.mark.parametrize("tool", ["iperf3", "flent"])
def test_devices_directories_and_fifos_are_refused_without_reading(tmp_path, tool):
    os.mkfifo(tmp_path / "pipe.json")  # no writer: opening it for reading would wait for ever
    (tmp_path / "dir.json").mkdir()
    one_error_line(ccarena("import", tool, "/dev/zero", "-o", "out", cwd=tmp_path), "/dev/zero: is a device")
    one_error_line(ccarena("import", tool, "pipe.json", "-o", "out", cwd=tmp_path), "pipe.json: is a named pipe")
    one_error_line(ccarena("import", tool, "dir.json", "-o", "out", cwd=tmp_path), "dir.json: is a directory")
    os.symlink("/dev/zero", tmp_path / "zero.json")  # a link is followed to what it names
    one_error_line(ccarena("import", tool, "zero.json", "-o", "out", cwd=tmp_path), "zero.json: is a device")
    assert not (tmp_path / "out").exists()


def test_a_1gb_file_is_refused_by_its_size_before_it_is_read(tmp_path):
    with open(tmp_path / "huge.json", "wb") as f:
        f.truncate(2**30)  # sparse: 1 GiB of zeros that take no disk
    one_error_line(ccarena("import", "iperf3", "huge.json", "-o", "out", cwd=tmp_path),
                   "huge.json: is 1.07 GB, more than the limit of", "(half this process's "
                   "address-space limit (ulimit -v)); raise it with --max-memory")
    one_error_line(ccarena("import", "iperf3", "huge.json", "-o", "out", "--max-memory", "2GB", cwd=tmp_path),
                   "more than the limit of 250 MB", "1/8 of the memory budget of 2 GB (--max-memory)")


def _gzip_bomb(path: Path, zeros_bytes: int) -> None:
    """A gzip stream of ``zeros_bytes`` zero bytes, compressed in chunks (about 1/1000 of it)."""
    squeeze = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = bytes(2**24)
    with open(path, "wb") as f:
        for _ in range(zeros_bytes // len(chunk)):
            f.write(squeeze.compress(chunk))
        f.write(squeeze.flush())


def test_a_gzip_bomb_is_refused_once_it_inflates_past_a_limit(tmp_path):
    _gzip_bomb(tmp_path / "bomb.flent.gz", 2**30)
    assert (tmp_path / "bomb.flent.gz").stat().st_size < 2 * 2**20
    # With room in the budget, the ratio stops it (at 100 times its compressed size).
    one_error_line(ccarena("import", "flent", "bomb.flent.gz", "-o", "out", "--max-memory", "8GB", cwd=tmp_path),
                   "bomb.flent.gz: inflates to more than", "over 100 times its compressed size")
    # Below the ratio's floor, the memory budget's limit holds.
    one_error_line(ccarena("import", "flent", "bomb.flent.gz", "-o", "out", "--max-memory", "256MB", cwd=tmp_path),
                   "bomb.flent.gz: inflates to more than 32 MB", "the memory budget of 256 MB (--max-memory)")
    assert not (tmp_path / "out").exists()


def test_import_max_memory_is_checked(tmp_path):
    one_error_line(ccarena("import", "iperf3", DATA / "tcp-default.json", "--max-memory", "lots",
                           "-o", "out", cwd=tmp_path), "--max-memory")


def test_a_file_within_the_limit_still_imports(tmp_path):
    with gzip.open(tmp_path / "ok.flent.gz", "wt") as f:
        json.dump({"version": 3, "x_values": [0.2, 0.4], "results": {"TCP upload": [1.0, 2.0]},
                   "metadata": {"SERIES_META": {"TCP upload": {"UNITS": "Mbits/s"}}}}, f)
    code, out, err = ccarena("import", "flent", "ok.flent.gz", "-o", "out", "--max-memory", "256MB", cwd=tmp_path)
    assert code == 0 and "imported 1 of 1" in out, err


# --- trace files --------------------------------------------------------------------------------

SCENARIO = """name = "t"
duration = "1s"
[topology]
kind = "single_link"
link = {{ rate = {{ trace = "{trace}" }}, delay = "10ms" }}
[[flows]]
from = "a"
to = "b"
flavor = "cubic"
"""


def scenario(tmp_path: Path, trace: str) -> str:
    (tmp_path / "s.toml").write_text(SCENARIO.format(trace=trace))
    return "s.toml"


def test_a_trace_that_is_a_fifo_a_device_or_a_directory_is_refused(tmp_path):
    os.mkfifo(tmp_path / "pipe.mahi")
    (tmp_path / "dir.mahi").mkdir()
    for trace, why in (("pipe.mahi", "is a named pipe"), ("/dev/zero", "is a device"),
                       ("dir.mahi", "is a directory")):
        one_error_line(ccarena("validate", scenario(tmp_path, trace), cwd=tmp_path),
                       "topology.link.rate.trace:", f"{trace}: {why}")


def test_a_1gb_trace_is_refused_with_and_without_max_memory(tmp_path):
    with open(tmp_path / "huge.mahi", "wb") as f:
        f.truncate(2**30)
    path = scenario(tmp_path, "huge.mahi")
    # Under the probe's address-space bound the default budget is half of it: refused by size.
    one_error_line(ccarena("validate", path, cwd=tmp_path), "huge.mahi: is 1.07 GB, more than the limit",
                   "(half this process's address-space limit (ulimit -v))", "raise --max-memory")
    for args in (["validate", path], ["run", path, "-o", "out"]):
        one_error_line(ccarena(*args, "--max-memory", "2GB", cwd=tmp_path),
                       "huge.mahi: is 1.07 GB, more than the limit of 512 MB",
                       "at most 8,000,000 lines within the memory budget of 2 GB (--max-memory)")
    assert not (tmp_path / "out").exists()


def test_a_trace_with_more_lines_than_the_budget_holds_is_refused_while_streamed(tmp_path):
    # 100 MB holds 400,000 lines; the file is small (2 bytes a line) but has 500,000.
    (tmp_path / "long.mahi").write_text("".join(f"{i // 1000}\n" for i in range(500_000)))
    one_error_line(ccarena("validate", scenario(tmp_path, "long.mahi"), "--max-memory", "100MB", cwd=tmp_path),
                   "long.mahi: has more than 400,000 lines", "shorten the trace or raise --max-memory")


@pytest.mark.parametrize("name, text, where", [
    ("secret.mahi", "1\n2\nroot:$6$s3cr3t-hash:19000:0\n", "secret.mahi line 3: not a millisecond timestamp"),
    ("down.mahi", "5\n\n31337\n3\n", "down.mahi line 4: its timestamp is smaller than line 3's"),
    ("long.mahi", "1\n" + "s3cr3t" * 100 + "\n", "long.mahi: line 2 is longer than 256"),
    ("bin.mahi", "1\n", "bin.mahi: line 2 is not UTF-8"),
    ("unit.csv", "0s,12Mbps\n1s,s3cr3tbps\n", "unit.csv line 2: the rate is not a rate with a unit"),
    ("neg.csv", "time_s,rate_mbps\n0,5\n1,-31337\n", "neg.csv line 3: the rate must be a number ≥ 0"),
    ("head.csv", "s3cr3t,rate_mbps\n0,5\n", "head.csv line 1: a header must name the columns"),
])
def test_a_trace_error_names_the_line_number_not_its_text(tmp_path, name, text, where):
    data = text.encode() + (b"\xff\xfes3cr3t\n" if name == "bin.mahi" else b"")
    (tmp_path / name).write_bytes(data)
    line = one_error_line(ccarena("validate", scenario(tmp_path, name), cwd=tmp_path), where)
    assert "s3cr3t" not in line and "31337" not in line and "root" not in line, line


# --- the readers, in-process ------------------------------------------------------------------


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


TRICKY = "[]{}\"\\a\n"
"""Characters that make JSON text hard to count: brackets, quotes and backslashes (escaped by
json.dumps into runs of backslashes) inside strings."""
JSON = st.recursive(
    st.none() | st.integers() | st.text(TRICKY, max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(TRICKY, max_size=4), inner, max_size=3),
    max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(JSON, st.integers(1, 9))
def test_json_depth_counts_brackets_outside_strings_across_chunks(value, chunk):
    text = json.dumps(value).encode()
    saved = inputs._DEPTH_CHUNK
    try:
        inputs._DEPTH_CHUNK = chunk  # escapes and strings cut at every place
        assert inputs.json_depth(text) == _depth(value)
    finally:
        inputs._DEPTH_CHUNK = saved


def test_gunzip_reads_members_checks_the_trailer_and_stops_at_its_limit():
    data = b"measurement " * 1000
    assert inputs.gunzip(gzip.compress(data) + gzip.compress(b"more") + b"\0\0", 10**6, "fix") == data + b"more"
    for broken, why in ((gzip.compress(data)[:-4], "truncated"), (gzip.compress(data)[:30], "truncated"),
                        (gzip.compress(data) + b"junk", "corrupt"), (b"\x1f\x8b" + b"\0" * 30, "corrupt")):
        with pytest.raises(inputs.InputRefused, match=why):
            inputs.gunzip(broken, 10**6, "fix")
    flipped = bytearray(gzip.compress(data))
    flipped[-8] ^= 1  # the CRC-32
    with pytest.raises(inputs.InputRefused, match="corrupt"):
        inputs.gunzip(bytes(flipped), 10**6, "fix")
    with pytest.raises(inputs.InputRefused, match="inflates to more than 5 kB: fix"):
        inputs.gunzip(gzip.compress(data), 5000, "fix")


def test_read_bytes_stops_at_its_limit_where_the_size_says_nothing():
    # /proc files say they are empty (size 0): the read itself stops past the limit.
    assert os.stat("/proc/self/status").st_size == 0
    with pytest.raises(inputs.InputRefused, match="more than the limit of 10 B: fix"):
        inputs.read_bytes("/proc/self/status", 10, "fix")


def test_read_lines_numbers_lines_across_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(inputs, "_LINES_CHUNK", 3)
    path = tmp_path / "t"
    path.write_bytes(b"1\r\n22\n\n333\n4444")
    assert list(inputs.read_lines(path, 5, 8, "fix")) == [(1, "1"), (2, "22"), (3, ""), (4, "333"), (5, "4444")]
    with pytest.raises(inputs.InputRefused, match="has more than 4 lines: fix"):
        list(inputs.read_lines(path, 4, 8, "fix"))
    with pytest.raises(inputs.InputRefused, match="line 5 is longer than 3"):
        list(inputs.read_lines(path, 5, 3, "fix"))
    path.write_bytes(b"1\n" + b"x" * 100)  # a last line with no end, longer than any chunk
    with pytest.raises(inputs.InputRefused, match="line 2 is longer than 8"):
        list(inputs.read_lines(path, 5, 8, "fix", max_bytes=10**6))
    with pytest.raises(inputs.InputRefused, match="is 102 B, more than the limit of 40 B: fix"):
        list(inputs.read_lines(path, 5, 8, "fix"))  # by its size, before reading


def test_the_budget_follows_max_memory_and_else_the_machine():
    assert inputs.memory_budget_bytes() == inputs.machine_memory_bytes() // 2
    assert "(half this " in inputs.describe_budget()
    with inputs.memory_budget(2 * 10**9):
        assert inputs.memory_budget_bytes() == 2 * 10**9
        assert inputs.describe_budget() == "the memory budget of 2 GB (--max-memory)"
    assert inputs.memory_budget_bytes() == inputs.machine_memory_bytes() // 2
