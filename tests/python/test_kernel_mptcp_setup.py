"""Linux MPTCP on the kernel backend, without root: what is refused (one line each), the path
manager's set-up planned from a fat-tree spec (extra sender addresses, endpoints, limits, the
routes back to them), and the connection and subflow rows made from MPTCP_FULL_INFO readings."""

from __future__ import annotations

import math
import socket
import struct

import pytest
from ccarena.backends.kernel import measured_tables, mptcp, trafficgen
from ccarena.backends.kernel.emulation_choice import Emulation
from ccarena.backends.kernel.names import RunNames
from ccarena.backends.kernel.netns import plan_network
from ccarena.errors import UserError
from ccarena.experiment import resolve_run
from ccarena.scenario import validate_scenario


def fat_tree(**flow) -> dict:
    return {
        "name": "t", "duration": "2s",
        "topology": {"kind": "fat_tree", "k": 4,
                     "host": {"rate": "100Mbps", "delay": "0.2ms", "queue": {"limit": "100pkt"}},
                     "edge": {"rate": "100Mbps", "delay": "0.2ms", "queue": {"limit": "100pkt"}},
                     "core": {"rate": "40Mbps", "delay": "0.5ms", "queue": {"limit": "100pkt"}}},
        "flows": [{"from": "pod0-edge0-h0", "to": "pod3-edge1-h1", "flavor": "cubic", **flow}],
    }


def spec_of(raw: dict):
    return resolve_run(validate_scenario(raw), seed=1).spec


def node(spec, name: str) -> int:
    return [n.name for n in spec.nodes].index(name)


def test_what_linux_mptcp_lacks_is_refused_in_one_line_naming_the_field() -> None:
    for coupling in ("lia", "olia", "balia"):
        with pytest.raises(UserError, match=rf"^flows\[0\]\.coupling: Linux has no coupled MPTCP congestion "
                                            rf"control upstream \({coupling} is not in the kernel\); use "
                                            r"coupling = \"uncoupled\" on the kernel backend, or run"):
            mptcp.check_flows(spec_of(fat_tree(subflows=2, coupling=coupling, flavor="reno")), True, ["default"])
    with pytest.raises(UserError, match=r"^flows\[0\]\.scheduler: this kernel's MPTCP has no \"roundrobin\" "
                                        r"scheduler \(net.mptcp.available_schedulers: default\)"):
        mptcp.check_flows(spec_of(fat_tree(subflows=2, scheduler="roundrobin")), True, ["default"])
    # A kernel that offers a scheduler of that name runs it.
    mptcp.check_flows(spec_of(fat_tree(subflows=2, scheduler="roundrobin")), True, ["default", "roundrobin"])
    with pytest.raises(UserError, match=r"^flows\[0\]\.join_delay: "):
        mptcp.check_flows(spec_of(fat_tree(subflows=2, join_delay="50ms")), True, ["default"])
    with pytest.raises(UserError, match=r"^flows\[0\]\.subflows: Linux's path manager opens at most 9 "
                                        r"subflows per connection, not 10"):
        mptcp.check_flows(spec_of(fat_tree(subflows=10)), True, ["default"], 8)
    with pytest.raises(UserError, match=r"^flows\[0\]\.subflows: this kernel has no Multipath TCP"):
        mptcp.check_flows(spec_of(fat_tree(subflows=2)), False, ["default"])
    raw = fat_tree(subflows=2)
    raw["flows"].append({"from": "pod0-edge0-h0", "to": "pod2-edge0-h0", "flavor": "cubic", "subflows": 3})
    with pytest.raises(UserError, match=r"^flows\[1\]\.subflows: Linux's MPTCP endpoints are per host, and "
                                        r"'pod0-edge0-h0' also sends flows\[0\] with subflows = 2"):
        mptcp.check_flows(spec_of(raw), True, ["default"])
    # Uncoupled MPTCP (and plain TCP, whatever the kernel) passes.
    mptcp.check_flows(spec_of(fat_tree(subflows=9)), True, ["default"], 8)
    mptcp.check_flows(spec_of(fat_tree()), False, [])


def test_opportunistic_retransmission_is_refused_on_the_kernel_in_one_line() -> None:
    with pytest.raises(UserError, match=r"^flows\[0\]\.opportunistic: upstream Linux MPTCP has no "
                                        r"opportunistic retransmission or penalisation") as e:
        mptcp.check_flows(spec_of(fat_tree(subflows=2, opportunistic=True)), True, ["default"])
    assert "\n" not in str(e.value)
    mptcp.check_flows(spec_of(fat_tree(subflows=2, opportunistic=False)), True, ["default"])


def test_explicit_subflow_source_ports_are_refused_on_the_kernel_in_one_line() -> None:
    # The in-kernel path manager binds each subflow it opens to an ephemeral port.
    with pytest.raises(UserError, match=r"^flows\[0\]\.source_ports: Linux's in-kernel path manager "
                                        r"binds each subflow to an ephemeral source port .* remove "
                                        r"source_ports or use --backend sim$") as e:
        mptcp.check_flows(spec_of(fat_tree(source_ports=[40001, 40002])), True, ["default"])
    assert "\n" not in str(e.value)
    mptcp.check_flows(spec_of(fat_tree(subflows=2)), True, ["default"])


def test_the_path_manager_gets_an_extra_routed_address_per_extra_subflow() -> None:
    spec = spec_of(fat_tree(subflows=4))
    names = RunNames("tmp1")
    plan = plan_network(spec, names, Emulation("relay", "relay", "relay", "none"))
    mp = mptcp.plan_mptcp(spec, plan)
    src, dst = node(spec, "pod0-edge0-h0"), node(spec, "pod3-edge1-h1")
    extra = [mptcp.extra_address(src, j) for j in (1, 2, 3)]
    assert len(set(extra)) == 3 and all(a.startswith("172.16.") for a in extra)
    assert mp.hosts == {plan.ns(src): (3, 3), plan.ns(dst): (3, 3)}
    ifname, addrs = mp.endpoints[plan.ns(src)]
    assert addrs == extra and ifname.startswith("l")
    assert set(mp.scheduler.values()) == {"default"}
    routes = {(ns, addr): hops for ns, addr, hops in mp.routes}
    # Every node that routes to the sender's own address routes to each extra address the same way.
    first = plan.host_addresses[src][0]
    own = {ns: hops for ns, addr, hops in plan.routes if addr == first}
    for addr in extra:
        for ns, hops in own.items():
            assert routes[(ns, addr)] == hops
    # The sender's edge switch reaches it on-link: via the host's own address on that link.
    edge = plan.ns(node(spec, "pod0-edge0"))
    assert routes[(edge, extra[0])] == ((ifname, first),)
    # A core-bound edge switch in another pod has an equal-cost multipath route back.
    assert len(routes[(plan.ns(node(spec, "pod3-edge1")), extra[0])]) == 2
    lines = mptcp.commands(mp)
    assert lines[plan.ns(src)][:3] == ["mptcp limits set subflows 3 add_addr_accepted 3",
                                       f"address add {extra[0]}/32 dev {ifname}",
                                       f"mptcp endpoint add {extra[0]} dev {ifname} subflow"]
    # The receiver accepts the joins and routes its answers back to each extra address.
    assert lines[plan.ns(dst)][0] == "mptcp limits set subflows 3 add_addr_accepted 3"
    assert [line.split()[2] for line in lines[plan.ns(dst)][1:]] == [f"{a}/32" for a in extra]
    assert any(line.startswith(f"route add {extra[0]}/32 nexthop via ")
               for line in lines[plan.ns(node(spec, "pod3-edge1"))])
    # A single-path run sets nothing up.
    assert mptcp.plan_mptcp(spec_of(fat_tree()), plan).empty()


def info(bytes_acked: int, cwnd: int, rtt_us: int, sent: int, retrans: int = 0, min_rtt: int = 900) -> dict:
    """A TCP_INFO reading as trafficgen.tcp_info returns it (the fields the rows use)."""
    return {"snd_mss": 1448, "snd_ssthresh": trafficgen.INFINITE_SSTHRESH, "snd_cwnd": cwnd,
            "rtt": rtt_us, "rttvar": rtt_us // 2, "rto": 204_000, "unacked": 10, "sacked": 0, "lost": 0,
            "retrans": 0, "pacing_rate": 1 << 20, "delivery_rate": 1000, "total_retrans": retrans,
            "ca_state": 0, "min_rtt": min_rtt, "bytes_sent": sent, "bytes_acked": bytes_acked,
            "bytes_retrans": retrans * 1448, "bytes_received": 0, "data_segs_out": sent // 1448,
            "data_segs_in": 0, "total_rto": 0, "rcv_mss": 536, "dsack_dups": 0}


def test_a_connection_sample_sums_its_subflows_and_takes_the_smallest_rtt() -> None:
    subflows = [{"id": 2, "info": info(2001, 20, 3000, 4000, retrans=1, min_rtt=2500)},
                {"id": 1, "info": info(1001, 10, 1000, 2000)}]
    conn, rows = trafficgen.mptcp_sample(subflows)
    assert [r["subflow"] for r in rows] == [0, 1]  # Linux's ids − 1, the initial subflow first
    assert [r["delivered_bytes"] for r in rows] == [1000, 2000]  # bytes_acked less the SYN
    assert conn["cwnd_bytes"] == 30 * 1448 and conn["sent_bytes"] == 6000
    assert conn["inflight_bytes"] == 2 * 10 * 1448 and conn["retransmits"] == 1
    assert conn["srtt_s"] == pytest.approx(0.001) and conn["rttvar_s"] == pytest.approx(0.0005)
    assert conn["ssthresh_bytes"] is None and conn["pacing_rate_bps"] is None
    book = trafficgen.SubflowBook()
    book.totals = {1: trafficgen.totals_from(subflows[1]["info"]), 2: trafficgen.totals_from(subflows[0]["info"])}
    summed = book.summed()
    assert summed["bytes_sent"] == 6000 and summed["total_retrans"] == 1 and summed["min_rtt"] == 900
    assert summed["snd_mss"] == 1448


def test_subflow_rows_give_each_subflows_goodput_over_the_interval() -> None:
    spec = spec_of(fat_tree(subflows=2))
    samples = [{"time_s": 0.1, "subflows": [{"subflow": 0, "delivered_bytes": 10_000, "sent_bytes": 11_000,
                                             "cwnd_bytes": 14480, "srtt_s": 0.002, "inflight_bytes": 0,
                                             "retransmits": 0, "rto_count": 0}]},
               {"time_s": 0.2, "subflows": [{"subflow": 0, "delivered_bytes": 35_000, "sent_bytes": 36_000,
                                             "cwnd_bytes": 14480, "srtt_s": 0.002, "inflight_bytes": 0,
                                             "retransmits": 0, "rto_count": 0},
                                            {"subflow": 1, "delivered_bytes": 5_000, "sent_bytes": 5_000,
                                             "cwnd_bytes": 14480, "srtt_s": 0.003, "inflight_bytes": 0,
                                             "retransmits": 0, "rto_count": 0}]}]
    results = {(0, "send"): {"samples": samples, "mptcp": {"subflows_seen": 2, "conn": {"bytes_retrans": 7}}}}
    rows = measured_tables.subflow_rows(spec, results)
    goodput = [(r["time_s"], r["subflow"], r["goodput_bps"]) for r in rows]
    assert goodput == [(0.1, 0, 800_000.0), (0.2, 0, 2_000_000.0), (0.2, 1, 400_000.0)]
    df = measured_tables.frame(rows, measured_tables.SUBFLOW_COLUMNS)
    assert list(df.columns) == list(measured_tables.SUBFLOW_COLUMNS)
    assert df["bytes_scheduled"].isna().all()
    # Not measured on Linux (no opportunistic retransmission upstream): null, not 0.
    for column in ("opportunistic_retransmits", "opportunistic_bytes", "penalisations"):
        assert df[column].isna().all(), column
    cols = measured_tables._mptcp_columns(results[(0, "send")])
    assert cols["subflows"] == 2 and cols["coupling"] == "uncoupled" and cols["bytes_reinjected"] == 7
    assert math.isnan(measured_tables.frame([cols], ("reorder_delay_mean_s",))["reorder_delay_mean_s"][0])
    assert measured_tables.subflow_rows(spec, {(0, "send"): {"samples": samples}}) == []


def test_subflow_addresses_are_read_from_sockaddr_storage() -> None:
    raw = struct.pack("H", socket.AF_INET) + struct.pack("!H", 40001) + socket.inet_aton("172.16.0.1")
    assert trafficgen._sockaddr(raw.ljust(128, b"\0")) == "172.16.0.1:40001"
    assert trafficgen._sockaddr(struct.pack("H", socket.AF_INET6).ljust(128, b"\0")) is None


def test_an_mptcp_flows_rtt_counts_every_subflow_by_the_data_it_carried() -> None:
    # The simulator's flows row averages every ACK's RTT over all subflows; the kernel gives one
    # srtt per subflow per instant, so each counts by the bytes its subflow delivered since the
    # last. A 10 ms subflow carrying 9,000 bytes an interval and a 100 ms one carrying 1,000:
    # mean 19 ms (the smallest srtt, the samples rows' connection srtt, would say 10).
    def sf(i: int, delivered: int, srtt_s: float) -> dict:
        return {"subflow": i, "delivered_bytes": delivered, "srtt_s": srtt_s}

    samples = [{"time_s": 0.1 * k, "subflows": [sf(0, 9_000 * k, 0.010), sf(1, 1_000 * k, 0.100)]}
               for k in range(1, 11)]
    samples.append({"time_s": 1.1, "subflows": [sf(0, 90_000, 0.010), sf(1, 10_000, 0.100)]})  # idle: no weight
    rtts, weights = measured_tables.mptcp_rtt_samples({"samples": samples}, 0.1, 0.0, 2.0)
    assert len(rtts) == 20 and sum(weights) == 100_000
    row = measured_tables._tcp_flow_row(0, spec_of(fat_tree(subflows=2)).flows[0], {}, {}, 0.0, 2.0,
                                        rtts, weights)
    assert row["rtt_mean_s"] == pytest.approx(0.019)
    assert row["rtt_p50_s"] == pytest.approx(0.010) and row["rtt_p95_s"] == pytest.approx(0.100)
    assert row["rtt_samples"] == 20
    # Outside the flow's interval nothing counts.
    assert measured_tables.mptcp_rtt_samples({"samples": samples}, 0.1, 0.5, 2.0)[1] == [9_000, 1_000] * 6
