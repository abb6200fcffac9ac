"""``host = "linux"`` on the udp backend: ccarena's transport on real UDP sockets takes the Linux
host's timers and ACK policy as the simulator's flows do (issue 36), on the relay's 20 Mbit/s,
40 ms RTT path.

- Quick-ACK mode: a one-segment transfer is acknowledged at once, so it completes in about one
  round trip; the RFC 5681 receiver (``host = "rfc"``) holds the ACK for its 40 ms delayed-ACK
  timer. Measured here: Linux's own TCP (``test_linux_host`` in the engine tests cites the
  kernel runs) completes it in 41.8–42.4 ms.
- Linux's RTO rule: on a steady path the sampled RTO is SRTT + rttvar with rttvar floored at
  min_rto (about 240 ms here), RFC 6298's stays at its 200 ms floor; the kernel's own TCP_INFO
  RTO on the same path is the reference.

Real time on a shared 2-core machine: a measurement that misses is retried once, as the other
kernel tests do. The ``tag`` fixture checks that no namespace or process is left behind.
"""

from __future__ import annotations

import numpy as np
from ccarena.backends import get_backend
from kernelutil import requires_root

pytestmark = requires_root

PATH = {"kind": "single_link",
        "link": {"rate": "20Mbps", "delay": "20ms", "queue": {"limit": "100pkt"}}}


def _run(raw: dict, backend: str) -> dict:
    from ccarena.experiment import apply_backends, expand
    from ccarena.scenario import load_scenario

    spec = apply_backends(expand(load_scenario(raw))[:1], [backend])[0].resolved.spec
    return get_backend(backend, {"emulation": "relay"}).run(spec).tables


def _retry(measure) -> None:
    """Run ``measure()`` (returns a list of failures); once more if it failed."""
    failures = measure()
    if failures:
        failures = measure()
    assert not failures, failures


def _one_segment_fct_s(host: str) -> float:
    raw = {"name": f"one-segment-{host}", "duration": "1s", "host": host, "topology": PATH,
           "flows": [{"from": "a", "to": "b", "flavor": "cubic", "bytes": "1000B", "start": "0.2s"}]}
    flows = _run(raw, "udp")["flows"]
    return float(flows["completion_time_s"].iloc[0])


def test_a_linux_hosts_receiver_acknowledges_a_lone_segment_at_once(tag: str) -> None:
    def measure() -> list[str]:
        linux, rfc = _one_segment_fct_s("linux"), _one_segment_fct_s("rfc")
        failures = []
        if not 0.038 <= linux <= 0.060:
            failures.append(f"linux host: one segment completed in {linux * 1e3:.1f} ms, not ~1 RTT")
        if not rfc >= linux + 0.030:
            failures.append(f"rfc host: {rfc * 1e3:.1f} ms, not the delayed ACK later than "
                            f"linux's {linux * 1e3:.1f} ms")
        return failures

    _retry(measure)


def _median_rto_s(host: str, backend: str) -> float:
    raw = {"name": f"rto-{host}", "duration": "3s", "host": host, "topology": PATH,
           "flows": [{"from": "a", "to": "b", "flavor": "cubic", "rwnd": "64KB"}]}
    samples = _run(raw, backend)["samples"]
    late = samples[samples["time_s"] >= 1.0]["rto_s"].to_numpy(dtype=float)
    return float(np.median(late[np.isfinite(late)]))


def test_a_linux_hosts_rto_follows_linuxs_rule_as_the_kernels_does(tag: str) -> None:
    def measure() -> list[str]:
        kernel = _median_rto_s("linux", "kernel")
        linux, rfc = _median_rto_s("linux", "udp"), _median_rto_s("rfc", "udp")
        failures = []
        if abs(linux - kernel) > 0.015:
            failures.append(f"linux host RTO {linux * 1e3:.0f} ms, kernel's {kernel * 1e3:.0f} ms")
        if abs(rfc - 0.200) > 0.005:
            failures.append(f"rfc host RTO {rfc * 1e3:.0f} ms, not RFC 6298's 200 ms floor")
        return failures

    _retry(measure)
