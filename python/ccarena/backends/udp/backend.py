"""The udp backend (:mod:`ccarena.backends.udp`): the kernel backend's testbed and link emulation
with ccarena's transport on UDP as the TCP flows' generator (:mod:`.endpoint_flows`)."""

from __future__ import annotations

from functools import partial
from types import SimpleNamespace
from typing import Any, Callable

from ccarena.backends import ProgressCallback, RunResult
from ccarena.backends.kernel import backend as kernel
from ccarena.backends.udp import endpoint_flows, quinn_flows
from ccarena.errors import UserError
from ccarena.runspec import RunSpec


class UdpBackend(kernel.KernelBackend):
    """ccarena's transport on real UDP sockets between network namespaces, behind the backend
    protocol (:mod:`ccarena.backends`): runs in real time, one at a time, in the calling process.

    Args:
        emulation: how links are emulated, as the kernel backend's ``[kernel] emulation``:
            ``"auto"``, ``"relay"`` or ``"tc"``.
        udt_impl: who runs UDT flows: ``"ccarena"`` (ccarena's UDT transport, the simulator's
            code, on crates/udp) or ``"libudt"`` (the reference UDT4, :mod:`.libudt`).
        ecn: the kernel backend's ``[kernel] ecn`` (which ECN feedback Linux TCP negotiates):
            applied to the TCP flows Linux runs (``tcp_impl = "linux"``); ccarena's own flows
            choose their ECN by flavor (``ccarena_transport::ecn_choice``), so without Linux TCP
            flows it is ignored.
        quic_impl: who runs QUIC flows (``transport = "quic"``): ``"ccarena"`` (the simulator's
            sans-IO QUIC in ccarena's frames), ``"quinn"`` (ccarena's controller inside the quinn
            QUIC stack) or ``"quinn-native"`` (quinn's own NewReno, CUBIC, BBR;
            :mod:`.quinn_flows`).
        tcp_impl: who runs TCP flows: ``"ccarena"`` (ccarena's transport on UDP) or ``"linux"``
            (this kernel's TCP on the kernel backend's generator, checked as there: QUIC beside
            Linux TCP in one run).

    Raises:
        UserError: an unknown ``udt_impl``, ``quic_impl`` or ``tcp_impl``.
    """

    name = "udp"
    realtime = True

    def __init__(self, emulation: str = "auto", udt_impl: str = "ccarena", ecn: str = "classic",
                 quic_impl: str = "ccarena", tcp_impl: str = "ccarena") -> None:
        # The kernel TCP's option of the shared [kernel] table: only Linux's TCP flows read it.
        super().__init__(emulation, ecn=ecn if tcp_impl == "linux" else "classic")
        for field, value, allowed in (("udt_impl", udt_impl, endpoint_flows.UDT_IMPLEMENTATIONS),
                                      ("quic_impl", quic_impl, endpoint_flows.QUIC_IMPLEMENTATIONS),
                                      ("tcp_impl", tcp_impl, endpoint_flows.TCP_IMPLEMENTATIONS)):
            if value not in allowed:
                raise UserError(f"{field}: '{value}' is not one of {', '.join(allowed)}")
        self.udt_impl, self.quic_impl, self.tcp_impl = udt_impl, quic_impl, tcp_impl
        self._impls = {"udt_impl": udt_impl, "quic_impl": quic_impl, "tcp_impl": tcp_impl}
        self._check_flow = partial(endpoint_flows.check_flow, **self._impls)

    def check(self, spec: RunSpec) -> None:
        """Raise UserError naming what this machine or the transport lacks for ``spec`` (root, a
        program, a flavor, a field the wire fixes, a queue discipline, a mechanism). QUIC flows
        (``transport = "quic"``) run the simulator's QUIC transport in ccarena's frames
        (:mod:`.endpoint_flows`)."""
        engine = _engine()
        if not hasattr(engine, "udp_stream_send"):
            raise UserError("the udp backend needs an engine built with the udp stream mode "
                            "(rebuild: pip install -e .)")
        self._caps = kernel.check(spec, self._caps, self.emulation, tcp_check=self._check_flow)

    def run(self, spec: RunSpec, progress: ProgressCallback | None = None,
            cancel: Callable[[], bool] | None = None) -> RunResult:
        """Run ``spec`` on the kernel backend's testbed with this backend's generator
        (:meth:`run_options`); the record also holds ``{"transport": {"mss_bytes": [...],
        "implementation": [...]}}`` (:meth:`run_record`)."""
        self.check(spec)
        return super().run(spec, progress, cancel)

    def run_options(self) -> dict[str, Any]:
        """ccarena's transport on UDP (or libudt, for UDT flows with ``udt_impl = "libudt"``)
        generates the TCP and UDT flows (:mod:`.endpoint_flows`)."""
        generator = SimpleNamespace(start_flows=partial(endpoint_flows.start_flows, **self._impls),
                                    flow_rows=partial(endpoint_flows.flow_rows, tcp_impl=self.tcp_impl))
        return {"generator": generator, "tcp_check": self._check_flow}

    def run_record(self, spec: RunSpec) -> dict[str, Any]:
        """Per flow, the payload bytes a packet carries on the wire (a QUIC flow's stream bytes;
        None for a flow quinn runs, which sizes its packets by PLPMTUD) and who ran it:
        ``tcp_impl`` (TCP flows: ``"ccarena"`` or ``"linux"``), ``quic_impl`` (QUIC flows),
        ``udt_impl`` (UDT flows) or None (UDP CBR)."""
        libudt = self.udt_impl == "libudt"
        on_quinn = quinn_flows.quinn_flows(spec, self.quic_impl)
        mss = [endpoint_flows.quic_mss_on_the_wire(f) if getattr(f, "quic", None) is not None else
               int(f.mss_bytes) if f.kind == "tcp" and self.tcp_impl == "linux" else
               endpoint_flows.mss_on_the_wire(f) if f.kind == "tcp" else
               (int(f.mss_bytes) if libudt else endpoint_flows.udt_mss_on_the_wire(f)) if f.kind == "udt"
               else None for f in spec.flows]
        impl = [self.udt_impl if f.kind == "udt" else
                self.quic_impl if getattr(f, "quic", None) is not None else
                self.tcp_impl if f.kind == "tcp" else None for f in spec.flows]
        mss = [None if i in on_quinn else m for i, m in enumerate(mss)]
        return {"transport": {"mss_bytes": mss, "implementation": impl}}


def _engine() -> Any:
    import ccarena._engine as engine

    return engine
