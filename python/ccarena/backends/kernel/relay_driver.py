"""ccarena's link emulator (the relay, ``crates/relay``) for one run: its config from the spec, its
process, and the queue readings it returns.

One process (``python3 -m ccarena.backends.kernel.relay_main CONFIG STATS`` in the wire namespace) serves every
relayed physical link ``k`` through ``l<k>a`` and ``l<k>b``, its directions dealt to one worker
thread per CPU (``crates/relay/src/worker.rs``; a k = 4 fat-tree's 96 directions run on two
threads on a 2-core machine). In relay mode (:mod:`ccarena.backends.kernel.emulation_choice`) each direction emulates the whole spec link — its queue
discipline (any of the simulator's, with ECN marking), rate, wire loss, delay — and samples its queue every ``sample_interval`` on a grid that
starts at ``sample_origin_ns`` (CLOCK_MONOTONIC, the clock the backend's ``t0`` is taken on, so
the backend puts ``t0`` on that grid). In tc mode it only delays. When stopped it writes its
stats: per direction the link's counters and samples, and how late it sent each frame against the
model's due time — the emulation's own error, stored with the run. The scenario's ``[[events]]``
become each direction's scheduled ``changes``, counted from ``t0``, which the backend tells the
relay on its stdin once it is chosen (``start <t0>``; :meth:`Relay.announce_start`).

Packet capture (``[output] pcap``, relay mode only): each captured link direction's config names
a pcap file (:func:`capture_files`, the simulator's file names), which the relay writes with the
simulator's capture point — a frame's headers when its link starts serializing it, stamped on
the run's clock from ``t0`` (``crates/relay/src/capture.rs``); what each file holds comes back in
the stats (:func:`capture_entries`).
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ccarena.backends import DUALPI2_CLASSES
from ccarena.backends.kernel.emulation_choice import Emulation
from ccarena.backends.kernel.names import RunNames
from ccarena.backends.kernel.netns import NetworkPlan
from ccarena.backends.kernel.shaping import QueueReading as _HtbReading
from ccarena.errors import UserError
from ccarena.runspec import RunSpec


@dataclass
class QueueReading(_HtbReading):
    """A queue reading from the relay: htb's counters plus the discipline's own decisions,
    ``early_drops`` (of ``drops``, the AQM's unforced ones: RED's and PIE's early drops, CoDel's
    drops at dequeue) and ``marks`` (packets marked CE). None where a reading has no such count.

    The AQM's state at the instant, as the simulator samples it (docs/engine-spec.md, ``queues``):
    ``aqm_prob_classic`` (DualPI2's p_C = p'², RFC 9332 §2.1; PIE's drop probability, RFC 8033
    §4.2) and ``aqm_prob_l4s`` (DualPI2's p_CL = min(k·p', 1)), in [0, 1], None for a discipline
    without one. For DualPI2, ``classes``: ``{"l4s": {...}, "classic": {...}}``, each class's
    cumulative ``departed``, ``marked``, ``dropped`` (at the shared limit or by the AQM) packets
    and ``sojourn_total_ns``; and ``class_sojourn_ns``: each class's sojourn summary over the
    relay's whole run (``mean``, ``min``, ``p5`` … ``p99``, ``max``, ns; None where no packet
    left the queue), the same in every reading of a link. None for other disciplines."""

    early_drops: int | None = None
    marks: int | None = None
    aqm_prob_classic: float | None = None
    aqm_prob_l4s: float | None = None
    classes: dict[str, dict[str, int]] | None = None
    class_sojourn_ns: dict[str, dict[str, float | None]] | None = None


READY_TIMEOUT_S = 20.0
MAX_QUEUE_FRAMES = 1_000_000
"""The relay's own bound on frames held per direction (the emulated queue's limit is the link's)."""
DIRECTIONS = ("a_to_b", "b_to_a")
TIMING = {"min_wake_interval_ns": 200_000, "rt_priority": 10, "spin_ns": 0, "keep_cpus_awake": True}
"""The relay's timing settings, written into every config and stored with the run (the relay's
own defaults are the same; ``crates/relay/src/config.rs`` says why each is what it is): wake at
most every 200 µs per direction, SCHED_FIFO priority 10, never busy-wait, hold
/dev/cpu_dma_latency at 0 while running."""


CHANGE_KEYS = ("rate_bps", "delay_ns", "loss", "limit_packets", "limit_bytes")


def changes_of(spec: RunSpec, link: int) -> list[dict[str, Any]]:
    """The spec's events on directed link ``link`` as relay changes (``at_ns`` after ``t0``;
    events at or after the end of the run never apply, as in the simulator)."""
    out = []
    for event in spec.events:
        if int(event.link) != link or event.time_ns >= spec.duration_ns:
            continue
        change = {"at_ns": int(event.time_ns)}
        change.update({k: v for k, v in event.set.model_dump().items() if k in CHANGE_KEYS and v is not None})
        out.append(change)
    return out


PCAP_DIR = "pcap"
"""Where a run's capture files go in its run directory (as the simulator's)."""


def capture_file_name(link_name: str) -> str:
    """A link's pcap file name as the simulator gives it (``crates/sim/src/pcap/mod.rs``,
    ``file_name``): ``->`` spelled ``_to_``, every character outside ``[A-Za-z0-9._-]`` replaced
    by ``_``, then ``.pcap`` (``r0->r1`` → ``r0_to_r1.pcap``)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", link_name.replace("->", "_to_")) + ".pcap"


def capture_files(spec: RunSpec) -> dict[int, str]:
    """Spec link → its capture file name, for every link of the spec's ``pcap``
    (:func:`capture_file_name`, made unique with ``-<link index>`` where two collide, as the
    simulator's ``file_names``); empty without capture."""
    if spec.pcap is None:
        return {}
    plain = {int(i): capture_file_name(spec.links[int(i)].name) for i in spec.pcap.links}
    taken = list(plain.values())
    return {i: (f"{n.removesuffix('.pcap')}-{i}.pcap" if taken.count(n) > 1 else n) for i, n in plain.items()}


def capture_entries(stats: dict[str, Any], plan: NetworkPlan, spec: RunSpec) -> list[dict[str, Any]]:
    """The run record's ``pcap`` entries, one per captured link in link order, as the
    simulator's (``ccarena.backends.sim.capture_result``): ``link`` (name), ``file``
    (``pcap/<name>.pcap``), ``packets_written``, ``packets_over_limit`` (left out at the size
    limit), ``bytes``, ``max_bytes``, ``error``. A link the relay reported nothing for (it
    stopped without stats) has counts of None and an ``error`` saying so."""
    names = capture_files(spec)
    pipes_stats = stats.get("pipes", [])
    where = relayed_directions(plan)
    out = []
    for link in sorted(names):
        index, direction = where.get(link, (len(pipes_stats), ""))
        got = (pipes_stats[index].get(direction) or {}).get("pcap") if index < len(pipes_stats) else None
        got = got or {"packets_written": None, "packets_over_limit": None, "bytes": None,
                      "error": "the link relay reported no capture for this link"}
        out.append({"link": spec.links[link].name, "file": f"{PCAP_DIR}/{names[link]}",
                    "packets_written": got["packets_written"],
                    "packets_over_limit": got["packets_over_limit"], "bytes": got["bytes"],
                    "max_bytes": spec.pcap.max_bytes if spec.pcap else None, "error": got["error"]})
    return out


def warn_incomplete_captures(entries: list[dict[str, Any]]) -> None:
    """Warn (RuntimeWarning) about every capture that is incomplete: its file reached
    ``max_bytes`` (the fix: raise ``[output] pcap_max_bytes``) or a write failed."""
    for e in entries:
        if e["error"]:
            warnings.warn(f"output.pcap: the capture of {e['link']} is incomplete: {e['error']}",
                          RuntimeWarning, stacklevel=2)
        elif e["packets_over_limit"]:
            warnings.warn(f"output.pcap: {e['file']} reached pcap_max_bytes ({e['max_bytes']} B); "
                          f"{e['packets_over_limit']} packets of {e['link']} not captured; "
                          "fix: raise [output] pcap_max_bytes", RuntimeWarning, stacklevel=2)


def direction_config(spec: RunSpec, link: int | None, emulation: Emulation,
                     like: int, pcap_dir: Path | None = None) -> dict[str, Any]:
    """One direction's relay config for spec link ``link`` (None: a one-way link's missing
    direction, emulated like link ``like`` without delay or loss); with ``pcap_dir``, a link of
    the spec's ``pcap`` is captured to its file there (:func:`capture_files`)."""
    out = _emulation_config(spec, link, emulation, like)
    files = capture_files(spec) if pcap_dir is not None else {}
    if link is not None and link in files:
        assert spec.pcap is not None
        out["pcap"] = {"path": str(pcap_dir / files[link]), "max_bytes": int(spec.pcap.max_bytes)}
    return out


def _emulation_config(spec: RunSpec, link: int | None, emulation: Emulation,
                      like: int) -> dict[str, Any]:
    """:func:`direction_config` without capture: the link the direction emulates."""
    spec_link = spec.links[like if link is None else link]
    delay_ns = 0 if link is None else int(spec_link.delay_ns)
    if emulation.rate_and_queue != "relay":
        return {"delay_ns": delay_ns, "loss": 0.0}
    queue = spec_link.queue
    out: dict[str, Any] = {"delay_ns": delay_ns, "loss": 0.0 if link is None else float(spec_link.loss),
                           "rate_bps": int(spec_link.rate_bps)}
    if queue.limit_packets is not None:
        out["limit_packets"] = int(queue.limit_packets)
    elif queue.limit_bytes is not None:
        out["limit_bytes"] = int(queue.limit_bytes)
    if queue.discipline != "droptail":
        # The relay runs the simulator's own discipline (crates/link), configured as in the spec.
        out["discipline"] = queue.discipline
        out[queue.discipline] = getattr(queue, queue.discipline).model_dump()
    # DCTCP's step marking (DropTail only; the spec checks it), and the packets it marks.
    for key in ("ecn_threshold_packets", "ecn_threshold_bytes"):
        if getattr(queue, key) is not None:
            out[key] = int(getattr(queue, key))
    if queue.ecn_threshold_selector is not None:
        out["ecn_threshold_selector"] = queue.ecn_threshold_selector
    if link is not None:
        # The simulated link's own random streams (loss, the discipline's draws, duplication,
        # reordering): the kernel run and its simulated twin face the same draws, packet for
        # packet — common random numbers, so what differs between them is the stacks.
        out["stream_index"] = int(link)
        # Duplication and reordering (crates/link/src/impair.rs), only when set: a config without
        # them is the one the relay always got.
        if spec_link.duplicate > 0:
            out["duplicate"] = float(spec_link.duplicate)
        if spec_link.reorder > 0:
            out["reorder"] = float(spec_link.reorder)
            if spec_link.reorder_delay_ns is not None:
                out["reorder_delay_ns"] = int(spec_link.reorder_delay_ns)
    if spec_link.trace is not None:
        # The relay runs the trace from t0 (crates/link/src/trace.rs), as the simulator from 0.
        out["trace"] = spec_link.trace.model_dump()
    changes = changes_of(spec, link) if link is not None else []
    if changes:
        out["changes"] = changes
    return out


def pipes(plan: NetworkPlan, spec: RunSpec, emulation: Emulation,
          pcap_dir: Path | None = None) -> list[dict[str, Any]]:
    """The relay's pipe list: one per relayed physical link (the relay config's ``pipes``),
    capturing the spec's ``pcap`` links into ``pcap_dir`` when given."""
    out = []
    for phys in plan.links:
        if not phys.relayed:
            continue
        out.append({"name": spec.links[phys.forward].name, "a": RunNames.wire_if(phys.k, "a"),
                    "b": RunNames.wire_if(phys.k, "b"),
                    "a_to_b": direction_config(spec, phys.forward, emulation, phys.forward, pcap_dir),
                    "b_to_a": direction_config(spec, phys.reverse, emulation, phys.forward, pcap_dir)})
    return out


def relayed_directions(plan: NetworkPlan) -> dict[int, tuple[int, str]]:
    """Spec link → (index in the relay's pipe list, ``"a_to_b"`` or ``"b_to_a"``)."""
    out: dict[int, tuple[int, str]] = {}
    index = 0
    for phys in plan.links:
        if not phys.relayed:
            continue
        out[phys.forward] = (index, "a_to_b")
        if phys.reverse is not None:
            out[phys.reverse] = (index, "b_to_a")
        index += 1
    return out


def relay_config(plan: NetworkPlan, spec: RunSpec, emulation: Emulation,
                 sample_origin_ns: int, pcap_dir: Path | None = None) -> dict[str, Any]:
    """The whole relay config (format: ``crates/relay/src/config.rs``); the queues are sampled
    only where the relay is the queue (relay mode); the spec's ``pcap`` links are captured into
    ``pcap_dir`` when given."""
    config = {"pipes": pipes(plan, spec, emulation, pcap_dir), "seed": int(spec.seed), "duration_ns": None,
              "max_queue_frames": MAX_QUEUE_FRAMES, **TIMING}
    if emulation.rate_and_queue == "relay":
        config.update(sample_origin_ns=int(sample_origin_ns), sample_interval_ns=int(spec.sample_interval_ns))
    return config


CLASSES = DUALPI2_CLASSES
CLASS_COUNTERS = ("departed", "marked", "dropped", "sojourn_total_ns")
"""Each class's cumulative counters in the relay's samples (``l4s_departed``, ...)."""


def _at(samples: dict[str, Any], key: str, i: int) -> Any:
    """Sample ``i`` of column ``key`` (None where the column is absent or the value null)."""
    column = samples.get(key)
    return None if column is None else column[i]


def _classes_at(samples: dict[str, Any], i: int) -> dict[str, dict[str, int]] | None:
    """DualPI2's per-class counters of sample ``i`` (None for another discipline)."""
    if f"{CLASSES[0]}_{CLASS_COUNTERS[0]}" not in samples:
        return None
    return {c: {k: int(samples[f"{c}_{k}"][i]) for k in CLASS_COUNTERS} for c in CLASSES}


def on_grid(t_ns: int, origin_ns: int, interval_ns: int) -> int:
    """The first instant of the grid ``origin + k·interval`` at or after ``t_ns``."""
    if t_ns <= origin_ns:
        return origin_ns
    k = -(-(t_ns - origin_ns) // interval_ns)
    return origin_ns + k * interval_ns


def queue_readings(stats: dict[str, Any], plan: NetworkPlan
                   ) -> dict[int, dict[int, QueueReading]]:
    """Spec link → {grid instant (ns) → its queue} from the relay's stats (links the relay
    emulates in full; none in tc mode, where its stats carry no samples)."""
    out: dict[int, dict[int, QueueReading]] = {}
    pipes_stats = stats.get("pipes", [])
    for link, (index, direction) in relayed_directions(plan).items():
        if index >= len(pipes_stats):
            continue
        direction_stats = pipes_stats[index].get(direction) or {}
        samples = direction_stats.get("samples")
        if not samples:
            continue
        totals = direction_stats.get("link") or {}
        class_sojourn = ({c: totals[c]["sojourn_ns"] for c in CLASSES}
                         if all(c in totals for c in CLASSES) else None)
        rows = {}
        for i, t in enumerate(samples["t_ns"]):
            rows[int(t)] = QueueReading(
                backlog_bytes=int(samples["backlog_bytes"][i]),
                backlog_packets=int(samples["backlog_packets"][i]),
                drops=int(samples["drops"][i]), departures=int(samples["departures"][i]),
                departed_bytes=int(samples["departed_bytes"][i]),
                sojourn_total_ns=int(samples["sojourn_total_ns"][i]),
                lost_wire=int(samples["lost_wire"][i]), busy_ns=int(samples["busy_ns"][i]),
                early_drops=int(samples["early_drops"][i]), marks=int(samples["marks"][i]),
                duplicated=int(samples["duplicated"][i]) if "duplicated" in samples else None,
                reordered=int(samples["reordered"][i]) if "reordered" in samples else None,
                aqm_prob_classic=_at(samples, "aqm_prob_classic", i),
                aqm_prob_l4s=_at(samples, "aqm_prob_l4s", i),
                classes=_classes_at(samples, i), class_sojourn_ns=class_sojourn)
        out[link] = rows
    return out


@dataclass
class Relay:
    """A running relay process (see the module doc).

    Attributes:
        proc: the process (``ip netns exec`` has exec'd into the relay: same pid).
        config_path, stats_path, stderr_path: its files.
        pipes: its pipe list.
        sample_origin_ns: the start of its sampling grid (CLOCK_MONOTONIC).
    """

    proc: subprocess.Popen
    config_path: Path
    stats_path: Path
    stderr_path: Path
    pipes: list[dict[str, Any]] = field(default_factory=list)
    sample_origin_ns: int = 0

    def last_error(self) -> str:
        """The last line the relay wrote on stderr ("no output" if none)."""
        try:
            return (self.stderr_path.read_text().strip().splitlines() or ["no output"])[-1]
        except OSError:
            return "no output"

    def announce_start(self, t0_ns: int) -> None:
        """Tell the relay the instant its links' scheduled changes count from (``t0``).

        Raises:
            UserError: the relay is gone (its stdin is closed).
        """
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(f"start {int(t0_ns)}\n")
            self.proc.stdin.flush()
        except (OSError, ValueError) as err:
            raise UserError(f"the link relay stopped before the run started ({err})") from None

    def stop(self, timeout_s: float = 10.0) -> dict[str, Any] | None:
        """SIGTERM the relay, wait for it, and return its stats (None if it wrote none)."""
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        try:
            return json.loads(self.stats_path.read_text())
        except (OSError, ValueError):
            return None

    def kill(self) -> None:
        """SIGKILL the relay if it still runs (cleanup after an error)."""
        if self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                pass


def start_relay(plan: NetworkPlan, spec: RunSpec, emulation: Emulation, workdir: Path,
                pcap_dir: Path | None = None) -> Relay:
    """Start one relay process for every relayed link of the run and wait for ``ready``;
    with ``pcap_dir``, it captures the spec's ``pcap`` links there (its files exist once ready).

    Raises:
        UserError: the relay exited or did not become ready (its stderr's last line is shown).
    """
    origin_ns = time.monotonic_ns()
    config = relay_config(plan, spec, emulation, origin_ns, pcap_dir)
    config_path = workdir / f"{plan.names.prefix}relay.json"
    stats_path = workdir / f"{plan.names.prefix}relay-stats.json"
    config_path.write_text(json.dumps(config))
    stderr_path = workdir / "relay.stderr"
    with open(stderr_path, "w") as err:
        proc = subprocess.Popen(
            ["ip", "netns", "exec", plan.names.wire_ns, sys.executable, "-m", "ccarena.backends.kernel.relay_main",
             str(config_path), str(stats_path)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
            start_new_session=True, env=dict(os.environ))
    relay = Relay(proc=proc, config_path=config_path, stats_path=stats_path, stderr_path=stderr_path,
                  pipes=config["pipes"], sample_origin_ns=origin_ns)
    deadline = time.monotonic() + READY_TIMEOUT_S
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.1)
        if ready:
            line = proc.stdout.readline()
            if line.strip() == "ready":
                return relay
            if line == "":  # EOF: the relay exited
                break
        elif proc.poll() is not None:
            break
    relay.kill()
    raise UserError(f"the link relay did not start in {plan.names.wire_ns}: {relay.last_error()}")
