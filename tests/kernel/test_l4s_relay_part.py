"""examples/l4s.toml's ``relay`` part on real sockets (issue 31, item 6): ccarena's Prague and BBR
over QUIC on the udp backend and this kernel's CUBIC with classic ECN (``tcp_impl = "linux"``,
``ecn = true`` on a Linux TCP flow of the udp backend) through the relay's DualPI2.

What it shows, against the simulated twin of the same part:
- Prague's packets carry ECT(1) and are marked in the L4S queue: hundreds of CE marks fed back;
- the Linux flow negotiated ECN: the bottleneck marked more packets than Prague reports (classic
  ECT(0) packets marked by the coupled probability instead of dropped), as the simulator's
  Classic queue marks CUBIC's;
- BBRv1, which ignores ECN, takes most of the link in both.

Real time on a shared 2-core machine (5 s of traffic): a measurement that misses is retried once.
"""

from __future__ import annotations

from pathlib import Path

from kernelutil import requires_root

pytestmark = requires_root

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "l4s.toml"
CLASSIC_MARKS = 5
"""Bottleneck marks beyond Prague's CE count that show Linux's flow negotiated ECN (measured: 15
on the relay, 31 on the simulator)."""


def _tables(backend: str) -> dict:
    import tomllib

    from ccarena.backends import get_backend
    from ccarena.experiment import apply_backends, expand
    from ccarena.scenario import load_scenario

    raw = tomllib.loads(EXAMPLE.read_text())
    (part,) = [p for p in raw.pop("parts") if p["name"] == "relay"]
    raw.update(part, duration="5s")
    kernel = raw.pop("kernel")
    spec = apply_backends(expand(load_scenario(raw))[:1], [backend])[0].resolved.spec
    options = kernel if backend == "udp" else {}
    return get_backend(backend, options).run(spec).tables


def test_prague_bbr_and_linux_cubic_through_the_relays_dualpi2(tag: str) -> None:
    sim = _tables("sim")

    def measure() -> list[str]:
        real = _tables("udp")
        failures = []
        for name, tables in (("sim", sim), ("udp", real)):
            flows = tables["flows"].set_index("name")
            links = tables["links"].set_index("name")
            marked = float(links.loc["r0->r1", "packets_marked"])
            prague_ce = float(flows.loc["prague", "ce_packets"])
            goodput = flows["goodput_bps"] if "goodput_bps" in flows else flows["bytes_delivered"]
            print(f"{name}: kinds {list(flows['kind'])}, Prague CE {prague_ce:.0f}, bottleneck marks "
                  f"{marked:.0f}, delivered {dict(goodput.round())}")
            if not prague_ce > 100:
                failures.append(f"{name}: Prague got {prague_ce} CE marks")
            # Prague's marked packets still in flight at the end (a few) are not in its count: a
            # margin of CLASSIC_MARKS says the Classic queue marked Linux's ECT(0) packets.
            if not marked - prague_ce >= CLASSIC_MARKS:
                failures.append(f"{name}: no classic packet marked ({marked} marks, {prague_ce} Prague's)")
            if not goodput["bbr"] > goodput["prague"] + goodput["linux-cubic"]:
                failures.append(f"{name}: BBR did not take most of the link: {dict(goodput)}")
        assert list(real["flows"]["kind"]) == ["quic", "quic", "tcp"]
        return failures

    failures = measure()
    if failures:
        print("retrying once:", failures)
        failures = measure()
    assert not failures, failures
