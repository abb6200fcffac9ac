"""The scenario file: TOML validated by pydantic models.

A scenario says what network (``[topology]``), which flows (``[[flows]]``), how long and how often
to sample (``duration``, ``[output]``), what to vary (``[sweep]``) and the seed. Quantities are strings
with units (see :mod:`ccarena.units`). Every model forbids unknown fields. A problem is reported as a
:class:`ccarena.errors.UserError` whose message is one line naming the field, e.g.
``flows[2].flavor: unknown flavor 'cubik' (did you mean 'cubic'?)``.

Entry points: :func:`load_scenario` (a path or a dict → :class:`LoadedScenario`) and
:func:`validate_scenario` (a dict → :class:`Scenario`).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ccarena import flavors as flavor_catalog
from ccarena.errors import FieldError, UserError
from ccarena.quantities import Packets, RateBps, SizeBytes, StrictModel, TimeNs
from ccarena.schedule import Event, resolve_events
from ccarena.topology import KINDS as TOPOLOGY_KINDS
from ccarena.topology import Topology
from ccarena.units import format_time

RECOVERIES = ("tahoe", "reno", "newreno", "sack", "prr")
"""Loss recovery algorithms a TCP flow may use (FLAVORS.md, "Loss recovery")."""

TCP_ONLY_FIELDS = ("bytes", "recovery", "params", "mss", "initial_cwnd", "min_rto", "initial_rto",
                   "max_rto", "delayed_ack", "ack_every", "dupthresh", "ecn")
UDP_ONLY_FIELDS = ("rate", "packet_size")

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class Flow(StrictModel):
    """One flow: a TCP bulk transfer (``flavor`` = a congestion controller) or a UDP transport
    (``flavor = "udp-cbr"``) from host ``from`` to host ``to``.

    Common: ``name`` (default: the flavor, numbered if several flows share it), ``start`` (default
    ``"0s"``), ``stop`` (default: the end of the run).
    TCP only: ``bytes`` (a finite transfer; default: send until stop), ``recovery`` (default: the
    flavor's), ``params`` (the controller's named parameters), ``mss``, ``initial_cwnd``,
    ``min_rto``, ``initial_rto``, ``max_rto``, ``delayed_ack``, ``ack_every``, ``dupthresh``, ``ecn``
    (defaults in :mod:`ccarena.resolve`).
    UDP CBR only: ``rate`` (payload bit rate, required), ``packet_size`` (payload per datagram).
    UDT (``flavor = "udt"``): ``bytes`` and ``params`` as for TCP; the rest of UDT's settings are
    the defaults in :mod:`ccarena.resolve`.
    ``flavor`` may also be a table naming the flavor and its parameters:
    ``flavor = { name = "vegas", alpha = 1, beta = 3 }`` (the same as ``flavor = "vegas"`` with
    ``params = { alpha = 1, beta = 3 }``).
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
    params: dict[str, float] | None = None
    mss_bytes: SizeBytes | None = Field(None, alias="mss")
    initial_cwnd_packets: Packets | None = Field(None, alias="initial_cwnd")
    min_rto_ns: TimeNs | None = Field(None, alias="min_rto")
    initial_rto_ns: TimeNs | None = Field(None, alias="initial_rto")
    max_rto_ns: TimeNs | None = Field(None, alias="max_rto")
    delayed_ack_ns: TimeNs | None = Field(None, alias="delayed_ack")
    ack_every_segments: int | None = Field(None, alias="ack_every", ge=1, le=64)
    dupthresh: int | None = Field(None, ge=1, le=1000)
    ecn: bool | None = None
    rate_bps: RateBps | None = Field(None, alias="rate")
    packet_bytes: SizeBytes | None = Field(None, alias="packet_size")

    @field_validator("name")
    @classmethod
    def _name_is_simple(cls, name: str | None) -> str | None:
        if name is not None and not _NAME.match(name):
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
    def transport(self) -> str:
        """``"tcp"``, ``"udt"`` or ``"udp_cbr"``: the engine flow kind this flow runs as."""
        return flavor_catalog.transport_of(self.flavor)

    @model_validator(mode="after")
    def _fields_fit_the_flavor(self) -> "Flow":
        given = {name for name, value in self._given_by_alias().items() if value is not None}
        if self.is_udp:
            for name in TCP_ONLY_FIELDS:
                if name in given:
                    hint = "; a UDP flow sends until `stop`" if name == "bytes" else ""
                    raise FieldError(name, f"only TCP flows take `{name}` ({self.flavor} is UDP){hint}")
            if self.rate_bps is None:
                raise FieldError("rate", f"a {self.flavor} flow needs a rate, e.g. rate = \"2Mbps\"")
        else:
            for name in UDP_ONLY_FIELDS:
                if name in given:
                    raise FieldError(name, f"only udp-cbr flows take `{name}` ({self.flavor} is TCP)")
            if self.transport == "udt":
                for name in TCP_ONLY_FIELDS:
                    if name in given and name not in ("bytes", "params"):
                        raise FieldError(name, f"a udt flow takes `bytes` and `params` but not `{name}` "
                                               "(UDT is not TCP)")
            known = [p["name"] for p in flavor_catalog.engine_flavors()[self.flavor]["params"]]
            for param in (self.params or {}):
                if param not in known:
                    hint = flavor_catalog.suggest(param, known)
                    listing = f"; {self.flavor} takes {', '.join(known)}" if known else \
                        f"; {self.flavor} takes no parameters"
                    raise FieldError(f"params.{param}",
                                     f"unknown parameter of {self.flavor}{hint}{listing}")
        if self.stop_ns is not None and self.stop_ns <= self.start_ns:
            raise FieldError("stop", f"{format_time(self.stop_ns / 1e9)} is not after start "
                                     f"({format_time(self.start_ns / 1e9)})")
        return self

    def _given_by_alias(self) -> dict[str, Any]:
        return {(f.alias or name): getattr(self, name) for name, f in type(self).model_fields.items()}


class Output(StrictModel):
    """``[output]``: ``sample_interval`` (default ``"100ms"``) between time-series samples."""

    sample_interval_ns: TimeNs = Field("100ms", alias="sample_interval")

    @field_validator("sample_interval_ns")
    @classmethod
    def _positive(cls, value: int) -> int:
        if value <= 0:
            raise ValueError("must be > 0")
        return value


class Sweep(BaseModel):
    """``[sweep]``: a grid of values per field path, and ``repeats`` per grid point.

    Keys are field paths of the scenario (``"topology.bottleneck.loss"``, ``"flows[1].flavor"``);
    values are non-empty lists. Nested tables are read as dotted paths. ``repeats`` (default 1) runs
    each point that many times with seeds derived from the scenario's seed
    (:func:`ccarena.experiment.derive_seed`).
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


class KernelOptions(StrictModel):
    """``[kernel]``: options of the kernel backend (ignored by the simulator).

    ``emulation``: how the links are emulated (:mod:`ccarena.kernel.emulation`) — ``"auto"``
    (default: ``"tc"`` where the kernel has netem, else ``"relay"``), ``"relay"`` (ccarena's link
    emulator does the rate, queue, delay and loss with the simulator's link model) or ``"tc"``
    (htb + pfifo/bfifo, netem or the relay for the delay, nftables for the loss).
    """

    emulation: Literal["auto", "relay", "tc"] = "auto"


class ReportOptions(StrictModel):
    """``[report]``: ``references`` (a study's published tables, :class:`Reference`) and
    ``group_by`` (the summary column the study tables are grouped by, e.g. ``"flavor"``; default:
    the swept parameters)."""

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
        return self

    def pairs(self) -> list[tuple[str, str]]:
        """Every ordered (row, column) pair, row-major."""
        return [(r, c) for r in self.flavors for c in self.flavors]


def _matrix_flows(data: dict[str, Any]) -> dict[str, Any]:
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


class Scenario(StrictModel):
    """A whole scenario file (see the README's scenario reference).

    Fields: ``name`` (the experiment's directory name), ``description``, ``duration`` (> 0),
    ``seed`` (default 1), ``backend`` (``"sim"`` or ``"kernel"``), ``topology``, ``flows`` (at least one),
    ``output``, ``sweep``, ``matrix`` (:class:`Matrix`; not with ``sweep``), ``events``
    (:class:`ccarena.schedule.Event`), ``report`` (:class:`ReportOptions`), ``kernel``
    (:class:`KernelOptions`), ``parts`` (see :func:`split_parts`).
    """

    name: str = "experiment"
    description: str = ""
    duration_ns: TimeNs = Field(alias="duration")
    seed: int = Field(1, ge=0, lt=2**63)
    start_jitter_ns: TimeNs = Field("0s", alias="start_jitter")
    backend: Literal["sim", "kernel"] = "sim"
    topology: Topology
    flows: list[Flow]
    output: Output = Output()
    sweep: Sweep | None = None
    matrix: Matrix | None = None
    events: list[Event] = []
    report: ReportOptions = ReportOptions()
    kernel: KernelOptions = KernelOptions()

    @model_validator(mode="before")
    @classmethod
    def _matrix_templates(cls, data: Any) -> Any:
        if isinstance(data, dict) and "matrix" in data:
            return _matrix_flows(data)
        return data

    @field_validator("name")
    @classmethod
    def _name_is_a_directory_name(cls, name: str) -> str:
        if not _NAME.match(name):
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
        if not self.flows:
            raise FieldError("flows", "a scenario needs at least one [[flows]] table")
        nodes = self.topology.node_names()
        hosts = [n for n, kind in nodes.items() if kind == "host"]
        for i, flow in enumerate(self.flows):
            for key, node in (("from", flow.src), ("to", flow.dst)):
                if node not in nodes:
                    raise FieldError(f"flows[{i}].{key}", f"unknown node '{node}'"
                                     f"{flavor_catalog.suggest(node, list(nodes))}; "
                                     f"hosts of this {self.topology.kind} are {', '.join(hosts)}")
                if nodes[node] != "host":
                    raise FieldError(f"flows[{i}].{key}", f"'{node}' is a router; flows run "
                                     f"between hosts ({', '.join(hosts)})")
            if flow.src == flow.dst:
                raise FieldError(f"flows[{i}].to", f"the flow goes from '{flow.src}' to itself")
            if flow.start_ns >= self.duration_ns:
                raise FieldError(f"flows[{i}].start", f"{format_time(flow.start_ns / 1e9)} is not "
                                 f"before the end of the run (duration {format_time(self.duration_ns / 1e9)})")
            if flow.stop_ns is not None and flow.stop_ns > self.duration_ns:
                raise FieldError(f"flows[{i}].stop", f"{format_time(flow.stop_ns / 1e9)} is after "
                                 f"the end of the run (duration {format_time(self.duration_ns / 1e9)})")
        seen: dict[str, int] = {}
        for i, name in enumerate(self.flow_names()):
            if name in seen:
                raise FieldError(f"flows[{i}].name", f"duplicate flow name '{name}' "
                                 f"(also flows[{seen[name]}]); give each flow its own name")
            seen[name] = i
        if self.output.sample_interval_ns > self.duration_ns:
            raise FieldError("output.sample_interval", "is longer than the run's duration")
        if self.matrix is not None and self.sweep is not None:
            raise FieldError("matrix", "a scenario takes [matrix] or [sweep], not both; put each "
                                       "in its own [[parts]] table")
        for i, event in enumerate(self.events):
            if event.at_ns >= self.duration_ns:
                raise FieldError(f"events[{i}].at", f"{format_time(event.at_ns / 1e9)} is not "
                                 f"before the end of the run (duration {format_time(self.duration_ns / 1e9)})")
        if self.events:
            try:
                resolve_events(self.events, self.topology.build(), self.duration_ns)
            except UserError as err:
                field, _, message = str(err).partition(": ")
                raise FieldError(field, message) from None
        return self

    def flow_names(self) -> list[str]:
        """Each flow's name: as given, else its flavor, numbered (``reno0``, ``reno1``) when
        several unnamed flows share a flavor."""
        unnamed = [f.flavor for f in self.flows if f.name is None]
        counters: dict[str, int] = {}
        names = []
        for flow in self.flows:
            if flow.name is not None:
                names.append(flow.name)
            elif unnamed.count(flow.flavor) == 1:
                names.append(flow.flavor)
            else:
                k = counters.get(flow.flavor, 0)
                counters[flow.flavor] = k + 1
                names.append(f"{flow.flavor}{k}")
        return names


@dataclass(frozen=True)
class Part:
    """One sub-experiment of a scenario file.

    Attributes:
        name: the ``[[parts]]`` entry's name ("" for a file without parts).
        description: what the part asks.
        raw: the part's whole scenario as written (the file's top level with the part merged in).
        scenario: its validated :class:`Scenario`.
    """

    name: str
    description: str
    raw: dict[str, Any]
    scenario: Scenario


@dataclass(frozen=True)
class LoadedScenario:
    """A validated scenario with what the user wrote.

    Attributes:
        raw: the scenario as given (a plain dict, values as written).
        scenario: the validated :class:`Scenario` (parsed values) — the first part's when the
            file has ``[[parts]]``.
        source: the file path, or None for a dict.
        text: the file's text, or None for a dict.
        parts: the sub-experiments; one unnamed part for a file without ``[[parts]]``.
    """

    raw: dict[str, Any]
    scenario: Scenario
    source: str | None
    text: str | None
    parts: tuple[Part, ...] = ()


PART_FIELDS = ("name", "description")
"""Fields of a ``[[parts]]`` entry that describe the part rather than override the scenario."""


def merge_tables(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``override`` laid over it: tables merge key by key (recursively); any other
    value, lists included, replaces the base's, and so does a table with a different ``kind``
    (a part that changes the topology's kind gives the whole topology)."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) \
                and value.get("kind", out[key].get("kind")) == out[key].get("kind"):
            out[key] = merge_tables(out[key], value)
        else:
            out[key] = value
    return out


def split_parts(raw: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """``(name, description, merged raw scenario)`` per ``[[parts]]`` entry, or one unnamed part.

    Raises:
        UserError: ``parts`` is not a list of tables with distinct simple names.
    """
    if "parts" not in raw:
        return [("", str(raw.get("description", "")), raw)]
    parts = raw["parts"]
    if not isinstance(parts, list) or not parts or not all(isinstance(p, dict) for p in parts):
        raise UserError("parts: give one or more [[parts]] tables, each with a name")
    base = {k: v for k, v in raw.items() if k != "parts"}
    out: list[tuple[str, str, dict[str, Any]]] = []
    for i, part in enumerate(parts):
        name = part.get("name")
        if not isinstance(name, str) or not _NAME.match(name) or "__" in name:
            raise UserError(f"parts[{i}].name: give each part a simple name (letters, digits, "
                            "'.', '-', single '_'), e.g. name = \"loss\"")
        if any(name == n for n, _, _ in out):
            raise UserError(f"parts[{i}].name: '{name}' names two parts")
        override = {k: v for k, v in part.items() if k not in PART_FIELDS}
        if "parts" in override:
            raise UserError(f"parts[{i}].parts: parts do not nest")
        merged = merge_tables(base, override)
        out.append((name, str(part.get("description", "")), merged))
    return out


def _loc_to_path(loc: tuple[Any, ...]) -> str:
    """Pydantic's error location → ``flows[2].flavor`` (dropping union/tag artifacts)."""
    parts: list[str] = []
    skip_next_tag = False
    for item in loc:
        if skip_next_tag:
            skip_next_tag = False
            if item in TOPOLOGY_KINDS:
                continue
        if isinstance(item, int):
            parts.append(f"[{item}]")
            continue
        item = str(item)
        if item.startswith("function-") or item in ("list[AccessLink]", "AccessLink"):
            continue
        parts.append(("." if parts else "") + item)
        if item == "topology":
            skip_next_tag = True
    return "".join(parts)


def _model_fields_by_alias(loc: tuple[Any, ...]) -> list[str]:
    """Names a user may write at the location of an unknown field (for 'did you mean')."""
    model: Any = Scenario
    for item in loc[:-1]:
        if isinstance(item, int) or model is None:
            continue
        if item in TOPOLOGY_KINDS and model is None:
            continue
        if isinstance(item, str) and item in TOPOLOGY_KINDS:
            model = TOPOLOGY_KINDS[item]
            continue
        fields = {(f.alias or n): f for n, f in model.model_fields.items()}
        field = fields.get(item)
        model = _model_class(field.annotation) if field is not None else None
    if model is None:
        return []
    return [(f.alias or n) for n, f in model.model_fields.items()]


def _model_class(annotation: Any) -> Any:
    """The pydantic model class inside a field annotation (``list[Flow]`` → Flow), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _model_class(arg)
        if found is not None:
            return found
    return None


def format_validation_error(err: ValidationError) -> str:
    """One line for the first problem in ``err``: ``<field path>: <what is wrong>``.

    When pydantic found several problems, the line ends with ``(and N more problems)``.
    """
    errors = err.errors(include_url=False)
    # A union (e.g. one access table or a list of them) reports a type mismatch for each branch it
    # did not take; the error inside the branch the user meant is the useful one.
    mismatches = {"model_type", "list_type", "dict_type", "model_attributes_type"}
    specific = [e for e in errors if e["type"] not in mismatches]
    if specific and len(specific) < len(errors):
        errors = specific
    first = errors[0]
    path = _loc_to_path(first["loc"])
    kind = first["type"]
    cause = (first.get("ctx") or {}).get("error")
    if isinstance(cause, FieldError):
        path = f"{path}.{cause.field}" if path else cause.field
        message = cause.message
    elif kind == "extra_forbidden":
        allowed = _model_fields_by_alias(first["loc"])
        name = str(first["loc"][-1])
        hint = flavor_catalog.suggest(name, allowed)
        listing = f"; allowed here: {', '.join(allowed)}" if allowed else ""
        message = f"unknown field{hint}{listing}"
    elif kind == "missing":
        message = "is required"
    elif kind == "union_tag_invalid":
        tag = (first.get("ctx") or {}).get("tag")
        path = f"{path}.kind" if path else "kind"
        message = (f"unknown topology kind '{tag}'{flavor_catalog.suggest(str(tag), list(TOPOLOGY_KINDS))}; "
                   f"available: {', '.join(TOPOLOGY_KINDS)}")
    elif kind == "union_tag_not_found":
        path = f"{path}.kind" if path else "kind"
        message = f"is required; one of {', '.join(TOPOLOGY_KINDS)}"
    elif kind == "value_error":
        message = first["msg"].removeprefix("Value error, ")
    else:
        message = first["msg"]
        if "input" in first and not isinstance(first["input"], (dict, list)):
            message = f"{message} (got {first['input']!r})"
    more = len(errors) - 1
    tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return f"{path}: {message}{tail}" if path else f"{message}{tail}"


def validate_scenario(raw: dict[str, Any]) -> Scenario:
    """Validate a scenario given as a dict (values as written in TOML).

    Raises:
        UserError: one line naming the first bad field.
    """
    if not isinstance(raw, dict):
        raise UserError(f"a scenario is a table of fields, got {type(raw).__name__}")
    try:
        return Scenario.model_validate(raw)
    except ValidationError as err:
        raise UserError(format_validation_error(err)) from None


def read_toml(path: str | Path) -> tuple[dict[str, Any], str]:
    """Read a scenario file's TOML into a dict, with the file's text.

    Raises:
        UserError: no such file, not UTF-8, empty, or not valid TOML (the message gives the line).
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory, not a scenario file") from None
    except OSError as err:
        raise UserError(f"{path}: cannot read ({err.strerror})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{path}: not a text file (scenario files are UTF-8 TOML)") from None
    if not text.strip():
        raise UserError(f"{path}: the file is empty; see examples/quickstart.toml for a scenario")
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise UserError(f"{path}: not valid TOML: {err}") from None
    return raw, text


def load_scenario(source: str | Path | dict[str, Any]) -> LoadedScenario:
    """Load and validate a scenario from a TOML file path or a dict.

    A file without ``name`` takes its stem as the name (``quickstart.toml`` → ``quickstart``).
    The ``[sweep]`` values are checked too (each swept value must give a valid scenario), so a
    scenario that loads can be run. With ``[[parts]]``, each part (the top level with the part's
    tables merged over it, :func:`merge_tables`) is validated on its own; the top level alone
    need not be a complete scenario.

    Raises:
        UserError: one line naming the file or field and the problem.
    """
    if isinstance(source, dict):
        raw, text, origin = dict(source), None, None
    else:
        raw, text = read_toml(source)
        origin = str(source)
        raw.setdefault("name", re.sub(r"[^A-Za-z0-9._-]", "-", Path(source).stem) or "experiment")
    from ccarena.experiment import check_sweep  # experiment imports this module

    parts: list[Part] = []
    try:
        for name, description, merged in split_parts(raw):
            where = f"parts[{len(parts)}] ({name}): " if name else ""
            try:
                scenario = validate_scenario(merged)
                if scenario.sweep is not None:
                    check_sweep(merged, scenario)
            except UserError as err:
                raise UserError(f"{where}{err}") from None
            parts.append(Part(name=name, description=description, raw=merged, scenario=scenario))
    except UserError as err:
        raise UserError(f"{origin}: {err}" if origin else str(err)) from None
    return LoadedScenario(raw=raw, scenario=parts[0].scenario, source=origin, text=text,
                          parts=tuple(parts))
