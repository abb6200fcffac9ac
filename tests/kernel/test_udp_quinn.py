"""QUIC flows on a production QUIC stack (``[kernel] quic_impl = "quinn"`` / ``"quinn-native"``,
issue 33): quinn connections between the udp backend's namespaces, through the relay's shaped
100 Mbit/s, 20 ms RTT path, one 5 s run each.

- ccarena's CUBIC inside quinn fills the path (≥ 90 % of 100 Mbit/s over 1–5 s) and matches its
  simulated twin (the simulator's QUIC with the same controller) within the bands the single-flow
  TCP test uses: delivered bytes by 5 s within 5 %, RTT floor within 2 ms. Measured here: 96.5
  Mbit/s, +0.7 % of the simulator's bytes, RTT floor 20.26 vs 20.13 ms.
- quinn's own CUBIC (the reference) fills the path too (95.9 Mbit/s measured).
- quinn's CUBIC beside Linux's TCP CUBIC (``tcp_impl = "linux"``) at one 50 Mbit/s bottleneck:
  the link stays full and neither starves; QUIC's share is printed beside the simulator's
  prediction (measured: 0.59 against the simulator's 0.42 for its own QUIC and TCP CUBIC).
- What quinn fixes (a flavor quinn has no controller for, ECN, the QUIC settings) is refused in
  one line before anything starts.

Real time on a shared 2-core machine: a measurement that misses is retried once. The ``tag``
fixture checks that no namespace or process is left behind.
"""

from __future__ import annotations

import pytest
from ccarena.backends import get_backend
from ccarena.errors import UserError
from kernelutil import requires_root

pytestmark = requires_root

RATE_BPS = 100e6
PATH = {"kind": "single_link",
        "link": {"rate": "100Mbps", "delay": "10ms", "queue": {"limit": "250pkt"}}}


def _raw(flow: dict) -> dict:
    return {"name": "quinn", "duration": "5s", "topology": PATH,
            "flows": [{"from": "a", "to": "b", "transport": "quic", **flow}]}


def _spec(raw: dict, backend: str):
    from ccarena.experiment import apply_backends, expand
    from ccarena.scenario import load_scenario

    return apply_backends(expand(load_scenario(raw))[:1], [backend])[0].resolved.spec


def _run(raw: dict, backend: str, quic_impl: str = "ccarena"):
    options = {"emulation": "relay", "quic_impl": quic_impl} if backend == "udp" else {}
    backend_ = get_backend(backend, options)
    spec = _spec(raw, backend)
    return backend_.run(spec), backend_


def _measure(tables: dict) -> tuple[float, float, float]:
    """(goodput over 1–5 s in bit/s, bytes delivered by 5 s, RTT floor in s) of flow 0."""
    s = tables["samples"]
    at = {round(r.time_s * 10): float(r.delivered_bytes) for r in s[s.flow == 0].itertuples()}
    return (at[50] - at[10]) * 8 / 4.0, at[50], float(tables["flows"].iloc[0]["rtt_min_s"])


def _twice(measure) -> None:
    failures = measure()
    if failures:
        print("retrying once:", failures)
        failures = measure()
    assert not failures, failures


def test_ccarena_cubic_inside_quinn_fills_the_path_and_matches_its_simulated_twin(tag: str) -> None:
    raw = _raw({"flavor": "cubic"})
    sim, _ = _run(raw, "sim")
    _, sim_bytes, sim_rtt = _measure(sim.tables)

    def measure() -> list[str]:
        result, backend = _run(raw, "udp", "quinn")
        flow = result.tables["flows"].iloc[0]
        assert (flow["kind"], flow["recovery"]) == ("quic", "rfc9002")
        assert backend.run_record(_spec(raw, "udp"))["transport"]["implementation"] == ["quinn"]
        goodput, delivered, rtt = _measure(result.tables)
        cwnd = result.tables["samples"]["cwnd_bytes"].dropna()
        print(f"ccarena cubic in quinn: {goodput / 1e6:.2f} Mbit/s over 1-5 s; by 5 s "
              f"{delivered / 1e6:.3f} MB (sim {sim_bytes / 1e6:.3f}, {delivered / sim_bytes - 1:+.1%}); "
              f"RTT floor {rtt * 1e3:.2f} ms (sim {sim_rtt * 1e3:.2f}); lost {flow['packets_retransmitted']}; "
              f"sender CPU {flow['sender_cpu_s']:.2f} s")
        failures = []
        if goodput < 0.90 * RATE_BPS:
            failures.append(f"goodput {goodput / 1e6:.2f} Mbit/s < 90 % of the path")
        if abs(delivered / sim_bytes - 1) > 0.05:
            failures.append(f"delivered {delivered:.0f} vs simulated {sim_bytes:.0f} bytes")
        if abs(rtt - sim_rtt) > 0.002:
            failures.append(f"RTT floor {rtt:.4f} vs simulated {sim_rtt:.4f} s")
        if cwnd.empty or cwnd.max() < 0.5 * RATE_BPS * 0.020 / 8:
            failures.append("the controller's cwnd never reached half a BDP in the samples")
        return failures

    _twice(measure)


def test_quinns_own_cubic_fills_the_path(tag: str) -> None:
    def measure() -> list[str]:
        result, _ = _run(_raw({"flavor": "cubic"}), "udp", "quinn-native")
        goodput, _, _ = _measure(result.tables)
        print(f"quinn's cubic: {goodput / 1e6:.2f} Mbit/s over 1-5 s")
        return [] if goodput >= 0.90 * RATE_BPS else [f"goodput {goodput / 1e6:.2f} Mbit/s < 90 %"]

    _twice(measure)


def test_quinns_cubic_shares_a_bottleneck_with_linux_tcp_cubic(tag: str) -> None:
    raw = {"name": "quinn-vs-linux", "duration": "6s",
           "topology": {"kind": "single_link",
                        "link": {"rate": "50Mbps", "delay": "10ms", "queue": {"limit": "100pkt"}}},
           "flows": [{"from": "a", "to": "b", "flavor": "cubic", "transport": "quic"},
                     {"from": "a", "to": "b", "flavor": "cubic"}]}

    def shares(tables: dict) -> tuple[float, float]:
        s = tables["samples"]
        at = {(int(r.flow), round(r.time_s * 10)): float(r.delivered_bytes) for r in s.itertuples()}
        quic, tcp = at[(0, 60)] - at[(0, 20)], at[(1, 60)] - at[(1, 20)]
        return quic / (quic + tcp), (quic + tcp) * 8 / 4.0

    sim_share, _ = shares(_run(raw, "sim")[0].tables)

    def measure() -> list[str]:
        backend = get_backend("udp", {"emulation": "relay", "quic_impl": "quinn-native", "tcp_impl": "linux"})
        spec = _spec(raw, "udp")
        tables = backend.run(spec).tables
        flows = tables["flows"]
        assert list(flows["kind"]) == ["quic", "tcp"]
        assert backend.run_record(spec)["transport"]["implementation"] == ["quinn-native", "linux"]
        share, link_bps = shares(tables)
        print(f"quinn's cubic vs Linux cubic, 2-6 s: QUIC's share {share:.3f} (simulator's QUIC vs TCP "
              f"cubic {sim_share:.3f}), link {link_bps / 1e6:.2f} Mbit/s, retransmitted "
              f"{list(flows['packets_retransmitted'])}")
        failures = []
        if link_bps < 0.85 * 50e6:
            failures.append(f"link {link_bps / 1e6:.2f} Mbit/s < 85 %")
        if not 0.2 <= share <= 0.8:
            failures.append(f"QUIC's share {share:.3f}: one flow starves")
        return failures

    _twice(measure)


@pytest.mark.parametrize(("impl", "flow", "message"), [
    ("quinn-native", {"flavor": "vegas"}, "flows[0].flavor: quinn has no 'vegas' controller of its own"),
    ("quinn-native", {"flavor": "cubic", "params": {"beta": 0.5}}, "flows[0].params: quinn's own cubic"),
    ("quinn", {"flavor": "cubic", "ecn": True}, "flows[0].ecn: quinn sends Not-ECT"),
    ("quinn", {"flavor": "reno", "max_ack_delay": "5ms"}, "flows[0].max_ack_delay: quinn fixes"),
])
def test_what_quinn_fixes_is_refused_in_one_line(impl: str, flow: dict, message: str) -> None:
    backend = get_backend("udp", {"emulation": "relay", "quic_impl": impl})
    with pytest.raises(UserError) as err:
        backend.check(_spec(_raw(flow), "udp"))
    assert str(err.value).startswith(message) and "\n" not in str(err.value)
