"""The scenario's ``[kernel]`` table configures both backends on the namespace testbed: the
kernel backend and the udp backend (which also reads its own ``udt_impl`` and ``quic_impl``)."""

from __future__ import annotations

import pytest
from ccarena.backends import get_backend, options_table
from ccarena.errors import UserError
from ccarena.experiment import apply_backends, expand
from ccarena.scenario import load_scenario

SCENARIO = {"name": "opts", "duration": "1s",
            "topology": {"kind": "single_link", "link": {"rate": "10Mbps", "delay": "5ms"}},
            "flows": [{"from": "a", "to": "b", "flavor": "udt"}],
            "kernel": {"emulation": "relay", "udt_impl": "libudt"}}


def test_the_kernel_table_reaches_the_udp_backend():
    plan = apply_backends(expand(load_scenario(SCENARIO)), ["udp"])[0]
    assert options_table("udp") == "kernel" and options_table("sim") == "engine"
    options = getattr(plan.scenario, options_table(plan.backend)).model_dump()
    udp = get_backend("udp", options)
    assert udp.udt_impl == "libudt" and udp.emulation == "relay"
    assert get_backend("kernel", options).emulation == "relay"  # udt_impl is not the kernel's


def test_an_unknown_udt_implementation_is_one_line():
    bad = {**SCENARIO, "kernel": {"udt_impl": "udt5"}}
    with pytest.raises(UserError) as err:
        load_scenario(bad)
    assert "kernel.udt_impl" in str(err.value) and "libudt" in str(err.value)
    assert len(err.value.problems) == 1


def test_quic_impl_reaches_the_udp_backend_and_an_unknown_one_is_one_line():
    raw = {**SCENARIO, "flows": [{"from": "a", "to": "b", "flavor": "cubic", "transport": "quic"}],
           "kernel": {"emulation": "relay", "quic_impl": "quinn-native"}}
    plan = apply_backends(expand(load_scenario(raw)), ["udp"])[0]
    options = getattr(plan.scenario, options_table(plan.backend)).model_dump()
    assert options["quic_impl"] == "quinn-native"
    assert get_backend("udp", options).quic_impl == "quinn-native"
    default = apply_backends(expand(load_scenario(SCENARIO)), ["udp"])[0].scenario.kernel.model_dump()
    assert "quic_impl" not in default  # the default: records stay as they were
    with pytest.raises(UserError) as err:
        load_scenario({**raw, "kernel": {"quic_impl": "msquic"}})
    assert "kernel.quic_impl" in str(err.value) and "quinn-native" in str(err.value)
