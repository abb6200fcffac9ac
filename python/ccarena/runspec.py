"""The resolved run spec: the one input every backend consumes (the "narrow waist").

Frozen pydantic models that mirror ``crates/sim/src/spec.rs`` field for field (documented in
``docs/engine-spec.md``): nodes, directed links with their queue, routing and static routes, flows by transport
kind, scheduled link changes. :func:`ccarena.experiment.resolve.resolve_run` builds one per run with
every value explicit; :meth:`RunSpec.to_json` serializes it once, canonically, for the engine and for
``run.json``. ``tests/engine/test_spec_agreement.py`` round-trips every example's spec through the
Rust ``Spec`` and fails if a field exists on one side only.

Every default a flow takes (MSS, initial window, RTO bounds, delayed ACK, …) is a field default of
:class:`TcpFlowSpec`, :class:`QuicSpec`, :class:`CbrFlowSpec` or :class:`UdtFlowSpec`: the one place
it is written. :data:`TCP_DEFAULTS`, :data:`QUIC_DEFAULTS`, :data:`UDP_DEFAULTS` and
:data:`UDT_DEFAULTS` are read from those models.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

SPEC_FORMAT = 1
"""Version of the engine spec this module writes (``"format"``; ``ccarena_sim::spec::SPEC_FORMAT``)."""


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace (what the engine is given and what is hashed)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def optional(default: Any = None, **constraints: Any) -> Any:
    """A field the Rust side reads as optional (``#[serde(default)]``): left out of the JSON while
    it holds ``default``, so a spec that does not use it serializes exactly as it did before the
    field existed (its ``spec_sha256`` and stored runs stay valid). ``constraints`` are
    :func:`pydantic.Field`'s (``ge``, ``le``, ``gt``)."""
    # exclude_if keeps serialization in pydantic-core (a model_serializer of our own made the
    # dump of a 1,000-flow spec five times slower).
    if default is None:
        return Field(None, exclude_if=_is_none, **constraints)
    return Field(default, exclude_if=lambda value: value == default, **constraints)


def _is_none(value: Any) -> bool:
    return value is None


class SpecModel(BaseModel):
    """Base of the spec models: immutable, no unknown fields (fields declared with
    :func:`optional` are left out of the JSON at their default)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class NodeSpec(SpecModel):
    """A node, referenced by its index in :attr:`RunSpec.nodes`."""

    name: str
    kind: Literal["host", "router"]


class RedSpec(SpecModel):
    """RED's parameters (Floyd & Jacobson, IEEE/ACM ToN 1993, §4 and §11; gentle: Floyd 2000).

    Exactly one pair of thresholds on the average queue is set: packets or bytes, the unit of the
    queue's limit. ``max_p`` and ``w_q`` are in (0, 1]; ``idle_packet_bytes`` is the "typical small
    packet" whose transmission time ages the average over an idle period; ``wait`` is ns-2's and
    ns-3's spacing of early drops (docs/engine-spec.md).
    """

    min_th_packets: int | None
    max_th_packets: int | None
    min_th_bytes: int | None
    max_th_bytes: int | None
    max_p: float
    w_q: float
    gentle: bool
    ecn: bool
    idle_packet_bytes: int
    wait: bool = optional(False)
    adaptive: bool = optional(False)


class CodelSpec(SpecModel):
    """CoDel's parameters (RFC 8289 §4.3–4.4): target and interval in ns (target < interval),
    ``ecn`` marks ECT packets CE instead of dropping them. ``ce_threshold_ns`` (Linux's
    ``ce_threshold``, tc-codel(8)): ECN-capable packets whose sojourn exceeds it are marked CE
    besides CoDel's law, those ``ce_threshold_selector`` picks (None = ``"all"``, which the
    engine writes as None); both left out of the JSON when unset."""

    target_ns: int
    interval_ns: int
    ecn: bool
    ce_threshold_ns: int | None = optional()
    ce_threshold_selector: Literal["l4s"] | None = optional()


EcnSelector = Literal["all", "l4s"]
"""Which ECN-capable packets a marking threshold applies to (``crates/link``'s ``EcnSelector``):
``"all"``, or ``"l4s"`` — only ECT(1) ones, RFC 9331 §5.1's L4S identifier."""


class FqCodelSpec(SpecModel):
    """FQ-CoDel's parameters (RFC 8290 §4–5): CoDel's target/interval/ecn per flow queue,
    ``flows`` queues served by deficit round robin with ``quantum_bytes``. ``ce_threshold_ns``
    (Linux's ``ce_threshold``): ECN-capable packets whose sojourn exceeds it are marked CE besides
    CoDel's law, those ``ce_threshold_selector`` picks (None = ``"all"``); both left out of the
    JSON when unset."""

    target_ns: int
    interval_ns: int
    flows: int
    quantum_bytes: int
    ecn: bool
    ce_threshold_ns: int | None = optional()
    ce_threshold_selector: EcnSelector | None = optional()


class PieSpec(SpecModel):
    """PIE's parameters (RFC 8033 §4–5): target delay, update interval and burst allowance in
    ns, the controller's alpha and beta (1/s), ``ecn`` marks while the drop probability ≤ 10%."""

    target_ns: int
    tupdate_ns: int
    alpha: float
    beta: float
    max_burst_ns: int
    ecn: bool


class FqSpec(SpecModel):
    """Per-flow fair queueing (deficit round robin, Shreedhar & Varghese 1995): ``flows``
    queues, ``quantum_bytes``."""

    flows: int
    quantum_bytes: int


class DualPi2Spec(SpecModel):
    """DualPI2's parameters (RFC 9332 §2.4, App. A; ``crates/link``'s ``DualPi2Config``): PI2's
    ``target_ns``, ``tupdate_ns``, ``alpha`` and ``beta`` (Hz) on the Classic queue, the
    ``coupling`` factor k, the native L4S AQM's ``l4s_threshold_ns`` and ``l4s_ramp_ns`` (0 = a
    step), ``l4s_min_qlen_packets`` (RFC 9332's Th_len) and the time-shifted FIFO's ``tshift_ns``."""

    target_ns: int
    tupdate_ns: int
    alpha: float
    beta: float
    coupling: float
    l4s_threshold_ns: int
    l4s_ramp_ns: int
    l4s_min_qlen_packets: int
    tshift_ns: int


class QueueSpec(SpecModel):
    """An egress queue: DropTail, RED, CoDel, FQ-CoDel, PIE, FQ or DualPI2, limited in packets or
    in bytes (exactly one is set), with an optional ECN step-marking threshold K (RFC 8257 §3.1;
    DropTail only) and the packets it marks, ``ecn_threshold_selector`` (None = ``"all"``; left
    out of the JSON when unset). The discipline's parameter object (``red``, ``codel``, …) is set,
    the others None."""

    discipline: Literal["droptail", "red", "codel", "fq_codel", "pie", "fq", "dualpi2"]
    limit_packets: int | None
    limit_bytes: int | None
    ecn_threshold_packets: int | None = None
    ecn_threshold_bytes: int | None = None
    ecn_threshold_selector: EcnSelector | None = optional()
    red: RedSpec | None = optional()
    codel: CodelSpec | None = optional()
    fq_codel: FqCodelSpec | None = optional()
    pie: PieSpec | None = optional()
    fq: FqSpec | None = optional()
    dualpi2: DualPi2Spec | None = optional()

    def engine_problem(self) -> tuple[str, str] | None:
        """What the engine finds wrong with this queue, if anything: ``(field, message)`` with
        ``field`` relative to the queue (``"codel.target_ns"``, ``""`` for the queue itself), or
        None for a valid queue. The rules live once, in the engine (``crates/link``'s
        ``QueueSpec::validate``, via ``ccarena._engine.validate_queue``)."""
        from ccarena import _engine

        try:
            _engine.validate_queue(canonical_json(self.model_dump(mode="json", by_alias=True)))
        except ValueError as e:
            field, message = e.args
            return field, message
        return None


class TraceSpec(SpecModel):
    """A link's capacity trace (docs/engine-spec.md, ``links[i].trace``): Mahimahi delivery
    opportunities (millisecond timestamps, 1500 bytes each) or rate steps ``(time_ns, rate_bps)``,
    exactly one of the two; ``loop`` repeats it. Made by :mod:`ccarena.traces` from a trace file."""

    opportunities_ms: tuple[int, ...] | None
    steps: tuple[tuple[int, int], ...] | None
    loop: bool


class LinkSpec(SpecModel):
    """One direction of a link: the egress queue at node ``from_``, serialization at ``rate_bps``,
    then ``delay_ns`` of propagation to node ``to``; ``loss`` is the wire loss probability after
    serialization. ``sample``: whether the engine records the queue's time series (the queues
    table): None (the default, left out of the JSON) or True = yes, False = no; an unsampled link
    still has its row of totals in the links table. ``trace``: the link's capacity follows this
    trace (``rate_bps`` is then its mean); None (the default, left out of the JSON) = a constant
    rate. A ``rate_bps`` given as a :class:`ccarena.traces.TraceRate` (a scenario's
    ``rate = { trace = … }``) fills ``trace`` by itself. ``duplicate``, ``reorder`` and
    ``reorder_delay_ns``: duplication and reordering on the wire (docs/engine-spec.md); left out of
    the JSON at their defaults (0, 0, None), so a spec without them hashes as before."""

    name: str
    from_: int = Field(alias="from")
    to: int
    rate_bps: int
    delay_ns: int
    loss: float
    queue: QueueSpec
    sample: bool | None = optional()
    trace: TraceSpec | None = optional()
    duplicate: float = optional(0.0, ge=0.0, le=1.0)
    reorder: float = optional(0.0, ge=0.0, le=1.0)
    reorder_delay_ns: int | None = optional(None, gt=0)

    @model_validator(mode="before")
    @classmethod
    def _trace_of_the_rate(cls, data: Any) -> Any:
        if not isinstance(data, dict) or type(data.get("rate_bps")) is int:
            return data  # a plain rate (the common case; a getattr that fails costs more)
        trace = getattr(data.get("rate_bps"), "trace_spec", None)
        if trace is not None and data.get("trace") is None:
            data = {**data, "rate_bps": int(data["rate_bps"]), "trace": trace}
        return data


class RouteSpec(SpecModel):
    """At node ``node``, packets for host ``dst`` leave on link ``link``. With
    :attr:`RunSpec.routing` a static override: all entries for one (node, dst) replace that node's
    computed next-hop set (docs/engine-spec.md, "Routing")."""

    node: int
    dst: int
    link: int


class LinkChangeSpec(SpecModel):
    """New values for a link at an event; ``None`` keeps a value. Rates in bit/s, delays in ns,
    limits in the queue's own unit; RED's new thresholds (one pair, in the unit of the queue's
    thresholds) when the limit they are fractions of changes."""

    rate_bps: int | None = None
    delay_ns: int | None = None
    loss: float | None = None
    limit_packets: int | None = None
    limit_bytes: int | None = None
    red_min_th_packets: int | None = optional()
    red_max_th_packets: int | None = optional()
    red_min_th_bytes: int | None = optional()
    red_max_th_bytes: int | None = optional()
    up: bool | None = optional()
    """``False`` takes the link down (queued and in-flight packets are lost), ``True`` brings it
    back; ``None`` leaves its state alone."""


class RoutingSpec(SpecModel):
    """Routes computed by the engine: shortest paths by hop count with equal-cost sets; ``mode``
    picks one next hop of a set by the flow's 5-tuple hash (``"ecmp"``, RFC 2992 hash-threshold)
    or per packet at random (``"spray"``)."""

    mode: Literal["ecmp", "spray"] = "ecmp"


class EventSpec(SpecModel):
    """A scheduled change to link ``link`` at ``time_ns`` (before any packet event then)."""

    time_ns: int
    link: int
    set: LinkChangeSpec


class _FlowBase(SpecModel):
    """Fields every flow has: its name, hosts (node indices) and schedule (ns; stop None = never)."""

    name: str
    src: int
    dst: int
    start_ns: int
    stop_ns: int | None


COUPLINGS = ("lia", "olia", "balia", "wvegas", "uncoupled")
"""How an MPTCP connection couples its subflows' windows (crates/cc/src/coupled.rs): LIA (RFC 6356),
OLIA (Khalili et al., CoNEXT 2012), BALIA (Peng et al., IEEE/ACM ToN 2016), wVegas (Cao, Xu, Fu,
"Delay-based Congestion Control for Multipath TCP", IEEE ICNP 2012; crates/cc/src/wvegas.rs), or
none (each subflow its own flavor, as Linux runs MPTCP)."""

MPTCP_SCHEDULERS = ("minrtt", "roundrobin")
"""Which subflow an MPTCP connection gives its next data: lowest smoothed RTT first among those with
room in their window (Linux's default), or each in turn."""

COUPLED_FLAVOR = {"lia": "reno", "olia": "reno", "balia": "reno", "wvegas": "vegas"}
"""The flavor a coupled connection's subflows name, by coupling: LIA, OLIA and BALIA couple Reno's
increase, wVegas couples Vegas's windows (the engine's ``Coupling::subflow_flavor``)."""


MAX_SUBFLOWS = 32
"""Most subflows an MPTCP connection has (the engine's ``ccarena_transport::mptcp::MAX_SUBFLOWS``)."""


class MptcpSpec(SpecModel):
    """A TCP flow run as a Multipath TCP connection (RFC 8684): ``subflows`` subflows, each with its
    own 5-tuple (so ECMP hashes each onto its own path), their windows coupled by ``coupling``,
    new data given to a subflow by ``scheduler``; subflows after the first join ``join_delay_ns``
    after it (the MP_JOIN handshakes). ``opportunistic``: opportunistic retransmission and
    penalisation of slow subflows when the connection window blocks new data (Raiciu et al., NSDI
    2012, §4.2; the engine's ``MptcpConfig::opportunistic``), off by default and then left out of
    the JSON. ``source_ports``: each subflow's TCP source port, subflow 0 first (ECMP hashes each
    subflow's 5-tuple with its port; the engine's ``MptcpSpec::source_ports``, which refuses a
    list that is not one distinct port in 1..65535 per subflow), or None for the engine's own
    ports, then left out of the JSON."""

    subflows: int = Field(ge=1, le=MAX_SUBFLOWS)
    coupling: Literal[COUPLINGS]  # type: ignore[valid-type]
    scheduler: Literal[MPTCP_SCHEDULERS] = "minrtt"  # type: ignore[valid-type]
    join_delay_ns: int = Field(0, ge=0)
    opportunistic: bool = optional(False)
    source_ports: tuple[int, ...] | None = optional(None)


TRANSPORTS = ("tcp", "quic")
"""What a TCP-flavor flow runs over (a scenario flow's ``transport``): TCP (RFC 9293, the
default) or QUIC (RFC 9000 with RFC 9002's loss detection), either with the flow's congestion
controller."""

QUIC_DATA_OVERHEAD_BYTES = 63
"""Bytes of headers a QUIC packet carrying stream data adds on the wire: IPv4 20 + UDP 8, a
short header of 11 (RFC 9000 §17.3.1: flags 1, an 8-byte connection ID, a 2-byte packet number),
the AEAD tag 16 (RFC 9001 §5.3) and a STREAM frame header of 8 (RFC 9000 §19.8). The engine's
``DATA_OVERHEAD_BYTES`` (crates/transport/src/quic/packet.rs): a QUIC flow's packet has its TCP
segment's wire size, ``mss_bytes + header_bytes``, and carries that less these bytes of stream
data (:func:`quic_payload_bytes`)."""

QUIC_ACK_PACKET_BYTES = 65
"""Bytes on the wire of a QUIC packet carrying an ACK frame of one range and nothing else: IPv4
and UDP 28, short header 11, AEAD tag 16, ACK frame 10 (RFC 9000 §19.3); the engine's
``ACK_PACKET_BASE_BYTES`` (crates/transport/src/quic/packet.rs). Used for a QUIC flow's base RTT."""


class QuicSpec(SpecModel):
    """A TCP-flavor flow run as a QUIC connection (RFC 9000, RFC 9002) with the flow's congestion
    controller. Its packets have the TCP segment's wire size (``mss_bytes + header_bytes``, stream
    bytes :func:`quic_payload_bytes`), its ACKs QUIC's sizes; the connection's flow-control window
    (MAX_DATA, RFC 9000 §4.1) is the flow's ``rwnd_bytes``. The engine ignores the flow's TCP-only
    settings (``recovery``, ``dupthresh``, the RTO bounds, ``delayed_ack_ns``,
    ``ack_every_segments``, ``handshake_rtt``): QUIC detects loss by packet and time thresholds
    and a probe timeout (RFC 9002 §6) and acknowledges by RFC 9000 §13.2's rules.

    Fields: ``max_ack_delay_ns``, the receiver's longest deliberate ACK delay (RFC 9000 §18.2's
    transport parameter; default 25 ms); ``ack_eliciting_threshold``, ack-eliciting packets
    received before an ACK is sent at once (RFC 9000 §13.2.2: 2; 1–1000);
    ``reordering_threshold``, the gap in packet numbers that makes the receiver ACK at once (RFC
    9000 §13.2.1: 1; 0 = never on reordering, draft-ietf-quic-ack-frequency §6.2);
    ``initial_rtt_ns``, the RTT assumed before the first sample (RFC 9002 §6.2.2: 333 ms; > 0);
    ``max_stream_data_bytes``, the stream's flow-control window (RFC 9000 §4.1, MAX_STREAM_DATA;
    None = unlimited); ``pacing``, pace at 1.25·cwnd/srtt when the controller sets no rate (RFC
    9002 §7.7)."""

    max_ack_delay_ns: int = Field(25_000_000, ge=0)          # RFC 9000 §18.2
    ack_eliciting_threshold: int = Field(2, ge=1, le=1000)   # RFC 9000 §13.2.2
    reordering_threshold: int = Field(1, ge=0, le=2**32 - 1)  # RFC 9000 §13.2.1
    initial_rtt_ns: int = Field(333_000_000, gt=0)           # RFC 9002 §6.2.2
    max_stream_data_bytes: int | None = Field(None, gt=0)    # None: unlimited
    pacing: bool = True                                      # RFC 9002 §7.7


def quic_payload_bytes(mss_bytes: int, header_bytes: int) -> int:
    """Stream bytes a QUIC packet carries when it has the wire size of a TCP segment of
    ``mss_bytes`` payload and ``header_bytes`` headers: that size less
    :data:`QUIC_DATA_OVERHEAD_BYTES` (1437 B for the defaults 1448 + 52), at least 0."""
    return max(0, mss_bytes + header_bytes - QUIC_DATA_OVERHEAD_BYTES)


class TcpFlowSpec(_FlowBase):
    """A TCP transfer: congestion controller ``flavor`` with ``params``, loss ``recovery``, and the
    host settings. The defaults are Linux's (README.md, "Scenario reference"): MSS 1448 B, IW 10 (RFC 6928),
    RTO in [200 ms, 120 s] starting at 1 s (RFC 6298 §2), delayed ACK every 2nd segment or 40 ms
    (RFC 5681 §4.2). ``rwnd_bytes`` (the receiver advertises its free space, RFC 9293 §3.8.6; the
    sender sends at most min(cwnd, rwnd), RFC 5681 §3) and ``sndbuf_bytes`` bound a flow as a
    host's socket buffers do; unset, the flow is bounded by its congestion window alone.
    ``handshake_rtt`` (simulator, udp backend): the connection was opened before the flow's start over the
    idle path, and that handshake's round trip is the sender's first RTT sample
    (docs/engine-spec.md); the ``linux`` host model sets it
    (:mod:`ccarena.experiment.host_model`). ``rto_rule`` (simulator, udp backend): ``rfc6298`` (the
    default), RTO = max(min_rto, SRTT + 4·RTTVAR), or ``linux``, Linux's tcp_rtt_estimator:
    SRTT + rttvar, rttvar floored at ``min_rto_ns`` and decaying once per RTT (about
    SRTT + max(min_rto, 4·RTTVAR); net/ipv4/tcp_input.c). ``quickack_segments`` (simulator, udp backend):
    Linux's quick-ACK mode, the receiver ACKs each of the first N in-order segments at once (and
    again after ``min_rto_ns`` without data), then delays ACKs as usual; 0 (the default) = off,
    the RFC 5681 receiver; Linux grants min(16, rcv_wnd / (2·MSS)) (tcp_incr_quickack), 0..1000.
    ``rcvbuf_autotuning`` (simulator): Linux's receive-window autotuning (tcp_rmem defaults,
    dynamic right-sizing; docs/engine-spec.md), not with ``rwnd_bytes``; False (the default) =
    the window is ``rwnd_bytes``. ``sack_compression`` (simulator): Linux's SACK compression
    (above a hole three ACKs at once, then one per min(1 ms, RTT/20); docs/engine-spec.md);
    False (the default) = every out-of-order segment ACKed at once. The four apply to
    single-path TCP, and ``rcvbuf_autotuning`` to an MPTCP connection's shared buffer too.
    ``start_delay_ns`` (simulator): the sender starts this long after ``start_ns``, as a real
    host's application does (the ``linux`` host model draws it), while the flow's samples and
    completion time still count from ``start_ns``, as the kernel backend's do; 0 (the default) =
    at ``start_ns``. ``quic`` (:class:`QuicSpec`): the flow
    runs as a QUIC connection with the same controller instead (not with ``mptcp``: the engine
    refuses both, and so does the scenario schema); None (the default, left out of the JSON) =
    TCP."""

    kind: Literal["tcp"] = "tcp"
    bytes: int | None = None
    flavor: str
    params: dict[str, float]
    recovery: str
    mss_bytes: int = 1448                      # 1500-byte MTU − 40 (IP+TCP) − 12 (timestamps)
    header_bytes: int = 52                     # IPv4 20 + TCP 20 + timestamp option 12
    ack_bytes: int = 52                        # a pure ACK: the same headers, no payload
    initial_cwnd_packets: int = 10             # RFC 6928
    min_rto_ns: int = 200_000_000              # Linux TCP_RTO_MIN
    initial_rto_ns: int = 1_000_000_000        # RFC 6298 §2.1
    max_rto_ns: int = 120_000_000_000          # Linux TCP_RTO_MAX
    clock_granularity_ns: int = 1_000_000      # RFC 6298 G; 1 ms
    dupthresh: int = 3                         # RFC 5681 §3.2
    delayed_ack_ns: int = 40_000_000           # Linux TCP_DELACK_MIN
    ack_every_segments: int = 2                # RFC 5681 §4.2 / RFC 1122
    ecn: bool = False
    rwnd_bytes: int | None = optional()  # receive buffer, advertised as the window; None = unlimited
    sndbuf_bytes: int | None = optional()  # send buffer: caps unacknowledged data; None = unlimited
    handshake_rtt: bool = optional(False)  # first RTT sample from an idle-path handshake (sim)
    rto_rule: Literal["rfc6298", "linux"] = optional("rfc6298")  # linux: SRTT + max(min_rto, 4·RTTVAR)
    quickack_segments: int = optional(0, ge=0, le=1000)  # Linux quick-ACK: first N ACKed at once
    rcvbuf_autotuning: bool = optional(False)  # Linux receive-window autotuning; not with rwnd_bytes
    sack_compression: bool = optional(False)  # Linux SACK compression (tcp_comp_sack_*)
    start_delay_ns: int = optional(0, ge=0)  # the sender starts this long after start_ns (sim)
    mptcp: MptcpSpec | None = optional()  # None: single-path TCP
    quic: QuicSpec | None = optional()  # None: TCP; set: QUIC (RFC 9000/9002), not with mptcp


class CbrFlowSpec(_FlowBase):
    """UDP constant bit rate: ``rate_bps`` of payload in ``packet_bytes`` datagrams."""

    kind: Literal["udp_cbr"] = "udp_cbr"
    rate_bps: int
    packet_bytes: int = 1472   # fills a 1500-byte MTU: 1500 − 20 (IP) − 8 (UDP)
    header_bytes: int = 28     # IPv4 20 + UDP 8


class UdtFlowSpec(_FlowBase):
    """A UDT transfer (Gu & Grossman, Computer Networks 2007; draft-gg-udt-03)."""

    kind: Literal["udt"] = "udt"
    bytes: int | None = None
    params: dict[str, float]
    mss_bytes: int = 1456                  # 1500 − 20 (IP) − 8 (UDP) − 16 (UDT header)
    header_bytes: int = 44                 # IPv4 20 + UDP 8 + UDT 16
    ack_bytes: int = 68                    # full ACK: header + 6 × 4-byte fields (draft §3.2)
    syn_interval_ns: int = 10_000_000      # SYN = 10 ms
    flow_window_packets: int = 25_600      # UDT4's default receiver buffer (packets)
    initial_rtt_ns: int = 100_000_000      # RTT assumed before the first measurement
    min_exp_ns: int = 500_000_000          # floor of the EXP (timeout) period


FlowSpec = Annotated[Union[TcpFlowSpec, CbrFlowSpec, UdtFlowSpec], Field(discriminator="kind")]
"""A flow, by transport kind (``tcp``, ``udp_cbr``, ``udt``)."""


class PcapSpec(SpecModel):
    """Packet capture (docs/engine-spec.md, "Packet capture"): the links (indices into
    :attr:`RunSpec.links`, each one direction) whose packets the simulator (or the relay, on the
    kernel and udp backends) writes to pcap files,
    one file per link, and the size limit of each file in bytes (its header included): past it
    the file stops growing and the packets left out are counted."""

    links: tuple[int, ...] = Field(min_length=1)
    max_bytes: int = Field(ge=1024)


class RunSpec(SpecModel):
    """A whole run, every value explicit: what a backend's ``check`` and ``run`` take.

    Times in ns, rates in bit/s; nodes, links and flows are referred to by list index.
    """

    format: int = SPEC_FORMAT
    seed: int
    duration_ns: int
    sample_interval_ns: int
    nodes: tuple[NodeSpec, ...]
    links: tuple[LinkSpec, ...]
    routes: tuple[RouteSpec, ...]
    routing: RoutingSpec | None = optional()
    """``None``: :attr:`routes` is the complete static table (specs written before routing was
    computed in the engine). The front end always sets it now; :attr:`routes` then holds only
    static overrides."""
    flows: tuple[FlowSpec, ...]
    events: tuple[EventSpec, ...] = ()
    link_jitter: float | None = optional(None, ge=0.0, le=1.0)
    """Forwarding jitter on every link, a fraction of a packet's serialization time (the engine
    delays each packet by U[0, fraction × serialization) after its propagation delay, keeping
    order; Floyd & Jacobson 1992's remedy for traffic phase effects). ``None``: none — the front end
    does not set it yet (docs/engine-spec.md)."""
    pcap: PcapSpec | None = optional()
    """Packet capture of some links (``[output] pcap``); ``None``: none. The simulator writes the
    files where its caller says (:mod:`ccarena.backends.sim`), outside the spec."""

    def to_dict(self) -> dict[str, Any]:
        """The spec as JSON-ready data (``from`` for :attr:`LinkSpec.from_`); a new copy each call."""
        return json.loads(self.to_json())

    def to_json(self) -> str:
        """The spec as canonical JSON (:func:`canonical_json`): what the engine is given."""
        return self.canonical_json_text

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> "RunSpec":
        """A copy with ``update`` applied (pydantic's), without the copied JSON of the original."""
        copy = super().model_copy(update=update, deep=deep)
        copy.__dict__.pop("canonical_json_text", None)
        return copy

    @functools.cached_property
    def canonical_json_text(self) -> str:
        """:meth:`to_json`, computed once."""
        # The model is frozen, so its JSON is computed once (a 10,000-flow spec takes a second to
        # dump, and a run asks for it for its hash, the engine, run.json and experiment.json).
        return canonical_json(self.model_dump(mode="json", by_alias=True))

    def sha256(self) -> str:
        """SHA-256 of :meth:`to_json`: identifies the run's inputs (used to skip finished runs)."""
        return hashlib.sha256(self.to_json().encode()).hexdigest()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RunSpec":
        """Read a spec back (from ``run.json``).

        Raises:
            pydantic.ValidationError: not a spec of this format.
        """
        return cls.model_validate(data)


def _defaults(model: type[SpecModel], skip: tuple[str, ...]) -> dict[str, Any]:
    return {name: f.default for name, f in model.model_fields.items()
            if name not in skip and not f.is_required() and f.default is not None}


TCP_DEFAULTS: dict[str, Any] = _defaults(TcpFlowSpec, ("kind", "handshake_rtt", "rto_rule", "quickack_segments",
                                                       "rcvbuf_autotuning", "sack_compression", "start_delay_ns",
                                                       "mptcp", "quic"))
"""Every TCP host setting a flow does not give (read from :class:`TcpFlowSpec`; not
``handshake_rtt``, ``rto_rule``, ``quickack_segments``, ``rcvbuf_autotuning``, ``sack_compression`` or
``start_delay_ns``, which the front end's host model sets, not a scenario's flow)."""
UDP_DEFAULTS: dict[str, Any] = _defaults(CbrFlowSpec, ("kind",))
"""Defaults of UDP CBR flows (read from :class:`CbrFlowSpec`)."""
UDT_DEFAULTS: dict[str, Any] = _defaults(UdtFlowSpec, ("kind",))
"""Defaults of UDT flows (read from :class:`UdtFlowSpec`)."""
QUIC_DEFAULTS: dict[str, Any] = {name: f.default for name, f in QuicSpec.model_fields.items()}
"""A QUIC flow's settings when the scenario gives none (read from :class:`QuicSpec`;
``max_stream_data_bytes`` None = unlimited)."""
