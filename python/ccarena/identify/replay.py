"""Replay an estimated path with every flavor of the library on the simulator
(:func:`replay_library`): one flow alone on a single link with the path's rate, base RTT,
drop-tail buffer (with the path's ECN marking threshold and ECN negotiated, when the trace was
marked) and random loss, sampled at the trace's own interval, for the trace's length
(at most :data:`MAX_REPLAY_S`). Each replay runs in this process (the engine takes some tens of
milliseconds for 30 simulated seconds at 50 Mbit/s), so the whole library takes about a second.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from ccarena.errors import UserError
from ccarena.identify.path import PathEstimate
from ccarena.identify.series import FlowSeries, from_frame

MAX_REPLAY_S = 30.0
"""Longest replay, simulated seconds."""

MIN_INTERVAL_S = 0.01
"""Finest sample interval of a replay, seconds (a finer trace is compared at its own spacing
only where the replay has samples)."""

LINUX_CUBIC = {"hystart": 2, "no_loss_growth": 0.05, "alpha_switch": 0, "whole_packets": 1}
"""CUBIC's parameters as Linux's tcp_cubic sets them (``ccarena flavors cubic``)."""


@dataclass(frozen=True)
class Variant:
    """One entry of the reference library: a catalogue flavor with parameters and a loss
    recovery (None: the flavor's defaults).

    Attributes:
        flavor: the catalogue name reported.
        label: how the entry is shown (the flavor, or ``flavor[variant]``).
        params: the flavor's parameters (``ccarena flavors NAME``).
        recovery: the loss recovery, or None for the flavor's default.
    """

    flavor: str
    label: str
    params: dict[str, Any] = field(default_factory=dict)
    recovery: str | None = None


def library(exclude: Iterable[str] = ()) -> list[Variant]:
    """Every TCP flavor of the catalogue with its defaults, plus the variants that change what a
    trace shows: CUBIC as Linux's tcp_cubic runs it, BBR with Linux's long-term bandwidth
    sampling (``lt_bw = 1``), Reno and NewReno with Linux's SACK-based
    recovery (as every Linux flow recovers). Flavors named in ``exclude`` are left out.

    Raises:
        UserError: ``exclude`` names a flavor that is not in the catalogue.
    """
    from ccarena.flavors import tcp_flavors, unknown_flavor_message

    names = list(tcp_flavors())
    excluded = set(exclude)
    for name in excluded:
        if name not in names:
            raise UserError(f"--exclude: {unknown_flavor_message(name)}")
    out: list[Variant] = []
    for name in names:
        if name in excluded:
            continue
        out.append(Variant(name, name))
        if name == "cubic":
            out.append(Variant(name, "cubic[linux]", dict(LINUX_CUBIC)))
        if name == "bbr":
            out.append(Variant(name, "bbr[linux]", {"lt_bw": 1}))
        if name in ("reno", "newreno"):
            out.append(Variant(name, f"{name}[sack]", recovery="linux"))
    return out


def scenario(path: PathEstimate, variant: Variant, seed: int = 1) -> dict[str, Any]:
    """The scenario (TOML's structure as a dict) replaying ``path`` with ``variant``."""
    duration = min(max(path.duration_s, 2.0), MAX_REPLAY_S)
    interval = max(path.interval_s, MIN_INTERVAL_S)
    flavor: Any = ({"name": variant.flavor, **variant.params} if variant.params else variant.flavor)
    flow: dict[str, Any] = {"from": "a", "to": "b", "flavor": flavor}
    if variant.recovery:
        flow["recovery"] = variant.recovery
    if path.mss_bytes and abs(path.mss_bytes - 1448) > 1:
        flow["mss"] = f"{int(path.mss_bytes)}B"
    queue: dict[str, Any] = {"limit": f"{path.buffer_packets}pkt"}
    if path.marks:  # the trace's flow negotiated ECN and was marked: so is every replay's
        flow["ecn"] = True
        queue["ecn_threshold"] = f"{min(path.threshold_packets, path.buffer_packets)}pkt"
    return {
        "name": f"identify-{variant.label.replace('[', '-').replace(']', '')}",
        "duration": f"{duration:.3f}s",
        "seed": seed,
        "topology": {"kind": "single_link", "link": {
            "rate": f"{path.rate_bps:.0f}bps",
            "delay": f"{path.base_rtt_s / 2 * 1e6:.0f}us",
            "loss": f"{path.loss * 100:.4f}%",
            "queue": queue,
        }},
        "flows": [flow],
        "output": {"sample_interval": f"{interval * 1e3:.1f}ms"},
    }


def replay(path: PathEstimate, variant: Variant, seed: int = 1) -> FlowSeries:
    """The series of ``variant`` on ``path`` in the simulator.

    Raises:
        ccarena.errors.UserError: the path cannot be simulated (e.g. the scenario is invalid).
    """
    from ccarena.backends.sim import run_spec
    from ccarena.experiment.expand import expand
    from ccarena.scenario import load_scenario

    plan = expand(load_scenario(scenario(path, variant, seed)))[0]
    tables = run_spec(plan.resolved.spec)
    samples, flow = tables["samples"], tables["flows"].iloc[0]
    return from_frame(samples[samples["flow"] == 0], mss_bytes=path.mss_bytes,
                      label=variant.label, source=f"replay of {variant.label}",
                      ce_packets=flow.get("ce_packets"), packets_sent=flow.get("packets_sent"))


def replay_library(path: PathEstimate, variants: list[Variant], seed: int = 1,
                   threads: int | None = None) -> dict[str, FlowSeries]:
    """``variant.label`` → its replay on ``path``, for every variant, on ``threads`` threads of
    this process (default: the CPUs this process may use; the engine releases the GIL while it
    simulates, so threads run replays side by side)."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    workers = threads or max(1, len(os.sched_getaffinity(0)))
    if workers == 1:
        return {v.label: replay(path, v, seed) for v in variants}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        done = list(pool.map(lambda v: replay(path, v, seed), variants))
    return {v.label: series for v, series in zip(variants, done)}
