"""Metrics and theory against hand-computed values."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from ccarena.analysis import metrics, theory


@pytest.mark.parametrize(
    "values, expected",
    [
        ([5, 5, 5, 5], 1.0),                 # equal shares
        ([1, 0, 0, 0], 0.25),                # one flow takes all: 1/n
        ([1, 2, 3], 36 / (3 * 14)),          # (1+2+3)² / (3·(1+4+9)) = 36/42
        ([10, 30], 1600 / (2 * 1000)),       # 40² / (2·(100+900)) = 0.8
    ],
)
def test_jain_index_of_known_vectors(values, expected):
    assert metrics.jain_index(values) == pytest.approx(expected)


def test_jain_index_undefined_cases():
    assert math.isnan(metrics.jain_index([]))
    assert math.isnan(metrics.jain_index([0, 0]))


def test_stability_is_population_sd_over_mean():
    # mean 5, population SD of [3, 5, 7] = sqrt(8/3)
    assert metrics.stability([3, 5, 7]) == pytest.approx(math.sqrt(8 / 3) / 5)
    assert metrics.stability([4, 4, 4]) == 0.0
    assert math.isnan(metrics.stability([4]))


def test_mean_ci_of_known_samples():
    # n = 5, mean 3, sample SD = sqrt(2.5); t(0.975, 4) = 2.776445
    ci = metrics.mean_ci([1, 2, 3, 4, 5])
    assert ci.mean == 3 and ci.n == 5
    assert ci.sd == pytest.approx(math.sqrt(2.5))
    assert ci.half_width == pytest.approx(2.776445 * math.sqrt(2.5) / math.sqrt(5), rel=1e-6)
    one = metrics.mean_ci([7.0])
    assert one.mean == 7.0 and math.isnan(one.half_width)


def test_regions_of_seed_001_lifo_schedule():
    # Four flows enter every 120 s and leave last-in-first-out: seven regions (seed 001, Fig. 1).
    schedule = [(0, 0, 840), (1, 120, 720), (2, 240, 600), (3, 360, 480)]
    regions = metrics.find_regions(schedule)
    assert [(r.start_s, r.end_s, r.flows) for r in regions] == [
        (0, 120, (0,)),
        (120, 240, (0, 1)),
        (240, 360, (0, 1, 2)),
        (360, 480, (0, 1, 2, 3)),
        (480, 600, (0, 1, 2)),
        (600, 720, (0, 1)),
        (720, 840, (0,)),
    ]


def test_region_table_fairness_and_stability_per_region():
    flows = pd.DataFrame({"flow": [0, 1], "name": ["a", "b"], "start_s": [0.0, 2.0], "end_s": [4.0, 4.0]})
    # 1 s samples. Region 0 = [0, 2): a alone at 10, 30. Region 1 = [2, 4): a 10/10, b 30/30.
    samples = pd.DataFrame({
        "time_s": [1, 2, 3, 4, 3, 4],
        "flow": [0, 0, 0, 0, 1, 1],
        "goodput_bps": [10.0, 30.0, 10.0, 10.0, 30.0, 30.0],
    })
    table = metrics.region_table(flows, samples, duration_s=4.0, sample_interval_s=1.0)
    assert list(table["n_flows"]) == [1, 2]
    assert table["jain_index"][0] == pytest.approx(1.0)
    assert table["jain_index"][1] == pytest.approx(metrics.jain_index([10, 30]))
    assert table["stability"][0] == pytest.approx(10 / 20)   # SD 10, mean 20
    assert table["stability"][1] == pytest.approx(0.0)
    assert table["goodput_total_bps"][1] == pytest.approx(40.0)


def test_mathis_closed_form():
    # MSS 1448 B, RTT 50 ms, p = 1%: 1448·8/0.05 · sqrt(3/(2·0.01)) = 231680 · 12.247 = 2.8375 Mbps
    assert theory.mathis_bps(1448, 0.05, 0.01) == pytest.approx(231_680 * math.sqrt(150), rel=1e-9)


def test_padhye_approaches_mathis_at_low_loss_and_is_below_it_at_high_loss():
    low = 1e-4
    assert theory.padhye_bps(1448, 0.05, low, 0.2) / theory.mathis_bps(1448, 0.05, low) == pytest.approx(1.0, rel=0.1)
    high = 0.05
    assert theory.padhye_bps(1448, 0.05, high, 0.2) < theory.mathis_bps(1448, 0.05, high)


def test_cubic_response_function_rfc9438():
    # RFC 9438 §5.1: average window = (C(3+β)/(4(1−β)))^(1/4) · RTT^(3/4) / p^(3/4) segments
    c, beta, rtt, p = 0.4, 0.7, 0.1, 1e-4
    expected = (c * (3 + beta) / (4 * (1 - beta))) ** 0.25 * rtt ** 0.75 / p ** 0.75
    assert theory.cubic_window_packets(rtt, p) == pytest.approx(expected, rel=1e-9)
