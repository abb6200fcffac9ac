"""``compare``, ``plot``, ``query`` and the run table on every kind of experiment (issue 29): a
single point, a sweep, a multi-part file with a matrix, repeats, and imported iperf3 runs.

Asserted on the figures' data (bars side by side for a categorical x, lines with distinct styles
for a numeric x, matrix pairs as "row vs column", never a "nan" group) and on the terminal at 80
columns (no line wider, every value whole on one line).
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import ccarena
import numpy as np
import pandas as pd
import pytest
from ccarena.report import compare_experiments as cmp
from ccarena.report import custom_plot, plots, views
from ccarena.report.html_tables import COLUMNS, summary_rows
from ccarena.report.terminal import terminal_table
from ccarena.results import Result
from matplotlib.colors import to_hex
from rich.console import Console

POINT = {
    "name": "point", "duration": "1s", "seed": 1,
    "topology": {"kind": "dumbbell", "pairs": 2,
                 "bottleneck": {"rate": "10Mbps", "delay": "10ms", "queue": {"limit": "50pkt"}}},
    "flows": [{"from": "left0", "to": "right0", "flavor": "cubic"},
              {"from": "left1", "to": "right1", "flavor": "reno"}],
}

SWEEP = {**POINT, "name": "sweep",
         "sweep": {"topology.bottleneck.loss": ["0%", "1%"], "repeats": 2}}

PARTS = {
    "name": "parts", "duration": "1s", "seed": 4, "start_jitter": "100ms",
    "topology": {"kind": "dumbbell", "pairs": 2,
                 "bottleneck": {"rate": "10Mbps", "delay": "10ms", "queue": {"limit": "50pkt"}}},
    "parts": [
        {"name": "alone", "flows": [{"from": "left0", "to": "right0", "flavor": "cubic"}],
         "sweep": {"flows[0].flavor": ["reno", "cubic"], "repeats": 2}},
        {"name": "matrix", "matrix": {"flavors": ["cubic", "reno"], "stagger": "0.2s", "repeats": 2}},
    ],
}

PAIRS = ["cubic vs cubic", "cubic vs reno", "reno vs cubic", "reno vs reno"]


def faster(scenario: dict) -> dict:
    """The same scenario with a bottleneck twice as fast (experiment B)."""
    out = copy.deepcopy(scenario)
    out["topology"]["bottleneck"]["rate"] = "20Mbps"
    return out


def cli(*args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    """``python -m ccarena ARGS`` at ``columns`` columns."""
    return subprocess.run([sys.executable, "-m", "ccarena", *map(str, args)], capture_output=True,
                          text=True, env={**os.environ, "COLUMNS": str(columns)}, timeout=300)


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A and B of each simulated kind: point, sweep (with repeats), parts (with a matrix)."""
    root = tmp_path_factory.mktemp("kinds")
    out = {}
    for kind, scenario in (("point", POINT), ("sweep", SWEEP), ("parts", PARTS)):
        for side, spec in (("a", scenario), ("b", faster(scenario))):
            out[f"{kind}_{side}"] = root / f"{kind}_{side}"
            ccarena.run(spec, out[f"{kind}_{side}"], jobs=2)
    return out


def iperf3_json(path: Path, *args: str) -> None:
    """``iperf3 -c 127.0.0.1 --json ARGS`` against a one-off server started here (killed by its
    pid if it outlives the test), written to ``path``."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(["iperf3", "-s", "-1", "-p", str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):  # until the server listens
            done = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", str(port), "--json", *args],
                                  capture_output=True, text=True, timeout=30)
            if "unable to connect" not in str(json.loads(done.stdout).get("error", "")):
                break
            time.sleep(0.05)
        server.wait(timeout=10)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    doc = json.loads(done.stdout)
    if "error" in doc:
        pytest.skip(f"iperf3 {' '.join(args)}: {doc['error']}")
    path.write_text(done.stdout)


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two iperf3 runs of one cubic stream each (repeats of a measurement), imported."""
    if shutil.which("iperf3") is None:
        pytest.skip("iperf3 is not installed")
    root = tmp_path_factory.mktemp("imported")
    files = [root / f"cubic-{i}.json" for i in range(2)]
    for f in files:
        iperf3_json(f, "-t", "1", "-i", "0.2", "-C", "cubic")
    done = cli("import", "iperf3", *files, "--name", "real", "-o", root / "real")
    assert done.returncode == 0, done.stderr
    return root / "real"


def table_text(stdout: str) -> str:
    """The terminal tables of ``compare``'s output (before the figure lines)."""
    return stdout.split("figure:")[0]


def assert_fits_whole(stdout: str, merged: pd.DataFrame, columns: int = 80) -> None:
    """Every line of the table within ``columns`` and every value of ``merged`` (A, B and
    B − A ± h of each metric) whole on one line."""
    text = table_text(stdout)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= columns, text
    assert "…" not in text, text
    for rec in merged.to_dict("records"):
        for m in cmp.compared_metrics(merged):
            fmt = COLUMNS[m][1]
            wanted = [fmt(rec[f"{m}_a"]), fmt(rec[f"{m}_b"])]
            delta = cmp._delta(rec, m, "{}")
            wanted += [delta] if delta else []
            for value in wanted:
                assert any(value in line for line in lines), (value, text)


def bar_containers(fig) -> list:
    from matplotlib.container import BarContainer

    return [c for ax in fig.axes for c in ax.containers if isinstance(c, BarContainer)]


def figure_text(fig) -> str:
    """Every tick label, title and legend text of ``fig``."""
    texts = [fig._suptitle.get_text() if fig._suptitle else ""]
    for ax in fig.axes:
        texts += [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels()]
        texts += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
        legend = ax.get_legend()
        if legend is not None:
            texts += [t.get_text() for t in legend.get_texts()]
    for legend in fig.legends:
        texts += [t.get_text() for t in legend.get_texts()]
    return "\n".join(texts)


def compared(a: Path, b: Path, part: str | None = None):
    [(label, va, vb)] = cmp.paired_views(Result(a), Result(b), part)
    merged, keys = cmp.compare_table(va, vb)
    return label, merged, keys


# --- compare ------------------------------------------------------------------------------------


def test_single_points_are_side_by_side_bars_per_flavor(dirs):
    _, merged, keys = compared(dirs["point_a"], dirs["point_b"])
    assert keys == ["flavor"]
    fig = cmp.overlay_figure(merged, keys, "goodput_mean_bps", "A", "B")
    bars = bar_containers(fig)
    # One container per flavor and side; every bar at its own x (not all at 0).
    assert {(c._ccarena_flavor, c._ccarena_side) for c in bars} == {
        (f, s) for f in ("cubic", "reno") for s in "ab"}
    xs = [p.get_x() + p.get_width() / 2 for c in bars for p in c.patches]
    assert len(set(np.round(xs, 6))) == len(xs) == 4
    # A filled, B hatched and paler; colours are the flavors'.
    for c in bars:
        patch = c.patches[0]
        assert to_hex(patch.get_edgecolor()) == plots.flavor_color(c._ccarena_flavor).lower()
        assert bool(patch.get_hatch()) == (c._ccarena_side == "b")
        assert (patch.get_facecolor()[3] < 1) == (c._ccarena_side == "b")
    # Heights are the means, with 95% CI whiskers.
    a_cubic = next(c for c in bars if c._ccarena_flavor == "cubic" and c._ccarena_side == "a")
    row = merged[merged["flavor"] == "cubic"].iloc[0]
    assert a_cubic.patches[0].get_height() == pytest.approx(row["goodput_mean_bps_a"] / 1e6)
    assert a_cubic.errorbar is not None
    text = figure_text(fig)
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["cubic", "reno"]
    assert "A: A" in text and "B: B" in text and "nan" not in text
    assert plots.flavor_colors_of(fig) == {f: plots.flavor_color(f).lower() for f in ("cubic", "reno")}


def test_single_points_table_at_80_columns(dirs, tmp_path):
    done = cli("compare", dirs["point_a"], dirs["point_b"], "-o", tmp_path)
    assert done.returncode == 0, done.stderr
    assert_fits_whole(done.stdout, compared(dirs["point_a"], dirs["point_b"])[1])
    assert (tmp_path / "compare-goodput_mean_bps.png").stat().st_size > 10_000


def test_a_numeric_sweep_is_lines_with_distinct_styles(dirs, tmp_path):
    _, merged, keys = compared(dirs["sweep_a"], dirs["sweep_b"])
    assert keys == ["topology.bottleneck.loss", "flavor"]
    fig = cmp.overlay_figure(merged, keys, "goodput_mean_bps", "A", "B")
    assert not bar_containers(fig)
    series = [c for c in fig.axes[0].containers if hasattr(c, "lines")]
    assert len(series) == 4  # 2 flavors × A, B
    styles = {(c.get_label().rsplit(" (", 1)[1], c.lines[0].get_linestyle(), c.lines[0].get_marker())
              for c in series}
    assert styles == {("A)", "-", "o"), ("B)", "--", "s")}
    for c in series:  # x is the loss in %, not 0
        xs = sorted(np.round(np.asarray(c.lines[0].get_xdata(), dtype=float), 3))
        assert xs[0] in (0.0, 0.01) and xs[1] in (1.0, 1.01)
    done = cli("compare", dirs["sweep_a"], dirs["sweep_b"], "-o", tmp_path)
    assert done.returncode == 0, done.stderr
    assert_fits_whole(done.stdout, merged)
    assert "loss=1%" in table_text(done.stdout)


def test_parts_are_compared_part_by_part_and_pairs_are_named(dirs, tmp_path):
    done = cli("compare", dirs["parts_a"], dirs["parts_b"], "-o", tmp_path)
    assert done.returncode == 0, done.stderr
    text = table_text(done.stdout)
    assert "part 'alone'" in text and "part 'matrix'" in text
    assert "nan" not in text and "flows[0].flavor" not in text
    for pair in PAIRS:
        assert pair in text, (pair, text)
    for part in ("alone", "matrix"):
        assert_fits_whole(done.stdout, compared(dirs["parts_a"], dirs["parts_b"], part)[1])
        assert (tmp_path / f"compare-{part}-goodput_mean_bps.png").is_file()
    rows = json.loads(cli("compare", dirs["parts_a"], dirs["parts_b"], "--json").stdout)
    assert {r["part"] for r in rows} == {"alone", "matrix"}
    assert {r["pair"] for r in rows if r["part"] == "matrix"} == set(PAIRS)


def test_a_matrix_figure_has_one_category_per_pair(dirs):
    label, merged, keys = compared(dirs["parts_a"], dirs["parts_b"], "matrix")
    assert label == "matrix" and keys == ["pair", "flavor"]
    # cubic vs reno: a cubic and a reno row; cubic vs cubic: one (both flows are cubic)
    assert len(merged) == 6 and not merged["pair"].isna().any()
    fig = cmp.overlay_figure(merged, keys, "goodput_mean_bps", "A", "B", label)
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == PAIRS
    xs = [p.get_x() + p.get_width() / 2 for c in bar_containers(fig) for p in c.patches]
    assert len(set(np.round(xs, 6))) == len(xs) == 12
    # A category's bars stay within it: cubic vs cubic's two bars are centred on 0.
    same = [p for c in bar_containers(fig) for p in c.patches if abs(p.get_x()) < 0.5]
    assert len(same) == 2 and sum(p.get_x() + p.get_width() / 2 for p in same) == pytest.approx(0)
    assert "nan" not in figure_text(fig) and "part matrix" in fig.axes[0].get_title()


@pytest.mark.parametrize("args,expected", [
    (("--part", "matrx"), "--part: no part 'matrx' in {a} (did you mean 'matrix'?); parts: alone, matrix"),
])
def test_a_wrong_part_is_one_line_listing_the_parts(dirs, args, expected):
    done = cli("compare", dirs["parts_a"], dirs["parts_b"], *args)
    assert done.returncode == 2
    assert done.stderr == "error: " + expected.format(a=dirs["parts_a"]) + "\n"


def test_parts_against_an_experiment_without_parts(dirs):
    done = cli("compare", dirs["point_a"], dirs["parts_b"])
    assert done.returncode == 2 and "choose the part to compare with --part NAME" in done.stderr
    assert done.stderr.count("\n") == 1
    done = cli("compare", dirs["point_a"], dirs["point_b"], "--part", "alone")
    assert done.returncode == 2 and "neither experiment has parts" in done.stderr
    # --part picks the part of the experiment that has parts; the other is compared whole.
    done = cli("compare", dirs["point_a"], dirs["parts_b"], "--part", "alone", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert {r["flavor"] for r in rows} == {"cubic", "reno"} and {r["part"] for r in rows} == {"alone"}


def test_an_import_against_a_simulation(dirs, imported, tmp_path):
    done = cli("compare", dirs["point_a"], imported, "-o", tmp_path)
    assert done.returncode == 0, done.stderr
    _, merged, keys = compared(dirs["point_a"], imported)
    assert list(merged["flavor"]) == ["cubic"] and int(merged["runs_b"].iloc[0]) == 2
    assert_fits_whole(done.stdout, merged)
    fig = cmp.overlay_figure(merged, keys, "goodput_mean_bps", "point_a", "real")
    bars = bar_containers(fig)
    assert len(bars) == 2 and bars[0].patches[0].get_x() != bars[1].patches[0].get_x()
    assert "B: real" in figure_text(fig)


# --- plot ----------------------------------------------------------------------------------------


def tick_labels(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.get_xticklabels()]


def test_plot_on_a_multi_part_file_draws_one_figure_per_part(dirs):
    done = cli("plot", dirs["parts_a"])
    assert done.returncode == 0, done.stderr
    written = [Path(line.split("figure: ")[1]) for line in done.stdout.splitlines()]
    assert [p.name for p in written] == ["plot-alone-goodput_vs_flows_0__flavor.png",
                                         "plot-matrix-goodput_vs_pair.png"]
    done = cli("plot", dirs["parts_a"], "--part", "matrix", "--y", "rtt")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("plot-matrix-rtt_vs_pair.png")
    done = cli("plot", dirs["parts_a"], "--part", "matrx")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "parts: alone, matrix" in done.stderr


def test_plot_of_a_matrix_names_pairs_without_nan(dirs):
    [view] = views.select(Result(dirs["parts_a"]), "matrix")
    assert view.parameters == ["pair"] and "flows[0].flavor" not in view.summary
    fig = custom_plot.plot(view.summary, "goodput_mean_bps", "pair", "flavor", None, "bar", "t")
    assert tick_labels(fig) == PAIRS
    bars = [p for c in bar_containers(fig) for p in c.patches]
    assert len(bars) == 6  # cubic vs cubic: one bar; cubic vs reno: two; ...
    # A pair with one flavor has its bar centred on its tick, not beside an empty slot.
    centres = sorted(round(p.get_x() + p.get_width() / 2, 6) for p in bars)
    assert centres[0] == 0.0 and centres[-1] == 3.0
    assert "nan" not in figure_text(fig)
    faceted = custom_plot.plot(view.summary, "goodput_mean_bps", "pair", "flavor", "matrix_row",
                               "bar", "t")
    titles = [ax.get_title() for ax in faceted.axes if ax.get_visible()]
    assert titles == ["matrix_row = cubic", "matrix_row = reno"]
    assert "nan" not in figure_text(faceted)


def test_plot_of_the_alone_part_has_no_empty_group(dirs):
    [view] = views.select(Result(dirs["parts_a"]), "alone")
    fig = custom_plot.plot(view.summary, "goodput_mean_bps", "flows[0].flavor", "flavor", None,
                           "bar", "t")
    assert tick_labels(fig) == ["reno", "cubic"]
    centres = [p.get_x() + p.get_width() / 2 for c in bar_containers(fig) for p in c.patches]
    assert sorted(np.round(centres, 6)) == [0.0, 1.0]


def test_plot_of_an_import_and_of_a_sweep(dirs, imported):
    done = cli("plot", imported)
    assert done.returncode == 0, done.stderr
    done = cli("plot", dirs["sweep_a"], "--part", "x")
    assert done.returncode == 2 and "has no parts" in done.stderr


# --- query and the run table ---------------------------------------------------------------------


def test_query_part_sees_the_parts_rows_and_runs_only(dirs):
    done = cli("query", dirs["parts_a"], "SELECT DISTINCT pair FROM summary ORDER BY pair", "--csv",
               "--part", "matrix")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["pair", *sorted(PAIRS)]
    done = cli("query", dirs["parts_a"], "SELECT count(DISTINCT run_id) AS n FROM samples", "--csv",
               "--part", "alone")
    assert done.returncode == 0 and done.stdout.splitlines() == ["n", "4"], done.stderr
    done = cli("query", dirs["parts_a"], "SELECT 1", "--part", "nope")
    assert done.returncode == 2 and "parts: alone, matrix" in done.stderr


def test_the_run_table_labels_parts_and_pairs(dirs):
    result = Result(dirs["parts_a"])
    console = Console(width=80, record=True, file=open(os.devnull, "w"))
    console.print(terminal_table(result.summary, result.parameters, "parts: summary", width=80))
    text = console.export_text()
    assert "parts: summary — alone" in text and "parts: summary — matrix" in text
    assert "nan" not in text and "pair" in text
    for pair in PAIRS:
        assert pair in text
    assert max(len(line) for line in text.splitlines()) <= 80
    matrix = next(p for p in result.parts() if p.part == "matrix")
    headings, rows = summary_rows(matrix.summary, matrix.parameters)
    assert headings[:2] == ["run", "pair"] and "matrix_row" not in headings
    assert {r[1].text for r in rows} == set(PAIRS)
    assert not any(re.search(r"\bnan\b", c.text) for r in rows for c in r)
