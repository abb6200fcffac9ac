"""Data-center metrics: FCT slowdown against the ideal FCT on real runs, per-bucket percentiles,
utilization, queue occupancy and ECMP balance per role on tables with known answers."""

from __future__ import annotations

import math

import ccarena
import numpy as np
import pandas as pd
import pytest
from ccarena.analysis import datacenter_metrics as datacenter


def dumbbell(pairs=4, queue="100pkt"):
    return {"kind": "dumbbell", "pairs": pairs,
            "bottleneck": {"rate": "100Mbps", "delay": "100us", "queue": {"limit": queue}},
            "access": {"rate": "1Gbps", "delay": "10us"}}


def test_slowdown_is_at_least_one_on_an_empty_network(tmp_path):
    """Flows one at a time (each starts after the last has surely finished): none beats the
    ideal FCT, and one that neither overflows the queue in slow start nor waits for a delayed
    ACK (delayed_ack = 0: else a last odd or short segment waits 40 ms for its ACK) meets it:
    the path's BDP (≈ 5 KB) is below the initial window, so it sends at the bottleneck rate from
    the first packet."""
    sizes = ["1448B", "3KB", "14480B", "50KB", "300KB", "2MB"]
    flows = [{"from": "left0", "to": "right0", "flavor": "cubic", "bytes": size, "delayed_ack": "0s",
              "start": f"{200 * i}ms", "name": f"f{i}"} for i, size in enumerate(sizes)]
    result = ccarena.run({"name": "empty", "duration": "1.4s", "topology": dumbbell(pairs=1),
                          "flows": flows}, tmp_path / "empty", jobs=1)
    f = result.flows.set_index("name")
    assert f["fct_s"].notna().all()
    slowdown = f["fct_slowdown"].to_numpy(dtype=float)
    assert np.all(slowdown >= 1 - 1e-9), slowdown
    assert np.all(slowdown[:-1] <= 1.01), slowdown  # 2 MB overflows the 100-packet queue


def test_slowdown_is_fct_over_ideal_on_a_poisson_run(tmp_path):
    """20-odd Poisson flows on a dumbbell through the normal run path: each finished flow's
    slowdown is its FCT over the ideal FCT, computed here from the stored spec (link rates,
    sizes) and path facts; the run summary has the per-bucket numbers."""
    scenario = {"name": "dc", "duration": "1s", "seed": 5, "topology": dumbbell(),
                "traffic": [{"pattern": "poisson", "load": 0.5, "sizes": "websearch",
                             "capacity": "1Gbps", "senders": ["left*"], "receivers": ["right*"],
                             "stop": "0.5s", "flow": {"flavor": "cubic"}}]}
    result = ccarena.run(scenario, tmp_path / "dc", jobs=1)
    record = result.store.read_run_record("r0")
    spec = {f["name"]: f for f in record["spec"]["flows"]}
    facts = {f["name"]: f for f in record["derived"]["flows"]}
    rates = [link["rate_bps"] for link in record["spec"]["links"]]
    flows = result.flows
    assert 15 <= len(flows) <= 60
    finished = flows[flows["fct_s"].notna()]
    assert len(finished) >= 10
    for row in finished.itertuples():
        size, mss, header = spec[row.name]["bytes"], spec[row.name]["mss_bytes"], spec[row.name]["header_bytes"]
        # Path: host -> r0 (1 Gbps), r0 -> r1 (the 100 Mbps bottleneck), r1 -> host (1 Gbps).
        access, neck = [rates[i] for i in facts[row.name]["path_links"]][::2], rates[facts[row.name]["path_links"][1]]
        assert access == [1e9, 1e9] and neck == 1e8
        n = math.ceil(size / mss)
        first, last, wire = min(size, mss) + header, size - (n - 1) * mss + header, size + n * header
        ideal = facts[row.name]["base_rtt_s"] + 8 * (
            first / 1e9 + wire / 1e8 + last / 1e9 - (mss + header) * (2 / 1e9 + 1 / 1e8))
        assert row.fct_slowdown == pytest.approx(row.completion_time_s / ideal, rel=1e-12)
        assert row.fct_slowdown >= 1 - 1e-9
    summary = record["summary"]
    s = finished["fct_slowdown"].to_numpy(dtype=float)
    assert summary["fct_slowdown_p50"] == pytest.approx(np.percentile(s, 50))
    assert summary["fct_slowdown_p99"] == pytest.approx(np.percentile(s, 99))
    small = finished[finished["bytes_offered"] < 100e3]["fct_slowdown"].to_numpy(dtype=float)
    assert summary["fct_slowdown_p99_lt100KB"] == pytest.approx(np.percentile(small, 99))
    assert summary["flows_finite"] == len(flows)
    assert summary["flows_unfinished"] == len(flows) - len(finished)
    assert "ecmp_cv_access" not in summary  # no multipath role on a dumbbell
    assert 0 < summary["utilization_mean_bottleneck"] < 1
    assert "fct_slowdown_p99" in result.summary.columns
    html = result.report().read_text()
    assert '<table id="datacenter">' in html
    for name in ("dc-fct-slowdown.png", "dc-utilization.png", "dc-queues.png"):
        assert f'data-file="figures/{name}"' in html


def test_a_bulk_dumbbell_run_gets_no_datacenter_numbers(tmp_path):
    result = ccarena.run({"name": "bulk", "duration": "0.5s", "topology": dumbbell(pairs=2),
                          "flows": [{"from": "left0", "to": "right0", "flavor": "cubic"},
                                    {"from": "left1", "to": "right1", "flavor": "reno"}]},
                         tmp_path / "bulk", jobs=1)
    assert result.flows["fct_slowdown"].isna().all()
    assert not any(c.startswith(("fct_slowdown_", "flows_", "utilization_mean_", "queue_p", "ecmp_"))
                   for c in result.summary.columns)
    html = result.report().read_text()
    assert 'id="datacenter"' not in html and "dc-" not in html
    flows = pd.DataFrame({"kind": ["tcp", "tcp"], "bytes_offered": [np.nan, np.nan],
                          "fct_s": [np.nan, np.nan], "base_rtt_s": [0.01, 0.01],
                          "bottleneck_rate_bps": [1e8, 1e8], "mss_bytes": [1448, 1448]})
    links = pd.DataFrame({"link": [0, 1, 2], "role": ["bottleneck", "bottleneck-reverse", "access"],
                          "bytes_transmitted": [1e6, 1e4, 1e6], "rate_bps": [1e8, 1e8, 1e9]})
    assert datacenter.run_summary(flows, links, None, 1.0) == {}


def synthetic_flows():
    """100 flows per bucket with slowdowns 1..100 (in a shuffled order), and 3 unfinished."""
    rng = np.random.default_rng(0)
    rows = []
    for size in (50e3, 500e3, 5e6, 50e6):
        for s in rng.permutation(np.arange(1, 101)):
            rows.append({"flavor": "cubic", "size_bucket": datacenter.size_bucket([size])[0],
                         "fct_slowdown": float(s), "fct_s": float(s) * 1e-3})
    for _ in range(3):
        rows.append({"flavor": "cubic", "size_bucket": "<100KB", "fct_slowdown": np.nan, "fct_s": np.nan})
    rows.append({"flavor": "dctcp", "size_bucket": "<100KB", "fct_slowdown": 2.0, "fct_s": 2e-3})
    return pd.DataFrame(rows)


def test_percentiles_per_bucket_on_known_values():
    table = datacenter.slowdown_by_bucket(synthetic_flows(), by=["flavor"])
    cubic = table[table["flavor"] == "cubic"].set_index("size_bucket")
    assert list(cubic.index) == ["<100KB", "100KB-1MB", "1MB-10MB", ">=10MB", "all"]
    for bucket in ("<100KB", "100KB-1MB", "1MB-10MB", ">=10MB"):
        assert cubic.loc[bucket, "slowdown_p50"] == pytest.approx(50.5)
        assert cubic.loc[bucket, "slowdown_p99"] == pytest.approx(99.01)  # 1 + 0.99·99
        assert cubic.loc[bucket, "fct_p99_s"] == pytest.approx(99.01e-3)
    assert cubic.loc["<100KB", "flows"] == 103 and cubic.loc["<100KB", "unfinished"] == 3
    assert cubic.loc["all", "flows"] == 403 and cubic.loc["all", "slowdown_mean"] == pytest.approx(50.5)
    dctcp = table[table["flavor"] == "dctcp"]
    assert list(dctcp["size_bucket"]) == ["<100KB", "all"]
    assert list(dctcp["slowdown_p99"]) == [2.0, 2.0]


def test_size_buckets_and_ideal_fct():
    assert list(datacenter.size_bucket([1, 99_999, 100_000, 999_999, 1e6, 1e7, np.nan])) == \
        ["<100KB", "<100KB", "100KB-1MB", "100KB-1MB", "1MB-10MB", ">=10MB", ""]
    # Base RTT 10 ms counts one 1500 B packet at each hop (80 and 8 Mbps: 150 + 1500 µs).
    # Three full packets: two more behind the first at the 8 Mbps bottleneck.
    ideal = datacenter.ideal_fct_s
    assert ideal(3 * 1448, 0.01, [8e7, 8e6], 1448, 52) == pytest.approx(0.01 + 2 * 1500e-6)
    # A short last packet (152 B on the wire): 152 B more at the bottleneck.
    assert ideal(1448 + 100, 0.01, [8e7, 8e6], 1448, 52) == pytest.approx(0.01 + 152e-6)
    # One short packet: faster than the full one the base RTT counts, at every hop.
    assert ideal(100, 0.01, [8e7, 8e6], 1448, 52) == pytest.approx(0.01 - 1348 * (0.1e-6 + 1e-6))
    # Bottleneck first: the last packet still crosses the fast hop after it.
    assert ideal(1448 + 100, 0.01, [8e6, 8e7], 1448, 52) == pytest.approx(
        0.01 - 1500 * 1.1e-6 + 1652e-6 + 152 * 0.1e-6)
    assert math.isnan(ideal(float("nan"), 0.01, [8e6], 1448, 52))


def test_utilization_balance_and_queues_by_role():
    links = pd.DataFrame({"link": [0, 1, 2, 3, 4, 5],
                          "role": ["agg-core"] * 4 + ["access"] * 2,
                          "bytes_transmitted": [100.0, 100.0, 200.0, 0.0, 125.0, 0.0],
                          "rate_bps": [1000.0] * 4 + [500.0] * 2})
    util = datacenter.utilization_by_role(links, duration_s=2.0).set_index("role")
    assert util.loc["agg-core", "utilization_mean"] == pytest.approx(8 * 100 / 2000)
    assert util.loc["agg-core", "utilization_max"] == pytest.approx(8 * 200 / 2000)
    assert util.loc["access", "utilization_mean"] == pytest.approx(8 * 62.5 / 1000)
    balance = datacenter.ecmp_balance(links)
    assert list(balance["role"]) == ["agg-core"]  # access links are nobody's alternative
    assert balance.iloc[0]["max_over_mean"] == pytest.approx(2.0)
    assert balance.iloc[0]["cv"] == pytest.approx(math.sqrt(0.5))
    queues = pd.DataFrame({"link": [0] * 50 + [1] * 50 + [4] * 10,
                           "backlog_packets": list(range(50)) + list(range(50, 100)) + [7] * 10,
                           "backlog_bytes": [1500.0 * x for x in range(100)] + [0.0] * 10})
    q = datacenter.queue_by_role(queues, links).set_index("role")
    assert q.loc["agg-core", "backlog_p50_packets"] == pytest.approx(49.5)
    assert q.loc["agg-core", "backlog_p99_packets"] == pytest.approx(98.01)
    assert q.loc["agg-core", "links"] == 2 and q.loc["agg-core", "samples"] == 100
    assert q.loc["access", "backlog_p99_packets"] == 7
    summary = datacenter.run_summary(pd.DataFrame({"kind": [], "bytes_offered": []}), links,
                                     queues, 2.0)
    assert summary["ecmp_max_over_mean_agg-core"] == pytest.approx(2.0)
    assert summary["queue_p99_packets_agg-core"] == pytest.approx(98.01)
    assert "fct_slowdown_p50" not in summary
