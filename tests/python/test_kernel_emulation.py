"""The kernel backend's link emulation, without root: which mechanisms a run gets, the relay's
config built from a spec (links, queues, events), its sampling grid, and the queue rows made
from its samples."""

from __future__ import annotations

import socket

import pytest
from ccarena.backends.kernel import measured_tables, relay_driver
from ccarena.backends.kernel.capabilities import Capabilities
from ccarena.backends.kernel.emulation_choice import choose
from ccarena.backends.kernel.names import RunNames
from ccarena.backends.kernel.netns import plan_network
from ccarena.backends.kernel.shaping import QueueReading
from ccarena.errors import UserError
from ccarena.experiment import resolve_run
from ccarena.runspec import RunSpec
from ccarena.scenario import validate_scenario

DUMBBELL = {
    "name": "t", "duration": "10s",
    "topology": {"kind": "dumbbell", "pairs": 1,
                 "bottleneck": {"rate": "10Mbps", "delay": "10ms", "loss": "1%",
                                "queue": {"limit": "50pkt"}},
                 "access": {"rate": "100Mbps", "delay": "0ms", "queue": {"limit": "30KB"}}},
    "flows": [{"from": "left0", "to": "right0", "flavor": "cubic"}],
    "events": [{"at": "4s", "link": "r0->r1", "set": {"rate": "5Mbps"}},
               {"at": "6s", "link": "r0->r1", "set": {"limit": "20pkt"}}],
}


def caps(netem: bool, relay: bool = True) -> Capabilities:
    return Capabilities(privileged=True, tools={}, congestion_controls=["cubic"],
                        qdiscs={"netem": netem}, relay=relay)


def spec() -> RunSpec:
    return resolve_run(validate_scenario(DUMBBELL), seed=3).spec


def test_auto_takes_the_kernels_qdiscs_with_netem_and_the_relay_without() -> None:
    s = spec()
    with_netem = choose(s, caps(netem=True))
    assert (with_netem.mode, with_netem.rate_and_queue, with_netem.delay, with_netem.loss) == ("tc", "htb", "netem", "nft")
    without = choose(s, caps(netem=False))
    assert (without.mode, without.rate_and_queue, without.delay, without.loss) == ("relay", "relay", "relay", "relay")
    tc_here = choose(s, caps(netem=False), "tc")
    assert (tc_here.rate_and_queue, tc_here.delay, tc_here.loss) == ("htb", "relay", "nft")
    # In tc mode the relay carries only the delayed links (the access links have no delay).
    assert [tc_here.relays(link) for link in s.links] == [link.delay_ns > 0 for link in s.links]
    assert all(without.relays(link) for link in s.links)
    assert without.describe()["details"]["rate_and_queue"].startswith("ccarena's link emulator")


def test_modes_that_cannot_work_are_one_line() -> None:
    with pytest.raises(UserError, match=r"^kernel.emulation: unknown mode 'fast' \(choose auto, relay or tc\)$"):
        choose(spec(), caps(netem=False), "fast")
    with pytest.raises(UserError, match=r"^kernel.emulation: 'relay' needs ccarena's relay"):
        choose(spec(), caps(netem=True, relay=False), "relay")
    # Without netem and without the relay, auto falls back to the kernel's qdiscs.
    assert choose(spec(), caps(netem=False, relay=False)).mode == "tc"


def test_the_relay_config_is_the_specs_links_queues_and_events() -> None:
    s = spec()
    plan = plan_network(s, RunNames("tx"), choose(s, caps(netem=False)))
    config = relay_driver.relay_config(plan, s, choose(s, caps(netem=False)), sample_origin_ns=123)
    assert (config["sample_origin_ns"], config["sample_interval_ns"]) == (123, s.sample_interval_ns)
    assert config["min_wake_interval_ns"] == relay_driver.TIMING["min_wake_interval_ns"]
    by_name = {p["name"]: p for p in config["pipes"]}
    assert len(by_name) == len(plan.links) == 3
    bottleneck = by_name["r0->r1"]
    forward = bottleneck["a_to_b"]
    assert (forward["rate_bps"], forward["delay_ns"], forward["loss"], forward["limit_packets"]) == (
        10_000_000, 10_000_000, 0.01, 50)
    # The events land on the r0 → r1 direction only, at their time after t0.
    assert forward["changes"] == [{"at_ns": 4_000_000_000, "rate_bps": 5_000_000},
                                  {"at_ns": 6_000_000_000, "limit_packets": 20}]
    assert "changes" not in bottleneck["b_to_a"]
    access = by_name["left0->r0"]["a_to_b"]
    assert (access["rate_bps"], access["limit_bytes"], access["delay_ns"]) == (100_000_000, 30_000, 0)
    # Each spec link maps to its pipe and direction, which draws from that link's simulator
    # streams (common random numbers with the simulated twin).
    directions = relay_driver.relayed_directions(plan)
    assert sorted(directions) == list(range(len(s.links)))
    for link, (index, direction) in directions.items():
        assert config["pipes"][index][direction]["rate_bps"] == s.links[link].rate_bps
        assert config["pipes"][index][direction]["stream_index"] == link


def test_in_tc_mode_the_relay_only_delays() -> None:
    s = spec()
    emu = choose(s, caps(netem=False), "tc")
    pipes = relay_driver.pipes(plan_network(s, RunNames("tx"), emu), s, emu)
    assert [p["name"] for p in pipes] == ["r0->r1"]
    assert pipes[0]["a_to_b"] == {"delay_ns": 10_000_000, "loss": 0.0}
    config = relay_driver.relay_config(plan_network(s, RunNames("tx"), emu), s, emu, sample_origin_ns=5)
    assert "sample_interval_ns" not in config  # htb is the queue: nothing for the relay to sample


def test_t0_falls_on_the_sampling_grid() -> None:
    assert relay_driver.on_grid(50, 100, 10) == 100
    assert relay_driver.on_grid(100, 100, 10) == 100
    assert relay_driver.on_grid(101, 100, 10) == 110
    assert relay_driver.on_grid(1_234, 100, 100) == 1_300


def test_queue_rows_take_the_mean_wait_of_each_intervals_departures() -> None:
    def reading(departures: int, sojourn_ns: int, backlog: int = 0) -> QueueReading:
        return QueueReading(backlog_bytes=1500 * backlog, backlog_packets=backlog, drops=1,
                            departures=departures, departed_bytes=1500 * departures,
                            sojourn_total_ns=sojourn_ns, lost_wire=0, busy_ns=0)

    baseline = {0: reading(10, 1_000_000)}
    readings = [(0.1, {0: reading(20, 3_000_000, backlog=4)}), (0.2, {0: reading(20, 3_000_000)})]
    rows = measured_tables.queue_rows(readings, baseline)
    assert rows[0]["sojourn_mean_s"] == pytest.approx(2_000_000 / 10 / 1e9)
    assert rows[1]["sojourn_mean_s"] is None  # nothing left the queue in that interval
    assert (rows[0]["departures"], rows[0]["drops"], rows[0]["arrivals"]) == (10, 0, 14)
    # htb readings carry no times: NaN as before.
    htb = QueueReading(backlog_bytes=0, backlog_packets=0, drops=0, departures=5, departed_bytes=7500)
    assert measured_tables.queue_rows([(0.1, {0: htb})], {})[0]["sojourn_mean_s"] is None


def test_a_late_cbr_sender_skips_what_fell_due_long_ago_instead_of_bursting() -> None:
    from ccarena.backends.kernel.trafficgen import MAX_CATCH_UP_NS, due_slots

    period = 1_000_000  # one datagram per ms from t = 0, none at or after 1 s
    assert due_slots(0, 0, 0, period, 1_000_000_000) == (0, 1)
    assert due_slots(1, 3_500_000, 0, period, 1_000_000_000) == (1, 4)  # on time: every slot due
    # Woken 300 ms late: the slots of the last 5 ms go out, the 295 before them are skipped.
    first, end = due_slots(4, 303_000_000, 0, period, 1_000_000_000)
    assert end == 304 and end - first == MAX_CATCH_UP_NS // period + 1
    # Nothing is due at or after the stop, and a slot due long ago stays skipped.
    assert due_slots(990, 1_002_000_000, 0, period, 1_000_000_000) == (997, 1000)
    assert due_slots(990, 2_000_000_000, 0, period, 1_000_000_000) == (1000, 1000)


def test_a_tcp_sender_connects_before_t0_and_sends_from_its_start(tmp_path) -> None:
    """The handshake is not part of a kernel flow (the simulator has none): a SYN lost at a queue
    another flow filled would hold the flow back by the 1 s initial RTO. On loopback, a flow that
    starts 0.4 s after t0 is connected before t0 and its first byte arrives after its start."""
    import threading
    import time

    from ccarena.backends.kernel import trafficgen

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    t0 = time.monotonic_ns() + 300_000_000
    base = {"t0_mono_ns": t0, "interval_ns": 100_000_000, "duration_ns": 800_000_000,
            "start_ns": 400_000_000, "stop_ns": None, "port": port, "parent_pid": 0}
    results: dict[str, dict] = {}
    recv = threading.Thread(target=lambda: results.update(recv=trafficgen.tcp_recv(
        {**base, "role": "tcp-recv", "bind": "127.0.0.1", "start_ns": 0,
         "out": str(tmp_path / "r.json")})))
    recv.start()
    time.sleep(0.05)
    results["send"] = trafficgen.tcp_send(
        {**base, "role": "tcp-send", "bind": "127.0.0.1", "peer": "127.0.0.1", "flavor": "cubic",
         "bytes": 100_000, "mss_bytes": None, "out": str(tmp_path / "s.json")})
    recv.join(10)
    send, got = results["send"], results["recv"]
    assert send["ok"] and got["ok"], (send, got)
    assert send["connected_s"] < 0, f"connected {send['connected_s']:.3f} s after t0"
    delivered = {round(s["time_s"], 3): s["delivered_bytes"] for s in got["samples"]}
    assert delivered[0.3] == 0 and delivered[0.8] == 100_000, delivered
