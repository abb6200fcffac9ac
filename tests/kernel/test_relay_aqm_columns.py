"""The relay's DualPI2 state in the udp backend's tables (issue 31): examples/l4s.toml's ``relay``
part with ccarena's Prague (QUIC over real UDP sockets, ECT(1)) and Linux's CUBIC (classic ECN)
through the relay's DualPI2, 3 s of traffic.

What it shows: the queues table's ``aqm_prob_classic`` (p_C = p'²) and ``aqm_prob_l4s``
(p_CL = min(k·p', 1), RFC 9332 §2.1) are finite on the DualPI2 link at every sample, non-zero
under this load and related as the RFC couples them, and finite on the same links as in the
simulated twin (NaN elsewhere); the links table's per-class columns (``l4s_…``, ``classic_…``)
are finite on the same links as the simulator's (both directions of the bottleneck) and add up
to the link's marks and drops, with the L4S queue's median sojourn below the Classic queue's.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from kernelutil import requires_root

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "l4s.toml"
BOTTLENECK = "r0->r1"


def _tables(backend: str) -> dict:
    import tomllib

    from ccarena.backends import get_backend
    from ccarena.experiment import apply_backends, expand
    from ccarena.scenario import load_scenario

    raw = tomllib.loads(EXAMPLE.read_text())
    (part,) = [p for p in raw.pop("parts") if p["name"] == "relay"]
    part["flows"] = [f for f in part["flows"] if f["name"] in ("prague", "linux-cubic")]
    raw.update(part, duration="3s")
    kernel = raw.pop("kernel")
    spec = apply_backends(expand(load_scenario(raw))[:1], [backend])[0].resolved.spec
    return get_backend(backend, kernel if backend == "udp" else {}).run(spec).tables


@requires_root
def test_udp_backend_queues_carry_dualpi2_probabilities_and_links_its_classes(tag: str) -> None:
    tables = _tables("udp")
    links = tables["links"].set_index("name")
    queues = tables["queues"]
    bottleneck = int(links.loc[BOTTLENECK, "link"])
    q = queues[queues["link"] == bottleneck]
    p_c, p_cl = q["aqm_prob_classic"].to_numpy(), q["aqm_prob_l4s"].to_numpy()
    print(f"{len(q)} samples; p_C max {p_c.max():.4f} mean {p_c.mean():.4f}; "
          f"p_CL max {p_cl.max():.4f}")
    assert len(q) >= 20
    assert np.all(np.isfinite(p_c)) and np.all(np.isfinite(p_cl))
    assert np.all((p_c >= 0) & (p_c <= 1)) and p_c.max() > 0
    # p_CL = min(k·√p_C, 1) with the default coupling k = 2.
    np.testing.assert_allclose(p_cl, np.minimum(2 * np.sqrt(p_c), 1), atol=1e-9)
    # Finite on the same links and samples as in the simulated twin (NaN where it has none).
    sim_tables = _tables("sim")
    sim = sim_tables["queues"]
    for column in ("aqm_prob_classic", "aqm_prob_l4s"):
        finite = {name: g[column].notna().all() for name, g in queues.groupby("link")}
        assert finite == {name: g[column].notna().all() for name, g in sim.groupby("link")}, column

    row = links.loc[BOTTLENECK]
    classes = {c: {f: float(row[f"{c}_{f}"]) for f in
                   ("packets_departed", "packets_marked", "packets_dropped",
                    "sojourn_mean_s", "sojourn_p50_s", "sojourn_p99_s")}
               for c in ("l4s", "classic")}
    print("per class:", classes)
    assert all(math.isfinite(v) for c in classes.values() for v in c.values()), classes
    assert classes["l4s"]["packets_marked"] + classes["classic"]["packets_marked"] == row["packets_marked"]
    assert (classes["l4s"]["packets_dropped"] + classes["classic"]["packets_dropped"]
            == row["packets_dropped_queue"])
    assert classes["l4s"]["packets_departed"] > 100 and classes["classic"]["packets_departed"] > 100
    assert classes["l4s"]["sojourn_p50_s"] < classes["classic"]["sojourn_p50_s"]
    sim_links = sim_tables["links"].set_index("name")
    sim_q = sim[sim["link"] == bottleneck]
    print(f"sim: p_C max {sim_q['aqm_prob_classic'].max():.4f} mean {sim_q['aqm_prob_classic'].mean():.4f}; "
          f"L4S p50 {sim_links.loc[BOTTLENECK, 'l4s_sojourn_p50_s'] * 1e3:.2f} ms, Classic p50 "
          f"{sim_links.loc[BOTTLENECK, 'classic_sojourn_p50_s'] * 1e3:.2f} ms")
    for column in ("l4s_packets_departed", "classic_sojourn_p99_s"):
        assert links[column].notna().to_dict() == sim_links[column].notna().to_dict(), column


def test_relay_stats_reach_the_queue_and_link_rows() -> None:
    """Without root: a DualPI2 direction's stats (the shape ``crates/relay/src/stats.rs``
    writes) become the probabilities of the queues rows and the per-class links columns, counts
    since the baseline sample, the sojourn figures in seconds; a DropTail direction's stay NaN."""
    from ccarena.backends import DUALPI2_LINK_COLUMNS
    from ccarena.backends.kernel import measured_tables, relay_driver

    sojourn = {"mean": 2e6, "min": 1e5, "max": 1e7, **{f"p{q}": q * 1e5 for q in
                                                       (5, 10, 25, 50, 75, 90, 95, 99)}}
    samples = {"t_ns": [100, 200], "backlog_bytes": [0, 3000], "backlog_packets": [0, 2],
               "drops": [1, 4], "departures": [10, 30], "departed_bytes": [15000, 45000],
               "sojourn_total_ns": [0, 60_000_000], "lost_wire": [0, 0], "busy_ns": [0, 0],
               "early_drops": [1, 4], "marks": [2, 9],
               "aqm_prob_classic": [0.0, 0.04], "aqm_prob_l4s": [0.0, 0.4],
               "l4s_departed": [4, 14], "l4s_marked": [2, 8], "l4s_dropped": [0, 1],
               "l4s_sojourn_total_ns": [0, 10_000_000],
               "classic_departed": [6, 16], "classic_marked": [0, 1], "classic_dropped": [1, 3],
               "classic_sojourn_total_ns": [0, 50_000_000]}
    droptail = {k: samples[k] for k in list(samples)[:11]}
    link_totals = {"l4s": {"sojourn_ns": sojourn}, "classic": {"sojourn_ns": {**sojourn, "p50": None}}}
    stats = {"pipes": [{"a_to_b": {"samples": samples, "link": link_totals},
                        "b_to_a": {"samples": droptail, "link": {}}}]}
    plan = SimpleNamespace(links=[SimpleNamespace(relayed=True, forward=0, reverse=1)])
    by_link = relay_driver.queue_readings(stats, plan)  # type: ignore[arg-type]
    baseline = {link: rows[100] for link, rows in by_link.items()}
    final = {link: rows[200] for link, rows in by_link.items()}
    rows = measured_tables.queue_rows([(0.1, final)], baseline)
    assert [(r["aqm_prob_classic"], r["aqm_prob_l4s"]) for r in rows] == [(0.04, 0.4), (None, None)]
    spec = SimpleNamespace(duration_ns=1e9, links=[SimpleNamespace(name=n, rate_bps=1e8, delay_ns=0)
                                                   for n in ("a", "b")])
    links = measured_tables.frame(measured_tables.link_rows(spec, final, baseline, {0: 0, 1: 0}),
                                  measured_tables.LINK_COLUMNS).set_index("name")
    a = links.loc["a"]
    assert (a["l4s_packets_departed"], a["l4s_packets_marked"], a["classic_packets_dropped"]) == (10, 6, 2)
    assert a["l4s_packets_marked"] + a["classic_packets_marked"] == a["packets_marked"]
    assert a["l4s_sojourn_mean_s"] == 0.001 and a["classic_sojourn_mean_s"] == 0.005
    assert (a["l4s_sojourn_p99_s"], a["l4s_sojourn_max_s"]) == (0.0099, 0.01)
    assert math.isnan(a["classic_sojourn_p50_s"])
    assert links.loc["b", list(DUALPI2_LINK_COLUMNS)].isna().all()
