"""``ccarena.identify.classify.rank``'s open-set gate: a best match farther from the trace than
SPREAD_RATIO × that flavor's own round-trip spread gets no confidence (the CLI's "unknown,
closest: …"), the same match within its spread keeps it, a best match past UNKNOWN_DISTANCE
is ``unknown``, and a near-twin within FAMILY_SLACK is in the answer's family."""

from __future__ import annotations

import math

from ccarena.identify.classify import (LOW_CONFIDENCE, SPREAD_FLOOR, SPREAD_RATIO,
                                        UNKNOWN_DISTANCE, rank)
from ccarena.identify.path import PathEstimate

PATH = PathEstimate(base_rtt_s=0.03, rate_bps=20e6, buffer_bytes=75e3, loss=0.0, duration_s=15.0,
                    interval_s=0.01, mss_bytes=1448.0)


def _ranked(own_spread: float, decrease_factor: float = 0.58, queue_delay: float = 0.1):
    """A trace against a Reno-like replay (decrease factor 0.5, queue −0.5) and a far CUBIC-like
    one (0.9); by default 1 scale off Reno in the decrease factor and 2 in the queue delay: a
    best distance of about 1.0, under UNKNOWN_DISTANCE, with no runner-up near."""
    common = {"growth_mss_per_rtt": 0.0, "cwnd_variation": -0.7, "queue_delay": -0.5}
    replays = {"reno": ("reno", {**common, "decrease_factor": 0.5}),
               "cubic": ("cubic", {**common, "decrease_factor": 0.9})}
    trace = {**common, "decrease_factor": decrease_factor, "queue_delay": queue_delay}
    return rank(trace, replays, PATH, ["reno", "cubic"], own_spread=own_spread)


def test_a_match_within_its_own_spread_is_confident() -> None:
    result = _ranked(own_spread=0.6)  # replays of this flavor differ by 0.6 themselves
    assert result.best == "reno" and result.confident, (result.confidence, result.evidence)


def test_a_match_past_its_own_spread_gets_no_confidence() -> None:
    result = _ranked(own_spread=0.05)  # floored at SPREAD_FLOOR: 4 × 0.2 < the distance
    d0 = result.ranking[0].distance
    assert SPREAD_RATIO * SPREAD_FLOOR < d0 < UNKNOWN_DISTANCE
    assert result.best == "reno" and result.confidence < LOW_CONFIDENCE and not result.confident
    assert "not in the library" in result.evidence
    assert math.isclose(result.own_spread, 0.05)


def test_past_the_distance_gate_it_is_unknown() -> None:
    result = _ranked(own_spread=math.nan, decrease_factor=0.1, queue_delay=0.5)
    assert result.best == "unknown" and not result.confident



def test_a_near_twin_is_in_the_answers_family_and_shares_its_confidence() -> None:
    # The trace is Reno's replay; a HyBla-like twin is 0.4 scales off in the decrease factor
    # (distance ≈ 0.24: past the tie margin at distance 0, 0.1, within FAMILY_SLACK); a
    # CUBIC-like flavor is far.
    from ccarena.identify.classify import FAMILY_SLACK, TIE_SLACK

    common = {"growth_mss_per_rtt": 0.0, "cwnd_variation": -0.7, "queue_delay": -0.5}
    replays = {"reno": ("reno", {**common, "decrease_factor": 0.5}),
               "hybla": ("hybla", {**common, "decrease_factor": 0.468}),
               "cubic": ("cubic", {**common, "decrease_factor": 0.9})}
    trace = {**common, "decrease_factor": 0.5}
    result = rank(trace, replays, PATH, ["reno", "hybla", "cubic"], own_spread=0.5)
    d = {c.flavor: c.distance for c in result.ranking}
    assert d["reno"] + TIE_SLACK < d["hybla"] <= d["reno"] + FAMILY_SLACK < d["cubic"], d
    assert result.best == "reno" and result.equivalent == ["hybla"], result.equivalent
    # The family shares the answer: its summed score is the confidence (no limit near here),
    # where Reno's own score alone would be about two thirds.
    family_score = sum(c.score for c in result.ranking if c.flavor in ("reno", "hybla"))
    assert result.ranking[0].score < 0.7 < family_score
    assert math.isclose(result.confidence, family_score, rel_tol=1e-6)
