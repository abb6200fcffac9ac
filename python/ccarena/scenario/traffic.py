"""``[[traffic]]``: flow generators beside the explicit ``[[flows]]``.

Each entry is a pattern that expands, when the scenario is validated, into ordinary flows named
``<name>-<k>`` (``perm-3``, ``incast-2``, ``poisson-17``; ``name`` defaults to the pattern's short
name), so sweeps, run ids, the engine and the metrics see nothing but flows. TOML::

    [[traffic]]
    pattern = "poisson"                 # permutation | all_to_all | incast | stride | poisson
    flow = { flavor = "dctcp" }         # the template of every generated flow: any [[flows]] field
                                        # but from, to, name, start, stop and bytes
    load = 0.6                          # poisson: fraction of `capacity`
    sizes = "websearch"                 # poisson: websearch | datamining | a CSV file size_bytes,cdf
    hosts = ["left*", "right*"]         # optional: glob patterns restricting the host pool
    seed = 7                            # optional; default derived from the scenario's seed

The template is validated as a ``[[flows]]`` table, so ``flow = { flavor = "cubic", transport =
"quic", max_ack_delay = "5ms" }`` makes every generated flow a QUIC connection (RFC 9000/9002)
with CUBIC.

The host pool is the topology's hosts in the topology's order, or those matching ``hosts``.
Every pattern takes ``start`` (default ``"0s"``) and ``jitter`` (each flow starts uniformly in
[start, start + jitter), default ``"0s"``). Patterns:

- ``permutation``: a uniformly random derangement of the pool — every host sends to exactly one
  other host and receives from exactly one. ``bytes`` (finite) or bulk until ``stop``.
- ``all_to_all``: every ordered pair of the pool, n(n − 1) flows; ``bytes`` or bulk.
- ``stride``: host i → host (i + ``stride``) mod n in pool order; ``bytes`` or bulk.
- ``incast``: ``senders`` (a count drawn at random from the pool, or a list of globs; default:
  every other host) each send ``response`` bytes to ``receiver`` (default: the pool's first
  host), all starting at ``start`` (Vasudevan et al., "Safe and Effective Fine-grained TCP
  Retransmissions for Datacenter Communication", SIGCOMM 2009). ``rounds`` > 1 repeats the
  request every ``interval``: round r starts at start + r·interval. The engine starts flows at
  fixed times, so this is a fixed-interval approximation of the paper's barrier (the next
  request after the last response of the previous one): choose an ``interval`` longer than a
  round takes, or rounds overlap. Flows are numbered round by round (with N senders, round r's
  are ``incast-{rN}`` … ``incast-{rN + N − 1}``).
- ``poisson``: finite flows between random pairs (a sender drawn uniformly from ``senders``, a
  receiver uniformly from ``receivers`` other than the sender; both default to the pool), arriving
  as a Poisson process from ``start`` until ``stop`` (default: the end of the run) at rate
  λ = load · C / (8 · E[S]) flows per second, sizes S drawn from ``sizes``. C is ``capacity``:
  by default the sum of the senders' access link rates (the rate of each sender's links out
  of it), the convention of data-center transport studies (pFabric, Alizadeh et al., SIGCOMM
  2013; HPCC, Li et al., SIGCOMM 2019: each host offers ``load`` of its link rate); or a rate
  (``capacity = "1Gbps"``), e.g. a dumbbell's bottleneck. ``load`` is in (0, 1].

Flow sizes (``sizes``): ``"websearch"`` (Alizadeh et al., DCTCP, SIGCOMM 2010, Fig. 2),
``"datamining"`` (Greenberg et al., VL2, SIGCOMM 2009, Fig. 2), or a CSV file (path relative to
the working directory) of ``size_bytes,cdf`` points, non-decreasing, ending at cdf 1; ``#``
starts a comment. Sizes are drawn by inverting the CDF, linear between points (as the published
generators do), rounded to whole bytes, at least 1.

Seeds: each pattern draws from its own stream, ``seed`` if given, else derived from the
scenario's ``seed`` and the pattern's position. The generated flows are part of the scenario, so
every repeat of a sweep point runs the same flows (common random numbers); to vary the traffic,
sweep the pattern's seed (``"traffic[0].seed" = [1, 2, 3]``) or the scenario's.
"""

from __future__ import annotations

import csv
import fnmatch
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from pydantic import Field, field_validator, model_validator

from ccarena import flavors as flavor_catalog
from ccarena.errors import FieldError
from ccarena.quantities import SizeBytes, StrictModel, TimeNs
from ccarena.units import format_rate, format_time, parse_rate_bps

if TYPE_CHECKING:  # numpy loads where traffic is generated: a scenario without it starts faster
    import numpy as np

PATTERNS = {"permutation": "perm", "all_to_all": "a2a", "incast": "incast", "stride": "stride",
            "poisson": "poisson"}
"""Pattern name → the default name prefix of its flows."""

BUILTIN_SIZES = ("websearch", "datamining")
"""Flow-size distributions shipped in ``ccarena/scenario/cdfs/<name>.csv``."""

MAX_GENERATED_FLOWS = 200_000
"""The most flows a scenario's ``[[traffic]]`` may generate (a bound on memory and run time)."""

TEMPLATE_FORBIDDEN = ("from", "to", "name", "start", "stop", "bytes")
"""Flow fields the generator sets; a pattern's ``flow`` template may not give them."""

_PATTERN_FIELDS = {
    "permutation": {"bytes", "stop"},
    "all_to_all": {"bytes", "stop"},
    "stride": {"bytes", "stop", "stride"},
    "incast": {"receiver", "senders", "response", "rounds", "interval"},
    "poisson": {"load", "sizes", "capacity", "senders", "receivers", "stop"},
}
"""Fields each pattern takes beside the common ones (pattern, name, seed, hosts, start, jitter,
flow)."""


def flow_template(value: Any) -> Any:
    """A pattern's ``flow`` table made into a :class:`ccarena.scenario.schema.Flow` input: the
    generator's fields refused, placeholder endpoints filled (each generated flow gets its own).

    Raises:
        FieldError: the table gives a field the generator sets, or ``source_ports`` (one
            port list would give every generated flow the same subflow 5-tuples).
    """
    if not isinstance(value, dict):
        return value
    for key in TEMPLATE_FORBIDDEN:
        if key in value:
            where = {"from": "hosts/senders", "to": "hosts/receiver", "name": "name",
                     "start": "start", "stop": "stop", "bytes": "bytes/response/sizes"}[key]
            raise FieldError(key, f"the generator sets each flow's `{key}`; give {where} on "
                                  "the [[traffic]] entry instead")
    if "source_ports" in value:
        raise FieldError("source_ports", "every flow of the generator would get the same source "
                                         "ports (the same 5-tuples between the same hosts); give "
                                         "source_ports on a [[flows]] entry, or subflows alone here")
    return {**value, "from": "?", "to": "?"}


class TrafficPattern(StrictModel):
    """One ``[[traffic]]`` entry without its flow template (the scenario schema adds ``flow``).

    Fields (module doc): ``pattern``, ``name``, ``seed``, ``hosts``, ``start``, ``jitter``;
    per pattern: ``bytes``, ``stop``, ``stride``, ``receiver``, ``senders``, ``response``,
    ``rounds``, ``interval``, ``load``, ``sizes``, ``capacity``, ``receivers``.
    """

    pattern: str
    name: str | None = None
    seed: int | None = Field(None, ge=0, lt=2**63)
    hosts: list[str] | None = None
    start_ns: TimeNs = Field("0s", alias="start")
    jitter_ns: TimeNs = Field("0s", alias="jitter")
    stop_ns: TimeNs | None = Field(None, alias="stop")
    size_bytes: SizeBytes | None = Field(None, alias="bytes")
    stride: int | None = Field(None, ge=1)
    receiver: str | None = None
    senders: int | list[str] | None = None
    receivers: list[str] | None = None
    response_bytes: SizeBytes | None = Field(None, alias="response")
    rounds: int = Field(1, ge=1, le=100_000)
    interval_ns: TimeNs | None = Field(None, alias="interval")
    load: float | None = None
    sizes: str | None = None
    capacity: str = "hosts"

    @field_validator("pattern")
    @classmethod
    def _known_pattern(cls, pattern: str) -> str:
        if pattern not in PATTERNS:
            raise ValueError(f"unknown pattern '{pattern}'{flavor_catalog.suggest(pattern, list(PATTERNS))}; "
                             f"patterns: {', '.join(PATTERNS)}")
        return pattern

    @field_validator("name")
    @classmethod
    def _simple_name(cls, name: str | None) -> str | None:
        if name is not None and not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
            raise ValueError(f"'{name}' is not a simple name: use letters, digits, '.', '_' or '-'")
        return name

    @model_validator(mode="after")
    def _fields_fit_the_pattern(self) -> "TrafficPattern":
        given = {(f.alias or n) for n, f in type(self).model_fields.items()
                 if n in self.model_fields_set}
        allowed = _PATTERN_FIELDS[self.pattern] | {"pattern", "name", "seed", "hosts", "start",
                                                   "jitter", "flow"}
        for field in sorted(given - allowed):
            takers = [p for p, fields in _PATTERN_FIELDS.items() if field in fields]
            raise FieldError(field, f"a {self.pattern} pattern does not take `{field}` "
                                    f"(only {', '.join(takers)})")
        if self.pattern == "stride" and self.stride is None:
            raise FieldError("stride", "a stride pattern needs stride = <k> (host i sends to "
                                       "host i + k mod n)")
        if self.pattern == "incast":
            if self.response_bytes is None:
                raise FieldError("response", 'an incast needs the bytes each sender returns, '
                                             'e.g. response = "64KB"')
            if self.rounds > 1 and self.interval_ns is None:
                raise FieldError("interval", "incast rounds start a fixed interval apart (the "
                                             "engine has no barrier): give interval = \"10ms\"")
            if self.interval_ns is not None and self.interval_ns <= 0:
                raise FieldError("interval", "must be > 0")
            if isinstance(self.senders, int) and self.senders < 1:
                raise FieldError("senders", "an incast needs at least 1 sender")
        if self.pattern == "poisson":
            if "jitter" in given:
                raise FieldError("jitter", "poisson arrivals are random already; a poisson "
                                           "pattern does not take `jitter`")
            if self.load is None:
                raise FieldError("load", "a poisson pattern needs load = <fraction in (0, 1]> "
                                         "of its capacity")
            if not (0.0 < self.load <= 1.0) or not math.isfinite(self.load):
                raise FieldError("load", f"{self.load} is not in (0, 1]: the offered load is a "
                                         "fraction of the capacity")
            if self.sizes is None:
                raise FieldError("sizes", 'a poisson pattern needs sizes = "websearch", '
                                          '"datamining" or a CSV file of size_bytes,cdf')
            if isinstance(self.senders, int):
                raise FieldError("senders", "a poisson pattern takes senders as a list of host "
                                            'globs, e.g. senders = ["left*"]')
            if self.capacity != "hosts":
                try:
                    parse_rate_bps(self.capacity)
                except ValueError as err:
                    raise FieldError("capacity", f'"hosts" or a rate: {err}') from None
            size_cdf(self.sizes)  # a bad file fails here, naming `sizes`
        if self.stop_ns is not None and self.stop_ns <= self.start_ns:
            raise FieldError("stop", f"{format_time(self.stop_ns / 1e9)} is not after start "
                                     f"({format_time(self.start_ns / 1e9)})")
        return self

    @property
    def prefix(self) -> str:
        """The name prefix of the generated flows."""
        return self.name or PATTERNS[self.pattern]


# ----------------------------------------------------------------------------- flow sizes

@dataclass(frozen=True)
class SizeCdf:
    """A flow-size distribution: points (size_bytes, cdf), non-decreasing, ending at cdf 1;
    linear between points."""

    name: str
    size_bytes: np.ndarray
    cdf: np.ndarray

    @property
    def mean_bytes(self) -> float:
        """E[S] of the piecewise-linear distribution: the mass at the first point (cdf[0]·x[0])
        plus each segment's probability times its midpoint."""
        import numpy as np

        x, p = self.size_bytes, self.cdf
        return float(p[0] * x[0] + np.sum(np.diff(p) * (x[1:] + x[:-1]) / 2.0))

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` sizes (int64 bytes, ≥ 1) by inverse transform, linear between the points."""
        import numpy as np

        u = rng.random(n)
        # Inverse of a CDF with flat stretches: for each cdf value keep the largest size.
        p, keep = np.unique(self.cdf[::-1], return_index=True)
        x = self.size_bytes[::-1][keep]
        return np.maximum(1, np.rint(np.interp(u, p, x))).astype(np.int64)

    def cdf_at(self, size_bytes: np.ndarray) -> np.ndarray:
        """P(S ≤ size) of the piecewise-linear distribution."""
        import numpy as np

        x, p = self.size_bytes, self.cdf
        return np.interp(size_bytes, x, p, left=0.0, right=1.0)


_CDF_CACHE: dict[str, SizeCdf] = {}


def size_cdf(sizes: str) -> SizeCdf:
    """The distribution ``sizes`` names: a built-in (:data:`BUILTIN_SIZES`) or a CSV file.

    Raises:
        FieldError (field ``sizes``): no such file, or not a CDF (a line that is not two numbers,
            a size or cdf that decreases, a cdf outside [0, 1], fewer than two points, not ending
            at 1).
    """
    if sizes in _CDF_CACHE:
        return _CDF_CACHE[sizes]
    if sizes in BUILTIN_SIZES:
        text = resources.files("ccarena.scenario").joinpath("cdfs", f"{sizes}.csv").read_text()
        label = sizes
    else:
        path = Path(sizes)
        if not path.is_file():
            raise FieldError("sizes", f"'{sizes}' is neither {' nor '.join(BUILTIN_SIZES)} nor a "
                                      "CSV file of size_bytes,cdf")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise FieldError("sizes", f"{sizes}: cannot read ({err})") from None
        label = path.name
    cdf = parse_cdf(text, label)
    _CDF_CACHE[sizes] = cdf
    return cdf


def parse_cdf(text: str, label: str) -> SizeCdf:
    """Points ``size_bytes,cdf`` from CSV text (a header line and ``#`` comments allowed).

    Raises:
        FieldError (field ``sizes``): see :func:`size_cdf`.
    """
    import numpy as np

    xs: list[float] = []
    ps: list[float] = []
    for lineno, row in enumerate(csv.reader(text.splitlines()), start=1):
        if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
            continue
        if len(row) != 2:
            raise FieldError("sizes", f"{label} line {lineno}: expected two values size_bytes,cdf, "
                                      f"got {len(row)}")
        try:
            x, p = float(row[0]), float(row[1])
        except ValueError:
            if not xs and row[0].strip() == "size_bytes":
                continue  # the header
            raise FieldError("sizes", f"{label} line {lineno}: '{','.join(row)}' is not two "
                                      "numbers") from None
        if not (math.isfinite(x) and x >= 0):
            raise FieldError("sizes", f"{label} line {lineno}: size {row[0]} is not a size in bytes ≥ 0")
        if not (0.0 <= p <= 1.0):
            raise FieldError("sizes", f"{label} line {lineno}: cdf {row[1]} is not in [0, 1]")
        if xs and x < xs[-1]:
            raise FieldError("sizes", f"{label} line {lineno}: size {row[0]} is less than the "
                                      f"previous {xs[-1]:g} (sizes must not decrease)")
        if ps and p < ps[-1]:
            raise FieldError("sizes", f"{label} line {lineno}: cdf {row[1]} is less than the "
                                      f"previous {ps[-1]:g} (a CDF never decreases)")
        xs.append(x)
        ps.append(p)
    if len(xs) < 2:
        raise FieldError("sizes", f"{label}: a CDF needs at least two points size_bytes,cdf")
    if abs(ps[-1] - 1.0) > 1e-9:
        raise FieldError("sizes", f"{label}: the CDF ends at {ps[-1]:g}, not 1")
    return SizeCdf(label, np.array(xs, dtype=float), np.array(ps, dtype=float))


# ----------------------------------------------------------------------------- expansion

@dataclass(frozen=True)
class Generated:
    """One generated flow before it becomes a Flow: endpoints, start, size (None = bulk), stop."""

    src: str
    dst: str
    start_ns: int
    size_bytes: int | None
    stop_ns: int | None


def pattern_seed(scenario_seed: int, index: int, seed: int | None) -> np.random.SeedSequence:
    """The random stream of pattern ``index``: its own ``seed`` if given, else derived from the
    scenario's seed and the pattern's position (apart from every other stream of the run)."""
    import numpy as np

    if seed is not None:
        return np.random.SeedSequence([int(seed), 0x7AFF1C])
    return np.random.SeedSequence([int(scenario_seed), 0x7AFF1C, int(index)])


def _match(globs: Sequence[str], pool: Sequence[str], field: str, all_hosts: Sequence[str]) -> list[str]:
    """The hosts of ``pool`` matching any of ``globs``, in pool order.

    Raises:
        FieldError: a glob matches no host.
    """
    chosen: set[str] = set()
    for i, pattern in enumerate(globs):
        hits = [h for h in pool if fnmatch.fnmatchcase(h, pattern)]
        if not hits:
            shown = ", ".join(all_hosts[:12]) + (", …" if len(all_hosts) > 12 else "")
            hint = flavor_catalog.suggest(pattern, list(all_hosts))
            raise FieldError(f"{field}[{i}]", f"'{pattern}' matches no host{hint}; hosts are {shown}")
        chosen.update(hits)
    return [h for h in pool if h in chosen]


def _starts(rng: np.random.Generator, base_ns: int, jitter_ns: int, n: int) -> np.ndarray:
    """``n`` start times: ``base_ns`` plus a uniform offset in [0, jitter)."""
    import numpy as np

    if jitter_ns <= 0:
        return np.full(n, base_ns, dtype=np.int64)
    return base_ns + rng.integers(0, jitter_ns, size=n, dtype=np.int64)


def derangement(rng: np.random.Generator, n: int) -> np.ndarray:
    """A uniformly random permutation of 0..n−1 with no fixed point (rejection: about e tries)."""
    import numpy as np

    while True:
        perm = rng.permutation(n)
        if not np.any(perm == np.arange(n)):
            return perm


def _too_many(count: float, what: str, fix: str) -> FieldError:
    return FieldError("", f"{what} makes {count:,.0f} flows, more than the limit of "
                          f"{MAX_GENERATED_FLOWS:,}; {fix}")


def generate(pattern: TrafficPattern, hosts: Sequence[str], *, seed: np.random.SeedSequence,
             duration_ns: int, access_rates_bps: Callable[[], dict[str, float]]) -> list[Generated]:
    """The flows of one pattern over the topology's ``hosts`` (module doc for each pattern).

    Args:
        hosts: the topology's host names, in its order.
        seed: the pattern's stream (:func:`pattern_seed`).
        duration_ns: the run's duration (starts must fall before it).
        access_rates_bps: gives each host's total rate of links out (poisson's default
            capacity); called only when needed (it may build the network).

    Raises:
        FieldError: a field (relative to the pattern) and the problem.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    pool = _match(pattern.hosts, hosts, "hosts", hosts) if pattern.hosts is not None else list(hosts)
    if len(pool) < 2:
        raise FieldError("hosts", f"a {pattern.pattern} pattern needs at least 2 hosts, got "
                                  f"{len(pool)} ({', '.join(pool) or 'none'})")
    if pattern.start_ns >= duration_ns:
        raise FieldError("start", f"{format_time(pattern.start_ns / 1e9)} is not before the end "
                                  f"of the run (duration {format_time(duration_ns / 1e9)})")
    if pattern.stop_ns is not None and pattern.stop_ns > duration_ns:
        raise FieldError("stop", f"{format_time(pattern.stop_ns / 1e9)} is after the end of the "
                                 f"run (duration {format_time(duration_ns / 1e9)})")
    # Jitter never pushes a start past the end of the run (or a bulk flow's stop).
    end_ns = min(pattern.stop_ns or duration_ns, duration_ns)
    jitter = min(pattern.jitter_ns, end_ns - pattern.start_ns - 1) if pattern.pattern != "poisson" else 0
    n = len(pool)
    kind = pattern.pattern
    if kind in ("permutation", "all_to_all", "stride"):
        if kind == "permutation":
            perm = derangement(rng, n)
            pairs = [(pool[i], pool[int(perm[i])]) for i in range(n)]
        elif kind == "all_to_all":
            if n * (n - 1) > MAX_GENERATED_FLOWS:
                raise _too_many(n * (n - 1), f"all_to_all over {n} hosts",
                                "restrict `hosts` or use permutation")
            pairs = [(a, b) for a in pool for b in pool if a != b]
        else:
            k = int(pattern.stride or 0)
            if k % n == 0:
                raise FieldError("stride", f"stride {k} is a multiple of the {n} hosts: every host "
                                           "would send to itself")
            pairs = [(pool[i], pool[(i + k) % n]) for i in range(n)]
        starts = _starts(rng, pattern.start_ns, jitter, len(pairs))
        return [Generated(a, b, int(t), pattern.size_bytes, pattern.stop_ns)
                for (a, b), t in zip(pairs, starts)]
    if kind == "incast":
        return _incast(pattern, pool, hosts, rng, duration_ns, jitter)
    return _poisson(pattern, pool, hosts, rng, duration_ns, access_rates_bps)


def _incast(pattern: TrafficPattern, pool: list[str], hosts: Sequence[str],
            rng: np.random.Generator, duration_ns: int, jitter_ns: int) -> list[Generated]:
    import numpy as np

    receiver = pattern.receiver if pattern.receiver is not None else pool[0]
    if receiver not in hosts:
        hint = flavor_catalog.suggest(receiver, list(hosts))
        raise FieldError("receiver", f"unknown host '{receiver}'{hint}")
    others = [h for h in pool if h != receiver]
    if isinstance(pattern.senders, int):
        if pattern.senders > len(others):
            raise FieldError("senders", f"{pattern.senders} senders but only {len(others)} hosts "
                                        f"besides the receiver {receiver}; give at most {len(others)}")
        pick = np.sort(rng.choice(len(others), size=pattern.senders, replace=False))
        senders = [others[int(i)] for i in pick]
    elif pattern.senders is not None:
        senders = [h for h in _match(pattern.senders, pool, "senders", hosts) if h != receiver]
        if not senders:
            raise FieldError("senders", f"no sender left besides the receiver {receiver}")
    else:
        senders = others
    interval = pattern.interval_ns or 0
    last = pattern.start_ns + (pattern.rounds - 1) * interval
    if last >= duration_ns:
        raise FieldError("rounds", f"round {pattern.rounds - 1} would start at "
                                   f"{format_time(last / 1e9)}, not before the end of the run "
                                   f"(duration {format_time(duration_ns / 1e9)})")
    if pattern.rounds * len(senders) > MAX_GENERATED_FLOWS:
        raise _too_many(pattern.rounds * len(senders), f"{pattern.rounds} rounds of {len(senders)} senders",
                        "use fewer rounds")
    out = []
    for r in range(pattern.rounds):
        base = pattern.start_ns + r * interval
        room = min(jitter_ns, duration_ns - base - 1)
        for sender, t in zip(senders, _starts(rng, base, room, len(senders))):
            out.append(Generated(sender, receiver, int(t), pattern.response_bytes, None))
    return out


def _poisson(pattern: TrafficPattern, pool: list[str], hosts: Sequence[str],
             rng: np.random.Generator, duration_ns: int,
             access_rates_bps: Callable[[], dict[str, float]]) -> list[Generated]:
    import numpy as np

    senders = _match(pattern.senders, pool, "senders", hosts) if pattern.senders else pool
    receivers = _match(pattern.receivers, pool, "receivers", hosts) if pattern.receivers else pool
    if len(set(senders) | set(receivers)) < 2 or (len(receivers) == 1 and receivers == senders):
        raise FieldError("receivers", "needs a receiver other than each sender")
    assert pattern.sizes is not None and pattern.load is not None
    cdf = size_cdf(pattern.sizes)
    if pattern.capacity == "hosts":
        rates = access_rates_bps()
        capacity = float(sum(rates.get(h, 0.0) for h in senders))
    else:
        capacity = float(parse_rate_bps(pattern.capacity))
    rate_per_s = pattern.load * capacity / (8.0 * cdf.mean_bytes)
    end_ns = pattern.stop_ns or duration_ns
    window_s = (end_ns - pattern.start_ns) / 1e9
    expected = rate_per_s * window_s
    if expected > MAX_GENERATED_FLOWS:
        raise FieldError("load", f"about {expected:,.0f} flows (λ = {rate_per_s:,.0f}/s: load "
                                 f"{pattern.load:g} of {format_rate(capacity)} with mean size "
                                 f"{cdf.mean_bytes:,.0f} B, over {format_time(window_s)}) exceeds "
                                 f"the limit of {MAX_GENERATED_FLOWS:,}; lower the load, shorten "
                                 "the window (stop) or lower the capacity")
    # Inter-arrival gaps ~ Exp(λ); draw in batches until the window is passed.
    times: list[np.ndarray] = []
    t = 0.0
    while True:
        gaps = rng.exponential(1.0 / rate_per_s, size=int(expected * 1.1) + 64)
        arrivals = t + np.cumsum(gaps)
        times.append(arrivals[arrivals < window_s])
        if arrivals[-1] >= window_s:
            break
        t = float(arrivals[-1])
    at_s = np.concatenate(times)
    if at_s.size > MAX_GENERATED_FLOWS:
        raise FieldError("load", f"{at_s.size:,} flows exceed the limit of {MAX_GENERATED_FLOWS:,}; "
                                 "lower the load or shorten the window (stop)")
    count = at_s.size
    src = rng.integers(0, len(senders), size=count)
    dst_names: list[str] = []
    src_names = [senders[int(i)] for i in src]
    receiver_index = {h: i for i, h in enumerate(receivers)}
    for s in src_names:
        # Uniform over the receivers other than the sender.
        own = receiver_index.get(s)
        k = len(receivers) - (own is not None)
        j = int(rng.integers(0, k))
        if own is not None and j >= own:
            j += 1
        dst_names.append(receivers[j])
    sizes = cdf.sample(rng, count)
    starts = pattern.start_ns + np.floor(at_s * 1e9).astype(np.int64)
    return [Generated(s, d, int(t0), int(b), None)
            for s, d, t0, b in zip(src_names, dst_names, starts, sizes)]


def expand_traffic(patterns: Sequence[Any], *, hosts: Sequence[str], scenario_seed: int,
                   duration_ns: int, access_rates_bps: Callable[[], dict[str, float]]) -> list[Any]:
    """Every pattern's flows as Flow models: each pattern's ``flow`` template (a validated Flow)
    copied with the generated endpoints, name, start, stop and size.

    Raises:
        FieldError: ``traffic[i].<field>: <problem>``.
    """
    out: list[Any] = []
    prefixes: dict[str, int] = {}
    for i, pattern in enumerate(patterns):
        if pattern.prefix in prefixes:
            raise FieldError(f"traffic[{i}].name", f"'{pattern.prefix}' also names the flows of "
                                                   f"traffic[{prefixes[pattern.prefix]}]; give "
                                                   "each pattern its own name")
        prefixes[pattern.prefix] = i
        template = pattern.flow
        finite = pattern.pattern in ("incast", "poisson") or pattern.size_bytes is not None
        if finite and template.is_udp:
            raise FieldError(f"traffic[{i}].flow.flavor", f"{template.flavor} sends until stop; "
                             "a pattern of finite flows needs a TCP or UDT flavor")
        try:
            flows = generate(pattern, hosts, seed=pattern_seed(scenario_seed, i, pattern.seed),
                             duration_ns=duration_ns, access_rates_bps=access_rates_bps)
        except FieldError as err:
            field = f"traffic[{i}].{err.field}" if err.field else f"traffic[{i}]"
            raise FieldError(field, err.message) from None
        if len(out) + len(flows) > MAX_GENERATED_FLOWS:
            raise FieldError(f"traffic[{i}]", f"the patterns make {len(out) + len(flows):,} flows, "
                                              f"more than the limit of {MAX_GENERATED_FLOWS:,}")
        for k, g in enumerate(flows):
            out.append(template.model_copy(update={
                "name": f"{pattern.prefix}-{k}", "src": g.src, "dst": g.dst,
                "start_ns": g.start_ns, "stop_ns": g.stop_ns, "size_bytes": g.size_bytes}))
    return out
