"""The calibration suite (``ccarena calibrate``): a fixed set of small scenarios, as one scenario
dict with ``[[parts]]``, that the executor runs on the simulator and on this machine's kernel
(:func:`ccarena.backends.calibration_backends`) so that :mod:`ccarena.analysis.calibration_cells` can compare them
cell by cell.

Pure data: nothing here runs anything. Every part is a 20 Mbit/s dumbbell with a 40 ms base RTT
(2 × 19 ms bottleneck + 4 × 0.5 ms access, as examples/kernel-vs-sim.toml) and a DropTail
bottleneck whose limit is swept in packets (so every run's buffer is a column of the summary):

- ``single``: one flow of each flavor (utilization and RTT floor);
- ``<a>-vs-<b>``: two flows, ``a`` first and ``b`` :data:`STAGGER` later, for every same-flavor
  pair and every mixed pair (unordered, catalogue order) — same-flavor pairs at 1 BDP, mixed
  pairs at 0.5, 1 and 4 BDP (1 BDP only with ``quick``);
- ``loss``: one flow with 1 % random loss on the bottleneck (forward direction).

``quick`` keeps the suite under 3 minutes on 2 cores (fewer cells, shorter runs); the full suite
stays under 15.
"""

from __future__ import annotations

from typing import Any

from ccarena.analysis.calibration_cells import CALIBRATION_NAME, PACKET_BYTES

RATE_BPS = 20_000_000
"""Bottleneck rate."""
BOTTLENECK_DELAY_MS = 19.0
ACCESS_DELAY_MS = 0.5
BASE_RTT_S = 2 * (BOTTLENECK_DELAY_MS + 2 * ACCESS_DELAY_MS) / 1e3
"""Propagation RTT of every flow (40 ms)."""
BDP_PACKETS = RATE_BPS * BASE_RTT_S / 8 / PACKET_BYTES
"""One bandwidth-delay product in full-size packets (≈ 66.7)."""
STAGGER = "1s"
"""Start of a pair's second flow."""
LOSS = "1%"
"""Random loss of the loss cells."""


def limit_packets(bdp: float) -> int:
    """A queue limit of ``bdp`` bandwidth-delay products, in whole packets."""
    return max(2, round(bdp * BDP_PACKETS))


def _limits(bdps: list[float]) -> list[str]:
    return [f"{limit_packets(b)}pkt" for b in bdps]


def _part(name: str, description: str, duration: str, flows: list[dict[str, Any]],
          sweep: dict[str, Any], loss: str = "0%") -> dict[str, Any]:
    return {"name": name, "description": description, "duration": duration,
            "topology": {"bottleneck": {"loss": loss}}, "flows": flows, "sweep": sweep}


def calibration_scenario(flavors: list[str], quick: bool = False, repeats: int = 1) -> dict[str, Any]:
    """The calibration suite for ``flavors`` (the flavors both backends run, in catalogue order)
    as a scenario dict with one ``[[parts]]`` entry per cell kind and pair, every cell run
    ``repeats`` times (each repeat its own seed; the comparison takes each backend's mean).

    Raises:
        ValueError: no flavor given, or ``repeats`` below 1.
    """
    if not flavors:
        raise ValueError("the calibration needs at least one flavor")
    if repeats < 1:
        raise ValueError(f"the calibration's repeats must be at least 1, not {repeats}")
    single_s, pair_s, loss_s = ("5s", "12s", "20s") if quick else ("20s", "30s", "20s")
    single_bdps = [1.0] if quick else [0.5, 1.0]
    mixed_bdps = [1.0] if quick else [0.5, 1.0, 4.0]
    loss_flavors = ["cubic" if "cubic" in flavors else flavors[0]] if quick else list(flavors)
    limit_path = "topology.bottleneck.queue.limit"
    one = [{"from": "left0", "to": "right0", "flavor": flavors[0]}]
    parts = [_part("single", "one flow of each flavor: utilization and RTT floor", single_s, one,
                   {"flows[0].flavor": list(flavors), limit_path: _limits(single_bdps)})]
    for i, a in enumerate(flavors):
        for b in flavors[i:]:
            bdps = [1.0] if a == b else mixed_bdps
            flows = [{"from": "left0", "to": "right0", "flavor": a},
                     {"from": "left1", "to": "right1", "flavor": b, "start": STAGGER}]
            parts.append(_part(f"{a}-vs-{b}", f"{a} first, {b} {STAGGER} later: the first "
                               "flow's share", pair_s, flows, {limit_path: _limits(bdps)}))
    parts.append(_part("loss", f"one flow with {LOSS} random loss", loss_s, one,
                       {"flows[0].flavor": loss_flavors, limit_path: _limits([1.0])}, loss=LOSS))
    if repeats > 1:
        for part in parts:
            part["sweep"]["repeats"] = repeats
    return {
        "name": CALIBRATION_NAME + ("-quick" if quick else ""),
        "description": "ccarena calibrate: the simulator against this machine's Linux TCP stack, "
                       "cell by cell" + (" (quick suite)" if quick else ""),
        "duration": pair_s,
        "seed": 1,
        "topology": {
            "kind": "dumbbell", "pairs": 2,
            "bottleneck": {"rate": f"{RATE_BPS // 1_000_000}Mbps", "delay": f"{BOTTLENECK_DELAY_MS:g}ms",
                           "queue": {"limit": f"{limit_packets(1.0)}pkt"}},
            "access": {"rate": "1Gbps", "delay": f"{ACCESS_DELAY_MS:g}ms"},
        },
        "flows": one,
        "output": {"sample_interval": "100ms"},
        "parts": parts,
    }


def calibration_flavors(catalogue: list[str], available: list[str]) -> list[str]:
    """The flavors of the catalogue (in its order) that the kernel offers (``available``)."""
    offered = set(available)
    return [f for f in catalogue if f in offered]
