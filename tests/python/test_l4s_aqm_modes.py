"""The L4S modes of the single-queue AQMs (crates/link/src/qdisc/selector.rs): CoDel's and
FQ-CoDel's ``ce_threshold`` / ``ce_threshold_selector`` (Linux's, tc-codel(8), tc-fq_codel(8)) and DropTail's
``ecn_threshold_selector``. Their scenario settings reach the engine spec, are left out of its JSON
when unset (every existing spec serializes, and hashes, as before), belong to their discipline,
come back from the engine's rules named by the scenario's field, reach the relay's config, and
change what a run marks: the ``"l4s"`` selector leaves Classic ECT(0) traffic unmarked."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

import ccarena
from ccarena.backends.kernel.emulation_choice import Emulation
from ccarena.backends.kernel.relay_driver import direction_config
from ccarena.errors import UserError
from ccarena.experiment import expand
from ccarena.runspec import FqCodelSpec, QueueSpec, canonical_json
from ccarena.scenario import load_scenario
from ccarena.topology.links import Queue

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart.toml"


def _json(queue: Queue) -> str:
    return canonical_json(queue.spec_fields().model_dump(mode="json", by_alias=True))


def test_unset_fields_leave_the_spec_as_before() -> None:
    for queue in (Queue(discipline="fq_codel", ecn=True), Queue(ecn_threshold="20pkt"), Queue()):
        dumped = _json(queue)
        assert "ce_threshold" not in dumped and "selector" not in dumped, dumped
    assert Queue(discipline="fq_codel").spec_fields().fq_codel == FqCodelSpec(
        target_ns=5_000_000, interval_ns=100_000_000, flows=1024, quantum_bytes=1514, ecn=False)


def test_the_settings_reach_the_spec_and_its_json() -> None:
    q = Queue(discipline="fq_codel", ecn=True, ce_threshold="1ms", ce_threshold_selector="l4s")
    f = q.spec_fields().fq_codel
    assert f is not None
    assert (f.ce_threshold_ns, f.ce_threshold_selector, f.ecn) == (1_000_000, "l4s", True)
    assert '"ce_threshold_ns":1000000,"ce_threshold_selector":"l4s"' in _json(q)
    # A threshold alone: every ECN-capable packet (Linux's default), the selector left out.
    alone = Queue(discipline="fq_codel", ce_threshold="500us").spec_fields().fq_codel
    assert alone is not None and (alone.ce_threshold_ns, alone.ce_threshold_selector) == (500_000, None)
    # CoDel's (tc-codel(8)): "all", the engine's default, is written as absent.
    c = Queue(discipline="codel", ecn=True, ce_threshold="1ms", ce_threshold_selector="l4s")
    assert '"ce_threshold_ns":1000000,"ce_threshold_selector":"l4s"' in _json(c)
    c_all = Queue(discipline="codel", ce_threshold="1ms", ce_threshold_selector="all").spec_fields()
    assert c_all.codel is not None and (c_all.codel.ce_threshold_ns, c_all.codel.ce_threshold_selector) == (1_000_000, None)
    assert "ce_threshold" not in _json(Queue(discipline="codel", ecn=True))
    d = Queue(limit="200pkt", ecn_threshold="20pkt", ecn_threshold_selector="l4s").spec_fields()
    assert (d.ecn_threshold_packets, d.ecn_threshold_selector) == (20, "l4s")
    assert '"ecn_threshold_selector":"l4s"' in _json(Queue(ecn_threshold="30KB", limit="150KB",
                                                          ecn_threshold_selector="l4s"))


@pytest.mark.parametrize("fields, field, fragment", [
    ({"discipline": "fq_codel", "ce_threshold_selector": "l4s"}, "ce_threshold_selector",
     "needs ce_threshold"),
    ({"ecn_threshold_selector": "l4s"}, "ecn_threshold_selector", "needs ecn_threshold"),
    ({"ce_threshold": "1ms"}, "ce_threshold", "is a setting of CoDel, FQ-CoDel, not of DropTail"),
    ({"discipline": "pie", "ce_threshold": "1ms"}, "ce_threshold", "is a setting of CoDel, FQ-CoDel"),
    ({"discipline": "codel", "ce_threshold_selector": "all"}, "ce_threshold_selector",
     "needs ce_threshold"),
    ({"discipline": "codel", "ecn_threshold_selector": "l4s"}, "ecn_threshold_selector",
     "CoDel selects the packets its ce_threshold marks with ce_threshold_selector"),
    ({"discipline": "pie", "ecn_threshold_selector": "all"}, "ecn_threshold_selector",
     'is a DropTail setting; add discipline = "droptail"'),
    ({"discipline": "fq_codel", "ecn_threshold_selector": "l4s"}, "ecn_threshold_selector",
     "FQ-CoDel selects the packets its ce_threshold marks with ce_threshold_selector"),
    ({"ecn_threshold": "10pkt", "ecn_threshold_selector": "ect1"}, "ecn_threshold_selector", "'all' or 'l4s'"),
    ({"discipline": "fq_codel", "ce_threshold": "-1ms"}, "ce_threshold", ""),
])
def test_settings_belong_to_their_discipline(tmp_path: Path, fields: dict, field: str, fragment: str) -> None:
    raw = tomllib.loads(QUICKSTART.read_text())
    raw["topology"]["bottleneck"]["queue"] = {"limit": "100pkt", **fields}
    with pytest.raises(UserError) as e:
        ccarena.run(raw, tmp_path / "out")
    message = str(e.value)
    assert f"topology.bottleneck.queue.{field}" in message, message
    assert fragment in message, message


def test_the_engines_rules_name_the_field() -> None:
    good = Queue(discipline="fq_codel", ce_threshold="1ms", ce_threshold_selector="l4s").spec_fields()
    assert good.engine_problem() is None
    bad = good.model_copy(update={"fq_codel": good.fq_codel.model_copy(update={"ce_threshold_ns": None})})
    assert bad.engine_problem() == ("fq_codel.ce_threshold_selector",
                                    "needs ce_threshold (the sojourn time above which it marks)")
    step = QueueSpec(discipline="droptail", limit_packets=100, limit_bytes=None, ecn_threshold_selector="l4s")
    assert step.engine_problem() == ("ecn_threshold_selector", "needs ecn_threshold (the step it selects for)")
    assert step.model_copy(update={"ecn_threshold_packets": 10}).engine_problem() is None


def test_the_relay_config_carries_the_selector_and_the_threshold() -> None:
    raw = tomllib.loads(QUICKSTART.read_text())
    raw["topology"]["bottleneck"]["queue"] = {"limit": "100pkt", "ecn_threshold": "10pkt",
                                              "ecn_threshold_selector": "l4s"}
    spec = expand(load_scenario(raw))[0].resolved.spec
    link = next(i for i, l in enumerate(spec.links) if l.queue.ecn_threshold_selector == "l4s")
    relay = Emulation(mode="relay", rate_and_queue="relay", delay="relay", loss="relay")
    out = direction_config(spec, link, relay, link)
    assert (out["ecn_threshold_packets"], out["ecn_threshold_selector"]) == (10, "l4s")
    fq = Queue(discipline="fq_codel", ce_threshold="1ms", ce_threshold_selector="l4s").spec_fields()
    assert fq.fq_codel is not None
    assert fq.fq_codel.model_dump()["ce_threshold_ns"] == 1_000_000
    assert "ce_threshold_ns" not in Queue(discipline="fq_codel").spec_fields().fq_codel.model_dump()


def _dctcp_run(tmp_path: Path, name: str, queue: dict) -> float:
    """Two DCTCP flows (ECT(0), the Classic ECN codepoint) over quickstart's 20 Mbit/s
    bottleneck with ``queue``: the largest flow's mean queueing delay, s."""
    raw = tomllib.loads(QUICKSTART.read_text())
    raw["duration"] = "8s"
    for flow in raw["flows"]:
        flow["flavor"] = "dctcp"
    raw["topology"]["bottleneck"]["queue"] = queue
    summary = ccarena.run(raw, tmp_path / name).summary
    return float(summary["rtt_mean_s"].max()) - float(summary["base_rtt_s"].iloc[0])


@pytest.mark.parametrize("queue, short_s", [
    ({"limit": "600pkt", "ecn_threshold": "20pkt"}, 0.025),
    ({"discipline": "fq_codel", "limit": "600pkt", "ce_threshold": "1ms", "target": "50ms",
      "interval": "500ms"}, 0.01),
], ids=["droptail", "fq_codel"])
def test_the_l4s_selector_leaves_classic_ect0_traffic_unmarked(tmp_path: Path, queue: dict,
                                                               short_s: float) -> None:
    """DCTCP sends ECT(0) unless asked for ECT(1): a shallow threshold on every ECT packet keeps
    its queue short (DropTail's 20 packets are 12 ms at 20 Mbit/s; FQ-CoDel's 1 ms sojourn);
    restricted to L4S packets it marks none of them, and the run is the run without the threshold
    (DropTail's 600 packets fill; FQ-CoDel holds its loose 50 ms CoDel target)."""
    selector = "ecn_threshold_selector" if "ecn_threshold" in queue else "ce_threshold_selector"
    all_delay = _dctcp_run(tmp_path, "all", queue)
    l4s_delay = _dctcp_run(tmp_path, "l4s", {**queue, selector: "l4s"})
    plain = {k: v for k, v in queue.items() if k not in ("ecn_threshold", "ce_threshold")}
    plain_delay = _dctcp_run(tmp_path, "plain", plain)
    assert all_delay < short_s, (all_delay, l4s_delay, plain_delay)
    assert l4s_delay > 3 * all_delay, (all_delay, l4s_delay, plain_delay)
    assert l4s_delay == plain_delay, (l4s_delay, plain_delay)
