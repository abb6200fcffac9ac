"""Loading a scenario: TOML → dict → ``[[parts]]`` merged → validated :class:`Scenario` per part,
with every swept value checked, so a scenario that loads can be run."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ccarena.errors import UserError
from ccarena.scenario.error_lines import format_validation_error
from ccarena.scenario.paths import parse_path, render_path, set_path
from ccarena.scenario.schema import SIMPLE_NAME, Scenario, flow_time_problems, node_problems
from ccarena.topology import KINDS as TOPOLOGY_KINDS


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
        if not isinstance(name, str) or not SIMPLE_NAME.match(name) or "__" in name:
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
        lines = format_validation_error(err).split("\n")
        lines += [line for line in flow_end_problems(raw) if line not in lines]
        raise UserError(lines[0], lines[1:]) from None


def flow_end_problems(raw: dict[str, Any]) -> list[str]:
    """The scenario's checks across tables, run on their own when some field failed (the
    scenario's own check runs only once every field is valid, and a file with a misspelt flavor
    and an unknown host should list both at once), worded as that check words them: flows
    starting or stopping past the end of the run (where the times and the duration parse), and
    flows whose ``from``/``to`` are not hosts of the topology
    (:func:`ccarena.scenario.schema.node_problems`; not when the topology table is itself
    invalid: its nodes are then unknown)."""
    flows = raw.get("flows")
    if not isinstance(flows, list):
        return []
    flows = [f if isinstance(f, dict) else {} for f in flows]
    return _node_problems(raw.get("topology"), flows) + _time_problems(raw.get("duration"), flows)


def _time_problems(duration: Any, flows: list[dict[str, Any]]) -> list[str]:
    from pydantic import TypeAdapter

    from ccarena.quantities import TimeNs

    def parsed(value: Any) -> int | None:
        try:
            return int(TypeAdapter(TimeNs).validate_python(value))
        except (ValidationError, UserError, ValueError, TypeError):
            return None

    duration_ns = parsed(duration) if duration is not None else None
    if duration_ns is None or duration_ns <= 0:
        return []
    lines = []
    for i, flow in enumerate(flows):
        start_ns = parsed(flow.get("start", "0s"))
        stop_ns = parsed(flow["stop"]) if "stop" in flow else None
        if start_ns is None or ("stop" in flow and stop_ns is None):
            continue
        lines += [f"{p.field}: {p.message}"
                  for p in flow_time_problems(i, start_ns, stop_ns, duration_ns)]
    return lines


def _node_problems(topology: Any, flows: list[dict[str, Any]]) -> list[str]:
    if not isinstance(topology, dict):
        return []
    model = TOPOLOGY_KINDS.get(topology.get("kind")) if isinstance(topology.get("kind"), str) else None
    if model is None:
        return []
    try:
        built = model.model_validate(topology)
    except (ValidationError, UserError, ValueError):
        return []
    ends = [(i, f.get("from"), f.get("to")) for i, f in enumerate(flows)]
    try:
        return [f"{p.field}: {p.message}" for p in node_problems(built, ends)]
    except (UserError, ValueError, OSError):  # a graph file that cannot be read is reported elsewhere
        return []


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
    except RecursionError:
        raise UserError(f"{path}: tables or arrays nested too deeply to read; a scenario needs "
                        "only a few levels") from None
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
    parts: list[Part] = []
    try:
        problems: list[str] = []  # of every part, not only the first part that fails
        for i, (name, description, merged) in enumerate(split_parts(raw)):
            if origin is not None:
                merged = with_absolute_files(merged, Path(origin).parent)
            where = f"parts[{i}] ({name}): " if name else ""
            try:
                scenario = validate_scenario(merged)
                if scenario.sweep is not None:
                    check_sweep(merged, scenario)
            except UserError as err:
                problems += err.prefixed(where).problems
                continue
            parts.append(Part(name=name, description=description, raw=merged, scenario=scenario))
        if problems:
            raise UserError(problems[0], list(dict.fromkeys(problems[1:])))
    except UserError as err:
        raise (err.prefixed(f"{origin}: ") if origin else err) from None
    return LoadedScenario(raw=raw, scenario=parts[0].scenario, source=origin, text=text,
                          parts=tuple(parts))


def with_engine_threads(loaded: LoadedScenario, threads: int) -> LoadedScenario:
    """``loaded`` with ``[engine] threads = threads`` in every part (``--threads``), in what was
    written as in what was validated (a sweep point validates the part's written form again)."""
    def part_with(part: Part) -> Part:
        engine = {**(part.raw.get("engine") or {}), "threads": threads}
        scenario = part.scenario.model_copy(update={"engine": part.scenario.engine.model_copy(update={"threads": threads})})
        return replace(part, raw={**part.raw, "engine": engine}, scenario=scenario)

    parts = tuple(part_with(p) for p in loaded.parts)
    return replace(loaded, parts=parts, scenario=parts[0].scenario)


def select_parts(loaded: LoadedScenario, names: list[str]) -> LoadedScenario:
    """``loaded`` with only the ``[[parts]]`` named in ``names`` (in the file's order), e.g. to run
    a study's simulated part without the real-socket one.

    Raises:
        UserError: a name is not one of the file's parts (or the file has none).
    """
    known = [p.name for p in loaded.parts]
    for name in names:
        if name not in known or not name:
            listed = ", ".join(n for n in known if n) or "none (the file has no [[parts]])"
            raise UserError(f"--part: no part '{name}'; parts: {listed}")
    kept = tuple(p for p in loaded.parts if p.name in names)
    return replace(loaded, parts=kept, scenario=kept[0].scenario)


def with_absolute_files(raw: dict[str, Any], base: Path) -> dict[str, Any]:
    """``raw`` with a relative ``topology.file`` (a graph file; also its swept values) and link
    trace files (``rate = { trace = "…" }``) made relative to ``base``, the scenario file's
    directory, so the part runs from any directory."""
    def absolute(value: Any) -> Any:
        return str(base / value) if isinstance(value, str) and not Path(value).is_absolute() else value

    out = dict(raw)
    topology = out.get("topology")
    if isinstance(topology, dict) and "file" in topology:
        out["topology"] = dict(topology, file=absolute(topology["file"]))
    if isinstance(out.get("topology"), dict):
        out["topology"] = _absolute_traces(out["topology"], absolute)
    sweep = out.get("sweep")
    if isinstance(sweep, dict):
        sweep = _absolute_traces(dict(sweep), absolute)
        if isinstance(sweep.get("topology.file"), list):
            sweep["topology.file"] = [absolute(v) for v in sweep["topology.file"]]
        nested = sweep.get("topology")
        if isinstance(nested, dict) and isinstance(nested.get("file"), list):
            sweep["topology"] = dict(nested, file=[absolute(v) for v in nested["file"]])
        out["sweep"] = sweep
    return out


def _absolute_traces(node: Any, absolute: Any) -> Any:
    """``node`` with every link trace file (``rate = { trace = "…" }``, also in swept values)
    passed through ``absolute``."""
    if isinstance(node, list):
        return [_absolute_traces(v, absolute) for v in node]
    if not isinstance(node, dict):
        return node
    if isinstance(node.get("trace"), str) and set(node) <= {"trace", "loop"}:
        return dict(node, trace=absolute(node["trace"]))
    return {k: _absolute_traces(v, absolute) for k, v in node.items()}


def without_sweep(raw: dict[str, Any]) -> dict[str, Any]:
    """A copy of the raw scenario dict without its ``[sweep]`` table (one point's scenario)."""
    return {k: v for k, v in raw.items() if k != "sweep"}


def check_sweep(raw: dict[str, Any], scenario: Scenario) -> None:
    """Check that each swept value, set alone into the scenario, gives a valid scenario.

    Raises:
        UserError: ``sweep."<path>"[i]: <problem>`` for the first bad value.
    """
    assert scenario.sweep is not None
    base = without_sweep(raw)
    problems = []
    for path, values in scenario.sweep.parameters.items():
        seen: set[str] = set()  # a bad path fails every value alike: said once
        for i, value in enumerate(values):
            candidate = set_path(base, path, value)
            try:
                validate_scenario(candidate)
            except UserError as err:
                message = err.problems[0]
                rendered = render_path(parse_path(path))
                if message.startswith(rendered + ": "):
                    message = message[len(rendered) + 2:]
                if message not in seen:
                    seen.add(message)
                    problems.append(f'sweep."{path}"[{i}]: {message}')
    if problems:  # every bad value, not only the first
        raise UserError(problems[0], problems[1:])
