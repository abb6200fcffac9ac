"""``ccarena identify`` on a path that marks ECN instead of dropping: DCTCP's proportional cut
(RFC 8257 §3.3) is told from Reno's halving on the same step-marking queue by the cwnd's response
to CE marks and the share of packets marked (``mark_decrease_factor``, ``ce_per_100_packets``)."""

from __future__ import annotations

import pytest

from ccarena.backends.sim import run_spec
from ccarena.experiment.expand import expand
from ccarena.identify import identify_series
from ccarena.identify.series import FlowSeries, from_frame
from ccarena.scenario import load_scenario


def _marked(flavor: str) -> FlowSeries:
    """``flavor`` with ECN alone on 24 Mbit/s, 30 ms base RTT, a 200-packet queue marking CE at
    K = 20 packets (a third of the BDP), 10 s, seed 11; the series carries the flow's CE count."""
    raw = {"name": "marked", "duration": "10s", "seed": 11,
           "topology": {"kind": "single_link", "link": {
               "rate": "24Mbps", "delay": "15ms",
               "queue": {"limit": "200pkt", "ecn_threshold": "20pkt"}}},
           "flows": [{"from": "a", "to": "b", "flavor": flavor, "ecn": True}],
           "output": {"sample_interval": "10ms"}}
    tables = run_spec(expand(load_scenario(raw))[0].resolved.spec)
    flow = tables["flows"].iloc[0]
    return from_frame(tables["samples"], label=flavor, source=f"sim {flavor}",
                      ce_packets=flow["ce_packets"], packets_sent=flow["packets_sent"])


def test_dctcp_through_a_marking_queue_is_named_dctcp() -> None:
    result = identify_series(_marked("dctcp"), threads=1)
    assert result.path.marks and result.path.threshold_packets == pytest.approx(20, abs=3)
    assert result.best == "dctcp", result.evidence
    assert result.features["mark_decrease_factor"] > 0.85  # α/2 cuts, not halving
    assert "under ECN marks" in result.evidence


def test_reno_through_the_same_marking_queue_is_reno_not_dctcp() -> None:
    # Without losses Tahoe, Reno and NewReno respond to ECE identically (one halving per window,
    # RFC 3168 §6.1.2): they tie, and the catalogue's order names the first of them.
    result = identify_series(_marked("reno"), threads=1)
    named = [result.best, *result.equivalent]
    assert result.best != "unknown" and "reno" in named and "dctcp" not in named, (
        result.best, result.equivalent, result.evidence)
    assert result.features["mark_decrease_factor"] == pytest.approx(0.5, abs=0.08)
