"""``[kernel] ecn`` and L4S flavors on the kernel backend, without root: the ``net.ipv4.tcp_ecn``
probe (a fake sysctl writer stands for the kernel), the value each host gets, the preflight's
one-line refusals (Accurate ECN on a kernel without it, ``off`` with ECN flows, an L4S flavor the
kernel lacks), the doctor's rows and the option's way into the backends and the run record."""

from __future__ import annotations

from typing import Any

import pytest
from ccarena.backends import get_backend
from ccarena.backends.kernel import doctor, ecn_modes, preflight
from ccarena.backends.kernel.capabilities import TOOLS, Capabilities
from ccarena.backends.kernel.ecn_modes import EcnModes, host_tcp_ecn, probe_ecn_modes
from ccarena.backends.kernel.emulation_choice import choose
from ccarena.backends.kernel.names import RunNames
from ccarena.backends.kernel.netns import _sysctls, plan_network
from ccarena.backends.kernel.options import KernelOptions
from ccarena.errors import UserError
from ccarena.experiment import resolve_run
from ccarena.runspec import RunSpec
from ccarena.scenario import load_scenario, validate_scenario

LINUX_6_18 = EcnModes((0, 1, 2))
"""This machine's kernel: RFC 3168 ECN only (KERNEL.md)."""
WITH_ACCECN = EcnModes((0, 1, 2, 3, 4, 5))
"""A kernel that negotiates Accurate ECN (Linux's tcp_ecn 3–5)."""

DUMBBELL = {
    "name": "ecn", "duration": "2s",
    "topology": {"kind": "dumbbell", "pairs": 2,
                 "bottleneck": {"rate": "10Mbps", "delay": "10ms"},
                 "access": {"rate": "100Mbps", "delay": "0ms"}},
    "flows": [{"from": "left0", "to": "right0", "flavor": "cubic", "ecn": True},
              {"from": "left1", "to": "right1", "flavor": "cubic"}],
}


def spec(**flow0: Any) -> RunSpec:
    raw = {**DUMBBELL, "flows": [{**DUMBBELL["flows"][0], **flow0}, DUMBBELL["flows"][1]]}
    return resolve_run(validate_scenario(raw), seed=1).spec


def caps(ecn: EcnModes | None, controls: tuple[str, ...] = ("reno", "cubic", "bbr"),
         probe_error: str | None = None) -> Capabilities:
    return Capabilities(privileged=True, tools={name: f"/usr/bin/{name}" for name in TOOLS},
                        congestion_controls=list(controls), netns=True, relay=True, ecn=ecn,
                        probe_error=probe_error)


def check(s: RunSpec, c: Capabilities, ecn: str = "classic") -> None:
    preflight.check_spec(s, c, choose(s, c, "relay"), ecn=ecn)


# --- the probe -------------------------------------------------------------------------------------

def fake_kernel(accepts: set[int]) -> tuple[list[int], Any]:
    """A sysctl writer that takes only ``accepts``, and the list of what was written."""
    written: list[int] = []

    def write(value: int) -> bool:
        written.append(value)
        return value in accepts

    return written, write


def test_the_probe_tries_every_value_and_keeps_what_the_kernel_took() -> None:
    written, write = fake_kernel({0, 1, 2})
    found = probe_ecn_modes(write)
    assert written == [0, 1, 2, 3, 4, 5]
    assert found == LINUX_6_18 and found.classic and not found.accecn
    assert found.accepted_text() == "0–2"


def test_accurate_ecn_needs_both_values_the_hosts_are_given() -> None:
    assert probe_ecn_modes(fake_kernel({0, 1, 2, 3, 4, 5})[1]).accecn
    # A host that requests AccECN gets 3, every other host 5 (host_tcp_ecn): both must be taken.
    assert not probe_ecn_modes(fake_kernel({0, 1, 2, 3})[1]).accecn
    assert not probe_ecn_modes(fake_kernel({0, 1, 2, 5})[1]).accecn
    only_off = probe_ecn_modes(fake_kernel({0})[1])
    assert not only_off.classic and only_off.accepted_text() == "0"
    assert probe_ecn_modes(fake_kernel({0, 2, 5})[1]).accepted_text() == "0, 2, 5"
    assert probe_ecn_modes(fake_kernel(set())[1]).accepted_text() == "none"


# --- what each host gets ---------------------------------------------------------------------------

def test_each_mode_gives_senders_and_other_hosts_their_tcp_ecn() -> None:
    assert host_tcp_ecn("classic", True) == 1 and host_tcp_ecn("classic", False) is None
    assert host_tcp_ecn("accecn", True) == 3 and host_tcp_ecn("accecn", False) == 5
    assert host_tcp_ecn("off", False) == 0
    with pytest.raises(ValueError, match="unknown kernel.ecn mode 'l4s'"):
        host_tcp_ecn("l4s", True)


def test_the_network_plan_sets_hosts_and_leaves_routers_alone() -> None:
    s = spec()
    emu = choose(s, caps(LINUX_6_18), "relay")
    names = RunNames("tx")
    host = {n.name: names.node_ns(n.name) for n in s.nodes}
    # classic is what the backend always did: only the ECN sender asks, with RFC 3168's value.
    assert plan_network(s, names, emu).tcp_ecn == {host["left0"]: 1}
    assert plan_network(s, names, emu, ecn="classic").tcp_ecn == {host["left0"]: 1}
    accecn = plan_network(s, names, emu, ecn="accecn").tcp_ecn
    assert accecn == {host["left0"]: 3, host["left1"]: 5, host["right0"]: 5, host["right1"]: 5}
    off = plan_network(spec(ecn=False), names, emu, ecn="off").tcp_ecn
    assert off == {host[h]: 0 for h in ("left0", "left1", "right0", "right1")}
    assert not any(ns in accecn or ns in off for ns in (host["r0"], host["r1"]))


def test_the_sysctl_script_writes_tcp_ecn_only_when_given() -> None:
    assert "echo 3 > /proc/sys/net/ipv4/tcp_ecn" in _sysctls(False, 7, 3)
    assert "echo 0 > /proc/sys/net/ipv4/tcp_ecn" in _sysctls(False, 7, 0)
    assert "tcp_ecn" not in _sysctls(False, 7, None)


# --- the preflight ---------------------------------------------------------------------------------

def test_accecn_on_a_kernel_without_it_is_one_line_naming_the_field_and_the_fix() -> None:
    with pytest.raises(UserError) as err:
        check(spec(), caps(LINUX_6_18), "accecn")
    assert str(err.value) == ('kernel.ecn: "accecn" needs a kernel that negotiates Accurate ECN '
                              "(RFC 9768) and this one does not (net.ipv4.tcp_ecn accepts only 0–2 "
                              'here, not 3 and 5); set kernel.ecn = "classic" or use --backend sim')
    check(spec(), caps(WITH_ACCECN), "accecn")  # a kernel that has it runs it
    check(spec(), caps(LINUX_6_18), "classic")


def test_accecn_is_refused_when_the_kernel_could_not_be_probed() -> None:
    with pytest.raises(UserError, match=r"^kernel.ecn: .*tcp_ecn could not be probed: boom\)"):
        check(spec(), caps(None, probe_error="boom"), "accecn")


def test_off_refuses_a_flow_that_asks_for_ecn() -> None:
    with pytest.raises(UserError) as err:
        check(spec(), caps(LINUX_6_18), "off")
    assert str(err.value) == ('flows[0].ecn: kernel.ecn = "off" turns ECN off on every host; '
                              'remove ecn = true or set kernel.ecn = "classic"')
    check(spec(ecn=False), caps(LINUX_6_18), "off")


def test_an_unknown_mode_passed_to_the_backend_is_one_line() -> None:
    with pytest.raises(UserError, match=r"^kernel.ecn: unknown mode 'l4s' \(choose off, classic, accecn\)$"):
        check(spec(), caps(LINUX_6_18), "l4s")


def with_flavor(s: RunSpec, flavor: str) -> RunSpec:
    return s.model_copy(update={"flows": [s.flows[0].model_copy(update={"flavor": flavor}), *s.flows[1:]]})


@pytest.fixture
def catalogue_with_prague(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine's catalogue with ``prague`` marked L4S (as crates/cc's registry declares it)."""
    import ccarena.flavors

    real = ccarena.flavors.tcp_flavors()
    fake = {**real, "prague": {"name": "prague", "transport": "tcp", "params": [], "l4s": True}}
    monkeypatch.setattr(ccarena.flavors, "tcp_flavors", lambda: fake)


@pytest.mark.usefixtures("catalogue_with_prague")
def test_an_l4s_flavor_the_kernel_lacks_is_one_plain_line() -> None:
    with pytest.raises(UserError) as err:
        check(with_flavor(spec(), "prague"), caps(LINUX_6_18))
    assert str(err.value) == ("flows[0].flavor: this kernel has no 'prague' (an L4S flavor: Linux's "
                              "TCP Prague is out of tree); run it with --backend sim or --backend udp")
    # A flavor that is not L4S keeps the general message.
    with pytest.raises(UserError, match=r"^flows\[0\].flavor: flavor 'vegas' is not available in this kernel"):
        check(with_flavor(spec(), "vegas"), caps(LINUX_6_18))
    # A kernel with Prague loaded (an out-of-tree module) offers it like any other controller.
    check(with_flavor(spec(), "prague"), caps(WITH_ACCECN, controls=("reno", "cubic", "prague")))


def test_the_udp_backends_own_tcp_is_not_checked_against_kernel_ecn() -> None:
    s = spec()
    c = caps(LINUX_6_18)
    preflight.check_spec(s, c, choose(s, c, "relay"), tcp_check=lambda where, flow: None, ecn="accecn")


# --- doctor ----------------------------------------------------------------------------------------

def test_doctor_rows_say_which_ecn_modes_the_kernel_has() -> None:
    rows = {item: (status, detail) for item, status, detail in doctor.ecn_rows(caps(LINUX_6_18))}
    assert rows["ECN (RFC 3168)"] == ("ok", 'kernel.ecn = "classic"; net.ipv4.tcp_ecn accepts 0–2')
    assert rows["Accurate ECN (RFC 9768)"] == (
        "no", 'kernel.ecn = "accecn" is refused: net.ipv4.tcp_ecn accepts 0–2, not 3 and 5')
    assert rows["TCP Prague (L4S)"][0] == "no"
    rows = {item: status for item, status, _ in doctor.ecn_rows(caps(WITH_ACCECN, ("cubic", "prague")))}
    assert rows == {"ECN (RFC 3168)": "ok", "Accurate ECN (RFC 9768)": "ok", "TCP Prague (L4S)": "ok"}
    rows = {item: status for item, status, _ in doctor.ecn_rows(caps(None))}  # not probed
    assert rows["ECN (RFC 3168)"] == rows["Accurate ECN (RFC 9768)"] == "–"


# --- the option ------------------------------------------------------------------------------------

def test_the_option_reaches_the_backends_and_records_keep_their_shape() -> None:
    assert KernelOptions().ecn == "classic"
    # Records store the table: one that leaves ecn at its default is what it was before.
    assert KernelOptions().model_dump() == {"emulation": "auto", "udt_impl": "ccarena"}
    chosen = KernelOptions(ecn="accecn").model_dump()
    assert chosen["ecn"] == "accecn"
    assert get_backend("kernel", chosen).ecn == "accecn"
    assert get_backend("kernel", KernelOptions().model_dump()).ecn == "classic"
    assert get_backend("udp", chosen).emulation == "auto"  # the udp backend ignores it


def test_an_unknown_ecn_mode_in_the_scenario_is_one_line() -> None:
    with pytest.raises(UserError) as err:
        load_scenario({**DUMBBELL, "kernel": {"ecn": "l4s"}})
    assert "kernel.ecn" in str(err.value) and "accecn" in str(err.value)
    assert len(err.value.problems) == 1
    assert ecn_modes.KERNEL_ECN_MODES == ("off", "classic", "accecn")
