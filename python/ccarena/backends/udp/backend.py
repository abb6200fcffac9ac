"""The udp backend (:mod:`ccarena.backends.udp`): the kernel backend's testbed and link emulation
with ccarena's transport on UDP as the TCP flows' generator (:mod:`.traffic`)."""

from __future__ import annotations

from functools import partial
from types import SimpleNamespace
from typing import Any, Callable

from ccarena.backends import ProgressCallback, RunResult
from ccarena.backends.kernel import backend as kernel
from ccarena.backends.udp import traffic
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

    Raises:
        UserError: an unknown ``udt_impl``.
    """

    name = "udp"
    realtime = True

    def __init__(self, emulation: str = "auto", udt_impl: str = "ccarena") -> None:
        super().__init__(emulation)
        if udt_impl not in traffic.UDT_IMPLEMENTATIONS:
            raise UserError(f"udt_impl: '{udt_impl}' is not one of "
                            f"{', '.join(traffic.UDT_IMPLEMENTATIONS)}")
        self.udt_impl = udt_impl
        self._check_flow = partial(traffic.check_flow, udt_impl=udt_impl)

    def check(self, spec: RunSpec) -> None:
        """Raise UserError naming what this machine or the transport lacks for ``spec`` (root, a
        program, a flavor, a field the wire fixes, a queue discipline, a mechanism)."""
        engine = _engine()
        if not hasattr(engine, "udp_stream_send"):
            raise UserError("the udp backend needs an engine built with the udp stream mode "
                            "(rebuild: pip install -e .)")
        self._caps = kernel.check(spec, self._caps, self.emulation, tcp_check=self._check_flow)

    def run(self, spec: RunSpec, progress: ProgressCallback | None = None,
            cancel: Callable[[], bool] | None = None) -> RunResult:
        """Run ``spec`` (:func:`ccarena.backends.kernel.backend.run_kernel` with this backend's
        generator); the record holds ``{"emulation": ..., "transport": {"mss_bytes": [...],
        "implementation": [...]}}``, per flow: ``"ccarena"`` (TCP flows), ``udt_impl`` (UDT flows) or
        None (UDP CBR)."""
        self.check(spec)

        def tick(now_ns: int, duration_ns: int) -> None:
            if progress is not None:
                progress(now_ns, duration_ns)
            if cancel is not None and cancel():
                raise KeyboardInterrupt("cancelled")

        record: dict[str, Any] = {}
        generator = SimpleNamespace(start_flows=partial(traffic.start_flows, udt_impl=self.udt_impl),
                                    flow_rows=traffic.flow_rows)
        tables = kernel.run_kernel(spec, tick, mode=self.emulation, emulation=record,
                                   generator=generator, tcp_check=self._check_flow)
        libudt = self.udt_impl == "libudt"
        mss = [traffic.mss_on_the_wire(f) if f.kind == "tcp" else
               (int(f.mss_bytes) if libudt else traffic.udt_mss_on_the_wire(f)) if f.kind == "udt"
               else None for f in spec.flows]
        impl = [self.udt_impl if f.kind == "udt" else "ccarena" if f.kind == "tcp" else None
                for f in spec.flows]
        transport = {"mss_bytes": mss, "implementation": impl}
        return RunResult(tables=tables, record={"emulation": record, "transport": transport})


def _engine() -> Any:
    import ccarena._engine as engine

    return engine
