"""The five seed studies (examples/seeds/*.toml) run end to end on shortened versions, write their
report with the study's own tables and non-empty figures, and show the qualitative findings the
studies report where they follow from the protocols.

Shortening keeps each study's structure (parts, flows, schedule, sweep axes) and scales its times,
thins long sweeps (first and last values always kept) and lowers the repeats.
"""

from __future__ import annotations

import copy
import re
import tomllib
from pathlib import Path
from typing import Any

import ccarena
import numpy as np
import pandas as pd
from browser import assert_fits, print_pdf
from ccarena.analysis import study_tables as studies
from ccarena.units import parse_time_ns

SEEDS = Path(__file__).resolve().parents[2] / "examples" / "seeds"
TIME_KEYS = ("duration", "start", "stop", "at", "every", "until", "stagger")


def _scale_time(value: Any, factor: float) -> Any:
    return f"{round(parse_time_ns(value) * factor)}ns"


def _scale(node: Any, factor: float) -> Any:
    """Every time under ``node`` (durations, starts, stops, event times, stagger) × factor."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key in TIME_KEYS and isinstance(value, str):
                out[key] = _scale_time(value, factor)
            elif key == "duration" and isinstance(value, list):  # a swept duration
                out[key] = [_scale_time(v, factor) for v in value]
            elif key in ("topology", "output"):
                out[key] = value  # link delays and the sample interval stay as the study has them
            else:
                out[key] = _scale(value, factor)
        return out
    if isinstance(node, list):
        return [_scale(v, factor) for v in node]
    return node


def _thin(values: list[Any], keep: int) -> list[Any]:
    if len(values) <= keep:
        return values
    idx = np.unique(np.round(np.linspace(0, len(values) - 1, keep)).astype(int))
    return [values[i] for i in idx]


def _limit(node: Any, repeats: int, keep: int) -> None:
    """Lower every sweep's and matrix's repeats to ``repeats`` and thin sweeps to ``keep`` values."""
    if isinstance(node, dict):
        for key in ("sweep", "matrix"):
            table = node.get(key)
            if isinstance(table, dict):
                if "repeats" in table:
                    table["repeats"] = min(int(table["repeats"]), repeats)
                if key == "sweep":
                    for path, values in list(table.items()):
                        if path != "repeats" and isinstance(values, list) and path != "flows[*].flavor":
                            table[path] = _thin(values, keep)
        for value in node.values():
            _limit(value, repeats, keep)
    elif isinstance(node, list):
        for value in node:
            _limit(value, repeats, keep)


def shortened(name: str, factor: float, repeats: int, keep: int = 100, **top: Any) -> dict[str, Any]:
    """The seed scenario ``name`` as a dict, with times × ``factor`` and at most ``repeats``."""
    raw = tomllib.loads((SEEDS / name).read_text())
    raw = _scale(copy.deepcopy(raw), factor)
    _limit(raw, repeats, keep)
    raw.update(top)
    return raw


def run_seed(tmp_path: Path, raw: dict[str, Any]) -> ccarena.Result:
    result = ccarena.run(raw, out=tmp_path / raw["name"], jobs=2, progress=False)
    report = result.report()
    html = report.read_text()
    assert "<h2>Figures</h2>" in html
    drawn = re.findall(r'data-file="figures/([^"]+)" data-points="(\d+)"', html)
    assert drawn
    for name, points in drawn:
        assert (report.parent / "figures" / name).stat().st_size > 5000, name
        assert int(points) >= 2, f"{name} draws no data"
    # As a reader sees it: nothing cut off at a laptop's width, every figure loaded.
    assert_fits(report)
    return result


def _table_rows(html: str, table_id: str) -> int:
    match = re.search(rf'<table id="{re.escape(table_id)}">(.*?)</table>', html, re.S)
    assert match, f"no table {table_id}"
    return match.group(1).count("<tr>") - 1  # minus the heading row


def test_seed_004_matrix_vegas_yields_same_flavors_share(tmp_path: Path) -> None:
    raw = shortened("004-tcp-flavors-matrix.toml", factor=0.6, repeats=2)
    result = run_seed(tmp_path, raw)
    html = (result.root / "report.html").read_text()
    assert _table_rows(html, "matrix-matrix") == 16
    assert _table_rows(html, "matrix-reference-0-matrix") == 16
    part = next(p for p in result.parts() if p.part == "matrix")
    table = studies.matrix_table(part.summary).set_index(["row_flavor", "col_flavor"])
    share = table["row_share_mean"]
    for other in ("cubic", "reno"):
        # Vegas backs off as soon as the queue grows; the loss-based flavor fills the buffer.
        assert share[("vegas", other)] < 0.2
        assert share[(other, "vegas")] > 0.8
    for flavor in ("cubic", "reno"):
        assert table.loc[(flavor, flavor), "jain_index_mean"] > 0.9
    alone = next(p for p in result.parts() if p.part == "alone")
    assert set(alone.summary["flavor"]) == {"reno", "cubic", "vegas"}


def test_seed_003_newreno_beats_reno_and_reno_passes_tahoe_as_the_buffer_grows(tmp_path: Path) -> None:
    # Full length (400 s at 0.5 Mbps is cheap), fewer repeats: 12, because at 6 the large-buffer
    # Reno/Tahoe comparison is within the repeats' noise (it flipped, 106.4 against 108.2 kbit/s,
    # when simultaneous events changed order); at 12 Reno leads by 11 %.
    raw = shortened("003-tahoe-reno-newreno-red.toml", factor=1.0, repeats=12)
    result = run_seed(tmp_path, raw)
    html = (result.root / "report.html").read_text()
    pdf = print_pdf(result.root / "report.html", tmp_path / "seed-003.pdf").read_bytes()
    assert pdf.startswith(b"%PDF") and pdf.count(b"/Type /Page") >= 5
    for part in ("fixed-buffer", "growing-buffer"):
        # 2 disciplines × 4 flows (3 TCP + UDP)
        assert _table_rows(html, f"drop-rate-{part}") == 8
        assert _table_rows(html, f"drop-rate-reference-0-0-{part}") == 6
    assert "interval-goodput" in html and "-red.png" in html
    parts = {p.part: p for p in result.parts()}
    fixed = parts["fixed-buffer"].summary
    for discipline in ("droptail", "red"):
        goodput = fixed[fixed["topology.bottleneck.queue.discipline"] == discipline] \
            .groupby("flavor")["goodput_mean_bps"].mean()
        # NewReno stays in fast recovery through several losses of one window; Reno leaves it
        # after the first and waits for a timeout (RFC 6582 §1; Fall & Floyd 1996).
        assert goodput["newreno"] > goodput["reno"], (discipline, goodput.to_dict())
    # Reno vs Tahoe depends on how many packets a window loses (Fall & Floyd 1996): with the
    # 10-packet buffer several, and Tahoe's slow start beats Reno's timeouts; once the buffer has
    # grown past ~100 packets drops are rarer and Reno's fast recovery wins, as the study found.
    growing = parts["growing-buffer"]
    ids = [r for r in growing.run_ids if "droptail" in r]
    samples = pd.concat([growing.store.read_table(r, "samples") for r in ids], ignore_index=True)
    bounds = [0.0, *[30.0 * k for k in range(1, 14)], 400.0]
    per = studies.goodput_by_interval(samples, bounds, [10 + 10 * k for k in range(14)])
    by_buffer = per.groupby(["label", "name"])["goodput_mean_bps"].mean().unstack()
    small, large = by_buffer.loc[[10, 20]].mean(), by_buffer.loc[[110, 120, 130, 140]].mean()
    assert small["tahoe"] > small["reno"] and small["newreno"] > small["reno"], small.to_dict()
    assert large["reno"] > large["tahoe"], large.to_dict()


def test_seed_002_transfer_time_and_goodput_laws(tmp_path: Path) -> None:
    raw = shortened("002-tcp-like-udp-loss-delay.toml", factor=0.5, repeats=3, keep=4)
    result = run_seed(tmp_path, raw)
    parts = {p.part: p for p in result.parts()}
    loss = parts["loss"].summary
    fct = loss.groupby(["topology.link.loss", "flows[0].dupthresh"])["fct_s"].mean().unstack()
    values = sorted(fct.index, key=lambda v: float(str(v).rstrip("%")))
    for dupthresh in (3, 1000):
        series = fct.loc[values, dupthresh].to_numpy()
        assert series[-1] > 2 * series[0], "transfer time grows with loss"
        assert np.all(np.diff(series) > 0), series
    lossy = [v for v in values if float(str(v).rstrip("%")) >= 1.0]
    # dupthresh 3: fast retransmit/recovery; 1000: every loss waits for the timeout
    assert (fct.loc[lossy, 3] < fct.loc[lossy, 1000]).all(), "fast recovery shortens the transfer"
    delay = parts["delay"].summary
    fct = delay.groupby(["topology.link.delay", "flows[0].dupthresh"])["fct_s"].mean().unstack()
    assert (fct[3] < fct[1000]).all(), fct
    # goodput ∝ 1/√p and ∝ 1/RTT: log-log slopes near −1/2 and −1
    g = parts["goodput-vs-loss"].summary
    g = g[g["flows[0].flavor"] == "reno"]
    p = g["topology.link.loss"].map(lambda v: float(str(v).rstrip("%")) / 100)
    slope = np.polyfit(np.log(p), np.log(g["goodput_mean_bps"]), 1)[0]
    # −1/2 is Mathis's law; retransmission timeouts at the higher loss rates steepen it (Padhye)
    assert -0.9 < slope < -0.35, slope
    d = parts["goodput-vs-delay"].summary
    d = d[d["flows[0].flavor"] == "reno"]
    rtt = d["rtt_min_s"]
    slope = np.polyfit(np.log(rtt), np.log(d["goodput_mean_bps"]), 1)[0]
    assert -1.3 < slope < -0.7, slope


def test_seed_001_region_tables(tmp_path: Path) -> None:
    raw = shortened("001-lifo-fairness.toml", factor=0.05, repeats=1, output={"sample_interval": "200ms"})
    raw["sweep"]["flows[*].flavor"] = ["reno", "htcp", "udt"]
    raw["topology"]["bottleneck"]["rate"] = "200Mbps"
    result = run_seed(tmp_path, raw)
    html = (result.root / "report.html").read_text()
    assert _table_rows(html, "regions-by-group") == 3
    assert _table_rows(html, "region-detail") == 3 * 7
    assert _table_rows(html, "regions-reference-0") == 9 * 5
    assert _table_rows(html, "region-detail-reference-0") == 9 * 7
    regions = result.regions
    assert regions.groupby("run_id").size().eq(7).all()
    assert list(regions[regions["run_id"] == regions["run_id"].iloc[0]]["n_flows"]) == [1, 2, 3, 4, 3, 2, 1]


def test_seed_000_tcp_udp_one_way_and_dual(tmp_path: Path) -> None:
    raw = shortened("000-tcp-vs-udp-linear.toml", factor=0.1, repeats=1)
    result = run_seed(tmp_path, raw)
    parts = {p.part: p for p in result.parts()}
    assert set(parts) == {"tcp", "tcp-dual", "udp", "udp-dual"}
    assert len(parts["tcp-dual"].summary) == 4 and len(parts["udp"].summary) == 2
    udp = parts["udp"].summary
    # 2% loss each way and a 10 Mbps link: UDP at the link rate keeps ~98% of what it sends
    assert (udp["delivery_ratio"] > 0.95).all() and (udp["delivery_ratio"] < 0.99).all()
    tcp = parts["tcp"].summary
    assert (tcp["goodput_mean_bps"] < udp["goodput_mean_bps"].to_numpy()).all()


def test_seed_000_original_plan_on_data_center_topologies(tmp_path: Path) -> None:
    raw = tomllib.loads((SEEDS / "000-topologies.toml").read_text())
    # The lossy permutation parts shortened to 3 s, the clean incast parts as they are (their ten
    # rounds are 50 ms apart); the clean permutation parts left out (the tests of ECMP cover them).
    parts = []
    for part in raw["parts"]:
        if part["name"].endswith("seed-permutation"):
            parts.append(dict(part, duration="3s"))
        elif part["name"].endswith("dc-incast"):
            parts.append(part)
    raw = dict(raw, parts=parts)
    result = run_seed(tmp_path, raw)
    html = (tmp_path / raw["name"] / "report.html").read_text()
    assert "figures/" in html and "topology.png" in html
    summary = result.summary
    for topology in ("fat-tree", "leaf-spine", "super-spine"):
        lossy = summary[summary["part"] == f"{topology}-seed-permutation"]
        goodput = lossy.groupby("flavor")["goodput_mean_bps"].sum()
        # BBR ignores random loss; the loss-based flavors back off (six lossy hops each way).
        assert goodput["bbr"] > 2 * max(goodput["reno"], goodput["cubic"], goodput["vegas"]), goodput
        incast = summary[summary["part"] == f"{topology}-dc-incast"].copy()
        incast["round"] = incast["flow"] // 15
        per_round = incast.groupby(["flavor", "round"]).agg(bytes=("bytes_delivered", "sum"),
                                                           last_s=("fct_s", "max"))
        rate = (per_round["bytes"] * 8 / per_round["last_s"]).groupby("flavor").mean()
        # DCTCP keeps the receiver's port short and the synchronized responses whole.
        assert rate["dctcp"] > 1.5 * rate["reno"], rate
        assert rate["dctcp"] > 0.75e9, rate
