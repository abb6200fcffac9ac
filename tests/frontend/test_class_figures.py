"""DualPI2's per-class results reach the report (issue 31, items 1 and 6): a run through a
DualPI2 bottleneck gets each class's queueing-delay CDF and the marking probability over time,
its summary the per-class delays; a run through any other queue gets none of them."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import ccarena
import numpy as np
import pandas as pd
import pytest
from ccarena.report import class_plots
from ccarena.report.palette import CLASS_COLORS
from ccarena.store.columns import AQM_PROBABILITY_COLUMNS, DUALPI2_LINK_COLUMNS

SCENARIO = """
name = "{name}"
duration = "5s"
[topology]
kind = "dumbbell"
pairs = 2
bottleneck = {{ rate = "20Mbps", delay = "10ms", queue = {{ {queue} limit = "500pkt" }} }}
[[flows]]
name = "prague"
from = "left0"
to = "right0"
flavor = "prague"
[[flows]]
name = "cubic"
from = "left1"
to = "right1"
flavor = "cubic"
ecn = true
"""


class Images(HTMLParser):
    """The ``<img>`` attributes of a report page."""

    def __init__(self) -> None:
        super().__init__()
        self.images: list[dict[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.images.append({k: v or "" for k, v in attrs})


def _run(root: Path, name: str, queue: str) -> tuple[Path, list[dict[str, str]]]:
    scenario = root / f"{name}.toml"
    scenario.write_text(SCENARIO.format(name=name, queue=queue))
    out = root / name
    ccarena.run(scenario, out, jobs=1, report=True)
    parser = Images()
    parser.feed((out / "report.html").read_text())
    return out, parser.images


def _class_images(images: list[dict[str, str]]) -> dict[str, dict[str, str]]:
    """The DualPI2 figures of a page by kind (``class-delay``, ``marking-probability``)."""
    out = {}
    for img in images:
        for kind in ("class-delay", "marking-probability"):
            if img.get("data-file", "").endswith(f"-{kind}.png"):
                out[kind] = img
    return out


@pytest.fixture(scope="module")
def dual(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, str]]]:
    return _run(tmp_path_factory.mktemp("dual"), "dual", 'discipline = "dualpi2",')


def _run_id(out: Path) -> str:
    return str(pd.read_parquet(out / "summary.parquet")["run_id"].iloc[0])


def test_a_dualpi2_run_draws_each_class_delay_and_the_marking_probability(dual) -> None:
    out, images = dual
    figures = _class_images(images)
    assert set(figures) == {"class-delay", "marking-probability"}, [i.get("data-file") for i in images]
    # Both classes drawn: 10 percentile points per class (the zero minimum left off the log axis).
    assert int(figures["class-delay"]["data-points"]) >= 2 * 9
    # One probability per class per sample interval (5 s at the default interval).
    assert int(figures["marking-probability"]["data-points"]) >= 2 * 40
    for fig in figures.values():
        assert (out / fig["data-file"]).stat().st_size > 0

    run = _run_id(out)
    links = pd.read_parquet(out / "runs" / run / "links.parquet")
    bottleneck = links[links["role"] == "bottleneck"].iloc[0]
    for column in DUALPI2_LINK_COLUMNS:
        assert np.isfinite(float(bottleneck[column])), column
    assert bottleneck["l4s_sojourn_p99_s"] < bottleneck["classic_sojourn_p99_s"]
    queues = pd.read_parquet(out / "runs" / run / "queues.parquet")
    assert set(AQM_PROBABILITY_COLUMNS) <= set(queues.columns)
    # The run summary carries the bottleneck's per-class delays, the same numbers.
    summary = pd.read_parquet(out / "summary.parquet")
    assert summary["bottleneck_l4s_sojourn_p99_s"].iloc[0] == bottleneck["l4s_sojourn_p99_s"]
    assert summary["bottleneck_classic_sojourn_mean_s"].iloc[0] == bottleneck["classic_sojourn_mean_s"]


def test_classes_keep_their_colours(dual) -> None:
    out, _ = dual
    run = _run_id(out)
    links = pd.read_parquet(out / "runs" / run / "links.parquet")
    queues = pd.read_parquet(out / "runs" / run / "queues.parquet")
    shown = class_plots.dualpi2_links(links)
    assert len(shown) == 1
    from matplotlib.colors import to_hex

    for fig in (class_plots.class_sojourn_cdfs(shown, "t"), class_plots.aqm_probability_vs_time(queues, shown, "t")):
        colours = {to_hex(line.get_color()) for line in fig.axes[0].get_lines()}
        assert colours == {c.lower() for c in CLASS_COLORS.values()}


def test_a_run_without_dualpi2_has_no_class_figures_or_columns(tmp_path: Path) -> None:
    out, images = _run(tmp_path, "fifo", "")
    assert _class_images(images) == {}
    summary = pd.read_parquet(out / "summary.parquet")
    assert not any(c.startswith("bottleneck_l4s") or c.startswith("bottleneck_classic") for c in summary.columns)
    links = pd.read_parquet(out / "runs" / _run_id(out) / "links.parquet")
    assert links[list(DUALPI2_LINK_COLUMNS)].isna().all().all()


def test_only_dualpi2_links_where_packets_waited_are_drawn() -> None:
    nan = float("nan")

    def row(link: int, departed: float, waited_s: float) -> dict[str, float]:
        out = {"link": link, "name": f"l{link}"}
        for cls in ("l4s", "classic"):
            out[f"{cls}_packets_departed"] = departed
            out[f"{cls}_sojourn_max_s"] = waited_s
        return out

    links = pd.DataFrame([row(0, 100, 0.01), row(1, 500, 0.0), row(2, nan, nan), row(3, 900, 0.002)])
    # Link 1 (an ACK direction: nothing ever waited) and link 2 (not DualPI2) are left out; the
    # busiest first.
    assert class_plots.dualpi2_links(links)["link"].tolist() == [3, 0]
    # A links table from before the columns existed (or a backend without them): none.
    assert class_plots.dualpi2_links(links[["link", "name"]]).empty
    # The CDF points leave out what is not finite and keep the fractions in order.
    x, y = class_plots.class_cdf_points({"l4s_sojourn_min_s": 0.0, "l4s_sojourn_p50_s": 1e-3,
                                         "l4s_sojourn_max_s": 2e-3}, "l4s")
    assert x.tolist() == [0.0, 1e-3, 2e-3] and y.tolist() == [0.0, 0.5, 1.0]
