"""The scenario file's schema: pydantic models of every table (``[topology]``, ``[[flows]]``,
``[output]``, ``[sweep]``, ``[matrix]``, ``[[events]]``, ``[report]``, ``[executor]``, and each
backend's options table, ``[kernel]``, whose model its backend declares).

A scenario says what network, which flows, how long and how often to sample, what to vary and the
seed. Quantities are strings with units (see :mod:`ccarena.units`). Every model forbids unknown
fields; a validator raises :class:`ccarena.errors.FieldError` naming the field, which
:mod:`ccarena.scenario.error_lines` turns into one line (``flows[2].flavor: unknown flavor 'cubik' (did
you mean 'cubic'?)``).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    FiniteFloat,
    PrivateAttr,
    create_model,
    field_validator,
    model_validator,
)

from ccarena import flavors as flavor_catalog
from ccarena.backends import backend_names, options_models, reference_backend
from ccarena.errors import FieldError, FieldErrors, UserError
from ccarena.quantities import Packets, RateBps, SizeBytes, StrictModel, TimeNs
from ccarena.runspec import (
    COUPLED_FLAVOR,
    COUPLINGS,
    MAX_SUBFLOWS,
    MPTCP_SCHEDULERS,
    QUIC_DATA_OVERHEAD_BYTES,
    TCP_DEFAULTS,
    TRANSPORTS,
    quic_payload_bytes,
)
from ccarena.scenario.capture import select_capture_links
from ccarena.scenario.events import Event, resolve_events
from ccarena.scenario.executor_options import ExecutorOptions
from ccarena.scenario.traffic import TrafficPattern, expand_traffic, flow_template
from ccarena.topology import Network, Topology
from ccarena.units import format_time

HOST_MODELS = ("linux", "rfc")
"""The host models a scenario or a flow may choose (``host``): ``"linux"``, a Linux 6.x host
(SACK + RACK-TLP + PRR recovery, Linux's CUBIC and BBR module defaults, the handshake's RTT
sample, the testbed's start and link timing jitter) or ``"rfc"``, the RFCs' and papers' models as
FLAVORS.md names them (:mod:`ccarena.experiment.host_model`)."""
RECOVERIES = ("tahoe", "reno", "newreno", "sack", "prr", "linux")
"""Loss recovery algorithms a TCP flow may use (README.md, "Flavors": RFC 5681 §3.2, RFC 6582, RFC 6675, RFC 6937)."""

MAX_MSS_BYTES = 65_495
"""Largest MSS: an IPv4 datagram's 16-bit total length (65,535 B) less 20 B of IP and 20 B of TCP
header (RFC 791 §3.1, RFC 9293 §3.7.1)."""

TCP_ONLY_FIELDS = ("bytes", "recovery", "params", "mss", "initial_cwnd", "min_rto", "initial_rto",
                   "max_rto", "delayed_ack", "ack_every", "dupthresh", "ecn", "rwnd", "sndbuf")
UDP_ONLY_FIELDS = ("rate", "packet_size")
MPTCP_FIELDS = ("subflows", "coupling", "scheduler", "join_delay", "opportunistic", "source_ports")
"""A flow's Multipath TCP fields: giving any of them makes the flow an MPTCP connection."""
QUIC_FIELDS = ("max_ack_delay", "ack_eliciting_threshold", "reordering_threshold", "max_stream_data")
"""A QUIC flow's own settings (``transport = "quic"``; :class:`ccarena.runspec.QuicSpec`)."""

NOT_UNDER_QUIC = {
    "recovery": ("QUIC recovers losses by RFC 9002's rules (packet and time thresholds, §6.1)",
                 "remove recovery"),
    "dupthresh": ("QUIC declares a packet lost 3 packets or 9/8 RTT after a later one is "
                  "acknowledged (RFC 9002 §6.1)", "remove dupthresh"),
    "min_rto": ("QUIC has a probe timeout, not an RTO (RFC 9002 §6.2)", "remove min_rto"),
    "initial_rto": ("QUIC has a probe timeout, not an RTO (RFC 9002 §6.2), the first one from "
                    "the initial RTT of 333 ms", "remove initial_rto"),
    "max_rto": ("QUIC has a probe timeout, not an RTO (RFC 9002 §6.2)", "remove max_rto"),
    "delayed_ack": ("QUIC's receiver delays an ACK by at most max_ack_delay (RFC 9000 §13.2.1)",
                    "give max_ack_delay instead"),
    "ack_every": ("QUIC's receiver ACKs every ack_eliciting_threshold packets (RFC 9000 §13.2.2)",
                  "give ack_eliciting_threshold instead"),
}
"""TCP-only flow fields a QUIC flow refuses: scenario field → (why, the fix). The engine ignores
them on a QUIC flow; the scenario refuses them rather than let them be silently ignored."""

SIMPLE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class Flow(StrictModel):
    """One flow: a TCP bulk transfer (``flavor`` = a congestion controller) or a UDP transport
    (``flavor = "udp-cbr"``) from host ``from`` to host ``to``.

    Common: ``name`` (default: the flavor, numbered if several flows share it), ``start`` (default
    ``"0s"``), ``stop`` (default: the end of the run).
    TCP only: ``bytes`` (a finite transfer; default: send until stop), ``recovery`` (default: the
    flavor's), ``params`` (the controller's named parameters), ``mss``, ``initial_cwnd``,
    ``min_rto``, ``initial_rto``, ``max_rto``, ``delayed_ack``, ``ack_every``, ``dupthresh``, ``ecn``
    (defaults in :mod:`ccarena.runspec`), ``rwnd`` and ``sndbuf`` (the receive and send buffers, a
    host's socket buffers as iperf's ``-w`` sets them; default: unlimited).
    UDP CBR only: ``rate`` (payload bit rate, required), ``packet_size`` (payload per datagram).
    UDT (``flavor = "udt"``): ``bytes`` and ``params`` as for TCP, and ``rwnd``: the receiver's
    buffer, which UDT's flow window is (draft-gg-udt-03 §3; in packets of UDT's MSS); the rest of
    UDT's settings are the defaults in :mod:`ccarena.runspec`.
    Multipath TCP (TCP flows; any of these makes the flow an MPTCP connection, RFC 8684):
    ``subflows`` (default 1; each its own 5-tuple, so ECMP spreads them), ``coupling``
    (``"lia"``, ``"olia"``, ``"balia"`` — whose subflows grow like Reno, so ``flavor = "reno"`` —,
    ``"wvegas"`` — delay-based, each subflow a Vegas against its share of one α, so
    ``flavor = "vegas"`` — or ``"uncoupled"``, the default: every subflow runs ``flavor`` on its
    own, as Linux does),
    ``scheduler`` (``"minrtt"``, the default, or ``"roundrobin"``), ``join_delay`` (subflows
    after the first start this much later; default ``"0s"``), ``opportunistic`` (``true``:
    when the connection's receive window blocks new data, a subflow with room resends the
    segment at the DATA_ACK that a slower subflow holds, and halves that subflow's window at
    most once per its RTT; Raiciu et al., NSDI 2012, §4.2, as the out-of-tree Linux MPTCP v0.9x
    did; default ``false``; simulator only), ``source_ports`` (each subflow's TCP source port,
    subflow 0 first, e.g. ``[40001, 40002]``: ECMP hashes each subflow's 5-tuple with its port,
    so the ports steer the subflows' paths; one per subflow, distinct, in 1..65535; ``subflows``
    defaults to their number; default: the engine's own ports; simulator only).
    QUIC (TCP flavors): ``transport = "quic"`` (default ``"tcp"``) runs the flow as a QUIC
    connection (RFC 9000, RFC 9002) with the same controller; it keeps ``bytes``, ``params``,
    ``mss`` (its packets have the TCP segment's wire size), ``initial_cwnd``, ``ecn``, ``rwnd``
    (the connection's flow-control window) and ``sndbuf``, refuses the TCP-only
    :data:`NOT_UNDER_QUIC` and the MPTCP fields, and takes ``max_ack_delay`` (default 25 ms, RFC
    9000 §18.2), ``ack_eliciting_threshold`` (default 2, RFC 9000 §13.2.2),
    ``reordering_threshold`` (default 1, RFC 9000 §13.2.1; 0 = never ACK at once on reordering)
    and ``max_stream_data`` (the stream's flow-control window; default unlimited), which need
    ``transport = "quic"``.
    ``flavor`` may also be a table naming the flavor and its parameters:
    ``flavor = { name = "vegas", alpha = 1, beta = 3 }`` (the same as ``flavor = "vegas"`` with
    ``params = { alpha = 1, beta = 3 }``).
    ``host``: the host model of the flow's ends, ``"linux"`` or ``"rfc"``; default: the
    scenario's ``host`` (:data:`HOST_MODELS`, :mod:`ccarena.experiment.host_model`).
    """

    @model_validator(mode="before")
    @classmethod
    def _flavor_table(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("flavor"), dict):
            table = dict(data["flavor"])
            if "name" not in table:
                raise FieldError("flavor", 'a flavor table needs a name, e.g. flavor = { name = "vegas", alpha = 1 }')
            if data.get("params") is not None:
                raise FieldError("params", "give the parameters either in the flavor table or in params, not both")
            data = dict(data, flavor=table.pop("name"), params=table)
        return data

    name: str | None = None
    src: str = Field(alias="from")
    dst: str = Field(alias="to")
    flavor: str
    start_ns: TimeNs = Field("0s", alias="start")
    stop_ns: TimeNs | None = Field(None, alias="stop")
    size_bytes: SizeBytes | None = Field(None, alias="bytes")
    recovery: Literal[RECOVERIES] | None = None  # type: ignore[valid-type]
    host: Literal[HOST_MODELS] | None = None  # type: ignore[valid-type]
    params: dict[str, FiniteFloat] | None = None
    mss_bytes: SizeBytes | None = Field(None, alias="mss")
    initial_cwnd_packets: Packets | None = Field(None, alias="initial_cwnd")
    min_rto_ns: TimeNs | None = Field(None, alias="min_rto")
    initial_rto_ns: TimeNs | None = Field(None, alias="initial_rto")
    max_rto_ns: TimeNs | None = Field(None, alias="max_rto")
    delayed_ack_ns: TimeNs | None = Field(None, alias="delayed_ack")
    ack_every_segments: int | None = Field(None, alias="ack_every", ge=1, le=64)
    dupthresh: int | None = Field(None, ge=1, le=1000)
    ecn: bool | None = None
    rwnd_bytes: SizeBytes | None = Field(None, alias="rwnd")
    sndbuf_bytes: SizeBytes | None = Field(None, alias="sndbuf")
    rate_bps: RateBps | None = Field(None, alias="rate")
    packet_bytes: SizeBytes | None = Field(None, alias="packet_size")
    subflows: int | None = Field(None, ge=1, le=MAX_SUBFLOWS)
    coupling: Literal[COUPLINGS] | None = None  # type: ignore[valid-type]
    scheduler: Literal[MPTCP_SCHEDULERS] | None = None  # type: ignore[valid-type]
    join_delay_ns: TimeNs | None = Field(None, alias="join_delay")
    opportunistic: bool | None = None
    source_ports: list[int] | None = None
    transport: Literal[TRANSPORTS] | None = None  # type: ignore[valid-type]
    max_ack_delay_ns: TimeNs | None = Field(None, alias="max_ack_delay")
    ack_eliciting_threshold: int | None = Field(None, ge=1, le=1000)
    reordering_threshold: int | None = Field(None, ge=0, le=1000)
    max_stream_data_bytes: SizeBytes | None = Field(None, alias="max_stream_data")

    @field_validator("name")
    @classmethod
    def _name_is_simple(cls, name: str | None) -> str | None:
        if name is not None and not SIMPLE_NAME.match(name):
            raise ValueError(f"'{name}' is not a simple name: use letters, digits, '.', '_' or '-'")
        return name

    @field_validator("flavor")
    @classmethod
    def _flavor_is_known(cls, flavor: str) -> str:
        if flavor not in flavor_catalog.all_flavors():
            raise ValueError(flavor_catalog.unknown_flavor_message(flavor))
        return flavor

    @property
    def is_udp(self) -> bool:
        """True for the UDP transports (``udp-cbr``)."""
        return self.flavor in flavor_catalog.UDP_TRANSPORTS

    @property
    def engine_kind(self) -> str:
        """``"tcp"``, ``"udt"`` or ``"udp_cbr"``: the engine flow kind this flow runs as (a QUIC
        flow is a ``"tcp"`` flow of the spec with its ``quic`` settings: :attr:`is_quic`)."""
        return flavor_catalog.transport_of(self.flavor)

    @property
    def is_quic(self) -> bool:
        """True when the flow runs as a QUIC connection (``transport = "quic"``)."""
        return self.transport == "quic"

    @model_validator(mode="after")
    def _fields_fit_the_flavor(self) -> "Flow":
        given = {name for name, value in self._given_by_alias().items() if value is not None}
        if self.is_udp:
            self._check_no_transport(given, f"{self.flavor} is UDP")
            for name in TCP_ONLY_FIELDS + MPTCP_FIELDS:
                if name in given:
                    hint = "; a UDP flow sends until `stop`" if name == "bytes" else ""
                    raise FieldError(name, f"only TCP flows take `{name}` ({self.flavor} is UDP){hint}")
            if self.rate_bps is None:
                raise FieldError("rate", f"a {self.flavor} flow needs a rate, e.g. rate = \"2Mbps\"")
        else:
            for name in UDP_ONLY_FIELDS:
                if name in given:
                    raise FieldError(name, f"only udp-cbr flows take `{name}` ({self.flavor} is TCP)")
            self._check_mptcp()
            if self.engine_kind == "udt":
                self._check_no_transport(given, "UDT runs on its own protocol over UDP")
                for name in TCP_ONLY_FIELDS + MPTCP_FIELDS:
                    if name in given and name not in ("bytes", "params", "rwnd"):
                        raise FieldError(name, f"a udt flow takes `bytes`, `params` and `rwnd` but "
                                               f"not `{name}` (UDT is not TCP)")
            known = [p["name"] for p in flavor_catalog.engine_flavors()[self.flavor]["params"]]
            for param in (self.params or {}):
                if param not in known:
                    hint = flavor_catalog.suggest(param, known)
                    listing = f"; {self.flavor} takes {', '.join(known)}" if known else \
                        f"; {self.flavor} takes no parameters"
                    raise FieldError(f"params.{param}",
                                     f"unknown parameter of {self.flavor}{hint}{listing}")
            if self.engine_kind == "tcp":
                self._check_quic(given)
        if self.mss_bytes is not None and self.mss_bytes > MAX_MSS_BYTES:
            raise FieldError("mss", f"{self.mss_bytes} B is more than one segment can carry: at "
                                    f"most {MAX_MSS_BYTES} B (IPv4's 16-bit length less 40 B of "
                                    "headers); jumbo frames use 8960")
        mss = self.mss_bytes or TCP_DEFAULTS["mss_bytes"]
        for name, value in (("rwnd", self.rwnd_bytes), ("sndbuf", self.sndbuf_bytes)):
            if value is not None and value < mss:
                raise FieldError(name, f"{value} B is less than one segment ({mss} B); give at "
                                       f'least the MSS, e.g. {name} = "16MB"')
        if self.stop_ns is not None and self.stop_ns <= self.start_ns:
            raise FieldError("stop", f"{format_time(self.stop_ns / 1e9)} is not after start "
                                     f"({format_time(self.start_ns / 1e9)})")
        return self

    @property
    def is_mptcp(self) -> bool:
        """True when the flow is a Multipath TCP connection (it gives an MPTCP field)."""
        return any(getattr(self, name) is not None
                   for name in ("subflows", "coupling", "scheduler", "join_delay_ns", "opportunistic",
                                "source_ports"))

    def _check_mptcp(self) -> None:
        if self.source_ports is not None and self.engine_kind == "tcp" and not self.is_quic:
            self._check_source_ports(self.source_ports)
        want = COUPLED_FLAVOR.get(self.coupling or "uncoupled")
        if want is not None and self.flavor != want:
            what = "Reno's increase" if want == "reno" else "Vegas's windows"
            raise FieldError("coupling", f"{self.coupling} couples {what} across the "
                                         f'subflows: give flavor = "{want}", or coupling = '
                                         f'"uncoupled" to run {self.flavor} on each subflow')
        if want is not None and self.params:
            # The engine builds a coupled subflow's controller from the coupling alone.
            raise FieldError("params", f"{self.coupling} runs its own controller on each subflow "
                                       f"and takes no {self.flavor} parameters; remove params, or "
                                       f'use coupling = "uncoupled" to tune {self.flavor}')

    def _check_source_ports(self, ports: list[int]) -> None:
        """``source_ports``: what the scenario adds to the engine's rule — a list at all, at most
        :data:`MAX_SUBFLOWS`, and ``subflows`` (which defaults to the number of ports) agreeing
        with it —, then the engine's own rule, one port per subflow in 1..65535, none twice
        (``check_source_ports`` in crates/sim/src/spec.rs, asked through
        ``ccarena._engine.check_source_ports``: the rule lives once).

        Raises:
            FieldError: one line on ``source_ports`` saying what is wrong and the fix.
        """
        from ccarena import _engine

        if not ports:
            raise FieldError("source_ports", "gives no port: give one source port per subflow, "
                                             "e.g. source_ports = [40001, 40002]")
        if self.subflows is not None and len(ports) != self.subflows:
            raise FieldError("source_ports", f"gives {len(ports)} ports for subflows = "
                                             f"{self.subflows}: give one port per subflow, or leave "
                                             "subflows out (it defaults to the number of ports)")
        if len(ports) > MAX_SUBFLOWS:
            raise FieldError("source_ports", f"gives {len(ports)} ports: an MPTCP connection has "
                                             f"at most {MAX_SUBFLOWS} subflows, one port each")
        try:
            _engine.check_source_ports([int(p) for p in ports], len(ports))
        except (ValueError, OverflowError) as e:
            raise FieldError("source_ports", str(e)) from None

    def _check_no_transport(self, given: set[str], why: str) -> None:
        """Refuse ``transport`` and the QUIC fields on a flow that is not a TCP flavor."""
        for name in ("transport", *QUIC_FIELDS):
            if name in given:
                raise FieldError(name, f'only TCP flavors take `{name}` ({why}); transport = '
                                       f'"quic" runs a TCP flavor\'s controller over QUIC, e.g. '
                                       f'flavor = "cubic"')

    def _check_quic(self, given: set[str]) -> None:
        """A TCP flavor's QUIC fields: the QUIC settings need ``transport = "quic"``, and a QUIC
        flow refuses the MPTCP fields, the TCP-only :data:`NOT_UNDER_QUIC` and sizes that leave a
        packet no stream data."""
        if not self.is_quic:
            for name in QUIC_FIELDS:
                if name in given:
                    raise FieldError(name, f'is a QUIC setting; give transport = "quic" (this flow '
                                           f'runs over {self.transport or "tcp"})')
            return
        for name in MPTCP_FIELDS:
            if name in given:
                raise FieldError(name, "a QUIC connection is single-path (ccarena has no "
                                       f'multipath QUIC); remove {name}, or give transport = "tcp" '
                                       "for Multipath TCP")
        for name, (why, fix) in NOT_UNDER_QUIC.items():
            if name in given:
                raise FieldError(name, f'is a TCP setting and this flow runs over QUIC: {why}; '
                                       f'{fix}, or give transport = "tcp"')
        mss = self.mss_bytes or TCP_DEFAULTS["mss_bytes"]
        payload = quic_payload_bytes(mss, TCP_DEFAULTS["header_bytes"])
        if payload <= 0:
            least = QUIC_DATA_OVERHEAD_BYTES - TCP_DEFAULTS["header_bytes"] + 1
            raise FieldError("mss", f"{mss} B leaves a QUIC packet no stream data (its "
                                    f"{mss + TCP_DEFAULTS['header_bytes']} B on the wire are all "
                                    f"QUIC's {QUIC_DATA_OVERHEAD_BYTES} B of headers); give mss of "
                                    f"at least {least} B")
        if self.max_stream_data_bytes is not None and self.max_stream_data_bytes < payload:
            raise FieldError("max_stream_data", f"{self.max_stream_data_bytes} B is less than one "
                                                f"packet's stream data ({payload} B); give at least "
                                                'that, e.g. max_stream_data = "16MB", or leave it '
                                                "out (unlimited)")

    def _given_by_alias(self) -> dict[str, Any]:
        return {(f.alias or name): getattr(self, name) for name, f in type(self).model_fields.items()}


class Traffic(TrafficPattern):
    """``[[traffic]]``: a flow generator (:mod:`ccarena.scenario.traffic`) with ``flow``, the
    template of its flows (a :class:`Flow` table without from, to, name, start, stop, bytes)."""

    flow: Flow

    @field_validator("flow", mode="before")
    @classmethod
    def _template(cls, value: Any) -> Any:
        return flow_template(value)


class Output(StrictModel):
    """``[output]``: ``sample_interval`` (default ``"100ms"``) between time-series samples;
    ``queues``: which links' queues are sampled over time — ``"auto"`` (default: every link but
    the hosts' access links of a dumbbell, chain or parking lot, role ``access``, whose queues
    rarely hold anything and which are 4 per flow pair) or ``"all"``; ``pcap``: links whose
    packets the simulator (or the kernel and udp backends' relay) writes to pcap files in the
    run's ``pcap/`` directory (link
    directions ``"r0->r1"``, pairs ``"r0-r1"`` or hosts ``"left0"``, globs allowed:
    :mod:`ccarena.scenario.capture`), each file at most ``pcap_max_bytes`` (default
    ``"100MB"``)."""

    sample_interval_ns: TimeNs = Field("100ms", alias="sample_interval")
    queues: Literal["auto", "all"] = "auto"
    pcap: list[str] = Field(default_factory=list)
    pcap_max_bytes: SizeBytes = Field("100MB")

    @field_validator("sample_interval_ns")
    @classmethod
    def _positive(cls, value: int) -> int:
        if value <= 0:
            raise ValueError("must be > 0")
        return value


MAX_RUNS = 100_000
"""Most runs one experiment (a sweep grid × repeats, or a matrix) may expand into."""


class Sweep(BaseModel):
    """``[sweep]``: a grid of values per field path, and ``repeats`` per grid point.

    Keys are field paths of the scenario (``"topology.bottleneck.loss"``, ``"flows[1].flavor"``);
    values are non-empty lists. Nested tables are read as dotted paths. ``repeats`` (default 1) runs
    each point that many times with seeds derived from the scenario's seed
    (:func:`ccarena.experiment.expand.derive_seed`).
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    repeats: int = Field(1, ge=1, le=10_000)

    @model_validator(mode="before")
    @classmethod
    def _flatten(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        flat: dict[str, Any] = {}

        def walk(prefix: str, value: Any) -> None:
            if isinstance(value, dict):
                for k, v in value.items():
                    walk(f"{prefix}.{k}" if prefix else str(k), v)
            else:
                flat[prefix] = value

        for key, value in data.items():
            if key == "repeats":
                flat[key] = value
            else:
                walk(key, value)
        for key, value in flat.items():
            if key == "repeats":
                continue
            if not isinstance(value, list) or not value:
                raise FieldError(f'"{key}"', "a swept field takes a non-empty list of values, "
                                             f'e.g. "{key}" = [...]')
        return flat

    @model_validator(mode="after")
    def _grid_is_not_too_large(self) -> "Sweep":
        # Counted before anything is expanded: a huge grid is refused in microseconds, not after
        # minutes and gigabytes of expansion.
        runs = self.repeats
        for values in self.parameters.values():
            runs *= len(values)
            if runs > MAX_RUNS:
                sizes = " × ".join(str(len(v)) for v in self.parameters.values())
                raise FieldError("sweep", f"{sizes} values × {self.repeats} repeats is more than "
                                          f"{MAX_RUNS:,} runs; sweep fewer values, or split the "
                                          "study into several scenarios")
        return self

    @property
    def parameters(self) -> dict[str, list[Any]]:
        """Field path → list of values, in file order."""
        return dict(self.model_extra or {})


REFERENCE_TABLES = ("matrix", "regions", "region_detail", "drop_rate", "flows")
"""ccarena tables a study's published numbers can be shown beside (``[[report.references]]``)."""


class Reference(StrictModel):
    """A study's own published table, shown beside the table ccarena computes.

    ``table`` names the ccarena table it sits beside (:data:`REFERENCE_TABLES`); ``rows`` and
    ``columns`` label ``values`` (a ``len(rows)`` × ``len(columns)`` grid; ``nan`` where the study
    gives nothing) in the study's ``unit``; ``source`` cites it; ``note`` says how to read it;
    ``metric`` names the ccarena column compared where the table holds several (``region_detail``:
    ``aggregate_stability`` or ``jain_index``).
    """

    table: Literal[REFERENCE_TABLES]  # type: ignore[valid-type]
    metric: str | None = None
    title: str
    source: str = ""
    unit: str = ""
    note: str = ""
    rows: list[str] = Field(min_length=1)
    columns: list[str] = Field(min_length=1)
    values: list[list[float]]

    @model_validator(mode="after")
    def _grid(self) -> "Reference":
        if len(self.values) != len(self.rows) or any(len(v) != len(self.columns) for v in self.values):
            raise FieldError("values", f"must be {len(self.rows)} rows × {len(self.columns)} "
                                       "columns like rows and columns")
        return self


class StaticRoute(StrictModel):
    """``[[routing.static]]``: at node ``node``, packets for host ``dst`` leave towards neighbour
    ``via``. Several entries for one (node, dst) make a next-hop set (ECMP among them)."""

    node: str
    dst: str
    via: str


class Routing(StrictModel):
    """``[routing]``: the simulator computes shortest paths with equal-cost multipath; ``mode``
    picks among equal-cost next hops by a hash of the flow's 5-tuple (``"ecmp"``, default: one
    path per flow) or per packet (``"spray"``). ``static``: routes that replace the computed ones
    (:class:`StaticRoute`). docs/engine-spec.md, "Routing"."""

    mode: Literal["ecmp", "spray"] = "ecmp"
    static: list[StaticRoute] = []


STUDY_TABLES = ("matrix", "regions", "drop_rate")
"""Study tables a report shows when asked (``[report] tables``): the flavor matrix (seed 004,
Table 1), the per-region aggregate and stability/fairness tables (seed 001, Tables 1–2), the drop
rate per group over repeats (seed 003, Table I)."""


class ReportOptions(StrictModel):
    """``[report]``: ``tables`` (the study tables to show, of :data:`STUDY_TABLES`; a ``[matrix]``
    scenario and a table named by a reference are shown without asking), ``labels`` (swept
    parameter path → {value as written → the label figures and tables show}, e.g.
    ``{"flows[0].dupthresh" = {"3" = "fast recovery", "1000" = "timeouts only"}}``; a labelled
    parameter is drawn as categories), ``references`` (a study's
    published tables, :class:`Reference`), ``group_by`` (the summary column the study tables are
    grouped by, e.g. ``"flavor"``; default: the swept parameters) and ``cwnd_axis`` (``"rounds"``
    adds cwnd and ssthresh per transmission round, one round = one srtt, beside the figure
    against time: the textbook sawtooth of seed 002's Fig. 3; default ``"time"``)."""

    tables: list[Literal["matrix", "regions", "drop_rate"]] = []
    cwnd_axis: Literal["time", "rounds"] = "time"
    labels: dict[str, dict[str, str]] = {}
    references: list[Reference] = []
    group_by: list[str] | None = None


class Matrix(StrictModel):
    """``[matrix]``: every ordered pair of ``flavors`` on a shared bottleneck (seed 004).

    Run (row, column) starts a flow of the row flavor first and one of the column flavor
    ``stagger`` later (default ``"5s"``), ``repeats`` times (default 1). The two flows are the
    scenario's two ``[[flows]]`` (their ``flavor`` may be left out), or, without ``[[flows]]``,
    ``left0 → right0`` and ``left1 → right1`` on a dumbbell (``a → b`` twice on a single link).
    """

    flavors: list[str] = Field(min_length=1)
    stagger_ns: TimeNs = Field("5s", alias="stagger")
    repeats: int = Field(1, ge=1, le=10_000)

    @model_validator(mode="after")
    def _flavors_known(self) -> "Matrix":
        flavors = self.flavors
        for i, flavor in enumerate(flavors):
            if flavor not in flavor_catalog.all_flavors():
                raise FieldError(f"flavors[{i}]", flavor_catalog.unknown_flavor_message(flavor))
            if flavor in flavor_catalog.UDP_TRANSPORTS:
                raise FieldError(f"flavors[{i}]", f"'{flavor}' is not a congestion-controlled "
                                                  "transport; a matrix compares flavors that share")
        if len(set(flavors)) != len(flavors):
            raise FieldError("flavors", "lists a flavor twice")
        if len(flavors) ** 2 * self.repeats > MAX_RUNS:
            raise FieldError("repeats", f"{len(flavors)}² pairs × {self.repeats} repeats is more "
                                        f"than {MAX_RUNS:,} runs; use fewer repeats")
        return self

    def pairs(self) -> list[tuple[str, str]]:
        """Every ordered (row, column) pair, row-major."""
        return [(r, c) for r in self.flavors for c in self.flavors]


def matrix_flows(data: dict[str, Any]) -> dict[str, Any]:
    """Give a ``[matrix]`` scenario its two template flows (flavors filled with the first matrix
    flavor until :func:`ccarena.experiment.expand` sets each pair's)."""
    matrix = data.get("matrix")
    if not isinstance(matrix, dict) or not isinstance(matrix.get("flavors"), list) or not matrix["flavors"]:
        return data
    first = matrix["flavors"][0]
    flows = data.get("flows")
    if flows is None:
        topology = data.get("topology") if isinstance(data.get("topology"), dict) else {}
        if topology.get("kind") == "dumbbell":
            flows = [{"from": "left0", "to": "right0"}, {"from": "left1", "to": "right1"}]
        else:
            flows = [{"from": "a", "to": "b"}, {"from": "a", "to": "b"}]
    if not isinstance(flows, list) or len(flows) != 2:
        raise FieldError("flows", "a [matrix] scenario has exactly two [[flows]] (row flavor first, "
                                  "column flavor after the stagger), or none for the default pair")
    filled = [dict(f, flavor=f.get("flavor", first)) if isinstance(f, dict) else f for f in flows]
    return dict(data, flows=filled)


def node_problems(topology: Any, ends: list[tuple[int, Any, Any]]) -> list[FieldError]:
    """Each flow end that is not a host of ``topology``: ``ends`` holds ``(i, from, to)`` per flow
    ``flows[i]`` (values as written; ones that are not strings are left to the field's own
    validation). Problems: an unknown node (with the closest name and a few hosts), a router, a
    flow from a host to itself. Also used on a file whose other fields failed, so unknown hosts
    are listed with the rest (:func:`ccarena.scenario.loading.validate_scenario`)."""
    nodes = topology.node_names()
    hosts = [n for n, kind in nodes.items() if kind == "host"]
    if len(hosts) > 8:  # a data-center topology has thousands: name a few and the count
        hosts = hosts[:3] + [f"… {hosts[-1]} ({len(hosts)} hosts)"]
    problems = []
    for i, src, dst in ends:
        for key, node in (("from", src), ("to", dst)):
            if not isinstance(node, str):
                continue
            if node not in nodes:
                problems.append(FieldError(f"flows[{i}].{key}", f"unknown node '{node}'"
                                           f"{flavor_catalog.suggest(node, list(nodes))}; "
                                           f"hosts of this {topology.kind} are {', '.join(hosts)}"))
            elif nodes[node] != "host":
                problems.append(FieldError(f"flows[{i}].{key}", f"'{node}' is a router; flows run "
                                           f"between hosts ({', '.join(hosts)})"))
        if isinstance(src, str) and src == dst and src in nodes:
            problems.append(FieldError(f"flows[{i}].to", f"the flow goes from '{src}' to itself"))
    return problems


def flow_time_problems(i: int, start_ns: int, stop_ns: int | None,
                       duration_ns: int) -> list[FieldError]:
    """``flows[i]`` starting at or after the end of the run, or stopping after it (times in ns)."""
    problems = []
    if start_ns >= duration_ns:
        problems.append(FieldError(f"flows[{i}].start", f"{format_time(start_ns / 1e9)} is not "
                        f"before the end of the run (duration {format_time(duration_ns / 1e9)})"))
    if stop_ns is not None and stop_ns > duration_ns:
        problems.append(FieldError(f"flows[{i}].stop", f"{format_time(stop_ns / 1e9)} is after "
                        f"the end of the run (duration {format_time(duration_ns / 1e9)})"))
    return problems


BACKEND_NAMES = backend_names()
"""The backends a scenario may name (their declarations, :mod:`ccarena.backends`)."""


class ScenarioHead(StrictModel):
    """The fields of :class:`Scenario` that come before the backends' options tables (their
    order is the order pydantic validates and reports problems in)."""

    name: str = "experiment"
    description: str = ""
    duration_ns: TimeNs = Field(alias="duration")
    seed: int = Field(1, ge=0, lt=2**63)
    host: Literal[HOST_MODELS] | None = None  # type: ignore[valid-type]
    start_jitter_ns: TimeNs = Field("0s", alias="start_jitter")
    backend: Literal[BACKEND_NAMES] = reference_backend()  # type: ignore[valid-type]
    _network: Network | None = PrivateAttr(default=None)
    topology: Topology
    flows: list[Flow] = []
    traffic: list[Traffic] = []
    output: Output = Output()
    sweep: Sweep | None = None
    matrix: Matrix | None = None
    events: list[Event] = []
    routing: Routing = Routing()
    report: ReportOptions = ReportOptions()


ScenarioWithBackendOptions = create_model(
    "ScenarioWithBackendOptions", __base__=ScenarioHead, __module__=__name__,
    __doc__="ScenarioHead with one field per backend options table (``[kernel]``), each the "
            "model its backends declare (:func:`ccarena.backends.options_models`), empty by default.",
    **{table: (model, model()) for table, model in options_models().items()})


class Scenario(ScenarioWithBackendOptions):  # type: ignore[misc,valid-type]
    """A whole scenario file (see the README's scenario reference).

    Fields: ``name`` (the experiment's directory name), ``description``, ``duration`` (> 0),
    ``seed`` (default 1), ``host`` (the host model, :data:`HOST_MODELS`; default ``"rfc"``, and
    ``"linux"`` for the runs set beside a real-TCP backend: :mod:`ccarena.experiment.host_model`),
    ``backend`` (one of :data:`BACKEND_NAMES`; default the simulator),
    ``topology``, ``flows`` and ``traffic`` (:class:`Traffic`, expanded into more flows; at least
    one flow in all), ``output``, ``sweep``, ``matrix`` (:class:`Matrix`; not with ``sweep``),
    ``events`` (:class:`ccarena.scenario.events.Event`), ``routing`` (:class:`Routing`),
    ``report`` (:class:`ReportOptions`), each backend options table its backends declare
    (``kernel``: :class:`ccarena.backends.kernel.options.KernelOptions`), ``executor``
    (:class:`ExecutorOptions`), ``parts`` (see :func:`split_parts`).
    """

    executor: ExecutorOptions = ExecutorOptions()

    @model_validator(mode="before")
    @classmethod
    def _matrix_templates(cls, data: Any) -> Any:
        if isinstance(data, dict) and "matrix" in data:
            return matrix_flows(data)
        return data

    @field_validator("name")
    @classmethod
    def _name_is_a_directory_name(cls, name: str) -> str:
        if not SIMPLE_NAME.match(name):
            raise ValueError(f"'{name}' is not a usable directory name: use letters, digits, "
                             "'.', '_' or '-'")
        return name

    @field_validator("duration_ns")
    @classmethod
    def _duration_positive(cls, value: int) -> int:
        if value <= 0:
            raise ValueError("must be > 0 (e.g. duration = \"30s\")")
        return value

    @model_validator(mode="after")
    def _flows_fit_topology_and_time(self) -> "Scenario":
        if self.traffic:  # generated flows join the explicit ones and are checked like them
            hosts = [n for n, kind in self.topology.node_names().items() if kind == "host"]
            object.__setattr__(self, "flows", [*self.flows, *expand_traffic(
                self.traffic, hosts=hosts, scenario_seed=self.seed, duration_ns=self.duration_ns,
                access_rates_bps=self._access_rates_bps)])
        if not self.flows:
            raise FieldError("flows", "a scenario needs at least one [[flows]] or [[traffic]] table")
        # Every problem is collected (all unknown nodes, every flow past the end...), so that a
        # file's mistakes are listed in one pass rather than one per attempt.
        problems = node_problems(self.topology, [(i, f.src, f.dst) for i, f in enumerate(self.flows)])
        for i, flow in enumerate(self.flows):
            problems += flow_time_problems(i, flow.start_ns, flow.stop_ns, self.duration_ns)
        seen: dict[str, int] = {}
        for i, name in enumerate(self.flow_names()):
            if name in seen:
                problems.append(FieldError(f"flows[{i}].name", f"duplicate flow name '{name}' "
                                f"(also flows[{seen[name]}]); give each flow its own name"))
            seen.setdefault(name, i)
        if self.output.sample_interval_ns > self.duration_ns:
            problems.append(FieldError("output.sample_interval", "is longer than the run's duration"))
        if self.matrix is not None and self.sweep is not None:
            problems.append(FieldError("matrix", "a scenario takes [matrix] or [sweep], not both; "
                                       "put each in its own [[parts]] table"))
        late_events = False
        for i, event in enumerate(self.events):
            if event.at_ns >= self.duration_ns:
                late_events = True
                duration = format_time(self.duration_ns / 1e9)
                problems.append(FieldError(f"events[{i}].at", f"{format_time(event.at_ns / 1e9)} is "
                                           f"not before the end of the run (duration {duration})"))
        if self.events and not late_events:
            try:
                resolve_events(self.events, self.network(), self.duration_ns)
            except UserError as err:
                field, _, message = str(err).partition(": ")
                problems.append(FieldError(field, message))
        if self.output.pcap:
            try:
                select_capture_links(self.network(), self.output.pcap)
            except FieldErrors as err:
                problems += err.errors
            except FieldError as err:
                problems.append(err)
            if self.output.pcap_max_bytes < 1024:
                problems.append(FieldError("output.pcap_max_bytes", "must be at least 1KB (a pcap file's "
                                           "header and a few records)"))
        if len(problems) == 1:
            raise problems[0]
        if problems:
            raise FieldErrors(problems)
        return self

    def _access_rates_bps(self) -> dict[str, float]:
        """Each node's total rate of links out (a host's access capacity)."""
        rates: dict[str, float] = {}
        for link in self.network().links:
            rates[link.src] = rates.get(link.src, 0.0) + link.rate_bps
        return rates

    def network(self) -> Network:
        """The topology as an explicit network, built on first use and kept (a run builds its
        topology once: validation and the run spec share it)."""
        if self._network is None:
            self._network = self.topology.build()
        return self._network

    def flow_names(self) -> list[str]:
        """Each flow's name: as given, else its flavor (``quic-<flavor>`` for a QUIC flow,
        :func:`ccarena.flavors.quic_label`), numbered (``reno0``, ``reno1``) when several unnamed
        flows share it."""
        def base(flow: Flow) -> str:
            return flavor_catalog.quic_label(flow.flavor, "quic" if flow.is_quic else "tcp")

        unnamed = Counter(base(f) for f in self.flows if f.name is None)
        counters: dict[str, int] = {}
        names = []
        for flow in self.flows:
            if flow.name is not None:
                names.append(flow.name)
                continue
            label = base(flow)
            if unnamed[label] == 1:
                names.append(label)
            else:
                k = counters.get(label, 0)
                counters[label] = k + 1
                names.append(f"{label}{k}")
        return names
