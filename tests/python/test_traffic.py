"""``[[traffic]]`` flow generators: each pattern's shape, the Poisson process's rate and sizes,
seeding, and one line naming the field for each bad input."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from ccarena.errors import UserError
from ccarena.scenario import validate_scenario
from ccarena.scenario.traffic import size_cdf
from scipy import stats


def scenario(*traffic, pairs=4, duration="4s", seed=1, **extra):
    return {"name": "t", "duration": duration, "seed": seed,
            "topology": {"kind": "dumbbell", "pairs": pairs,
                         "bottleneck": {"rate": "1Gbps", "delay": "10us"},
                         "access": {"rate": "10Gbps", "delay": "5us"}},
            "traffic": list(traffic), **extra}


def flows_of(*traffic, **kw):
    return validate_scenario(scenario(*traffic, **kw)).flows


CUBIC = {"flavor": "cubic"}
HOSTS8 = [f"left{i}" for i in range(4)] + [f"right{i}" for i in range(4)]


@pytest.mark.parametrize("seed", range(6))
def test_permutation_is_a_derangement(seed):
    flows = flows_of({"pattern": "permutation", "flow": CUBIC, "seed": seed})
    assert sorted(f.src for f in flows) == sorted(HOSTS8)
    assert sorted(f.dst for f in flows) == sorted(HOSTS8)
    assert all(f.src != f.dst for f in flows)
    assert [f.name for f in flows] == [f"perm-{k}" for k in range(8)]
    assert all(f.size_bytes is None and f.flavor == "cubic" for f in flows)


def test_permutation_is_uniform_over_derangements():
    """Over many seeds on 3 hosts, both derangements (the two 3-cycles) come up about equally."""
    seen = Counter()
    for seed in range(200):
        flows = flows_of({"pattern": "permutation", "flow": CUBIC, "seed": seed,
                          "hosts": ["left0", "left1", "left2"]})
        seen[tuple(f.dst for f in flows)] += 1
    assert set(seen) == {("left1", "left2", "left0"), ("left2", "left0", "left1")}
    assert min(seen.values()) > 70


def test_all_to_all_makes_every_ordered_pair():
    flows = flows_of({"pattern": "all_to_all", "flow": CUBIC, "bytes": "1MB"}, pairs=3)
    pairs = {(f.src, f.dst) for f in flows}
    assert len(flows) == 6 * 5 == len(pairs)
    assert all(a != b for a, b in pairs)
    assert all(f.size_bytes == 1_000_000 for f in flows)


def test_stride_maps_host_i_to_i_plus_k():
    flows = flows_of({"pattern": "stride", "stride": 3, "flow": CUBIC})
    assert [(f.src, f.dst) for f in flows] == [(HOSTS8[i], HOSTS8[(i + 3) % 8]) for i in range(8)]


def test_host_globs_restrict_the_pool():
    flows = flows_of({"pattern": "stride", "stride": 1, "flow": CUBIC, "hosts": ["right*"]})
    assert [(f.src, f.dst) for f in flows] == [("right0", "right1"), ("right1", "right2"),
                                               ("right2", "right3"), ("right3", "right0")]


def test_incast_senders_start_together_with_the_response_size():
    flows = flows_of({"pattern": "incast", "senders": 5, "receiver": "right2", "response": "64KB",
                      "start": "1s", "flow": {"flavor": "dctcp"}})
    assert len(flows) == 5
    assert {f.dst for f in flows} == {"right2"}
    assert len({f.src for f in flows}) == 5 and "right2" not in {f.src for f in flows}
    assert {f.start_ns for f in flows} == {1_000_000_000}
    assert {f.size_bytes for f in flows} == {64_000}
    assert {f.flavor for f in flows} == {"dctcp"}


def test_incast_rounds_and_jitter():
    flows = flows_of({"pattern": "incast", "response": "10KB", "rounds": 3, "interval": "100ms",
                      "jitter": "50us", "flow": CUBIC})
    assert len(flows) == 3 * 7  # every other host, 3 rounds
    for r in range(3):
        mine = flows[7 * r:7 * (r + 1)]
        base = r * 100_000_000
        assert all(base <= f.start_ns < base + 50_000 for f in mine)
        assert {f.dst for f in mine} == {"left0"}  # the pool's first host by default
    assert len({f.start_ns for f in flows}) > 3  # the jitter spreads them


def poisson(load=0.5, capacity="100Gbps", stop=None, **kw):
    entry = {"pattern": "poisson", "load": load, "sizes": "websearch", "capacity": capacity,
             "flow": CUBIC, **kw}
    if stop:
        entry["stop"] = stop
    return entry


def test_poisson_arrival_rate_matches_lambda():
    """λ = load · C / (8 · E[S]); the count over the window is Poisson(λT): within 4 SD of λT,
    and the gaps are exponential with mean 1/λ (Kolmogorov–Smirnov at the 1% level)."""
    flows = flows_of(poisson(load=0.5, capacity="100Gbps", stop="3s"))
    lam = 0.5 * 100e9 / (8 * size_cdf("websearch").mean_bytes)
    expected = lam * 3.0
    assert expected > 10_000
    assert abs(len(flows) - expected) <= 4 * math.sqrt(expected)
    starts = np.array(sorted(f.start_ns for f in flows)) / 1e9
    assert starts.min() >= 0 and starts.max() < 3.0
    gaps = np.diff(starts)
    assert stats.kstest(gaps, "expon", args=(0, 1 / lam)).pvalue > 0.01
    assert all(f.src != f.dst for f in flows)


def test_poisson_default_capacity_is_the_senders_access_rate():
    """Without `capacity`, C = Σ of the senders' access rates (4 left hosts × 10 Gbps)."""
    flows = flows_of(poisson(load=0.2, capacity="hosts", senders=["left*"], receivers=["right*"]),
                     duration="2s")
    lam = 0.2 * 4 * 10e9 / (8 * size_cdf("websearch").mean_bytes)
    assert abs(len(flows) - 2 * lam) <= 4 * math.sqrt(2 * lam)
    assert {f.src for f in flows} <= {f"left{i}" for i in range(4)}
    assert {f.dst for f in flows} <= {f"right{i}" for i in range(4)}


@pytest.mark.parametrize("sizes", ["websearch", "datamining"])
def test_poisson_sizes_follow_the_cdf(sizes):
    """Kolmogorov–Smirnov against the CDF's own points: the sample's empirical CDF at every point
    is within the 1% critical distance 1.63/√n of the published value."""
    flows = flows_of(poisson(load=0.5, capacity="400Gbps" if sizes == "websearch" else "2Tbps",
                             stop="2s") | {"sizes": sizes})
    sizes_b = np.array([f.size_bytes for f in flows], dtype=float)
    n = sizes_b.size
    assert n > 5_000
    cdf = size_cdf(sizes)
    empirical = np.searchsorted(np.sort(sizes_b), cdf.size_bytes, side="right") / n
    assert np.max(np.abs(empirical - cdf.cdf)) < 1.63 / math.sqrt(n)
    assert sizes_b.min() >= 1


def test_user_cdf_file(tmp_path):
    path = tmp_path / "sizes.csv"
    path.write_text("size_bytes,cdf\n# two sizes only\n1000,0.5\n1000,0.5\n5000,1\n")
    flows = flows_of(poisson(load=0.5, capacity="1Gbps", sizes=str(path)))
    sizes_b = np.array([f.size_bytes for f in flows])
    assert np.mean(sizes_b == 1000) == pytest.approx(0.5, abs=0.1)  # the atom at 1000 B
    assert sizes_b.min() == 1000 and sizes_b.max() <= 5000


def test_same_seed_same_flows_other_seed_other_flows():
    def key(flows):
        return [(f.src, f.dst, f.start_ns, f.size_bytes) for f in flows]

    a = key(flows_of(poisson(capacity="1Gbps")))
    assert a == key(flows_of(poisson(capacity="1Gbps")))
    assert a != key(flows_of(poisson(capacity="1Gbps"), seed=2))  # the scenario's seed
    assert a != key(flows_of(poisson(capacity="1Gbps", seed=9)))  # the pattern's own
    perm = key(flows_of({"pattern": "permutation", "flow": CUBIC, "seed": 3}))
    assert perm == key(flows_of({"pattern": "permutation", "flow": CUBIC, "seed": 3}))
    assert perm != key(flows_of({"pattern": "permutation", "flow": CUBIC, "seed": 4}))


def test_generated_flows_sit_beside_explicit_ones_and_sweeps_reach_them():
    from ccarena.experiment import expand
    from ccarena.scenario import load_scenario

    raw = scenario({"pattern": "permutation", "flow": CUBIC},
                   flows=[{"from": "left0", "to": "right0", "flavor": "reno"}],
                   sweep={"traffic[0].flow.flavor": ["cubic", "dctcp"]})
    plans = expand(load_scenario(raw))
    assert [p.run_id for p in plans] == ["flavor=cubic_r0", "flavor=dctcp_r0"]
    names = [f.name for f in plans[1].resolved.spec.flows]
    assert names == ["reno", *[f"perm-{k}" for k in range(8)]]
    assert {f.flavor for f in plans[1].resolved.spec.flows[1:]} == {"dctcp"}


def bad(traffic, match, **kw):
    with pytest.raises(UserError) as err:
        validate_scenario(scenario(traffic, **kw))
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(match), message
    return message


def test_bad_inputs_name_the_field(tmp_path):
    bad(poisson(load=0), "traffic[0].load: 0.0 is not in (0, 1]")
    bad(poisson(load=1.2), "traffic[0].load: 1.2 is not in (0, 1]")
    bad({"pattern": "permutaion", "flow": CUBIC},
        "traffic[0].pattern: unknown pattern 'permutaion' (did you mean 'permutation'?)")
    bad({"pattern": "permutation", "flow": CUBIC, "hosts": ["left0"]},
        "traffic[0].hosts: a permutation pattern needs at least 2 hosts, got 1 (left0)")
    bad({"pattern": "permutation", "flow": CUBIC, "hosts": ["pod0-*"]},
        "traffic[0].hosts[0]: 'pod0-*' matches no host")
    bad({"pattern": "incast", "senders": 8, "response": "1KB", "flow": CUBIC},
        "traffic[0].senders: 8 senders but only 7 hosts besides the receiver left0; give at most 7")
    bad({"pattern": "incast", "response": "1KB", "receiver": "lft1", "flow": CUBIC},
        "traffic[0].receiver: unknown host 'lft1' (did you mean 'left1'?)")
    bad({"pattern": "incast", "response": "1KB", "rounds": 2, "flow": CUBIC}, "traffic[0].interval:")
    bad({"pattern": "stride", "stride": 8, "flow": CUBIC}, "traffic[0].stride: stride 8 is a multiple")
    bad({"pattern": "permutation", "load": 0.5, "flow": CUBIC},
        "traffic[0].load: a permutation pattern does not take `load` (only poisson)")
    bad({"pattern": "permutation", "flow": {"flavor": "cubik"}}, "traffic[0].flow.flavor: unknown flavor")
    bad({"pattern": "permutation", "flow": {"flavor": "cubic", "to": "left1"}},
        "traffic[0].flow.to: the generator sets each flow's `to`")
    bad({"pattern": "incast", "response": "1KB", "flow": {"flavor": "udp-cbr", "rate": "1Mbps"}},
        "traffic[0].flow.flavor: udp-cbr sends until stop")
    bad(poisson() | {"jitter": "1ms"}, "traffic[0].jitter: poisson arrivals are random already")
    bad(poisson() | {"sizes": "nosuch"}, "traffic[0].sizes: 'nosuch' is neither websearch nor datamining")
    for text, problem in (("0,0\n10,0.6\n20,0.5\n30,1\n", "line 3: cdf 0.5 is less than the previous 0.6"),
                          ("0,0\n10,0.6\n5,0.8\n30,1\n", "line 3: size 5 is less than the previous 10"),
                          ("0,0\n10,0.6\n20,0.9\n", "the CDF ends at 0.9, not 1"),
                          ("0,0\n10,abc\n", "line 2: '10,abc' is not two numbers")):
        path = tmp_path / "cdf.csv"
        path.write_text(text)
        message = bad(poisson() | {"sizes": str(path)}, "traffic[0].sizes: cdf.csv")
        assert problem in message
    message = bad(poisson(load=1, capacity="10Tbps"), "traffic[0].load: about 2,921,841 flows")
    assert "limit of 200,000" in message and "lower the load" in message
    bad({"pattern": "all_to_all", "flow": CUBIC}, "traffic[0]: all_to_all over 600 hosts makes "
        "359,400 flows, more than the limit of 200,000; restrict `hosts`", pairs=300)
    with pytest.raises(UserError, match=r"^traffic\[1\]\.name: 'perm' also names"):
        validate_scenario(scenario({"pattern": "permutation", "flow": CUBIC},
                                   {"pattern": "permutation", "flow": CUBIC}))
    with pytest.raises(UserError, match=r"^flows: a scenario needs at least one \[\[flows\]\] or \[\[traffic\]\]"):
        validate_scenario(scenario())
