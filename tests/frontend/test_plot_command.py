"""``ccarena plot`` draws any stored metric against any column from stored results (issue 17)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import ccarena
import pandas as pd
import pytest
from ccarena.report import custom_plot, plots
from conftest import ccarena as cli
from matplotlib.colors import to_hex

SCENARIO = {
    "name": "plot", "duration": "2s",
    "topology": {"kind": "dumbbell", "pairs": 2,
                 "bottleneck": {"rate": "10Mbps", "delay": "10ms", "queue": {"limit": "50pkt"}}},
    "flows": [{"from": "left0", "to": "right0", "flavor": "cubic"},
              {"from": "left1", "to": "right1", "flavor": "reno"}],
    "sweep": {"topology.bottleneck.loss": ["0%", "1%", "2%"], "repeats": 2},
}


@pytest.fixture(scope="module")
def experiment(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("plot") / "out"
    ccarena.run(SCENARIO, out, jobs=2)
    return out


def test_line_plot_in_three_formats(experiment: Path) -> None:
    done = cli("plot", str(experiment), "--y", "goodput", "--x", "loss", "--formats", "png,svg,pdf",
               cwd=experiment)
    assert done.returncode == 0, done.stderr
    stem = experiment / "figures" / "plot-goodput_vs_topology_bottleneck_loss"
    for suffix, magic in ((".png", b"\x89PNG"), (".svg", b"<?xml"), (".pdf", b"%PDF")):
        assert stem.with_suffix(suffix).read_bytes().startswith(magic)


@pytest.mark.parametrize("args", [("--y", "jain", "--x", "loss", "--kind", "bar"),
                                  ("--y", "rtt", "--kind", "box", "--facet", "flavor"),
                                  ("--y", "goodput", "--kind", "cdf"),
                                  ("--y", "loss", "--kind", "heatmap")])
def test_every_kind_draws(experiment: Path, args: tuple[str, ...]) -> None:
    done = cli("plot", str(experiment), *args, cwd=experiment)
    assert done.returncode == 0, done.stderr
    written = Path(done.stdout.strip().split("figure: ")[-1])
    assert written.stat().st_size > 10_000


def test_a_categorical_x_is_drawn_as_bars_by_default(experiment: Path) -> None:
    # No --kind: flavors along x (the default x of an experiment without a sweep) give bars.
    done = cli("plot", str(experiment), "--x", "flavor", cwd=experiment)
    assert done.returncode == 0, done.stderr
    summary = pd.read_parquet(experiment / "summary.parquet")
    assert custom_plot.default_kind(summary, "flavor") == "bar"
    assert custom_plot.default_kind(summary, "topology.bottleneck.loss") == "line"


def test_hue_flavor_uses_the_report_colours(experiment: Path) -> None:
    summary = pd.read_parquet(experiment / "summary.parquet")
    fig = custom_plot.plot(summary, "goodput_mean_bps", "topology.bottleneck.loss", "flavor", None,
                           "line", "t")
    colours = {c.get_label(): to_hex(c.lines[0].get_color()) for c in fig.axes[0].containers}
    assert colours == {f: plots.flavor_color(f).lower() for f in ("cubic", "reno")}


@pytest.mark.parametrize("args,expected", [
    (("--y", "goodptu"), "--y: no column 'goodptu' in this experiment (did you mean 'goodput'?)"),
    (("--x", "flavor", "--kind", "line"), "--x: 'flavor' is not numeric"),
    (("--kind", "pie"), "--kind: 'pie' is not one of line, bar, box, cdf, heatmap"),
    (("--formats", "png,gif"), "--formats: 'gif' is not a list of png, svg, pdf"),
])
def test_bad_options_are_one_line(experiment: Path, args: tuple[str, ...], expected: str) -> None:
    done = cli("plot", str(experiment), *args, cwd=experiment)
    assert done.returncode == 2
    assert done.stderr.startswith("error: " + expected), done.stderr
    assert done.stderr.count("\n") == 1


def test_report_writes_every_figure_in_each_format(experiment: Path) -> None:
    done = cli("report", str(experiment), "--formats", "png,svg,pdf", cwd=experiment)
    assert done.returncode == 0, done.stderr
    pngs = sorted((experiment / "figures").glob("*.png"))
    assert len(pngs) >= 5
    for png in pngs:
        if png.name.startswith("plot-"):
            continue  # drawn by `ccarena plot` above, in the formats it was asked for
        assert png.with_suffix(".svg").exists() and png.with_suffix(".pdf").exists(), png.name


def test_compare_two_experiments(experiment: Path, tmp_path: Path) -> None:
    import copy
    import json

    faster = copy.deepcopy(SCENARIO)
    faster["topology"]["bottleneck"]["rate"] = "20Mbps"
    other = tmp_path / "faster"
    ccarena.run(faster, other, jobs=2)
    done = cli("compare", str(experiment), str(other), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert len(rows) == 3 * 2  # 3 loss values × 2 flavors, matched
    # Doubling the bottleneck raises the lossless points' goodput beyond the combined CI.
    lossless = [r for r in rows if r["topology.bottleneck.loss"] == "0%"]
    assert lossless and all(r["goodput_mean_bps_diff"] > r["goodput_mean_bps_diff_ci95"] for r in lossless)
    assert sum(r["goodput_mean_bps_diff"] for r in lossless) > 5e6
    shown = cli("compare", str(experiment), str(other), "-o", str(tmp_path / "cmp"), cwd=tmp_path)
    assert shown.returncode == 0 and "B − A" in shown.stdout
    assert (tmp_path / "cmp" / "compare-goodput_mean_bps.png").stat().st_size > 10_000
    # At 80 columns every metric still shows, one row per metric, nothing cut; given room, one
    # row per point with `A → B (Δ ± h)` cells.
    for columns, layout in ((80, "metric"), (250, "→")):
        done = subprocess.run([sys.executable, "-m", "ccarena", "compare", str(experiment), str(other),
                               "-o", str(tmp_path / "cmp")], capture_output=True, text=True,
                              cwd=tmp_path, env={**os.environ, "COLUMNS": str(columns)}, timeout=300)
        assert done.returncode == 0, done.stderr
        table = done.stdout.split("figure:")[0]
        assert max(len(line) for line in table.splitlines()) <= columns, table
        assert "…" not in table and layout in table, table
        for heading in ("goodput", "loss", "RTT mean", "Jain"):
            assert heading in table, (heading, table)


def test_facets_share_a_y_axis_that_holds_every_bar(experiment: Path) -> None:
    # Reno loses more than CUBIC: the second panel's bars are the tallest. The shared y axis is
    # set once every panel is drawn, so none is cut at the first panel's height.
    summary = pd.read_parquet(experiment / "summary.parquet")
    fig = custom_plot.plot(summary, "loss_rate", "topology.bottleneck.loss", None, "flavor", "bar", "t")
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in panels] == ["flavor = cubic", "flavor = reno"]
    tops = [line.get_ydata().max() for ax in panels for line in ax.get_lines()]  # whisker caps
    tops += [p.get_height() for ax in panels for p in ax.patches]
    assert max(tops) <= panels[0].get_ylim()[1] == panels[1].get_ylim()[1]
    assert panels[0].get_ylim()[0] == 0
    assert panels[0].get_ylabel() == "loss (%)"  # the column in words


def test_bars_of_absent_hues_leave_no_gap(experiment: Path) -> None:
    # x = flavor, hue = flavor: one bar per x value, centred on its tick (not in one of two slots).
    summary = pd.read_parquet(experiment / "summary.parquet")
    fig = custom_plot.plot(summary, "goodput_mean_bps", "flavor", "flavor", None, "bar", "t")
    centres = sorted(p.get_x() + p.get_width() / 2 for p in fig.axes[0].patches)
    assert centres == pytest.approx([0.0, 1.0])
    assert all(p.get_width() == pytest.approx(0.8 * 0.95) for p in fig.axes[0].patches)
