"""quinn (a production QUIC stack) on loopback through ``_engine.quinn_send`` and
``_engine.quinn_sink``: ccarena's controllers inside quinn and quinn's own move 5 MB exactly, and
both records carry the per-flow table's fields (goodput, RTT samples, cwnd, losses)."""

from __future__ import annotations

import queue
import threading
import time

import pytest
from ccarena import _engine

BYTES = 5_000_000


def run(flavor: str, impl: str = "quinn", **send_options) -> tuple[dict, dict]:
    """The sink in a thread first (port 0, its bound address handed back), then the sender."""
    cert = _engine.quinn_certificate()
    t0 = time.monotonic_ns()
    bound: queue.Queue[str] = queue.Queue()
    out: dict = {}

    def serve() -> None:
        try:
            out["sink"] = _engine.quinn_sink({
                "bind": "127.0.0.1:0", "cert_der": cert["cert_der"], "key_der": cert["key_der"],
                "on_bound": bound.put, "t0_mono_ns": t0, "interval_ns": 20_000_000,
                "idle_timeout_s": 3.0,
            })
        except Exception as e:  # reported by the main thread
            out["error"] = e
            bound.put("")

    sink = threading.Thread(target=serve)
    sink.start()
    addr = bound.get(timeout=10)
    assert addr, out.get("error")
    sent = _engine.quinn_send({
        "peer": addr, "cert_der": cert["cert_der"], "flavor": flavor, "impl": impl,
        "bytes": BYTES, "t0_mono_ns": t0, "interval_ns": 20_000_000, **send_options,
    })
    sink.join(timeout=30)
    assert "error" not in out, out.get("error")
    return sent, out["sink"]


@pytest.mark.parametrize("flavor,impl,controller", [
    ("cubic", "quinn", "ccarena cubic in quinn"),
    ("bbr", "quinn", "ccarena bbr in quinn"),
    ("cubic", "quinn-native", "quinn's cubic"),
])
def test_stream_arrives_exactly_with_a_full_record(flavor, impl, controller):
    sent, got = run(flavor, impl)
    assert sent["ok"] and got["ok"]
    assert sent["controller"] == controller and sent["impl"] == impl
    assert sent["completed"] and sent["stream_bytes_written"] == BYTES
    assert got["connected"] and got["finished"] and got["delivered_bytes"] == BYTES
    assert sent["goodput_bps"] > 1e6 and got["goodput_bps"] > 1e6
    rtt = sent["rtt"]
    assert rtt["samples"] > 0 and 0 < rtt["min_ms"] <= rtt["p50_ms"] <= rtt["p95_ms"] <= rtt["p99_ms"]
    assert sent["bytes_sent"] > BYTES and sent["packets_sent"] > BYTES // 1500
    assert sent["lost_packets"] >= 0 and sent["congestion_events"] >= 0 and sent["pto_count"] is None
    assert sent["samples"] and got["samples"]
    assert all(s["cwnd_bytes"] >= 2400 for s in sent["samples"])
    assert {"time_s", "sent_bytes", "cwnd_bytes", "srtt_s", "lost_packets", "congestion_events"} <= set(sent["samples"][0])
    # One time grid: both ends' samples sit on multiples of the interval from t0.
    for s in sent["samples"] + got["samples"]:
        assert abs(s["time_s"] / 0.02 - round(s["time_s"] / 0.02)) < 1e-6
    delivered = [s["delivered_bytes"] for s in got["samples"]]
    assert delivered == sorted(delivered)


def test_quinn_native_refuses_a_flavor_it_lacks():
    cert = _engine.quinn_certificate()
    with pytest.raises(ValueError, match="quinn has no 'vegas'"):
        _engine.quinn_send({"peer": "127.0.0.1:9", "cert_der": cert["cert_der"], "flavor": "vegas",
                            "impl": "quinn-native", "bytes": 1000})


def test_no_sink_is_a_connection_error():
    cert = _engine.quinn_certificate()
    with pytest.raises(ConnectionError):
        _engine.quinn_send({"peer": "127.0.0.1:9", "cert_der": cert["cert_der"], "flavor": "cubic",
                            "bytes": 1000, "handshake_timeout_s": 0.5})
