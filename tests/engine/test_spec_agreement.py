"""The run spec is defined twice, once on each side of the engine boundary: pydantic models in
python/ccarena/runspec.py and serde structs in crates/sim/src/spec.rs. This test keeps them in
agreement: every spec the front end makes from the bundled examples, and one that sets every
optional field, is parsed by the engine and written back with every field it knows
(``_engine.spec_roundtrip``). Each object must have exactly the fields of its Python model (a field
added on one side only fails here), and the values must survive the round trip."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ccarena import _engine
from ccarena.experiment import expand
from ccarena.runspec import RunSpec
from ccarena.scenario import load_scenario
from pydantic import BaseModel

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

EVERY_OPTION = {
    "name": "every-option", "duration": "4s",
    "topology": {"kind": "dumbbell", "pairs": 4,
                 "bottleneck": {"rate": "10Mbps", "delay": "10ms", "duplicate": "1%", "reorder": "5%",
                                "reorder_delay": "3ms",
                                "queue": {"discipline": "red", "limit": "40pkt", "ecn": True,
                                          "wait": True}},
                 "access": {"rate": "100Mbps", "delay": "1ms",
                            "queue": {"limit": "300KB", "ecn_threshold": "30KB"}}},
    "flows": [{"from": "left0", "to": "right0", "flavor": "dctcp", "bytes": "1MB",
               "rwnd": "200KB", "sndbuf": "300KB", "stop": "3s"},
              {"from": "left1", "to": "right1", "flavor": "udt"},
              {"from": "left2", "to": "right2", "flavor": "udp-cbr", "rate": "1Mbps"},
              {"from": "left3", "to": "right3", "flavor": "reno", "subflows": 3, "coupling": "olia",
               "scheduler": "roundrobin", "join_delay": "5ms", "source_ports": [40001, 40002, 40003]}],
    "events": [{"at": "1s", "link": "bottleneck", "increase": {"limit": "40pkt", "rate": "1Mbps",
                                                                 "delay": "1ms", "loss": "1%"}},
               {"at": "2s", "link": "access", "set": {"limit": "400KB"}},
               {"at": "3s", "link": "r0-r1", "up": False},
               {"at": "3.5s", "link": "r0->r1", "up": True, "set": {"rate": "10Mbps"}}],
    "routing": {"mode": "spray", "static": [{"node": "r0", "dst": "right0", "via": "r1"}]},
    "output": {"pcap": ["r0->r1", "left0"], "pcap_max_bytes": "10MB"},
}


def _specs() -> list[tuple[str, RunSpec]]:
    out = [("every-option", expand(load_scenario(EVERY_OPTION))[0].resolved.spec)]
    for path in sorted(EXAMPLES.glob("**/*.toml")):
        seen: set[str] = set()
        for plan in expand(load_scenario(path)):
            if plan.part not in seen:  # one run per part: the parts differ in structure
                seen.add(plan.part)
                out.append((f"{path.name}:{plan.run_id}", plan.resolved.spec))
    return out


SPECS = _specs()


def _same_fields(model: BaseModel, rust: Any, where: str) -> None:
    """``rust`` (the engine's JSON for ``model``) has exactly the model's fields, recursively."""
    assert isinstance(rust, dict), f"{where}: the engine wrote {type(rust).__name__}"
    fields = {(f.alias or name): name for name, f in type(model).model_fields.items()}
    python_only = sorted(set(fields) - set(rust))
    rust_only = sorted(set(rust) - set(fields))
    assert not python_only, f"{where}: only runspec.py has {python_only}"
    assert not rust_only, f"{where}: only crates/sim/src/spec.rs has {rust_only}"
    for key, name in fields.items():
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            _same_fields(value, rust[key], f"{where}.{key}")
        elif isinstance(value, tuple):
            for i, item in enumerate(value):
                if isinstance(item, BaseModel):
                    _same_fields(item, rust[key][i], f"{where}.{key}[{i}]")


def test_the_specs_cover_every_model() -> None:
    kinds = {type(f).__name__ for _, s in SPECS for f in s.flows}
    assert kinds == {"TcpFlowSpec", "CbrFlowSpec", "UdtFlowSpec"}
    assert any(link.queue.red is not None for _, s in SPECS for link in s.links)
    assert any(s.events for _, s in SPECS)
    assert any(e.set.up is False for _, s in SPECS for e in s.events)
    assert any(s.routes for _, s in SPECS), "a static route override"
    assert all(s.routing is not None for _, s in SPECS), "the front end always sends routing"
    assert {s.routing.mode for _, s in SPECS if s.routing} == {"ecmp", "spray"}


@pytest.mark.parametrize("name,spec", SPECS, ids=[name for name, _ in SPECS])
def test_python_and_rust_specs_have_the_same_fields_and_values(name: str, spec: RunSpec) -> None:
    rust = json.loads(_engine.spec_roundtrip(spec.to_json()))
    _same_fields(spec, rust, name)
    assert RunSpec.from_dict(rust) == spec
