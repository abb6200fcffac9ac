"""Figures chosen for the scenario (issue 29): many flows are drawn as per-flavor distributions,
not one line per flow per run; a trace-driven link's capacity is drawn over time, with a
throughput-against-delay figure per flavor; titles in words (no run ids); legends name flavors;
one spike does not set the y axis; the figures that answer the question come first."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from browser import inner_text, screenshot
from conftest import EXAMPLES, ccarena

from ccarena.report import capacity, distributions, figures, plots

FAT_TREE = """
name = "many-flows"
description = "CUBIC vs Reno, a permutation of 16 bulk flows on a k = 4 fat-tree"
duration = "1s"
seed = 2
topology = { kind = "fat_tree", k = 4, host = { rate = "10Mbps", delay = "1ms", queue = { limit = "50pkt" } }, edge = { rate = "10Mbps", delay = "1ms", queue = { limit = "50pkt" } }, core = { rate = "10Mbps", delay = "1ms", queue = { limit = "50pkt" } } }

[[traffic]]
pattern = "permutation"
flow = { flavor = "cubic" }

[sweep]
"traffic[0].flow.flavor" = ["cubic", "reno"]

[output]
sample_interval = "100ms"
"""

TRACE = """
name = "trace-link"
description = "CUBIC vs Vegas on a cellular-like trace"
duration = "4s"
seed = 3
[topology]
kind = "dumbbell"
pairs = 1
bottleneck = { rate = { trace = "TRACE" }, delay = "20ms", queue = { limit = "300pkt" } }
access = { rate = "1Gbps", delay = "1ms" }
[[flows]]
from = "left0"
to = "right0"
flavor = "cubic"
[sweep]
"flows[0].flavor" = ["cubic", "vegas"]
[output]
sample_interval = "100ms"
"""


class Images(HTMLParser):
    """The ``<img>`` attributes of a report page, in page order."""

    def __init__(self) -> None:
        super().__init__()
        self.images: list[dict[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.images.append({k: v or "" for k, v in attrs})


def _run(tmp_path: Path, name: str, text: str) -> tuple[Path, list[dict[str, str]]]:
    scenario = tmp_path / f"{name}.toml"
    scenario.write_text(text)
    out = tmp_path / name
    done = ccarena("run", str(scenario), "-o", str(out), "-q", cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    parser = Images()
    parser.feed((out / "report.html").read_text())
    return out, parser.images


@pytest.fixture(scope="module")
def many_flows(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, str]]]:
    return _run(tmp_path_factory.mktemp("many"), "many", FAT_TREE)


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, str]]]:
    return _run(tmp_path_factory.mktemp("trace"), "trace",
                TRACE.replace("TRACE", str(EXAMPLES / "traces" / "cellular.mahi")))


def _by_file(images: list[dict[str, str]], name: str) -> dict[str, str]:
    found = [img for img in images if img["data-file"].endswith("/" + name)]
    assert len(found) == 1, [img["data-file"] for img in images]
    return found[0]


FLOW_SERIES = re.compile(r"^[^|:]+\|\d+\|[^|]+$")
"""A per-flow time series' gid: ``<run_id>|<flow>|<flavor>``."""


def test_sixteen_flows_are_drawn_as_distributions_per_flavor_not_one_line_each(many_flows, tmp_path):
    out, images = many_flows
    summary = pd.read_parquet(out / "summary.parquet")
    assert summary.groupby("run_id").size().tolist() == [16, 16]
    # No figure draws a line per flow: no per-run time series, no 16-line panels.
    for img in images:
        per_flow = [s for s in img["data-series"].split() if FLOW_SERIES.match(s)]
        assert len(per_flow) <= figures.MANY_FLOWS, (img["data-file"], len(per_flow))
    run_ids = set(summary["run_id"])
    assert not [img for img in images if any(img["data-file"].startswith(f"figures/{r}-") for r in run_ids)]
    # One CDF per flavor and metric, pooled over the flavor's 16 flows.
    cdf = _by_file(images, "flavor-distributions-goodput.png")
    series = cdf["data-series"].split()
    assert sorted(s for s in series if s.startswith("cdf:goodput_mean_bps|")) == [
        "cdf:goodput_mean_bps|cubic|cubic", "cdf:goodput_mean_bps|reno|reno"]
    assert any(s.startswith("cdf:rtt_mean_s|") for s in series)
    assert set(dict(p.split("=") for p in cdf["data-flavor-colors"].split())) == {"cubic", "reno"}
    # Over time: one median line per flavor (not per flow).
    bands = _by_file(images, "flavor-over-time.png")["data-series"].split()
    assert sorted(s for s in bands if s.startswith("band:goodput_bps|")) == [
        "band:goodput_bps|cubic|cubic", "band:goodput_bps|reno|reno"]
    # The queue is still drawn (one figure, the first run's; no per-flow series in it).
    queue = _by_file(images, "queue-backlog.png")
    assert queue["alt"].startswith("Queue backlog over time") and int(queue["data-points"]) > 0
    assert not [s for s in queue["data-series"].split() if FLOW_SERIES.match(s)]
    # The page as a reader sees it: the caption explains the CDF.
    caption = inner_text(out / "report.html",
                         'img[data-file="figures/flavor-distributions-goodput.png"] + figcaption')
    assert caption and "each step is one flow" in caption and "pooled per flavor" in caption
    shot = screenshot(out / "report.html", tmp_path / "many-flows.png", height=3000)
    assert shot.stat().st_size > 50_000


def test_titles_carry_no_run_id_and_legends_name_flavors(many_flows, traced):
    for out, images in (many_flows, traced):
        run_ids = set(pd.read_parquet(out / "summary.parquet")["run_id"])
        for img in images:
            assert not [r for r in run_ids if r in img["alt"]], img["alt"]
    out, _ = many_flows
    summary = pd.read_parquet(out / "summary.parquet")
    fig = distributions.flavor_cdfs(summary.assign(_group=summary["flavor"]), "_group",
                                    distributions.cdf_metrics(summary), "t")
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["cubic (16 flows)", "reno (16 flows)"]
    # A flavor sweep's bar figures: titled and labelled "flavor", not by the parameter's path.
    _, images = many_flows
    titles = [img["alt"] for img in images if "sweep-" in img["data-file"]]
    # 16 flows are collapsed into one bar per flavor: the title says what bar and whisker are.
    assert "Goodput per flow per flavor (mean over 16 flows, min–max)" in titles
    assert not [t for t in titles if "traffic[0]" in t]


def test_the_figures_that_answer_come_before_the_details(many_flows, traced):
    for _, images in (many_flows, traced):
        files = [img["data-file"] for img in images]
        answers = [i for i, f in enumerate(files) if re.search(
            r"sweep-|flavor-distributions|flavor-over-time|throughput-vs-delay", f)]
        details = [i for i, f in enumerate(files) if re.search(r"topology|dc-utilization|-goodput\.png$|-cwnd", f)
                   and i not in answers]
        assert answers and details and max(answers) < min(details), files
    # The answer's goodput, RTT and loss per flavor are all drawn for the fat-tree.
    files = [img["data-file"] for img in many_flows[1]]
    for metric in ("goodput_mean_bps", "rtt_mean_s", "loss_rate"):
        assert any(f"sweep-{metric}-vs-" in f for f in files), files


def test_a_trace_driven_link_is_drawn_with_its_capacity_over_time(traced, tmp_path):
    out, images = traced
    from ccarena.store import ExperimentStore

    store = ExperimentStore(out)
    summary = pd.read_parquet(out / "summary.parquet")
    run_id = summary.loc[summary["flavor"] == "cubic", "run_id"].iloc[0]
    samples, flows = store.read_table(run_id, "samples"), store.read_table(run_id, "flows")
    links, record = store.read_table(run_id, "links"), store.read_run_record(run_id)
    series = capacity.capacity_over_time(record["spec"], links, samples["time_s"].to_numpy())
    assert series is not None
    ends, rate = series
    assert np.allclose(np.diff(ends), 0.1)
    # The trace's rate walks between 1 and 16 Mbit/s: far from constant, and its mean over the
    # run is what the link delivered at most.
    assert rate.std() > 0.25 * rate.mean() and rate.min() < 0.6 * rate.mean() < rate.max() / 1.2
    delivered = float(flows["bytes_delivered"].sum()) * 8 / 4.0
    assert delivered <= rate.mean() * 1.02
    fig = plots.goodput_vs_time(samples, flows, "g", run_id, None, None, series)
    line = next(ln for ln in fig.axes[0].get_lines() if ln.get_gid() == "capacity")
    assert np.ptp(np.asarray(line.get_ydata(), dtype=float)) > 2.0  # Mbps: not a flat line
    assert "link capacity (trace" in line.get_label()
    # On the page: every per-run goodput figure and the per-flavor over-time figure draw it.
    goodput = _by_file(images, f"{run_id}-goodput.png")
    assert "capacity" in goodput["data-series"].split()
    assert "capacity" in _by_file(images, "flavor-over-time.png")["data-series"].split()
    caption = inner_text(out / "report.html", f'img[data-file="figures/{run_id}-goodput.png"] + figcaption')
    assert caption and "capacity in each sample interval" in caption
    screenshot(out / "report.html", tmp_path / "trace.png", height=3000)


def test_a_trace_driven_link_gets_a_throughput_against_delay_figure_per_flavor(traced):
    out, images = traced
    scatter = _by_file(images, "throughput-vs-delay.png")
    assert sorted(s for s in scatter["data-series"].split()) == [
        "tput-delay:mean|cubic|cubic", "tput-delay:mean|vegas|vegas"]
    assert set(dict(p.split("=") for p in scatter["data-flavor-colors"].split())) == {"cubic", "vegas"}
    # Pantheon's axes: delay reversed, one marker per flavor at the mean, 10–90th pct whiskers.
    points = pd.DataFrame({"flavor": ["cubic"] * 10 + ["vegas"] * 10,
                           "goodput_bps": np.r_[np.linspace(4e6, 6e6, 10), np.linspace(3e6, 5e6, 10)],
                           "srtt_s": np.r_[np.linspace(0.3, 0.7, 10), np.linspace(0.05, 0.08, 10)]})
    fig = distributions.throughput_vs_delay(points, "t")
    ax = fig.axes[0]
    assert ax.xaxis_inverted()
    means = {ln.get_gid().split("|")[2]: (ln.get_xdata()[0], ln.get_ydata()[0])
             for ln in ax.get_lines() if ln.get_gid()}
    assert means["cubic"] == pytest.approx((500.0, 5.0)) and means["vegas"] == pytest.approx((65.0, 4.0))
    assert "reversed" in ax.get_xlabel()


def test_a_trace_is_binned_into_the_capacity_of_each_interval():
    # Steps: 10 Mbit/s for 1 s, then 2 Mbit/s until 3 s; looped, the period is 3 s.
    steps = {"steps": [[0, 10_000_000], [1_000_000_000, 2_000_000], [3_000_000_000, 0]], "loop": True}
    got = capacity.capacity_bps(steps, np.array([0.0, 0.5, 1.0, 2.0, 3.0, 3.5, 4.5]))
    assert got.tolist() == [10e6, 10e6, 2e6, 2e6, 10e6, 6e6]
    once = {"steps": [[0, 10_000_000], [1_000_000_000, 2_000_000]], "loop": False}
    assert capacity.capacity_bps(once, np.array([0.0, 1.0, 5.0])).tolist() == [10e6, 2e6]
    # Mahimahi: one 1500-byte opportunity every 2 ms for 10 ms (6 Mbit/s), then one every 1 ms.
    ops = list(range(2, 11, 2)) + list(range(11, 21))
    trace = {"opportunities_ms": ops, "loop": True}
    # Edges between timestamps: [0, 10.5) holds 2..10 ms, [10.5, 20.5) 11..20, then the loop's 22..30.
    got = capacity.capacity_bps(trace, np.array([0.0, 0.0105, 0.0205, 0.0305]))
    assert got == pytest.approx([5 * 12_000 / 0.0105, 10 * 12_000 / 0.01, 5 * 12_000 / 0.01])
    # The period's last opportunity belongs to the lap it ends: none counted twice over many laps.
    assert capacity.capacity_bps(trace, np.array([0.0, 0.0205, 0.2005])) == pytest.approx(
        [15 * 12_000 / 0.0205, 9 * 15 * 12_000 / 0.18])
    with pytest.raises(ValueError, match="increasing"):
        capacity.capacity_bps(trace, np.array([0.0, 0.0]))


def test_a_single_spike_does_not_set_the_y_axis(tmp_path):
    t = np.arange(0.1, 20.05, 0.1)
    goodput = np.full(t.size, 10e6)
    goodput[50] = 400e6  # one 100 ms sample far above a 12 Mbit/s link
    samples = pd.DataFrame({"flow": 0, "time_s": t, "goodput_bps": goodput})
    flows = pd.DataFrame({"flow": [0], "name": ["a"], "flavor": ["reno"], "kind": ["tcp"], "end_s": [20.0]})
    fig = plots.goodput_vs_time(samples, flows, "g", "r", capacity_bps=12e6)
    top = fig.axes[0].get_ylim()[1]
    assert top == pytest.approx(plots.SPIKE_HEADROOM * 12.0)
    notes = plots.notes_of(fig)
    assert len(notes) == 1 and "1 sample above it is off the axis" in notes[0] and "max 400 Mbps" in notes[0]
    drawn = figures.Figure.draw(fig, "Goodput", "g.png", tmp_path, "The dashed grey line is the capacity.")
    assert drawn.caption.startswith("The dashed grey line is the capacity. The y axis ends at 13.8 Mbps")
    # Without a spike nothing is cut and nothing is said.
    calm = plots.goodput_vs_time(samples.assign(goodput_bps=10e6), flows, "g", "r", capacity_bps=12e6)
    assert not plots.notes_of(calm) and calm.axes[0].get_ylim()[1] < 13.0


def test_a_run_is_named_by_its_swept_values_in_words():
    params = ["traffic[0].flow.flavor", "topology.bottleneck.loss"]
    record = {"traffic[0].flow.flavor": "cubic", "topology.bottleneck.loss": "1%", "run_id": "x_r0"}
    assert figures.words(params, record) == "cubic, bottleneck loss 1%"
    labels = {"topology.bottleneck.loss": {"1%": "lossy"}}
    assert figures.words(params, record, labels) == "cubic, bottleneck loss lossy"
    assert figures.words([], record) == ""


def test_a_few_flows_keep_their_lines_and_the_legend_names_each_flavor():
    t = np.arange(0.1, 5.05, 0.1)
    samples = pd.DataFrame({"flow": np.repeat([0, 1, 2], t.size), "time_s": np.tile(t, 3),
                            "goodput_bps": 5e6})
    flows = pd.DataFrame({"flow": [0, 1, 2], "name": ["cubic", "reno", "second-cubic"],
                          "flavor": ["cubic", "reno", "cubic"], "kind": "tcp", "end_s": 5.0})
    fig = plots.goodput_vs_time(samples, flows, "g", "r")
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert legend == ["cubic", "reno", "second-cubic (cubic)"]
