"""A link's ``duplicate``, ``reorder`` and ``reorder_delay`` (docs/engine-spec.md): from the scenario
through the run spec to the simulator and to the kernel backend's relay config. A scenario without
them serializes (and hashes) as before they existed."""

from __future__ import annotations

import json

import pytest
from ccarena.backends import get_backend
from ccarena.backends.kernel.emulation_choice import Emulation
from ccarena.backends.kernel.relay_driver import direction_config
from ccarena.experiment import expand
from ccarena.scenario import load_scenario


def _spec(**link):
    raw = {"name": "impaired", "duration": "10s",
           "topology": {"kind": "single_link",
                        "link": {"rate": "20Mbps", "delay": "5ms", "loss": "1%", **link}},
           "flows": [{"from": "a", "to": "b", "flavor": "cubic", "bytes": "2MB"},
                     {"from": "a", "to": "b", "flavor": "reno", "bytes": "2MB"}]}
    return expand(load_scenario(raw))[0].resolved.spec


def test_absent_conditions_leave_the_spec_json_as_before():
    plain = _spec()
    assert all(k not in link for link in json.loads(plain.to_json())["links"]
               for k in ("duplicate", "reorder", "reorder_delay_ns"))
    assert plain.sha256() == _spec(duplicate="0%", reorder="0%").sha256()


def test_conditions_reach_both_directions_the_simulator_and_the_relay():
    spec = _spec(duplicate="2%", reorder="5%", reorder_delay="3ms")
    links = json.loads(spec.to_json())["links"]
    assert [(l["duplicate"], l["reorder"], l["reorder_delay_ns"]) for l in links] == [(0.02, 0.05, 3_000_000)] * 2
    tables = get_backend("sim").run(spec).tables
    flows, out = tables["flows"], tables["links"]
    # Both transfers complete, and the forward link duplicated and reordered some of their packets.
    assert (flows["bytes_delivered"] == 2_000_000).all()
    assert out.loc[0, "packets_duplicated"] > 0 and out.loc[0, "packets_reordered"] > 0
    assert (out["packets_in"] + out["packets_duplicated"] == out["packets_delivered"] + out["packets_dropped_queue"]
            + out["packets_lost_wire"] + out["down_drops_packets"] + out["packets_queued_end"]
            + out["packets_in_flight_end"]).all()
    relay = direction_config(spec, 0, Emulation("relay", "relay", "relay", "relay"), 0)
    assert (relay["duplicate"], relay["reorder"], relay["reorder_delay_ns"]) == (0.02, 0.05, 3_000_000)
    plain = direction_config(_spec(), 0, Emulation("relay", "relay", "relay", "relay"), 0)
    assert not {"duplicate", "reorder", "reorder_delay_ns"} & set(plain)


def test_the_kernel_backend_duplicates_and_reorders_only_with_its_relay():
    from ccarena.backends.kernel.capabilities import Capabilities
    from ccarena.backends.kernel.emulation_choice import choose
    from ccarena.errors import UserError

    def caps(netem: bool, relay: bool = True) -> Capabilities:
        return Capabilities(privileged=True, tools={}, congestion_controls=["cubic"],
                            qdiscs={"netem": netem}, relay=relay)

    impaired = _spec(reorder="5%")
    # netem would be the kernel's choice for a plain lossy, delayed link; the relay is for these.
    assert choose(_spec(), caps(netem=True)).mode == "tc"
    assert choose(impaired, caps(netem=True)).mode == "relay"
    for c, mode in ((caps(netem=True), "tc"), (caps(netem=False, relay=False), "auto")):
        with pytest.raises(UserError, match=r"^kernel.emulation: duplicate and reorder need ccarena's relay"):
            choose(impaired, c, mode)
