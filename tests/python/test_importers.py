"""ccarena import iperf3 / flent: real measurements in the same tables as simulated runs.

The iperf3 files are written by the installed iperf3 on loopback (a one-off server per test
started here and killed by its pid), or are the real iperf3 3.12 files of tests/data/iperf3 (with
the server's output, on a 16 Mbit/s path with loss); the Flent file is written here in Flent's
documented data format. The imported tables are checked against the files' own numbers, ``report``, ``query``,
``plot`` and ``compare`` (against a simulated run) are run on them, and every malformed file gives
exit status 2 with one line naming it, the files already imported being kept.
"""

from __future__ import annotations

import gzip
import json
import math
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
from ccarena.cli import app
from typer.testing import CliRunner

DATA = Path(__file__).resolve().parents[1] / "data" / "iperf3"
"""Real iperf3 3.12 files (tests/data/iperf3/README.md says how they were made)."""

SIM_SCENARIO = """
name = "loopback-sim"
description = "one cubic flow on a path like the measured one"
duration = "1s"
seed = 1

[topology]
kind = "dumbbell"
pairs = 1
bottleneck = { rate = "100Mbps", delay = "1ms", queue = { limit = "100pkt" } }
access = { rate = "10Gbps", delay = "0.1ms" }

[[flows]]
from = "left0"
to = "right0"
flavor = "cubic"

[output]
sample_interval = "200ms"
"""


def cli(*args: str) -> tuple[int, str, str]:
    """`ccarena ARGS` in this process: (exit code, stdout, stderr)."""
    done = CliRunner().invoke(app, [str(a) for a in args])
    if done.exception is not None and not isinstance(done.exception, SystemExit):
        raise done.exception
    return done.exit_code, done.stdout, done.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def iperf3(out: Path, *args: str) -> dict:
    """Run ``iperf3 -c 127.0.0.1 --json ARGS`` against a one-off server; write its JSON to
    ``out`` and return it."""
    port = free_port()
    server = subprocess.Popen(["iperf3", "-s", "-1", "-p", str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):  # until the server listens
            done = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", str(port), "--json", *args], check=False,
                                  capture_output=True, text=True, timeout=30)
            doc = json.loads(done.stdout)
            if "unable to connect" not in str(doc.get("error", "")):
                break
            time.sleep(0.05)
        server.wait(timeout=10)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    if "error" in doc:
        pytest.skip(f"iperf3 {' '.join(args)}: {doc['error']}")
    out.write_text(done.stdout)
    return doc


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, tuple[Path, dict]]:
    """The iperf3 runs: TCP (cubic), UDP at 10 Mbit/s, two parallel streams, both directions;
    1 s each with 0.2 s intervals."""
    if shutil.which("iperf3") is None:
        pytest.skip("iperf3 is not installed")
    d = tmp_path_factory.mktemp("iperf3")
    cases = {"tcp": ["-C", "cubic"], "udp": ["-u", "-b", "10M"], "p2": ["-P", "2", "-C", "cubic"],
             "bidir": ["--bidir", "-C", "cubic"]}
    return {k: (d / f"{k}.json", iperf3(d / f"{k}.json", "-t", "1", "-i", "0.2", *a))
            for k, a in cases.items()}


def load(root: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    flows = pd.concat([pd.read_parquet(p) for p in sorted(root.glob("runs/*/flows.parquet"))])
    samples = pd.concat([pd.read_parquet(p) for p in sorted(root.glob("runs/*/samples.parquet"))])
    return flows.reset_index(drop=True), samples.reset_index(drop=True), pd.read_parquet(root / "summary.parquet")


def intervals(doc: dict, sender: bool) -> list[list[dict]]:
    """Per stream (in order) of the given side, its non-omitted interval records."""
    per: dict[int, list[dict]] = {}
    for interval in doc["intervals"]:
        for s in interval["streams"]:
            if s["sender"] == sender and not s.get("omitted"):
                per.setdefault(s["socket"], []).append(s)
    return list(per.values())


def test_tcp_streams_become_flows_with_a_sample_per_interval(files, tmp_path):
    code, _, err = cli("import", "iperf3", files["tcp"][0], files["p2"][0], "--name", "tcp",
                         "-o", tmp_path / "tcp")
    assert code == 0, err
    # The same file again replaces its run.
    assert cli("import", "iperf3", files["tcp"][0], "--name", "tcp", "-o", tmp_path / "tcp")[0] == 0
    flows, samples, summary = load(tmp_path / "tcp")
    assert len(flows) == 3 and set(flows["flavor"]) == {"cubic"} and set(flows["direction"]) == {"upload"}
    assert set(summary["backend"]) == {"iperf3"} and len(summary) == 3
    for key in ("tcp", "p2"):
        doc = files[key][1]
        run = flows[flows["run_id"].str.startswith(key + "-")]
        streams = intervals(doc, sender=True)
        assert len(run) == len(streams) == doc["start"]["test_start"]["num_streams"]
        # goodput of the streams = iperf3's own received sum; retransmits and RTT as it reports them
        assert run["goodput_mean_bps"].sum() == pytest.approx(doc["end"]["sum_received"]["bits_per_second"], rel=1e-9)
        assert run["packets_retransmitted"].sum() == doc["end"]["sum_sent"]["retransmits"]
        for flow, rows in zip(run.itertuples(), streams):
            mine = samples[(samples["run_id"] == flow.run_id) & (samples["flow"] == flow.flow)]
            assert len(mine) == len(rows)
            assert mine["time_s"].tolist() == [r["end"] for r in rows]
            assert mine["throughput_bps"].tolist() == [r["bits_per_second"] for r in rows]
            assert mine["cwnd_bytes"].tolist() == [r["snd_cwnd"] for r in rows]
            assert mine["srtt_s"].tolist() == pytest.approx([r["rtt"] / 1e6 for r in rows])
            assert mine["retransmits"].iloc[-1] == sum(r["retransmits"] for r in rows)
            # The sender's file has no receiver view per interval, and no packet counts: null.
            assert mine["goodput_bps"].isna().all() and math.isnan(flow.packets_sent)
            assert math.isnan(flow.loss_rate) and math.isnan(flow.base_rtt_s)


def test_udp_loss_jitter_and_bidir_directions(files, tmp_path):
    code, _, err = cli("import", "iperf3", files["udp"][0], files["bidir"][0], "-o", tmp_path / "mix")
    assert code == 0, err
    flows, samples, _ = load(tmp_path / "mix")
    udp = flows[flows["kind"] == "udp"].iloc[0]
    end = files["udp"][1]["end"]
    rec = end["streams"][0]["udp"]
    assert udp["flavor"] == "udp" and udp["direction"] == "upload"
    assert udp["packets_sent"] == rec["packets"] and udp["packets_lost"] == rec["lost_packets"]
    assert udp["loss_rate"] == pytest.approx(rec["lost_packets"] / rec["packets"])
    assert udp["jitter_s"] == pytest.approx(rec["jitter_ms"] / 1e3)
    assert udp["goodput_mean_bps"] == pytest.approx(end["sum_received"]["bits_per_second"], rel=0.005)
    assert len(samples[(samples["run_id"] == udp["run_id"])]) == len(intervals(files["udp"][1], True)[0])

    doc = files["bidir"][1]
    bidir = flows[flows["run_id"].str.startswith("bidir-")].set_index("direction")
    assert set(bidir.index) == {"upload", "download"} and set(bidir["flavor"]) == {"cubic"}
    assert bidir.loc["upload", "goodput_mean_bps"] == pytest.approx(doc["end"]["sum_received"]["bits_per_second"])
    assert bidir.loc["download", "goodput_mean_bps"] == pytest.approx(
        doc["end"]["sum_received_bidir_reverse"]["bits_per_second"])
    down = samples[(samples["run_id"] == bidir.loc["download", "run_id"])
                   & (samples["flow"] == bidir.loc["download", "flow"])]
    rows = intervals(doc, sender=False)[0]
    assert down["goodput_bps"].tolist() == [r["bits_per_second"] for r in rows]
    assert down["throughput_bps"].isna().all()


def test_report_query_plot_and_compare_with_a_simulated_run(files, tmp_path):
    root = tmp_path / "real"
    assert cli("import", "iperf3", files["tcp"][0], files["p2"][0], "--name", "real", "-o", root)[0] == 0
    code, out, err = cli("report", root)
    assert code == 0, err
    assert (root / "report.html").is_file() and "cubic" in out
    code, out, err = cli("query", root, "SELECT backend, count(*) AS n FROM summary GROUP BY backend", "--csv")
    assert code == 0 and out.splitlines() == ["backend,n", "iperf3,3"], (out, err)
    code, out, err = cli("query", root, "SELECT count(*) FROM samples WHERE cwnd_bytes IS NOT NULL", "--csv")
    assert code == 0 and int(out.splitlines()[1]) > 0, err
    code, out, err = cli("plot", root, "--y", "goodput")  # flavors along x: bars by default
    assert code == 0, err
    scenario = tmp_path / "sim.toml"
    scenario.write_text(SIM_SCENARIO)
    assert cli("run", scenario, "-o", tmp_path / "sim", "--no-report", "-q")[0] == 0
    one_error_line(cli("import", "iperf3", files["udp"][0], "-o", tmp_path / "sim"), "a simulated experiment")
    code, out, err = cli("compare", tmp_path / "sim", root, "--json")
    assert code == 0, err
    [row] = json.loads(out)
    measured = pd.read_parquet(root / "summary.parquet")["goodput_mean_bps"].mean()
    assert row["flavor"] == "cubic" and row["goodput_mean_bps_b"] == pytest.approx(measured)
    code, out, err = cli("compare", tmp_path / "sim", root)
    assert code == 0, err
    assert "–)" not in out and "(−–" not in out, out  # a metric one side lacks has no difference


def flent_file(path: Path, truncate: bool = False) -> dict:
    """A small Flent data file (format version 3: x_values, results, metadata with SERIES_META,
    raw_values) of an rrul-like test: an upload and a download in Mbits/s, their sum, and a ping
    in ms (one point missing)."""
    x = [round(0.2 * i, 1) for i in range(1, 26)]
    up = [10.0 + (i % 5) for i in range(25)]
    down = [40.0 - (i % 3) for i in range(25)]
    ping = [20.0 + i for i in range(25)]
    ping[7] = None
    t0 = 1_700_000_000.0
    doc = {
        "version": 3, "x_values": x,
        "results": {"TCP upload": up, "TCP download": down,
                    "TCP upload sum": up, "Ping (ms) ICMP": ping},
        "metadata": {"NAME": "rrul", "TITLE": "test", "TIME": "2024-05-01T12:00:00.000000Z",
                     "HOSTS": ["server.example"], "LENGTH": 5, "STEP_SIZE": 0.2,
                     "FLENT_VERSION": "2.1.1",
                     "SERIES_META": {
                         "TCP upload": {"UNITS": "Mbits/s", "CONG_CONTROL": "cubic", "MEAN_VALUE": 11.9},
                         "TCP download": {"UNITS": "Mbits/s", "CONG_CONTROL": "bbr"},
                         "TCP upload sum": {"UNITS": "Mbits/s"},
                         "Ping (ms) ICMP": {"UNITS": "ms"}}},
        "raw_values": {"Ping (ms) ICMP": [{"t": t0 + 0.1 * i, "val": 20.0 + 0.5 * i, "seq": i}
                                          for i in range(50)]},
    }
    data = gzip.compress(json.dumps(doc).encode())
    path.write_bytes(data[: len(data) // 2] if truncate else data)
    return doc


def test_flent_series_become_flows_and_samples(tmp_path):
    doc = flent_file(tmp_path / "rrul-2024.flent.gz")
    root = tmp_path / "flent"
    code, _, err = cli("import", "flent", tmp_path / "rrul-2024.flent.gz", "-o", root)
    assert code == 0, err
    flows, samples, summary = load(root)
    flows = flows.set_index("name")
    assert sorted(flows.index) == ["Ping (ms) ICMP", "TCP download", "TCP upload"]  # the sum is not a flow
    assert flows.loc["TCP upload", "flavor"] == "cubic" and flows.loc["TCP download", "flavor"] == "bbr"
    assert flows.loc["TCP upload", "direction"] == "upload"
    assert flows.loc["TCP upload", "goodput_mean_bps"] == pytest.approx(11.9e6)  # the runner's mean
    assert flows.loc["TCP download", "goodput_mean_bps"] == pytest.approx(
        1e6 * sum(doc["results"]["TCP download"]) / 25)
    up = samples[samples["name"] == "TCP upload"]
    assert up["goodput_bps"].tolist() == [v * 1e6 for v in doc["results"]["TCP upload"]]
    assert up["time_s"].tolist() == doc["x_values"]
    ping = samples[samples["name"] == "Ping (ms) ICMP"]
    assert len(ping) == 24 and ping["goodput_bps"].isna().all()
    raw = [r["val"] / 1e3 for r in doc["raw_values"]["Ping (ms) ICMP"]]
    assert flows.loc["Ping (ms) ICMP", "rtt_min_s"] == pytest.approx(min(raw))
    assert flows.loc["Ping (ms) ICMP", "rtt_mean_s"] == pytest.approx(sum(raw) / len(raw))
    assert set(summary["backend"]) == {"flent"}
    code, _, err = cli("report", root)
    assert code == 0, err


def one_error_line(done: tuple[int, str, str], *needles: str) -> str:
    code, out, err = done
    assert code == 2, (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def test_malformed_files_give_one_line_each_and_imported_files_are_kept(files, tmp_path):
    good, doc = files["tcp"]
    text = good.read_text()
    bad = {
        "notjson.json": ("{this is not json", "not valid JSON"),
        "truncated.json": (text[: len(text) // 2], "truncated"),
        "nointervals.json": (json.dumps(dict(doc, intervals=[])), "no intervals"),
        "empty.json": ("", "empty"),
    }
    for name, (content, _) in bad.items():
        (tmp_path / name).write_text(content)
    # iperf3's own error output: a client that finds no server.
    done = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", str(free_port()), "--json"], check=False,
                          capture_output=True, text=True, timeout=30)
    (tmp_path / "refused.json").write_text(done.stdout)
    bad["refused.json"] = ("", "iperf3 reported an error")
    flent_file(tmp_path / "rrul.flent.gz")
    bad["rrul.flent.gz"] = ("", "use `ccarena import flent`")

    root = tmp_path / "exp"
    assert cli("import", "iperf3", good, "-o", root)[0] == 0
    for name, (_, why) in bad.items():
        one_error_line(cli("import", "iperf3", tmp_path / name, "-o", root), name, why)
    # Several files: the good one is imported, each bad one is one line.
    code, out, err = cli("import", "iperf3", files["udp"][0], tmp_path / "notjson.json",
                         tmp_path / "truncated.json", "-o", root)
    assert code == 2 and "imported 1 of 3" in out
    # The UDP file (no --get-server-output) is imported with a warning that its goodput samples
    # are empty; the errors are one line per bad file.
    lines = [line for line in err.strip().splitlines() if not line.startswith("warning: ")]
    assert len(lines) == 2 and "notjson.json" in lines[0] and "truncated.json" in lines[1], err
    assert "udp.json: goodput, jitter left empty for flow udp-upload" in err, err
    summary = pd.read_parquet(root / "summary.parquet")
    assert summary["run_id"].nunique() == 2  # the first import and the good file of the last
    assert summary["repeat"].tolist() == [0, 1]

    flent_file(tmp_path / "cut.flent.gz", truncate=True)
    one_error_line(cli("import", "flent", tmp_path / "cut.flent.gz", "-o", tmp_path / "f"),
                   "cut.flent.gz", "truncated")
    one_error_line(cli("import", "flent", good, "-o", tmp_path / "f"), good.name, "import iperf3")
    one_error_line(cli("import", "flent", tmp_path / "missing.flent.gz", "-o", tmp_path / "f"),
                   "missing.flent.gz", "no such file")
    assert not (tmp_path / "f").exists()
    # An import of one tool is not extended with another's.
    one_error_line(cli("import", "flent", tmp_path / "rrul.flent.gz", "-o", root), "iperf3 measurements")


# --- Real iperf3 3.12 files: the two sides' intervals aligned by time --------------------------

WITH_SERVER_OUTPUT = ["tcp-default", "tcp-i0.1", "tcp-i0.1-server-i0.1", "tcp-reverse", "tcp-bidir",
                      "tcp-parallel2", "udp-20M", "udp-20M-reverse"]


def real(name: str) -> tuple[Path, dict]:
    path = DATA / f"{name}.json"
    return path, json.loads(path.read_text())


def imported(path: Path, root: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, str]:
    """Import one file into ``root``: its flows, samples, summary and stderr."""
    code, _, err = cli("import", "iperf3", path, "-o", root)
    assert code == 0, err
    flows, samples, summary = load(root)
    return flows, samples, summary, err


def received_sums(doc: dict) -> dict[str, dict]:
    """iperf3's own received totals per direction (a client's file)."""
    end, test = doc["end"], doc["start"]["test_start"]
    if test.get("bidir"):
        return {"upload": end["sum_received"], "download": end["sum_received_bidir_reverse"]}
    return {"download" if test.get("reverse") else "upload": end["sum_received"]}


@pytest.mark.parametrize("name", WITH_SERVER_OUTPUT)
def test_real_files_have_goodput_wherever_iperf3_reported_it(name, tmp_path):
    path, doc = real(name)
    flows, samples, summary, err = imported(path, tmp_path / name)
    assert "warning" not in err, err
    for direction, total in received_sums(doc).items():
        mine = flows[flows["direction"] == direction]
        assert len(mine) == doc["start"]["test_start"]["num_streams"]
        # Per sample: a goodput in every sample, and the cumulative delivered bytes end at what
        # the receiver reported in all (no byte of the server's trailing interval dropped).
        for flow in mine.itertuples():
            rows = samples[samples["flow"] == flow.flow].sort_values("time_s")
            assert rows["goodput_bps"].notna().all() and (rows["goodput_bps"] >= 0).all(), rows
            assert rows["delivered_bytes"].iloc[-1] == pytest.approx(flow.bytes_delivered, rel=1e-6)
        # Per flow and in summary.parquet: iperf3's own received rate within 1 %.
        assert mine["goodput_mean_bps"].sum() == pytest.approx(total["bits_per_second"], rel=0.01)
        assert mine["bytes_delivered"].sum() == pytest.approx(total["bytes"], rel=0.01)
        rows = summary[summary["direction"] == direction]
        assert rows["goodput_mean_bps"].notna().all()
        assert rows["goodput_mean_bps"].sum() == pytest.approx(total["bits_per_second"], rel=0.01)


def server_intervals(doc: dict, sender: bool) -> list[list[dict]]:
    return intervals(doc["server_output_json"], sender)


def test_coarse_server_intervals_are_spread_over_the_client_samples_they_hold(tmp_path):
    # -i 0.1 on the client, a server reporting every second (and 0.03 s more at the end).
    path, doc = real("tcp-i0.1")
    flows, samples, _, _ = imported(path, tmp_path / "r")
    [server] = server_intervals(doc, sender=False)
    [client] = intervals(doc, sender=True)
    rows = samples.sort_values("time_s")
    assert len(rows) == len(client) + 1  # the server's trailing interval is a sample of its own
    first = server[0]
    inside = rows[rows["time_s"] <= first["end"] - 0.01]
    assert len(inside) == 9 and inside["goodput_bps"].tolist() == pytest.approx(
        [8 * first["bytes"] / (first["end"] - first["start"])] * 9, rel=1e-6)
    tail = rows.iloc[-1]
    assert tail["time_s"] == pytest.approx(server[-1]["end"])
    assert tail["goodput_bps"] > 0 and math.isnan(tail["cwnd_bytes"])  # the receiver's own
    # The client's own columns are untouched.
    assert rows["throughput_bps"].iloc[:-1].tolist() == [r["bits_per_second"] for r in client]


def test_equal_grids_give_the_servers_own_figures(tmp_path):
    # Both sides at -i 0.1: the server has one interval more (its trailing 0.025 s) than the client.
    path, doc = real("tcp-i0.1-server-i0.1")
    _, samples, _, _ = imported(path, tmp_path / "r")
    [server] = server_intervals(doc, sender=False)
    assert len(server) == len(intervals(doc, sender=True)[0]) + 1
    rows = samples.sort_values("time_s")
    assert len(rows) == len(server)
    # Each side counts time from its own start: the grids differ by a fraction of a millisecond.
    assert rows["goodput_bps"].tolist() == pytest.approx([r["bits_per_second"] for r in server], rel=0.02)


def test_reverse_takes_the_senders_half_from_the_server(tmp_path):
    path, doc = real("tcp-reverse")
    flows, samples, _, _ = imported(path, tmp_path / "r")
    [flow] = flows.itertuples()
    assert flow.direction == "download"
    # The client's own end record of the server's sending has RTT 0; the server's has it.
    assert doc["end"]["streams"][0]["sender"]["mean_rtt"] == 0
    sender_end = doc["server_output_json"]["end"]["streams"][0]["sender"]
    assert flow.rtt_mean_s == pytest.approx(sender_end["mean_rtt"] / 1e6)
    assert flow.rtt_min_s == pytest.approx(sender_end["min_rtt"] / 1e6)
    [server] = server_intervals(doc, sender=True)
    [client] = intervals(doc, sender=False)
    assert samples["goodput_bps"].tolist() == [r["bits_per_second"] for r in client]
    # cwnd and RTT: the reading of the server's 1 s interval that holds each 0.1 s sample.
    expected = [server[0]["snd_cwnd"] if r["end"] <= server[0]["end"] else server[1]["snd_cwnd"] for r in client]
    assert samples["cwnd_bytes"].tolist() == expected
    assert samples["srtt_s"].notna().all() and samples["retransmits"].iloc[-1] == sum(
        r["retransmits"] for r in server)


def test_bidir_download_rtt_is_the_servers_not_the_client_receiving_sockets(tmp_path):
    path, doc = real("tcp-bidir")
    flows, _, _, _ = imported(path, tmp_path / "r")
    down = flows.set_index("direction").loc["download"]
    server_end = [s["sender"] for s in doc["server_output_json"]["end"]["streams"] if s["sender"]["sender"]]
    assert down["rtt_mean_s"] == pytest.approx(server_end[0]["mean_rtt"] / 1e6)
    client_copy = [s["sender"] for s in doc["end"]["streams"] if not s["sender"]["sender"]][0]
    assert down["rtt_mean_s"] > 10 * client_copy["mean_rtt"] / 1e6


@pytest.mark.parametrize("name", ["udp-20M", "udp-20M-reverse"])
def test_udp_loss_and_goodput_from_the_receivers_count(name, tmp_path):
    path, doc = real(name)
    flows, samples, _, _ = imported(path, tmp_path / "r")
    [flow] = flows.itertuples()
    rec = doc["end"]["streams"][0]["udp"]
    assert flow.packets_lost == rec["lost_packets"] > 0
    assert flow.loss_rate == pytest.approx(rec["lost_packets"] / rec["packets"])
    # iperf3 3.12 writes the sender's bytes into the client's record of a received stream: the
    # goodput is the receiver's, about a fifth below the 20 Mbit/s sent.
    assert flow.goodput_mean_bps == pytest.approx(doc["end"]["sum_received"]["bits_per_second"], rel=1e-6)
    assert flow.throughput_mean_bps > 1.2 * flow.goodput_mean_bps
    assert samples["jitter_s"].notna().all()
    # Without the server's output, a lone stream's goodput is iperf3's received sum, not the
    # packets sent less lost over the sender's time.
    (tmp_path / "alone.json").write_text(json.dumps({k: v for k, v in doc.items() if k != "server_output_json"}))
    [flow] = imported(tmp_path / "alone.json", tmp_path / "alone")[0].itertuples()
    assert flow.goodput_mean_bps == pytest.approx(doc["end"]["sum_received"]["bits_per_second"], rel=1e-6)


def test_the_experiment_is_named_after_the_whole_file_stem(tmp_path):
    code, out, err = cli("import", "iperf3", DATA / "tcp-i0.1.json", "--results", tmp_path)
    assert code == 0, err
    assert (tmp_path / "tcp-i0.1" / "summary.parquet").is_file(), out


def warnings_of(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("warning: ")]


def test_a_metric_left_empty_is_a_warning_line(tmp_path):
    # No --get-server-output: the upload's goodput samples cannot be known.
    path, doc = real("tcp-no-server-output")
    flows, samples, _, err = imported(path, tmp_path / "none")
    assert samples["goodput_bps"].isna().all()
    [line] = warnings_of(err)
    assert line.startswith(f"warning: {path}: goodput left empty for flow cubic-upload: ")
    assert "--get-server-output" in line and "iperf3 -s -J" in line
    record = json.loads(next((tmp_path / "none").glob("runs/*/run.json")).read_text())
    assert record["source"]["warnings"] == [line.split(f"{path}: ", 1)[1]]

    # The server's output covers the first second only: the samples after it are named.
    full = json.loads((DATA / "tcp-i0.1-server-i0.1.json").read_text())
    cut = dict(full, server_output_json=dict(full["server_output_json"],
                                             intervals=full["server_output_json"]["intervals"][:10]))
    (tmp_path / "cut.json").write_text(json.dumps(cut))
    _, samples, _, err = imported(tmp_path / "cut.json", tmp_path / "cut")
    [line] = warnings_of(err)
    assert "goodput left empty in 10 of 20 samples of flow cubic-upload: the server's intervals cover 0.00–1.00 s" in line
    assert samples["goodput_bps"].isna().sum() == 10

    # A server started without -J: its output is text.
    text = {k: v for k, v in full.items() if k != "server_output_json"}
    (tmp_path / "text.json").write_text(json.dumps(dict(text, server_output_text="Accepted connection")))
    [line] = warnings_of(imported(tmp_path / "text.json", tmp_path / "text")[3])
    assert "goodput left empty for flow cubic-upload" in line and "iperf3 -s -J" in line

    # The server's own file: the sender's half (the client's) is named, goodput is there.
    (tmp_path / "server.json").write_text(json.dumps(full["server_output_json"]))
    _, samples, _, err = imported(tmp_path / "server.json", tmp_path / "server")
    [line] = warnings_of(err)
    assert "throughput, cwnd, RTT (srtt), mean RTT left empty for flow" in line and "client's file" in line
    assert samples["goodput_bps"].notna().all()


def test_align_spreads_bytes_by_time_and_keeps_the_receivers_tail():
    from ccarena.importers.align import TAIL_S, align

    own = [(0.0, 0.5), (0.5, 1.0), (1.0, 1.5), (1.5, 2.0)]
    peer = [(0.0, 1.0), (1.0, 2.0), (2.0, 2.1)]
    samples = [{"delivered_bytes": 1000.0, "jitter_s": 0.1}, {"delivered_bytes": 3000.0, "jitter_s": 0.2},
               {"delivered_bytes": 3100.0, "jitter_s": 0.3}]
    aligned, tail = align(own, peer, samples)
    assert [r["goodput_bps"] for r in aligned] == pytest.approx([8000, 8000, 16000, 16000])
    assert [r["delivered_bytes"] for r in aligned] == pytest.approx([500, 1000, 2000, 3000])
    assert [r["jitter_s"] for r in aligned] == [0.1, 0.1, 0.2, 0.2]
    assert len(tail) == 1 and tail[0]["time_s"] == 2.1
    assert tail[0]["goodput_bps"] == pytest.approx(8 * 100 / 0.1) and tail[0]["delivered_bytes"] == 3100
    assert align(own, peer, samples, tail=False)[1] == []
    # A sliver after the own last interval counts in it; time the peer did not report is unknown.
    aligned, tail = align(own, [(0.5, 1.0), (1.0, 2.0 + TAIL_S / 2)], samples[:2])
    assert tail == [] and aligned[-1]["delivered_bytes"] == 3000
    assert aligned[0]["goodput_bps"] is None and aligned[0]["jitter_s"] is None
