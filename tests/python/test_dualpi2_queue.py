"""DualPI2 in the scenario (RFC 9332; crates/link/src/qdisc/dualpi2.rs): its settings resolve to
the engine spec's ``dualpi2`` object with the RFC's defaults, each setting belongs to it and is
refused elsewhere with one clear message, the engine's rules come back named by the scenario's
field, the spec of every other queue is unchanged, and a run through it keeps the Classic queue
near PI2's target where DropTail fills its buffer."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

import ccarena
from ccarena.errors import UserError
from ccarena.runspec import DualPi2Spec, QueueSpec, canonical_json
from ccarena.topology.links import Queue

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart.toml"


def test_defaults_are_rfc_9332s() -> None:
    spec = Queue(discipline="dualpi2", limit="200pkt").spec_fields()
    assert spec.dualpi2 == DualPi2Spec(
        target_ns=15_000_000, tupdate_ns=16_000_000, alpha=0.16, beta=3.2, coupling=2.0,
        l4s_threshold_ns=1_000_000, l4s_ramp_ns=0, l4s_min_qlen_packets=1, tshift_ns=30_000_000)
    assert (spec.pie, spec.codel, spec.limit_packets) == (None, None, 200)


def test_every_setting_reaches_the_spec() -> None:
    q = Queue(discipline="dualpi2", limit="150KB", target="20ms", tupdate="10ms", alpha=0.3, beta=2,
              coupling=1.5, l4s_threshold="800us", l4s_ramp="400us", l4s_min_qlen=0, tshift="50ms")
    d = q.spec_fields().dualpi2
    assert d is not None
    assert (d.target_ns, d.tupdate_ns, d.alpha, d.beta, d.coupling) == (20_000_000, 10_000_000, 0.3, 2.0, 1.5)
    assert (d.l4s_threshold_ns, d.l4s_ramp_ns, d.l4s_min_qlen_packets, d.tshift_ns) == (800_000, 400_000, 0, 50_000_000)


def test_other_queues_serialize_as_before() -> None:
    for discipline in ("droptail", "red", "codel", "fq_codel", "pie", "fq"):
        dumped = canonical_json(Queue(discipline=discipline).spec_fields().model_dump(mode="json", by_alias=True))
        assert "dualpi2" not in dumped and "coupling" not in dumped, discipline


@pytest.mark.parametrize("fields, field, fragment", [
    ({"discipline": "pie", "coupling": 2}, "coupling", 'is a DualPI2 setting; add discipline = "dualpi2"'),
    ({"l4s_threshold": "1ms"}, "l4s_threshold", 'is a DualPI2 setting; add discipline = "dualpi2"'),
    ({"discipline": "dualpi2", "ecn": True}, "ecn", "not of DualPI2"),
    ({"discipline": "dualpi2", "interval": "100ms"}, "interval", "not of DualPI2"),
    ({"discipline": "dualpi2", "ecn_threshold": "10pkt"}, "ecn_threshold", "DualPI2 marks L4S packets at l4s_threshold"),
])
def test_settings_belong_to_their_discipline(tmp_path: Path, fields: dict, field: str, fragment: str) -> None:
    raw = tomllib.loads(QUICKSTART.read_text())
    raw["topology"]["bottleneck"]["queue"] = {"limit": "100pkt", **fields}
    with pytest.raises(UserError) as e:
        ccarena.run(raw, tmp_path / "out")
    message = str(e.value)
    assert message.startswith(f"topology.bottleneck.queue.{field}: "), message
    assert fragment in message, message


def test_the_engines_rules_name_the_field() -> None:
    good = Queue(discipline="dualpi2").spec_fields()
    assert good.engine_problem() is None
    bad = good.model_copy(update={"dualpi2": good.dualpi2.model_copy(update={"target_ns": 0})})
    assert bad.engine_problem() == ("dualpi2.target_ns", "must be positive")
    missing = QueueSpec(discipline="dualpi2", limit_packets=100, limit_bytes=None)
    assert missing.engine_problem() == ("dualpi2", 'required with discipline "dualpi2"')


def test_classic_flows_through_dualpi2_keep_the_delay_near_the_target(tmp_path: Path) -> None:
    """Two Classic flows (CUBIC, Reno: Not-ECT, the Classic queue) through a 1000-packet
    DualPI2 at 20 Mbit/s: PI2 holds the queueing delay near its 15 ms target, where DropTail's
    standing queue fills most of the 600 ms buffer."""
    rtts = {}
    for discipline in ("droptail", "dualpi2"):
        raw = tomllib.loads(QUICKSTART.read_text())
        raw["duration"] = "15s"
        raw["topology"]["bottleneck"]["queue"] = {"discipline": discipline, "limit": "1000pkt"}
        summary = ccarena.run(raw, tmp_path / discipline).summary
        rtts[discipline] = float(summary["rtt_mean_s"].max()) - float(summary["base_rtt_s"].iloc[0])
        goodput = float(summary["goodput_mean_bps"].sum())
        assert goodput > 0.8 * 20e6 * 1448 / 1500, (discipline, goodput)
    assert rtts["droptail"] > 0.2, rtts
    assert 0.005 < rtts["dualpi2"] < 0.03, rtts
