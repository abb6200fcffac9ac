"""Backends: what runs a :class:`ccarena.runspec.RunSpec`, all behind one protocol.

A backend has a ``name``, says whether it runs in real time (``realtime``: one run at a time, in
the calling process, never beside another run), and offers two calls:

- ``check(spec)``: raise :class:`ccarena.errors.UserError` (one line naming the field and the fix)
  when this machine cannot run ``spec`` on this backend; called for every run before anything is
  written or started;
- ``run(spec, progress, cancel)``: run it and return a :class:`RunResult` whose four tables have
  the same columns on every backend (docs/engine-spec.md, "results").

A backend may also offer ``start(spec, progress, cancel)``: the run begins in the background and a
:class:`PendingRun` is returned at once, whose ``result()`` is what ``run`` returns. The executor
starts a run this way when it runs in this process, and loads what it needs afterwards while the
run works (the simulator releases the GIL: a second core does the rest).

Each backend declares itself once, in its own package (``DECLARATION``, a
:class:`ccarena.backends.declaration.BackendDeclaration`: name, options table, needs, whether it
runs real TCP, its report section), registered in :data:`DECLARED_IN`. No layer outside this
package names a backend: the scenario, the experiment, the executor, the store and the report ask
:func:`declarations` and the functions over it (:func:`reference_backend`,
:func:`real_tcp_backends`, :func:`options_models`, …), and the executor asks :func:`get_backend`
for a backend by name. A backend imports only the run spec, the errors and its own modules:
nothing of the scenario, experiment expansion, the store or the report (the import contracts in
pyproject.toml check it; the backends sit below the scenario, which validates their options).

Backends: ``sim`` (:mod:`ccarena.backends.sim`, the simulator), ``kernel``
(:mod:`ccarena.backends.kernel`, the Linux TCP stack in network namespaces), ``udp``
(:mod:`ccarena.backends.udp`, ccarena's own transport on UDP sockets over the same namespaces).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from ccarena.backends.declaration import BackendDeclaration, Comparison
from ccarena.errors import UserError
from ccarena.runspec import RunSpec

if TYPE_CHECKING:  # pandas loads with the tables, not with the backend registry
    from pathlib import Path

    import pandas as pd

ProgressCallback = Callable[[int, int], None]
"""``progress(now_ns, duration_ns)``: how far a run has got (simulated or wall time)."""

CancelCheck = Callable[[], bool]
"""``cancel()``: True when the run should stop (it then raises KeyboardInterrupt)."""

TABLES = ("flows", "samples", "queues", "links")
"""The tables every backend returns."""

MPTCP_FLOW_COLUMNS = ("subflows", "coupling", "bytes_reinjected", "reorder_delay_mean_s",
                      "reorder_delay_max_s")
"""The flows table's Multipath TCP columns, every backend's (docs/engine-spec.md, "Tables"):
subflows (1 for single-path TCP, NaN for UDP transports), coupling (empty but for MPTCP),
connection bytes reinjected after a subflow's timeout, and the data-level reordering wait (mean
and longest, s; NaN when nothing waited or not measured)."""

SUBFLOW_TABLE = "subflows"
"""The table a backend returns beside :data:`TABLES` when a run has Multipath TCP flows: one row
per subflow per sample instant (docs/engine-spec.md, "Tables"); absent, or empty, without MPTCP."""

OPPORTUNISTIC_SUBFLOW_COLUMNS = ("opportunistic_retransmits", "opportunistic_bytes", "penalisations")
"""The :data:`SUBFLOW_TABLE`'s opportunistic-retransmission columns, cumulative per subflow
(Raiciu et al., NSDI 2012, §4.2; the spec's ``mptcp.opportunistic``): segments and connection
bytes resent on the subflow because a slower subflow held up the connection window, and times the
subflow's cwnd was halved for being that slower subflow. The simulator's are 0 without the option;
a backend that cannot measure them (kernel) gives null (NaN), not 0."""

CPU_FLOW_COLUMNS = ("sender_cpu_s", "sender_wall_s", "cpu_mhz")
"""The flows table's CPU-cost columns (seed 001, Table 1): the sender's CPU seconds over its
sending interval, that interval's wall seconds, and the CPU clock in MHz. Measured by backends on
real machines (kernel); NaN on the simulator, which has no CPU cost (docs/metrics.md, "CPU cost")."""

DUALPI2_CLASSES = ("l4s", "classic")
"""DualPI2's two queues (RFC 9332 §2.1), as the prefixes of its per-class columns."""

DUALPI2_CLASS_FIELDS = (
    "packets_departed", "packets_marked", "packets_dropped", "sojourn_mean_s", "sojourn_min_s",
    "sojourn_p5_s", "sojourn_p10_s", "sojourn_p25_s", "sojourn_p50_s", "sojourn_p75_s",
    "sojourn_p90_s", "sojourn_p95_s", "sojourn_p99_s", "sojourn_max_s",
)
"""The fields of each DualPI2 class in the links table (docs/engine-spec.md, "Tables")."""

DUALPI2_LINK_COLUMNS = tuple(f"{c}_{f}" for c in DUALPI2_CLASSES for f in DUALPI2_CLASS_FIELDS)
"""The links table's per-class columns, ``l4s_…`` then ``classic_…``: finite on a link whose
queue is DualPI2, NaN on every other link."""

AQM_PROBABILITY_COLUMNS = ("aqm_prob_classic", "aqm_prob_l4s")
"""The queues samples' AQM probabilities: the Classic drop/mark probability (DualPI2's
p_C = p'², PIE's drop probability) and DualPI2's coupled L4S marking probability; NaN where a
discipline has none."""

MEMORY_BUDGET_ENV = "CCARENA_MAX_MEMORY_BYTES"
"""Environment variable carrying the per-run memory budget to a backend that holds a run in memory
(the simulator's engine; set by the executor from ``--max-memory``; inherited by pool workers)."""

INTEGER_COLUMNS = {
    "flow", "link", "bytes_offered", "bytes_sent", "bytes_retransmitted", "bytes_delivered",
    "packets_sent", "packets_retransmitted", "packets_received", "packets_lost", "rto_count",
    "fast_recoveries", "spurious_rtos", "duplicate_bytes_received", "rtt_samples",
    "delivered_bytes", "sent_bytes", "retransmits", "ca_state", "backlog_bytes", "backlog_packets",
    "drops", "marks", "arrivals", "departures", "rate_bps", "delay_ns", "packets_in", "bytes_in",
    "packets_delivered", "packets_dropped_queue", "packets_marked", "packets_lost_wire",
    "down_drops_packets", "no_route_drops_packets", "packets_queued_end",
    "packets_in_flight_end", "bytes_transmitted", "packets_duplicated", "packets_reordered",
    "ce_packets", "ce_bytes", "subflows", "bytes_reinjected", "subflow", "bytes_scheduled",
    "rto_count", "stale", *OPPORTUNISTIC_SUBFLOW_COLUMNS,
}
"""Columns that hold counts or ids: stored as int64 when every value is finite."""


@dataclass
class RunResult:
    """What a backend returns for one run.

    Attributes:
        tables: ``{"flows", "samples", "queues", "links"}`` → DataFrame, the same columns on every
            backend (docs/engine-spec.md, "results").
        record: how the backend ran it, stored in ``run.json`` (the kernel backend: its link
            emulation and that emulation's own timing error; the simulator: its packet
            captures, ``pcap``, when the spec asks for some).
        files: files the run wrote for its run directory: relative name there
            (``pcap/r0_to_r1.pcap``) → where the backend left it; the executor moves them in.
        scratch: a directory of the backend's own holding ``files``, deleted by the executor
            once it has taken them (or given up the run); None when there is none.
        engine: the engine's own time (:class:`EngineTime`), for a backend whose run is a
            computation (the simulator); None where the run takes real time (kernel, udp).
    """

    tables: dict[str, pd.DataFrame]
    record: dict[str, Any] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)
    scratch: Path | None = None
    engine: EngineTime | None = None


@dataclass(frozen=True)
class EngineTime:
    """What a run cost the engine alone, measured on the thread that ran it: building the
    simulation from its spec and running it to its end, not reading its tables out nor anything
    the front end did meanwhile (issue 35: a run's wall time also holds front-end work, which
    must not be read as engine speed).

    Attributes:
        build_s: wall seconds to build the simulation from the spec (parse, check, routes).
        run_s: wall seconds of the simulation's run.
        cpu_s: CPU seconds of the engine over both: its thread's (``time.thread_time``) plus,
            for a run split over threads, those threads' (the engine's ``worker_cpu_s``); below
            the wall seconds when a thread waited for a CPU, up to ``parts`` times them when
            split.
        parts: the parts the run's network was split into, one thread each (1: not split; see
            :class:`ccarena.backends.engine_options.EngineOptions`).
    """

    build_s: float
    run_s: float
    cpu_s: float
    parts: int = 1

    def timing(self, simulated_s: float) -> dict[str, float | None]:
        """``run.json``'s ``timing`` entries of the engine: ``engine_s`` (build + run, wall s),
        ``engine_build_s``, ``engine_cpu_s``, ``engine_parts`` and ``simulated_per_engine_s``
        (simulated seconds per engine second; None for a zero-length run)."""
        engine_s = self.build_s + self.run_s
        return {"engine_s": engine_s, "engine_build_s": self.build_s, "engine_cpu_s": self.cpu_s,
                "engine_parts": self.parts,
                "simulated_per_engine_s": simulated_s / engine_s if engine_s > 0 else None}


class PendingRun(Protocol):
    """A run started in the background (``start`` of a backend that offers it)."""

    def result(self) -> RunResult:
        """Wait for the run to end and return what ``run`` would have.

        Raises:
            whatever ``run`` raises; KeyboardInterrupt (Ctrl-C while waiting) after the run has
            been stopped.
        """

    def cancel(self) -> None:
        """Stop the run at its next chance (the simulator: the end of its current chunk) and wait
        for it; ``result()`` then raises KeyboardInterrupt. Does nothing once it has ended."""


class Backend(Protocol):
    """The protocol every backend implements (see the module docstring)."""

    name: str
    realtime: bool

    def check(self, spec: RunSpec) -> None:
        """Raise :class:`ccarena.errors.UserError` if ``spec`` cannot run here."""

    def run(self, spec: RunSpec, progress: ProgressCallback | None = None,
            cancel: CancelCheck | None = None) -> RunResult:
        """Run ``spec`` to its end.

        Raises:
            UserError: this machine cannot run it after all (one line).
            KeyboardInterrupt: Ctrl-C, SIGTERM or ``cancel()``; nothing of the run is left behind.
        """


DECLARED_IN = ("ccarena.backends.sim", "ccarena.backends.kernel", "ccarena.backends.udp")
"""The registration: each module's ``DECLARATION`` (:class:`BackendDeclaration`), in the order
runs of one point execute in. A new backend is its package and one line here."""


@functools.cache
def declarations() -> Mapping[str, BackendDeclaration]:
    """Every backend's declaration by name, in execution order, read-only (the declaring modules
    import nothing heavy; each backend's implementation is imported by :func:`get_backend`)."""
    found = [importlib.import_module(module).DECLARATION for module in DECLARED_IN]
    return MappingProxyType({d.name: d for d in found})


def reference_backend() -> str:
    """The simulator's name: the scenario's default backend, compared with every other one."""
    return next(d.name for d in declarations().values() if d.reference)


def sim_twin(run_id: str) -> tuple[str, str]:
    """``"r0@kernel"`` → ``("r0", "kernel")``; a simulator's run id → ``(id, "sim")``: a run on
    another backend has its simulated twin's id plus ``@<backend>``
    (:mod:`ccarena.experiment.runids`)."""
    if "@" in run_id:
        base, backend = run_id.rsplit("@", 1)
        return base, backend
    return run_id, reference_backend()


def real_tcp_backends() -> tuple[str, ...]:
    """The backends that run a host's own TCP stack (Linux's), in execution order."""
    return tuple(d.name for d in declarations().values() if d.real_tcp)


def calibration_backends() -> tuple[str, str]:
    """``(simulator, real TCP stack)``: the two backends ``ccarena calibrate`` compares."""
    return reference_backend(), real_tcp_backends()[0]


def compared_backends() -> dict[str, Comparison]:
    """Backend → its side-by-side report section, for every backend compared with the simulator."""
    return {d.name: d.comparison for d in declarations().values() if d.comparison is not None}


def offered_flavors(backend: str) -> list[str]:
    """The congestion controllers this machine offers ``backend`` (a real-TCP backend's, as its
    stack names them; empty where it cannot say or the backend declares none)."""
    declared = declarations()[backend].offered_flavors
    if declared is None:
        return []
    module, function = declared.split(":")
    return list(getattr(importlib.import_module(module), function)())


def options_models() -> dict[str, type[Any]]:
    """Scenario table → the pydantic model of its options, for every backend options table."""
    return {d.options_table: d.options_model for d in declarations().values()
            if d.options_table is not None and d.options_model is not None}


def options_table(backend: str) -> str:
    """The scenario table holding ``backend``'s options (``"kernel"`` for kernel and udp; a
    backend without options gives its own name, which no table has)."""
    declared = declarations().get(backend)
    return (declared.options_table if declared is not None else None) or backend


def backend_names() -> tuple[str, ...]:
    """Every backend's name, in execution order."""
    return tuple(declarations())


def get_backend(name: str, options: Mapping[str, Any] | None = None) -> Backend:
    """A backend by name, configured with its scenario options (``[kernel]`` for ``kernel``).

    Raises:
        UserError: no backend has that name.
    """
    registry = declarations()
    if name not in registry:
        raise UserError(f"backend: unknown backend '{name}' (choose {', '.join(registry)})")
    module, cls = registry[name].implementation.split(":")
    return getattr(importlib.import_module(module), cls)(**dict(options or {}))


def parse_backend_names(text: str | None) -> list[str] | None:
    """``"sim,kernel"`` → ``["sim", "kernel"]``; None or empty → None (the scenario's own).

    Raises:
        UserError: an unknown or repeated backend name.
    """
    if text is None or not text.strip():
        return None
    names = [t.strip() for t in text.split(",") if t.strip()]
    registry = declarations()
    for name in names:
        if name not in registry:
            raise UserError(f"--backend: unknown backend '{name}' (choose "
                            f"{', '.join(registry)} or a comma-separated list, e.g. sim,kernel)")
    if len(set(names)) != len(names):
        raise UserError(f"--backend: '{text}' names a backend twice")
    return names
