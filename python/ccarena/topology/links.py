"""Scenario models for a link's parameters, shared by the topology kinds."""

from __future__ import annotations

from typing import Annotated, Any, Literal, NamedTuple

from pydantic import Field, PlainValidator, model_validator

from ccarena.errors import FieldError
from ccarena.quantities import (
    Fraction,
    QueueLimitValue,
    SizeBytes,
    StrictModel,
    TimeNs,
)
from ccarena.runspec import CodelSpec, DualPi2Spec, FqCodelSpec, FqSpec, PieSpec, QueueSpec, RedSpec
from ccarena.traces.trace_files import parse_link_rate
from ccarena.units import QueueLimit

LinkRateBps = Annotated[int, PlainValidator(parse_link_rate)]
"""A link's rate: ``"100Mbps"`` → 100_000_000 bits per second, or a trace table ``{ trace =
"traces/lte.mahi", loop = true }`` → a :class:`ccarena.traces.TraceRate` (an int, the trace's mean
rate, carrying the trace for the engine; :mod:`ccarena.traces`)."""

RED_FIELDS = ("min_th", "max_th", "max_p", "w_q", "gentle", "wait", "adaptive")
"""Queue fields that only a ``discipline = "red"`` queue takes."""

DISCIPLINE_FIELDS = {
    "droptail": ("ecn_threshold", "ecn_threshold_selector"),
    "red": (*RED_FIELDS, "ecn"),
    "codel": ("target", "interval", "ecn", "ce_threshold", "ce_threshold_selector"),
    "fq_codel": ("target", "interval", "flows", "quantum", "ecn", "ce_threshold", "ce_threshold_selector"),
    "pie": ("target", "tupdate", "alpha", "beta", "max_burst", "ecn"),
    "fq": ("flows", "quantum"),
    "dualpi2": ("target", "tupdate", "alpha", "beta", "coupling", "l4s_threshold", "l4s_ramp",
                "l4s_min_qlen", "tshift"),
}
"""The settings each discipline takes besides ``limit`` (a setting of another is refused)."""

DISCIPLINE_NAMES = {"droptail": "DropTail", "red": "RED", "codel": "CoDel", "fq_codel": "FQ-CoDel",
                    "pie": "PIE", "fq": "FQ", "dualpi2": "DualPI2"}
"""How the sources write each discipline's name (for messages)."""

AQM_DEFAULTS = {
    "codel": {"target": 5_000_000, "interval": 100_000_000},
    "fq_codel": {"target": 5_000_000, "interval": 100_000_000, "flows": 1024, "quantum": 1514},
    "pie": {"target": 15_000_000, "tupdate": 15_000_000, "alpha": 0.125, "beta": 1.25,
            "max_burst": 150_000_000},
    "fq": {"flows": 1024, "quantum": 1514},
    "dualpi2": {"target": 15_000_000, "tupdate": 16_000_000, "alpha": 0.16, "beta": 3.2,
                "coupling": 2.0, "l4s_threshold": 1_000_000, "l4s_ramp": 0, "l4s_min_qlen": 1,
                "tshift": 30_000_000},
}
"""Defaults from the sources: CoDel's 5 ms target and 100 ms interval (RFC 8289 §4.3–4.4);
FQ-CoDel's 1024 queues and a quantum of one Ethernet frame (RFC 8290 §4.1, §5); PIE's 15 ms
target and update interval, alpha 0.125, beta 1.25 and 150 ms burst allowance (RFC 8033 §5);
DualPI2's 15 ms target, 16 ms update interval, alpha 0.16 Hz, beta 3.2 Hz and coupling 2 (RFC
9332 App. A; Linux ``sch_dualpi2``'s too), a 1 ms L4S step (Linux's ``step_thresh``; the RFC's
ramp is ``l4s_threshold = "800us"``, ``l4s_ramp = "400us"``), Th_len 1 packet (RFC 9332) and a
30 ms time shift (2·target; docs/engine-spec.md)."""

RED_IDLE_PACKET_BYTES = 1500
"""The "typical small packet" whose transmission time ages RED's average over an idle period
(Floyd & Jacobson 1993, §11: m = idle time / s); a full-size Ethernet frame."""


def scenario_field(spec_field: str) -> str:
    """The scenario's name for a field of the resolved queue (:meth:`Queue.spec_fields`): its
    last key without the unit suffix the spec adds (``codel.target_ns`` → ``target``,
    ``ecn_threshold_packets`` → ``ecn_threshold``, ``fq.quantum_bytes`` → ``quantum``); ``""``
    (the queue itself) stays ``""``."""
    name = spec_field.rsplit(".", 1)[-1]
    for suffix in ("_ns", "_packets", "_bytes"):
        name = name.removesuffix(suffix)
    return name


def _amount(limit: QueueLimit) -> int:
    return limit.packets if limit.packets is not None else int(limit.bytes or 0)


def _unit(limit: QueueLimit) -> str:
    return "packets" if limit.packets is not None else "bytes"


def _scaled(limit: QueueLimit, fraction: float, floor: int) -> QueueLimit:
    value = max(floor, round(_amount(limit) * fraction))
    return QueueLimit(packets=value) if limit.packets is not None else QueueLimit(bytes=value)


class Queue(StrictModel):
    """The egress queue of a link.

    TOML: ``queue = { discipline = "droptail", limit = "100pkt", ecn_threshold = "20pkt" }``;
    ``limit`` in packets (``"100pkt"``) or bytes (``"150KB"``). ``ecn_threshold`` (optional,
    DropTail only) is the marking threshold K of DCTCP-style step marking (RFC 8257 §3.1):
    ECN-capable packets that arrive with at least K waiting are marked CE instead of waiting for the
    limit to drop them. ``ecn_threshold_selector = "l4s"`` restricts that step to L4S packets
    (ECT(1), RFC 9331 §5.1): Classic ECT(0) packets then see plain DropTail (default ``"all"``).

    AQMs (docs/engine-spec.md; ``crates/link``): ``discipline = "codel"`` (RFC 8289; ``target``
    default 5 ms, ``interval`` 100 ms, ``ecn``), ``"fq_codel"`` (RFC 8290; CoDel's settings per
    flow queue plus ``flows`` = 1024 and ``quantum`` = 1514 B), ``"pie"`` (RFC 8033; ``target`` and
    ``tupdate`` 15 ms, ``alpha`` 0.125, ``beta`` 1.25, ``max_burst`` 150 ms, ``ecn``) and ``"fq"``
    (per-flow deficit round robin, ``flows``, ``quantum``). ``ecn = true`` marks ECN-capable
    packets CE where the discipline would drop them. CoDel's and FQ-CoDel's L4S mode (Linux's,
    tc-codel(8), tc-fq_codel(8)): ``ce_threshold = "1ms"`` marks CE each ECN-capable packet whose
    sojourn exceeds it, besides CoDel's law, and ``ce_threshold_selector = "l4s"`` only ECT(1) ones
    (default ``"all"``).

    DualPI2 (RFC 9332, the DualQ Coupled AQM for L4S): ``discipline = "dualpi2"`` queues ECT(1)
    and CE packets apart from the rest, both under ``limit``; PI2 on the Classic queue
    (``target`` 15 ms, ``tupdate`` 16 ms, ``alpha`` 0.16, ``beta`` 3.2) drops or marks Classic
    packets with p'² and marks L4S ones with ``coupling``·p' (k = 2), or at the native
    ``l4s_threshold`` (1 ms step; with ``l4s_ramp`` a ramp of that width) once more than
    ``l4s_min_qlen`` (1) L4S packets wait; ``tshift`` (30 ms) is the scheduler's time shift that
    keeps the Classic queue from starving. Classic ECT(0) packets are always marked, not dropped,
    below overload (RFC 9332 App. A), so DualPI2 takes no ``ecn``.

    RED (Floyd & Jacobson 1993, with Floyd's gentle variant): ``discipline = "red"`` with
    ``min_th`` / ``max_th`` (the average-queue thresholds, in the limit's unit; defaults a quarter
    and three quarters of the limit), ``max_p`` (drop probability at max_th, default 0.1),
    ``w_q`` (the average's weight, default 0.002), ``gentle`` (default true: the drop probability
    rises from max_p to 1 between max_th and 2·max_th instead of jumping to 1), ``ecn``
    (default false: mark ECN-capable packets instead of dropping them early) and ``wait``
    (default false: ns-2's and ns-3's option that spaces early drops 1/p_b to 2/p_b arrivals
    apart, as their default RED does; docs/engine-spec.md) and ``adaptive`` (default false:
    Adaptive RED, Floyd, Gummadi & Shenker 2001, moves max_p toward a target band of the average
    every 0.5 s). ``limit`` stays the hard limit; a default threshold follows it when an
    ``[[events]]`` change of the limit applies.
    """

    discipline: Literal["droptail", "red", "codel", "fq_codel", "pie", "fq", "dualpi2"] = "droptail"
    limit: QueueLimitValue = "100pkt"
    ecn_threshold: QueueLimitValue | None = None
    min_th: QueueLimitValue | None = None
    max_th: QueueLimitValue | None = None
    max_p: float | None = Field(None, gt=0, le=1)
    w_q: float | None = Field(None, gt=0, le=1)
    gentle: bool | None = None
    ecn: bool | None = None
    wait: bool | None = None
    adaptive: bool | None = None
    target: TimeNs | None = Field(None, gt=0)
    interval: TimeNs | None = Field(None, gt=0)
    tupdate: TimeNs | None = Field(None, gt=0)
    alpha: float | None = Field(None, gt=0, le=100)
    beta: float | None = Field(None, gt=0, le=100)
    max_burst: TimeNs | None = Field(None, ge=0)
    flows: int | None = Field(None, ge=0)
    quantum: SizeBytes | None = Field(None, gt=0, le=1_000_000)
    coupling: float | None = Field(None, gt=0, le=100)
    l4s_threshold: TimeNs | None = Field(None, ge=0)
    l4s_ramp: TimeNs | None = Field(None, ge=0)
    l4s_min_qlen: int | None = Field(None, ge=0)
    tshift: TimeNs | None = Field(None, ge=0)
    ecn_threshold_selector: Literal["all", "l4s"] | None = None
    ce_threshold: TimeNs | None = Field(None, ge=0)
    ce_threshold_selector: Literal["all", "l4s"] | None = None

    @model_validator(mode="after")
    def _fields_fit_the_discipline(self) -> "Queue":
        """The scenario's own rules (each setting belongs to its discipline; RED's thresholds in
        the limit's unit, as amounts with units), then the engine's rules on the resolved queue
        (:meth:`ccarena.runspec.QueueSpec.engine_problem`), its field named as here."""
        if self.ecn_threshold is not None and self.discipline == "dualpi2":
            raise FieldError("ecn_threshold", "is a DropTail setting; DualPI2 marks L4S packets at "
                                              "l4s_threshold (a sojourn time)")
        if self.ecn_threshold_selector is not None and self.discipline in ("codel", "fq_codel"):
            raise FieldError("ecn_threshold_selector", "is a DropTail setting; "
                                                       f"{DISCIPLINE_NAMES[self.discipline]} selects the "
                                                       "packets its ce_threshold marks with ce_threshold_selector")
        if self.ecn_threshold is not None and self.discipline != "droptail":
            # An AQM marks by its own law: point at its switch, not at DropTail.
            raise FieldError("ecn_threshold", "is a DropTail setting; this queue marks with ecn = true")
        allowed = DISCIPLINE_FIELDS[self.discipline]
        for name in sorted({f for fields in DISCIPLINE_FIELDS.values() for f in fields} - set(allowed)):
            if getattr(self, name) is not None:
                takers = [d for d, fields in DISCIPLINE_FIELDS.items() if name in fields]
                if len(takers) == 1:
                    raise FieldError(name, f"is a {DISCIPLINE_NAMES[takers[0]]} setting; add "
                                           f'discipline = "{takers[0]}" to use it')
                raise FieldError(name, f"is a setting of {', '.join(DISCIPLINE_NAMES[t] for t in takers)}, "
                                       f"not of {DISCIPLINE_NAMES[self.discipline]}; remove it or set "
                                       "discipline to one of them")
        if self.ce_threshold_selector is not None and self.ce_threshold is None:
            # Said here too: CoDel's spec leaves out "all", which the engine could not refuse.
            raise FieldError("ce_threshold_selector", "needs ce_threshold (the sojourn time above "
                                                      "which it marks)")
        if self.discipline == "red":
            self._red_thresholds_fit_the_limit()
        problem = self.spec_fields().engine_problem()
        if problem is not None:
            field, message = problem
            raise FieldError(scenario_field(field), message)
        return self

    def _red_thresholds_fit_the_limit(self) -> None:
        """RED's thresholds as the scenario gives them: in the limit's unit (the engine allows
        another), and ordered and within the limit, said in amounts with units."""
        min_th, max_th = self.red_thresholds()
        for name, value in (("min_th", min_th), ("max_th", max_th)):
            if _unit(value) != _unit(self.limit):
                raise FieldError(name, f"must be in {_unit(self.limit)} like the limit "
                                       f"({_amount(self.limit)} {_unit(self.limit)})")
        if _amount(min_th) >= _amount(max_th):
            raise FieldError("max_th", f"must be greater than min_th ({_amount(min_th)} {_unit(min_th)})")
        if _amount(max_th) > _amount(self.limit):
            raise FieldError("max_th", f"{_amount(max_th)} {_unit(max_th)} exceeds the queue limit "
                                       f"({_amount(self.limit)} {_unit(self.limit)}); RED needs "
                                       "max_th ≤ limit")

    def _aqm(self, name: str) -> Any:
        """``name`` as given, else the discipline's default (:data:`AQM_DEFAULTS`)."""
        value = getattr(self, name)
        return value if value is not None else AQM_DEFAULTS[self.discipline][name]

    def red_thresholds(self, limit: QueueLimit | None = None) -> tuple[QueueLimit, QueueLimit]:
        """(min_th, max_th) as given, or the defaults: a quarter and three quarters of ``limit``
        (default: the queue's own limit; at least 1 and 2 packets). A threshold left to its default
        follows the limit when an event changes it; one given explicitly stays."""
        limit = limit or self.limit
        min_th = self.min_th or _scaled(limit, 0.25, 1)
        max_th = self.max_th or _scaled(limit, 0.75, 2)
        return min_th, max_th

    @property
    def red_follows_limit(self) -> bool:
        """True for a RED queue with a threshold left to its default (a fraction of the limit)."""
        return self.discipline == "red" and (self.min_th is None or self.max_th is None)

    def spec_fields(self) -> QueueSpec:
        """The run spec's queue for this queue (:class:`ccarena.runspec.QueueSpec`)."""
        k = self.ecn_threshold
        red = None
        if self.discipline == "red":
            min_th, max_th = self.red_thresholds()
            red = RedSpec(
                min_th_packets=min_th.packets, max_th_packets=max_th.packets,
                min_th_bytes=min_th.bytes, max_th_bytes=max_th.bytes,
                max_p=self.max_p if self.max_p is not None else 0.1,
                w_q=self.w_q if self.w_q is not None else 0.002,
                gentle=True if self.gentle is None else self.gentle,
                ecn=bool(self.ecn),
                idle_packet_bytes=RED_IDLE_PACKET_BYTES,
                wait=bool(self.wait),
                adaptive=bool(self.adaptive),
            )
        d, a, ecn = self.discipline, self._aqm, bool(self.ecn)
        return QueueSpec(
            discipline=d, limit_packets=self.limit.packets, limit_bytes=self.limit.bytes,
            ecn_threshold_packets=k.packets if k else None,
            ecn_threshold_bytes=k.bytes if k else None,
            ecn_threshold_selector=self.ecn_threshold_selector, red=red,
            codel=CodelSpec(target_ns=a("target"), interval_ns=a("interval"), ecn=ecn,
                            ce_threshold_ns=self.ce_threshold,
                            # "all" is the engine's default, which it writes as absent.
                            ce_threshold_selector="l4s" if self.ce_threshold_selector == "l4s" else None)
            if d == "codel" else None,
            fq_codel=FqCodelSpec(target_ns=a("target"), interval_ns=a("interval"), flows=a("flows"),
                                 quantum_bytes=a("quantum"), ecn=ecn, ce_threshold_ns=self.ce_threshold,
                                 ce_threshold_selector=self.ce_threshold_selector)
            if d == "fq_codel" else None,
            pie=PieSpec(target_ns=a("target"), tupdate_ns=a("tupdate"), alpha=a("alpha"),
                        beta=a("beta"), max_burst_ns=a("max_burst"), ecn=ecn) if d == "pie" else None,
            fq=FqSpec(flows=a("flows"), quantum_bytes=a("quantum")) if d == "fq" else None,
            dualpi2=DualPi2Spec(target_ns=a("target"), tupdate_ns=a("tupdate"), alpha=a("alpha"),
                                beta=a("beta"), coupling=a("coupling"),
                                l4s_threshold_ns=a("l4s_threshold"), l4s_ramp_ns=a("l4s_ramp"),
                                l4s_min_qlen_packets=a("l4s_min_qlen"), tshift_ns=a("tshift"))
            if d == "dualpi2" else None)


class AccessQueue(Queue):
    """An access link's queue: like :class:`Queue`, deeper by default (Linux txqueuelen 1000)."""

    limit: QueueLimitValue = "1000pkt"


class Link(StrictModel):
    """A duplex link with the same rate, delay and queue in both directions.

    ``loss`` is the wire loss probability in the forward direction (from the left/first node to the
    right/second), ``reverse_loss`` in the other (the ACK path of left-to-right flows). ``rate``
    may be a trace (``rate = { trace = "traces/lte.mahi" }``, :data:`LinkRateBps`): both
    directions then follow it.

    ``duplicate`` and ``reorder`` apply to both directions, like netem's on each side
    (docs/engine-spec.md, ``duplicate``/``reorder``): ``duplicate = "1%"`` delivers each packet
    that survives the wire twice with that probability, the copy right behind it; ``reorder =
    "5%"`` holds each surviving packet back with that probability by ``reorder_delay`` (default:
    the link's delay, at least 1 ms) after its propagation delay, so the packets behind it overtake
    it.
    """

    rate_bps: LinkRateBps = Field(alias="rate")
    delay_ns: TimeNs = Field(alias="delay")
    loss: Fraction = "0%"
    reverse_loss: Fraction = "0%"
    duplicate: Fraction = "0%"
    reorder: Fraction = "0%"
    reorder_delay_ns: TimeNs | None = Field(None, alias="reorder_delay", gt=0)
    queue: Queue = Queue()

    def impair(self) -> "WireImpair":
        """This link's duplication and reordering, for :meth:`Network.add_duplex`."""
        return WireImpair(self.duplicate, self.reorder, self.reorder_delay_ns)


class WireImpair(NamedTuple):
    """A link's duplication and reordering (:class:`Link`): probabilities in [0, 1] and the hold
    of a reordered packet in ns (None: the engine's default, the link's delay, at least 1 ms)."""

    duplicate: float = 0.0
    reorder: float = 0.0
    reorder_delay_ns: int | None = None


class AccessLink(Link):
    """A host's access link: 1 Gbps, 1 ms, no loss and a 1000-packet queue unless given."""

    rate_bps: LinkRateBps = Field("1Gbps", alias="rate")
    delay_ns: TimeNs = Field("1ms", alias="delay")
    queue: AccessQueue = AccessQueue()
