"""The verdict that respects the noise (issue 29): which flavors differ beyond the noise, per
metric and sweep point; identical repeats said plainly; defaults that differ between the compared
flows; ECN flavors on paths that never mark. Unit tests on synthetic summaries, then the real CLI
and the report page in headless Chromium."""

from __future__ import annotations

import io
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from browser import inner_text, screenshot
from ccarena.analysis import verdict as V
from ccarena.analysis.plan_checks import ecn_warnings, queue_marks, unmarked_ecn_flows
from ccarena.report.terminal import terminal_table
from conftest import EXAMPLES, ccarena
from rich.console import Console
from scipy import stats


def _summary(goodput: dict[str, list[list[float]]], rtt: dict[str, list[list[float]]] | None = None,
             extra: dict[str, object] | None = None) -> pd.DataFrame:
    """Rows of a flavor sweep: ``goodput[flavor][repeat]`` lists the flows' goodputs (Mbps) of
    that run; ``rtt`` likewise in ms."""
    rows = []
    for flavor, runs in goodput.items():
        for r, flows in enumerate(runs):
            for i, g in enumerate(flows):
                rows.append({"run_id": f"flavor={flavor}_r{r}", "repeat": r, "point": 0,
                             "flows[*].flavor": flavor, "flavor": flavor, "flow": i,
                             "name": f"flow{i}", "goodput_mean_bps": g * 1e6,
                             "rtt_mean_s": (rtt[flavor][r][i] / 1e3) if rtt else math.nan,
                             "loss_rate": 0.0, "retransmission_rate": 0.0, "fct_s": math.nan,
                             "jain_index": 1.0, **(extra or {})})
    return pd.DataFrame(rows)


PARAMS = ["flows[*].flavor"]


# ----------------------------------------------------------------------------- statistics

def test_holm_matches_the_step_down_procedure():
    # Holm 1979: sorted p (0.01, 0.03, 0.04) × (3, 2, 1), made monotone: 0.03, 0.06, 0.06.
    assert V.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert V.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])  # 2 × 0.5, then max(1.0, 0.9)
    assert math.isnan(V.holm([math.nan, 0.02])[0]) and V.holm([math.nan, 0.02])[1] == pytest.approx(0.02)


def test_welch_is_scipys_unequal_variance_test():
    a, b = np.array([1.0, 2.0, 3.5, 4.0]), np.array([2.0, 6.0, 7.0, 9.0, 11.0])
    assert V.welch_p(a, b) == pytest.approx(stats.ttest_ind(a, b, equal_var=False).pvalue)
    assert V.welch_p(np.array([1.0, 1.0, 1.0]), np.array([2.0, 2.0, 2.0])) == 0.0


def test_a_clear_winner_is_named_with_its_factor():
    rng = np.random.default_rng(1)
    good = {"cubic": [[100 + rng.normal(0, 2)] for _ in range(5)],
            "reno": [[50 + rng.normal(0, 2)] for _ in range(5)]}
    v = V.verdict(_summary(good), PARAMS)
    goodput = v.points[0].metric("goodput_mean_bps")
    assert goodput.tiers == (("cubic",), ("reno",))
    test = goodput.pair("cubic", "reno")
    assert test.method == "welch" and test.p_value < 0.001 and test.distinguishable
    sentence = goodput.sentence()
    assert sentence.startswith("Goodput (over 5 repeats): cubic highest (")
    assert "2× higher than reno (" in sentence


def test_overlapping_noise_is_not_distinguishable():
    rng = np.random.default_rng(2)
    good = {f: [[600 + rng.normal(0, 80)] for _ in range(5)] for f in ("dctcp", "cubic", "bbr")}
    rtt = {"dctcp": [[0.56 + rng.normal(0, 0.02)] for _ in range(5)],
           "cubic": [[1.57 + rng.normal(0, 0.05)] for _ in range(5)],
           "bbr": [[2.21 + rng.normal(0, 0.05)] for _ in range(5)]}
    point = V.verdict(_summary(good, rtt), PARAMS).points[0]
    goodput = point.metric("goodput_mean_bps")
    assert not goodput.separated
    assert all(p.status == "noise" for p in goodput.pairs)  # Holm-adjusted p > 5%
    text = goodput.sentence()
    assert text.startswith("Goodput: not distinguishable between ")
    assert "Mbps over 5 repeats)." in text and " ± " in text
    rtt_v = point.metric("rtt_mean_s")
    assert rtt_v.tiers == (("dctcp",), ("cubic",), ("bbr",))
    assert rtt_v.sentence().startswith("RTT (over 5 repeats): dctcp lowest (")
    assert "2.8× lower than cubic" in rtt_v.sentence()
    assert point.tradeoff().startswith("dctcp keeps RTT 2.8× lower than cubic and ")
    assert point.tradeoff().endswith("at indistinguishable goodput.")


def test_a_difference_under_five_percent_is_equal_even_when_significant():
    good = {"a": [[100.0 + 0.01 * r] for r in range(5)], "b": [[98.0 + 0.01 * r] for r in range(5)]}
    goodput = V.verdict(_summary(good), PARAMS).points[0].metric("goodput_mean_bps")
    test = goodput.pair("a", "b")
    assert test.significant and not test.practical and test.status == "equal"
    assert goodput.sentence().startswith("Goodput: equal within 5% for a and b (")
    # At equal goodput, a separated RTT is the trade-off.
    rtt = {"a": [[1.0 + 0.01 * r] for r in range(5)], "b": [[3.0 + 0.01 * r] for r in range(5)]}
    point = V.verdict(_summary(good, rtt), PARAMS).points[0]
    assert point.tradeoff() == "a keeps RTT 3× lower than b at equal goodput."


def test_two_samples_fall_back_to_intervals():
    good = {"a": [[100.0], [101.0]], "b": [[50.0], [51.0]]}
    goodput = V.verdict(_summary(good), PARAMS).points[0].metric("goodput_mean_bps")
    assert goodput.pair("a", "b").method == "intervals"
    # t(0.975, 1) = 12.7: each interval is ±6.4 Mbps wide, far apart.
    assert goodput.distinguishable("a", "b")


def test_identical_repeats_are_said_plainly_with_the_fields_that_vary():
    good = {"cubic": [[16.0, 15.0]] * 3, "reno": [[3.5, 3.4]] * 3}
    v = V.verdict(_summary(good), PARAMS)
    assert v.identical_repeats and v.repeats == 3
    note = next(n for n in v.notes if "identical" in n)
    assert note.startswith("The 3 repeats are identical: nothing in this scenario varies between seeds")
    assert "start_jitter" in note and 'loss = "0.1%"' in note
    assert "traffic[0].seed" not in note  # no [[traffic]] here: not recommended
    # The identical repeats count as one run: its two flows per flavor are the samples.
    goodput = v.points[0].metric("goodput_mean_bps")
    assert {s.unit for s in goodput.stats} == {"flows"} and {s.n for s in goodput.stats} == {2}
    perm = _summary(good).assign(name=lambda d: "perm-" + d["flow"].astype(str))
    assert "traffic[0].seed" in V.verdict(perm, PARAMS).notes[0]


def test_a_single_run_compares_flows_and_one_flow_each_is_untested():
    good = {"cubic": [[100.0, 102.0, 98.0, 101.0]], "vegas": [[40.0, 41.0, 39.0, 40.5]]}
    goodput = V.verdict(_summary(good), PARAMS).points[0].metric("goodput_mean_bps")
    assert goodput.stats[0].unit == "flows" and goodput.stats[0].n == 4
    assert goodput.distinguishable("cubic", "vegas")
    assert goodput.sentence().startswith("Goodput (over 4 flows of one run): cubic highest")
    one = V.verdict(_summary({"cubic": [[16.0]], "reno": [[3.5]]}), PARAMS).points[0]
    text = one.metric("goodput_mean_bps").sentence()
    assert text == ("Goodput: cubic 16 Mbps, reno 3.5 Mbps (cubic 4.6× higher), but one sample per "
                    "flavor cannot tell a difference from noise (add repeats, with start_jitter so that "
                    "they differ).")
    # Every metric untested: the values per metric, and the caveat said once, not per metric.
    lines = one.lines()
    assert lines[0] == "Goodput: cubic 16 Mbps, reno 3.5 Mbps (cubic 4.6× higher)."
    assert sum("cannot be told from noise" in line or "cannot tell" in line for line in lines) == 1
    assert lines[-1] == ("One sample per flavor: these differences cannot be told from noise (add "
                         "repeats, with start_jitter so that they differ).")


def test_one_sample_per_flavor_does_not_import_scipy():
    """A run with one flow per flavor (the quickstart) has no interval to compute: its verdict
    must not import scipy.special, ~0.4 s of every such `ccarena run` and `ccarena report`
    (quickstart run 3.44 → 3.16 s median when it stopped doing so). In a fresh interpreter:
    this module imports scipy itself."""
    code = textwrap.dedent("""
        import sys
        import pandas as pd
        from ccarena.analysis import verdict as V
        rows = [{"run_id": "r0", "repeat": 0, "point": 0, "flows[*].flavor": f, "flavor": f,
                 "flow": i, "name": f"flow{i}", "goodput_mean_bps": g, "rtt_mean_s": 0.05,
                 "loss_rate": 0.0, "retransmission_rate": 0.0, "fct_s": float("nan"),
                 "jain_index": 1.0} for i, (f, g) in enumerate([("cubic", 16e6), ("reno", 3.5e6)])]
        lines = V.verdict(pd.DataFrame(rows), ["flows[*].flavor"]).points[0].lines()
        assert lines[0].startswith("Goodput: cubic 16 Mbps"), lines
        print(sorted(m for m in sys.modules if m.startswith("scipy")))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_sweep_gives_a_verdict_per_point_and_a_summary():
    rng = np.random.default_rng(3)
    frames = []
    for k, loss in enumerate(["0%", "1%", "2%"]):
        gap = 0 if loss == "0%" else 30  # bbr pulls ahead once there is loss
        good = {"cubic": [[50 + rng.normal(0, 1)] for _ in range(4)],
                "bbr": [[50 + gap + rng.normal(0, 1)] for _ in range(4)]}
        frame = _summary(good)
        frame["topology.bottleneck.loss"] = loss
        frame["run_id"] = frame["run_id"] + f"_loss{k}"
        frames.append(frame)
    params = ["topology.bottleneck.loss", *PARAMS]
    v = V.verdict(pd.concat(frames, ignore_index=True), params)
    assert [p.point for p in v.points] == [(("topology.bottleneck.loss", x),) for x in ("0%", "1%", "2%")]
    assert v.sweep_summary({"topology.bottleneck.loss": "loss"}) == [
        "Goodput: bbr has higher goodput than cubic at 2 of 3 loss points."]
    lines = v.lines({"topology.bottleneck.loss": "loss"})
    assert any(line.startswith("At loss = 1%: Goodput (over 4 repeats): bbr highest") for line in lines)


def test_twins_on_several_backends_are_judged_apart_not_pooled_as_repeats():
    # One run of a point on the simulator and its twin on a real backend (--backend sim,udp):
    # two repeats of nothing; each backend gets its own verdict.
    sim = _summary({"cubic": [[50.0]], "bbr": [[20.0]]}, extra={"backend": "sim"})
    real = _summary({"cubic": [[30.0]], "bbr": [[35.0]]}, extra={"backend": "udp"})
    real["run_id"] = real["run_id"] + "@udp"
    v = V.verdict(pd.concat([sim, real], ignore_index=True), PARAMS)
    assert [p.point for p in v.points] == [(("backend", "sim"),), (("backend", "udp"),)]
    assert all(p.repeats == 1 for p in v.points)
    lines = v.lines()
    assert any(line.startswith("At backend = sim: Goodput: cubic 50 Mbps, bbr 20 Mbps") for line in lines)
    assert any(line.startswith("At backend = udp: Goodput: bbr 35 Mbps, cubic 30 Mbps") for line in lines)
    # One backend: no backend key.
    assert V.point_keys(sim, PARAMS) == []


def test_jain_is_compared_only_when_each_run_holds_one_flavor():
    sweep = _summary({"a": [[1.0, 2.0]] * 3, "b": [[1.0, 2.0]] * 3})
    assert V.JAIN in V.scenario_metrics(sweep)
    mixed = sweep.assign(run_id="one")
    assert V.JAIN not in V.scenario_metrics(mixed)


def test_finite_flows_are_judged_on_fct_slowdown():
    frame = _summary({"a": [[1.0]] * 3, "b": [[1.0]] * 3}).assign(fct_s=0.01, fct_slowdown=2.0)
    assert V.scenario_metrics(frame)[0] is V.FCT_SLOWDOWN


def _spec(flows: list[dict], queue: dict | None = None) -> dict:
    return {"links": [{"queue": queue or {"discipline": "droptail", "limit_packets": 100}}],
            "flows": flows}


def test_defaults_that_differ_between_flavors_are_stated():
    runs = [{"spec": _spec([{"kind": "tcp", "name": "cubic", "flavor": "cubic", "recovery": "linux",
                             "ecn": False, "delayed_ack_ns": 40_000_000},
                            {"kind": "tcp", "name": "reno", "flavor": "reno", "recovery": "reno",
                             "ecn": False, "delayed_ack_ns": 40_000_000}])}]
    assert V.differing_defaults(runs) == [
        "Note: the flows differ in loss recovery: cubic uses linux (SACK + RACK-TLP + PRR); "
        "reno uses reno (RFC 5681)."]
    # A field that varies within a flavor is swept (the sweep shows it): no note.
    runs.append({"spec": _spec([{"kind": "tcp", "name": "cubic", "flavor": "cubic", "recovery": "prr",
                                 "ecn": False, "delayed_ack_ns": 40_000_000}])})
    assert V.differing_defaults(runs) == []


def test_ecn_flavors_without_marking_are_found():
    dctcp = {"kind": "tcp", "name": "d", "flavor": "dctcp", "ecn": True}
    plain = _spec([dctcp, {"kind": "tcp", "name": "c", "flavor": "cubic", "ecn": False}])
    assert unmarked_ecn_flows(plain) == [("d", "dctcp")]
    marked = _spec([dctcp], {"discipline": "droptail", "limit_packets": 100, "ecn_threshold_packets": 20})
    assert unmarked_ecn_flows(marked) == []
    assert queue_marks({"discipline": "codel", "codel": {"ecn": True}})
    assert not queue_marks({"discipline": "codel", "codel": {"ecn": False}})
    assert queue_marks({"discipline": "dualpi2", "dualpi2": {"target_ns": 15_000_000}})
    # Marking off the flow's path does not count.
    two = {**marked, "links": [{"queue": {"discipline": "droptail", "limit_packets": 100}}, *marked["links"]]}
    assert unmarked_ecn_flows(two, {"flows": [{"name": "d", "path_links": [0]}]}) == [("d", "dctcp")]
    assert unmarked_ecn_flows(two, {"flows": [{"name": "d", "path_links": [0, 1]}]}) == []
    off = _spec([{**dctcp, "ecn": False}], {"discipline": "droptail", "limit_packets": 100,
                                            "ecn_threshold_packets": 20})
    assert unmarked_ecn_flows(off) == [("d", "dctcp")]
    (line,) = ecn_warnings([(plain, None)])
    assert line.startswith("dctcp needs ECN marks, but nothing marks for flow d")
    assert "ecn_threshold" in line


def test_the_per_run_terminal_table_has_an_rtt_column_at_80_columns():
    good = {f: [[500.0] * 16] * 2 for f in ("cubic", "dctcp")}
    rtt = {"cubic": [[1.57] * 16] * 2, "dctcp": [[0.56] * 16] * 2}
    out = io.StringIO()
    Console(file=out, width=80, color_system=None).print(
        terminal_table(_summary(good, rtt), PARAMS, "fat-tree", width=80))
    text = out.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80
    heading = next(line for line in text.splitlines() if "goodput Σ" in line)
    assert "RTT" in heading.split()
    assert any("1.57 ms" in line and "cubic" in line for line in text.splitlines())
    assert any("560 µs" in line and "dctcp" in line for line in text.splitlines())


# ----------------------------------------------------------------------------- the CLI and the page

NO_MARKING = """
name = "dctcp-unmarked"
duration = "1s"
[topology]
kind = "dumbbell"
pairs = 1
bottleneck = { rate = "100Mbps", delay = "1ms", queue = { limit = "100pkt"QUEUE } }
access = { rate = "1Gbps", delay = "10us" }
[[flows]]
from = "left0"
to = "right0"
flavor = "dctcp"
"""


def test_validate_and_run_warn_of_dctcp_where_nothing_marks(tmp_path: Path):
    (tmp_path / "bad.toml").write_text(NO_MARKING.replace("QUEUE", ""))
    (tmp_path / "good.toml").write_text(NO_MARKING.replace("QUEUE", ', ecn_threshold = "20pkt"'))
    done = ccarena("validate", "bad.toml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "warning: dctcp needs ECN marks, but nothing marks for flow dctcp" in " ".join(done.stderr.split())
    done = ccarena("validate", "good.toml", cwd=tmp_path)
    assert done.returncode == 0 and "warning" not in done.stderr
    done = ccarena("run", "bad.toml", "-o", str(tmp_path / "bad"), "-q", "--no-report", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "warning: dctcp needs ECN marks" in " ".join(done.stderr.split())



def test_piped_output_has_no_padding_at_line_ends(tmp_path: Path):
    """Piped, the summary and the verdict are their text: rich pads every line of a table or a
    grid to the console's width, and those spaces made each verdict line 120 columns long in a
    file (awkward to diff or grep)."""
    (tmp_path / "good.toml").write_text(NO_MARKING.replace("QUEUE", ', ecn_threshold = "20pkt"'))
    done = ccarena("run", "good.toml", "-o", str(tmp_path / "good"), "-q", "--no-report", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("Verdict:") for line in lines), done.stdout
    padded = [line for line in lines if line != line.rstrip()]
    assert not padded, padded

FAT_TREE = """
name = "fat-tree-verdict"
description = "k = 4 fat-tree, a permutation of bulk flows: cubic, dctcp, bbr"
duration = "200ms"
seed = 1
start_jitter = "20ms"

[topology]
kind = "fat_tree"
k = 4
host = { rate = "1Gbps", delay = "10us", queue = { limit = "100pkt", ecn_threshold = "20pkt" } }
edge = { rate = "1Gbps", delay = "10us", queue = { limit = "100pkt", ecn_threshold = "20pkt" } }
core = { rate = "1Gbps", delay = "10us", queue = { limit = "100pkt", ecn_threshold = "20pkt" } }

[[traffic]]
pattern = "permutation"
flow = { flavor = "cubic", min_rto = "10ms" }

[output]
sample_interval = "10ms"

[sweep]
"traffic[0].flow.flavor" = ["cubic", "dctcp", "bbr"]
repeats = 4
"""


def test_fat_tree_report_names_the_rtt_and_loss_difference_at_equal_goodput(tmp_path: Path):
    (tmp_path / "ft.toml").write_text(FAT_TREE)
    done = ccarena("run", "ft.toml", "-o", str(tmp_path / "ft"), "-q", "-j", "2", cwd=tmp_path,
                   timeout=600)
    assert done.returncode == 0, done.stderr
    # The terminal: the verdict after the summary table, which has an RTT column.
    out = " ".join(done.stdout.split())
    assert out.index("goodput Σ RTT Jain") < out.index("Verdict:")
    assert "Goodput: not distinguishable between" in out
    assert "RTT (over 4 repeats): dctcp lowest" in out
    report = tmp_path / "ft" / "report.html"
    page = report.read_text()
    # The verdict opens the section, before the per-flavor table and the figures.
    assert page.index('id="verdict"') < page.index('id="answer-table"') < page.index("<h2>Figures</h2>")
    text = inner_text(report, "#verdict")
    lines = [line for line in text.splitlines() if line.strip()]
    goodput = next(line for line in lines if line.startswith("Goodput:"))
    assert goodput.startswith("Goodput: not distinguishable between ")
    assert "over 4 repeats" in goodput and all(f in goodput for f in ("cubic", "dctcp", "bbr"))
    rtt = next(line for line in lines if line.startswith("RTT"))
    assert rtt.startswith("RTT (over 4 repeats): dctcp lowest (") and "× lower than cubic" in rtt
    loss = next(line for line in lines if line.startswith("Loss"))
    assert loss.startswith("Loss (over 4 repeats): dctcp lowest (") and "× lower than bbr" in loss
    assert any(line.startswith("dctcp keeps RTT ") and line.endswith("at indistinguishable goodput.")
               for line in lines)
    assert "Note: the flows differ in ECN: cubic and bbr off; dctcp on." in lines
    png = screenshot(report, tmp_path / "fat-tree-verdict.png", height=1400)
    assert png.stat().st_size > 30_000


def test_identical_repeats_and_differing_recovery_are_said_in_the_report(tmp_path: Path):
    text = (EXAMPLES / "quickstart.toml").read_text().replace('duration = "20s"', 'duration = "3s"')
    (tmp_path / "qs.toml").write_text(text + "\n[sweep]\nrepeats = 3\n")
    done = ccarena("run", "qs.toml", "-o", str(tmp_path / "qs"), "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "The 3 repeats are identical" in " ".join(done.stdout.split())
    report = tmp_path / "qs" / "report.html"
    shown = inner_text(report, "#verdict")
    assert "The 3 repeats are identical: nothing in this scenario varies between seeds" in shown
    assert 'start_jitter = "10ms"' in shown
    assert ("Note: the flows differ in loss recovery: cubic uses linux (SACK + RACK-TLP + PRR); "
            "reno uses reno (RFC 5681).") in shown
    goodput = next(line for line in shown.splitlines() if line.startswith("Goodput:"))
    assert goodput.startswith("Goodput: cubic ") and " reno " in goodput
    assert "One sample per flavor: these differences cannot be told from noise" in shown
    screenshot(report, tmp_path / "quickstart-identical.png", height=900)


def test_a_point_whose_repeats_are_identical_says_so_in_its_sentences():
    varying = _summary({"cubic": [[50.0], [52.0], [49.0]], "reno": [[30.0], [33.0], [29.0]]})
    fixed = _summary({"cubic": [[16.0]] * 3, "reno": [[3.5]] * 3})
    varying["topology.link.loss"], fixed["topology.link.loss"] = "1%", "0%"
    fixed["run_id"] = fixed["run_id"] + "_clean"
    v = V.verdict(pd.concat([fixed, varying], ignore_index=True), ["topology.link.loss", *PARAMS])
    assert not v.identical_repeats and not any("identical" in n for n in v.notes)
    clean = v.points[0].metric("goodput_mean_bps").sentence()
    assert clean.endswith("(its repeats are identical: nothing varies between seeds at this point).")
    assert v.points[1].metric("goodput_mean_bps").distinguishable("cubic", "reno")


def test_a_winner_that_pays_in_delay_is_a_trade_off():
    good = {"bbr": [[120.0 + r] for r in range(4)], "cubic": [[80.0 + r] for r in range(4)]}
    rtt = {"bbr": [[40.0 + r] for r in range(4)], "cubic": [[20.0 + r] for r in range(4)]}
    point = V.verdict(_summary(good, rtt), PARAMS).points[0]
    # Means 121.5 vs 81.5 Mbps (+49%), RTT 41.5 vs 21.5 ms (1.9×).
    assert point.tradeoff() == ("Trade-off: bbr has 49% higher goodput than cubic, but cubic keeps "
                                "RTT 1.9× lower.")


def test_a_flavor_matrix_names_its_pairs():
    rows = []
    for row, col, a, b in (("cubic", "reno", 80.0, 20.0), ("reno", "cubic", 30.0, 70.0)):
        for r in range(3):
            for i, (flavor, g) in enumerate(((row, a + r), (col, b - r))):
                rows.append({"run_id": f"{row}-vs-{col}_r{r}", "flavor": flavor, "flow": i,
                             "name": f"flow{i}", "matrix_row": row, "matrix_col": col,
                             "goodput_mean_bps": g * 1e6, "fct_s": math.nan})
    v = V.verdict(pd.DataFrame(rows), ["matrix_row", "matrix_col"])
    assert [v.point_label(p) for p in v.points] == ["cubic vs reno", "reno vs cubic"]
    assert v.sweep_summary() == ["Goodput: cubic has higher goodput than reno at 2 of 2 flavor pairs."]
    assert v.lines()[1].startswith("At cubic vs reno: Goodput (over 3 repeats): cubic highest")
    # A third pair without cubic: cubic and reno still met at 2 pairs, which the count says.
    for r in range(3):
        for i, (flavor, g) in enumerate((("vegas", 50.0 + r), ("bbr", 52.0 - r))):
            rows.append({"run_id": f"vegas-vs-bbr_r{r}", "flavor": flavor, "flow": i, "name": f"flow{i}",
                         "matrix_row": "vegas", "matrix_col": "bbr", "goodput_mean_bps": g * 1e6,
                         "fct_s": math.nan})
    v = V.verdict(pd.DataFrame(rows), ["matrix_row", "matrix_col"])
    assert v.sweep_summary() == ["Goodput: cubic has higher goodput than reno at 2 of 2 flavor pairs "
                                 "where both ran."]


def test_one_flavor_swept_says_where_its_repeats_are_identical():
    # reno alone over a loss sweep: at 0% loss nothing is random (its repeats are identical, the
    # table's "± 0" measures no noise); at 1% they vary. With one flavor there is nothing to
    # compare, but the identical point is said; every point identical gets the whole note.
    def point(loss: str, goodputs: list[float]) -> pd.DataFrame:
        frame = _summary({"reno": [[g] for g in goodputs]})
        frame["topology.link.loss"] = loss
        frame["run_id"] = frame["run_id"] + "_" + loss
        return frame

    params = ["topology.link.loss"]
    mixed = pd.concat([point("0%", [95.1] * 3), point("1%", [2.9, 2.7, 3.0])], ignore_index=True)
    v = V.verdict(mixed, params)
    assert v.points == [] and not v.identical_repeats
    assert v.lines() == ["At link.loss = 0%, the repeats are identical: nothing there varies between "
                         "seeds, so its ± 0 measures no noise."]
    fixed = pd.concat([point("0%", [95.1] * 3), point("1%", [2.9] * 3)], ignore_index=True)
    v = V.verdict(fixed, params)
    assert v.identical_repeats and v.lines()[0].startswith("The 3 repeats are identical")
    varying = pd.concat([point("0%", [95.1, 94.0, 95.3]), point("1%", [2.9, 2.7, 3.0])], ignore_index=True)
    assert V.verdict(varying, params).lines() == []
