"""Throughput models of loss-based TCP, for overlays beside measurements.

All functions take the segment size in bytes, the round-trip time in seconds and the loss
probability p (a fraction, per packet), and return bits per second. They accept numpy arrays.

- :func:`mathis_bps`: M. Mathis, J. Semke, J. Mahdavi, T. Ott, "The Macroscopic Behavior of the TCP
  Congestion Avoidance Algorithm", CCR 27(3), 1997: BW = (MSS/RTT) · C/√p, C = √(3/2).
- :func:`padhye_bps`: J. Padhye, V. Firoiu, D. Towsley, J. Kurose, "Modeling TCP Throughput: A Simple
  Model and its Empirical Validation", SIGCOMM 1998, eq. (32), with timeouts.
- :func:`cubic_bps`: RFC 9438 §5.1 (CUBIC's average window under random loss), at least the
  Reno-friendly estimate of §4.3.
"""

from __future__ import annotations

import math

import numpy as np

MATHIS_C = math.sqrt(3.0 / 2.0)
"""Mathis et al. 1997's constant for periodic loss and an ACK per segment: √(3/2) ≈ 1.22."""

CUBIC_C = 0.4
"""RFC 9438 §4.1: C = 0.4."""

CUBIC_BETA = 0.7
"""RFC 9438 §4.6: β_cubic = 0.7 (the window after a loss is β_cubic · W_max)."""


def mathis_bps(mss_bytes, rtt_s, loss, c: float = MATHIS_C):
    """Mathis et al. 1997: throughput = (8·MSS / RTT) · C / √p, bits per second.

    Args:
        mss_bytes: segment payload, bytes.
        rtt_s: round-trip time, seconds.
        loss: loss probability p in (0, 1]; p = 0 gives infinity.
        c: the constant C (√(3/2) by default; √(3/4) with an ACK every second segment).
    """
    p = np.asarray(loss, dtype=float)
    with np.errstate(divide="ignore"):
        out = 8.0 * np.asarray(mss_bytes, dtype=float) / np.asarray(rtt_s, dtype=float) * c / np.sqrt(p)
    return float(out) if np.ndim(out) == 0 else out


def padhye_bps(mss_bytes, rtt_s, loss, rto_s, acked_per_ack: int = 1,
               max_window_packets: float = math.inf):
    """Padhye et al. 1998 ("PFTK"), eq. (32), in bits per second:

        B(p) = min( W_max / RTT,
                    1 / ( RTT·√(2bp/3) + T0·min(1, 3·√(3bp/8))·p·(1 + 32p²) ) )  packets/s

    times 8·MSS. ``b`` = ``acked_per_ack`` segments acknowledged per ACK, ``T0`` = ``rto_s``.
    """
    p = np.asarray(loss, dtype=float)
    rtt = np.asarray(rtt_s, dtype=float)
    b = float(acked_per_ack)
    with np.errstate(divide="ignore", invalid="ignore"):
        denom = rtt * np.sqrt(2.0 * b * p / 3.0) + np.asarray(rto_s, dtype=float) * np.minimum(
            1.0, 3.0 * np.sqrt(3.0 * b * p / 8.0)) * p * (1.0 + 32.0 * p * p)
        packets_per_s = np.minimum(max_window_packets / rtt, 1.0 / denom)
    out = packets_per_s * 8.0 * np.asarray(mss_bytes, dtype=float)
    return float(out) if np.ndim(out) == 0 else out


def cubic_window_packets(rtt_s, loss, c: float = CUBIC_C, beta: float = CUBIC_BETA):
    """CUBIC's average window under random loss p, in packets (RFC 9438 §5.1, after Ha, Rhee and
    Xu, "CUBIC: A New TCP-Friendly High-Speed TCP Variant", OSR 2008):

        AVG_W_cubic = ( C·(3 + β) / (4·(1 − β)) )^(1/4) · RTT^(3/4) / p^(3/4)

    and never below the Reno-friendly estimate (RFC 9438 §4.3: AIMD with α = 3(1−β)/(1+β) and
    β, whose average window is √(α(1+β) / (2(1−β)p)) = √(3/(2p))), since CUBIC uses the larger.
    """
    p = np.asarray(loss, dtype=float)
    rtt = np.asarray(rtt_s, dtype=float)
    with np.errstate(divide="ignore"):
        cubic = (c * (3.0 + beta) / (4.0 * (1.0 - beta))) ** 0.25 * rtt ** 0.75 / p ** 0.75
        alpha = 3.0 * (1.0 - beta) / (1.0 + beta)
        reno = np.sqrt(alpha * (1.0 + beta) / (2.0 * (1.0 - beta) * p))
    return np.maximum(cubic, reno)


def cubic_bps(mss_bytes, rtt_s, loss, c: float = CUBIC_C, beta: float = CUBIC_BETA):
    """CUBIC's throughput under random loss: :func:`cubic_window_packets` · 8·MSS / RTT, bits/s."""
    out = cubic_window_packets(rtt_s, loss, c, beta) * 8.0 * np.asarray(mss_bytes, dtype=float) \
        / np.asarray(rtt_s, dtype=float)
    return float(out) if np.ndim(out) == 0 else out


# ----------------------------------------------------------------------------- flavor → model

RENO_FAMILY = ("tahoe", "reno", "newreno")
"""Flavors whose congestion avoidance is Reno's AIMD (α = 1, β = 1/2): Mathis and Padhye model them."""

MIN_RTO_S = 0.2
"""Linux's minimum RTO (``TCP_RTO_MIN``, 200 ms): Padhye's T0 is this, or the RTT if longer."""


def response_functions(flavor: str, mss_bytes, rtt_s, loss) -> list[tuple[str, np.ndarray | float]]:
    """The throughput models that apply to ``flavor``, as ``(model name, bits/s)`` at each
    (``rtt_s``, ``loss``): Mathis et al. 1997 and Padhye et al. 1998 (T0 = max(:data:`MIN_RTO_S`,
    RTT)) for the :data:`RENO_FAMILY`, RFC 9438's response function for ``cubic``, none for other
    flavors (delay-based, model-based or datacenter controllers have no loss-response model here).
    Arguments as for :func:`mathis_bps` (numpy arrays accepted)."""
    if flavor in RENO_FAMILY:
        return [("Mathis et al. 1997", mathis_bps(mss_bytes, rtt_s, loss)),
                ("Padhye et al. 1998", padhye_bps(mss_bytes, rtt_s, loss,
                                                  rto_s=np.maximum(MIN_RTO_S, rtt_s)))]
    if flavor == "cubic":
        return [("CUBIC (RFC 9438 §5.1)", cubic_bps(mss_bytes, rtt_s, loss))]
    return []
