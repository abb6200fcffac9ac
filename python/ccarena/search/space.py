"""The search space of ``ccarena search``: each ``--over`` option parsed into a range of one
scenario field (or a link's capacity trace), turned into Optuna distributions through a trial's
``suggest_*`` calls, and set into a copy of the scenario as written.

``--over FIELD=SPEC``:

- ``FIELD`` is a field path as ``[sweep]`` takes it (``topology.bottleneck.queue.limit``,
  ``flows[1].start``; ``flows.1.start`` is read as ``flows[1].start``),
  :mod:`ccarena.scenario.paths`;
- ``SPEC`` is ``LO:HI`` (numbers, or quantities in one unit family: ``10Mbps:1Gbps``,
  ``5ms:200ms``, ``5pkt:100pkt``, ``0%:5%``), searched on a log scale when ``HI/LO ≥ 100`` or
  written ``log:LO:HI``; whole numbers (``2:64``) and packet counts are searched as integers; or
  ``a|b|c``, one of the listed values (e.g. flavors).

``--over trace:LINK=GENERATOR[,PARAM=LO:HI...]`` replaces the rate of the link table
``topology.LINK`` by a capacity trace drawn from a parameterized generator (:mod:`ccarena.search.trace_shapes`),
each parameter searched over its default range or the one given.

``--over trace:LINK=packets[:MS][,mean=LO:HI]`` makes the trace itself the genome at the
resolution of single delivery opportunities (:mod:`ccarena.search.packet_traces`), evolved by
ccarena's own genetic algorithm (:mod:`ccarena.search.evolve`), with the other ``--over`` options
of the search as genes beside it; its trials table shows features of each such trace (mean rate,
longest gap, spread) instead of searched parameters.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ccarena.errors import UserError
from ccarena.scenario import validate_scenario
from ccarena.scenario.paths import parse_path, render_path, set_path
from ccarena.search.trace_shapes import GENERATORS, TraceParam, generator_params, write_trace
from ccarena.search.value_ranges import Choice, NumberRange

if TYPE_CHECKING:
    import optuna

def normalize_path(text: str) -> str:
    """A field path with ``.N`` list indices written as ``[N]`` (``flows.1.start`` →
    ``flows[1].start``)."""
    return re.sub(r"\.(\d+)(?=\.|\[|$)", r"[\1]", text.strip())


@dataclass(frozen=True)
class FieldRange:
    """``--over FIELD=SPEC``: the scenario field at ``path`` searched over ``domain``."""

    path: str
    domain: NumberRange | Choice

    @property
    def name(self) -> str:
        """The Optuna parameter name (the field path) and the trials table's column."""
        return self.path

    @property
    def unit(self) -> str:
        """The value's unit in the trials table (``rate_bps``, ``time_s``, … or ``""``)."""
        return self.domain.unit if isinstance(self.domain, NumberRange) else ""


@dataclass(frozen=True)
class TraceRange:
    """``--over trace:LINK=GENERATOR,...``: the rate of the link table at ``path``
    (``topology.bottleneck``) replaced by a trace from ``generator`` whose parameters are searched
    over ``params``; ``rate_bps`` is the link's nominal rate (the trace's scale), ``duration_s``
    the run's."""

    path: str
    link: str
    generator: str
    params: tuple[TraceParam, ...]
    rate_bps: float
    duration_s: float
    shape: Any = None
    """For ``packets``: the genomes' :class:`ccarena.search.packet_traces.TraceShape` (its
    ``params`` are then the features the trials table shows, not searched)."""

    @property
    def names(self) -> list[str]:
        """The Optuna parameter names (``trace:bottleneck.depth``)."""
        return [f"trace:{self.link}.{p.name}" for p in self.params]

    @property
    def packets(self) -> bool:
        """Whether the trace is a packet-level genome (``packets[:MS]``)."""
        return self.shape is not None


@dataclass
class SearchSpace:
    """Every ``--over`` of a search over one base scenario (``base``: the scenario as written,
    trace file paths absolute, without ``[sweep]``)."""

    base: dict[str, Any]
    fields: list[FieldRange] = field(default_factory=list)
    traces: list[TraceRange] = field(default_factory=list)

    def units(self) -> dict[str, str]:
        """Parameter name → its unit in the trials table."""
        out = {f.name: f.unit for f in self.fields}
        for t in self.traces:
            out.update({n: p.unit for n, p in zip(t.names, t.params)})
        return out

    def packet_traces(self) -> list[TraceRange]:
        """The ``packets`` traces (searched by :mod:`ccarena.search.evolve`, not by Optuna)."""
        return [t for t in self.traces if t.packets]

    def suggest(self, trial: optuna.trial.BaseTrial) -> dict[str, Any]:
        """Every parameter's value for ``trial`` (name → value in its base unit), asked in the
        order the ``--over`` options were given (so a seeded sampler draws the same values)."""
        values = {f.name: f.domain.suggest(trial, f.name) for f in self.fields}
        for t in self.traces:
            for name, p in zip(t.names, t.params):
                values[name] = p.suggest(trial, name)
        return values

    def scenario(self, values: dict[str, Any], trace_dir: Path, label: str,
                 genomes: dict[str, Any] | None = None) -> dict[str, Any]:
        """The base scenario with ``values`` set (as :meth:`suggest` gives them), each trace
        written to ``trace_dir/<label>-<link>.csv`` (a ``packets`` trace: ``genomes[link]`` to
        ``<label>-<link>.mahi``, Mahimahi's format) and named by its link's rate.

        Raises:
            UserError: a value cannot be set at its path.
            KeyError: a ``packets`` trace without its genome.
        """
        from ccarena.search.packet_traces import write_mahimahi

        raw = self.base
        for f in self.fields:
            raw = set_path(raw, f.path, f.domain.written(values[f.name]))
        for t in self.traces:
            if t.packets:
                path = trace_dir / f"{label}-{t.link.replace('.', '-')}.mahi"
                write_mahimahi(path, (genomes or {})[t.link], t.shape)
                raw = set_path(raw, f"{t.path}.rate", {"trace": str(path)})
                continue
            params = {p.name: values[n] for n, p in zip(t.names, t.params)}
            path = trace_dir / f"{label}-{t.link.replace('.', '-')}.csv"
            write_trace(path, t.generator, params, t.rate_bps, t.duration_s)
            raw = set_path(raw, f"{t.path}.rate", {"trace": str(path)})
        return raw


def _without_prefix(err: UserError, path: str) -> str:
    """A set_path / validation problem without the ``sweep."path": `` or ``path: `` it starts
    with (the caller names the option)."""
    message = err.problems[0]
    for prefix in (f'sweep."{path}": ', f"{path}: "):
        if message.startswith(prefix):
            return message[len(prefix):]
    return message


def parse_field(option: str, base: dict[str, Any]) -> FieldRange:
    """One ``--over FIELD=SPEC`` (not a trace) checked against ``base``: both ends of a range (or
    every choice) must give a valid scenario.

    Raises:
        UserError: ``--over FIELD: problem`` (no ``=``, not a path, a bad spec, a value the
        scenario refuses).
    """
    if "=" not in option:
        raise UserError(f"--over '{option}': write FIELD=SPEC, e.g. "
                        "topology.bottleneck.queue.limit=5pkt:100pkt")
    name, spec = option.split("=", 1)
    path = normalize_path(name)
    where = f"--over {path}"
    try:
        tokens = parse_path(path)
    except UserError:
        raise UserError(f"{where}: not a field path; write e.g. topology.bottleneck.rate or "
                        "flows[1].start") from None
    path = render_path(tokens)
    domain: NumberRange | Choice = Choice.parse(spec, where) if "|" in spec \
        else NumberRange.parse(spec, where)
    samples = list(domain.values) if isinstance(domain, Choice) else [domain.low, domain.high]
    for value in samples:
        written = domain.written(value)
        try:
            validate_scenario(set_path(base, path, written))
        except UserError as err:
            raise UserError(f"{where}: {written!r}: {_without_prefix(err, path)}") from None
    return FieldRange(path=path, domain=domain)


def parse_trace(option: str, base: dict[str, Any], duration_s: float) -> TraceRange:
    """One ``--over trace:LINK=GENERATOR[,PARAM=LO:HI...]`` checked against ``base``.

    Raises:
        UserError: ``--over trace:LINK: problem`` (no such link table with a fixed rate, an
        unknown generator or parameter, a bad range).
    """
    from ccarena.units import parse_rate_bps

    body = option[len("trace:"):]
    if "=" not in body:
        raise UserError(f"--over '{option}': write trace:LINK=GENERATOR, e.g. "
                        f"trace:bottleneck=square ({', '.join(GENERATORS)})")
    link, spec = body.split("=", 1)
    link = normalize_path(link).removeprefix("topology.")
    where = f"--over trace:{link}"
    path = f"topology.{link}"
    node: Any = base
    try:
        for token in parse_path(path):
            node = node[token]
    except (UserError, KeyError, IndexError, TypeError):
        node = None
    topology = base.get("topology") if isinstance(base.get("topology"), dict) else {}
    links = [k for k, v in topology.items() if isinstance(v, dict) and "rate" in v]
    if not isinstance(node, dict) or "rate" not in node:
        raise UserError(f"{where}: the scenario has no link table topology.{link} with a rate; "
                        f"links: {', '.join(links) or 'none'}")
    try:
        rate_bps = float(parse_rate_bps(node["rate"]))
    except (UserError, ValueError, TypeError):
        raise UserError(f"{where}: its rate is not a fixed rate (a trace already?); give the "
                        "link a rate such as \"20Mbps\"") from None
    name, *overrides = [p.strip() for p in spec.split(",")]
    if name.partition(":")[0] == "packets":
        return _packet_trace(path, link, name, overrides, rate_bps, duration_s, where)
    kind, defaults = generator_params(name, where)
    params = {p.name: p for p in defaults}
    for item in overrides:
        pname, _, prange = item.partition("=")
        if pname not in params:
            names = list(params)
            listed = ", ".join(names) if len(names) <= 8 else f"{names[0]} … {names[-1]}"
            raise UserError(f"{where}: {kind} has no parameter '{pname}'; its parameters: {listed}")
        params[pname] = params[pname].with_range(prange, f"{where}.{pname}")
    return TraceRange(path=path, link=link, generator=kind, params=tuple(params.values()),
                      rate_bps=rate_bps, duration_s=duration_s)


def _packet_trace(path: str, link: str, name: str, overrides: list[str], rate_bps: float,
                  duration_s: float, where: str) -> TraceRange:
    """``packets[:MS][,mean=LO:HI]`` (:func:`parse_trace`): the granularity ``MS`` (1 to
    :data:`~ccarena.search.packet_traces.MAX_SLOT_MS` ms, below the run's length) and the mean
    rate's band (fractions of the link's rate, ``0 < LO ≤ HI``; default 0.9:1.1).

    Raises:
        UserError: ``where: problem`` naming the fix.
    """
    from ccarena.search import packet_traces as pt

    _, _, count = name.partition(":")
    duration_ms = int(round(duration_s * 1000))
    slot_ms = 1
    if count:
        if not count.isdigit() or not 1 <= int(count) <= min(pt.MAX_SLOT_MS, duration_ms - 1):
            raise UserError(f"{where}: packets:{count}: give the granularity as a whole number of "
                            f"milliseconds from 1 to {min(pt.MAX_SLOT_MS, duration_ms - 1)}, "
                            "e.g. packets:10")
        slot_ms = int(count)
    band = pt.DEFAULT_BAND
    for item in overrides:
        pname, _, prange = item.partition("=")
        if pname != "mean":
            raise UserError(f"{where}: packets has no parameter '{pname}'; its one parameter: "
                            "mean (the band of its mean rate, e.g. mean=0.8:1.2)")
        given = NumberRange.parse(prange, f"{where}.mean")
        if given.unit != "" or not 0 < given.low <= given.high:
            raise UserError(f"{where}.mean: '{prange}': give fractions of the link's rate "
                            "0 < LO ≤ HI, e.g. mean=0.8:1.2")
        band = (given.low, given.high)
    nominal = pt.nominal_count(rate_bps, duration_s)
    if nominal * band[1] > pt.MAX_PACKETS:
        raise UserError(f"{where}: packets: {round(nominal * band[1]):,} delivery opportunities "
                        f"(the link's rate × the run / 1500 B) is over {pt.MAX_PACKETS:,}; "
                        "shorten the run or use steps:N")
    shape = pt.TraceShape(duration_ms=duration_ms, slot_ms=slot_ms, nominal=nominal,
                          band_low=band[0], band_high=band[1])
    if math.ceil(band[0] * nominal) > math.floor(band[1] * nominal) or band[1] * nominal < 2:
        raise UserError(f"{where}.mean: {band[0]:g}:{band[1]:g} of {nominal} opportunities holds "
                        "no whole number of them (at least 2); widen the band")
    features = (TraceParam("mean", 0.0, band[1] + 1.0), TraceParam("longest_gap", 0.0,
                                                                   duration_s, "time_s"),
                TraceParam("spread", 0.0, 1e6))
    return TraceRange(path=path, link=link, generator=f"packets:{slot_ms}", params=features,
                      rate_bps=rate_bps, duration_s=duration_s, shape=shape)


def parse_space(options: list[str], base: dict[str, Any], duration_s: float) -> SearchSpace:
    """Every ``--over`` option into a :class:`SearchSpace` over ``base``.

    Raises:
        UserError: no option, a field given twice, or any problem of :func:`parse_field` /
        :func:`parse_trace`.
    """
    if not options:
        raise UserError("--over: give at least one field to search, e.g. "
                        "--over topology.bottleneck.queue.limit=5pkt:100pkt")
    space = SearchSpace(base=base)
    for option in options:
        if option.startswith("trace:"):
            space.traces.append(parse_trace(option, base, duration_s))
        else:
            space.fields.append(parse_field(option, base))
    names = [f.name for f in space.fields] + [t.path for t in space.traces]
    repeated = {n for n in names if names.count(n) > 1}
    if repeated:
        raise UserError(f"--over {sorted(repeated)[0]}: given twice; give each field once")
    for t in space.traces:
        clash = [f.path for f in space.fields if f.path.startswith(f"{t.path}.rate")]
        if clash:
            raise UserError(f"--over {clash[0]}: trace:{t.link} sets that link's rate already")
    return space
