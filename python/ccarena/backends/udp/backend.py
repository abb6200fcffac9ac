"""The udp backend (:mod:`ccarena.backends.udp`): the kernel backend's testbed and link emulation
with ccarena's transport on UDP as the TCP flows' generator (:mod:`.traffic`)."""

from __future__ import annotations

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
    """

    name = "udp"
    realtime = True

    def check(self, spec: RunSpec) -> None:
        """Raise UserError naming what this machine or the transport lacks for ``spec`` (root, a
        program, a flavor, a field the wire fixes, a queue discipline, a mechanism)."""
        for i, flow in enumerate(spec.flows):
            if flow.kind not in ("tcp", "udp_cbr"):
                raise UserError(f"flows[{i}].flavor: {flow.kind} flows are not available on the udp "
                                "backend yet (TCP flavors and udp-cbr are); use --backend sim")
        engine = _engine()
        if not hasattr(engine, "udp_stream_send"):
            raise UserError("the udp backend needs an engine built with the udp stream mode "
                            "(rebuild: pip install -e .)")
        self._caps = kernel.check(spec, self._caps, self.emulation, tcp_check=traffic.check_tcp_flow)

    def run(self, spec: RunSpec, progress: ProgressCallback | None = None,
            cancel: Callable[[], bool] | None = None) -> RunResult:
        """Run ``spec`` on the kernel backend's testbed with this backend's generator
        (:meth:`run_options`); the record also holds ``{"transport": {"mss_bytes": [...]}}``."""
        self.check(spec)
        return super().run(spec, progress, cancel)

    def run_options(self) -> dict[str, Any]:
        """ccarena's transport on UDP generates the TCP flows (:mod:`.traffic`)."""
        return {"generator": traffic, "tcp_check": traffic.check_tcp_flow}

    def run_record(self, spec: RunSpec) -> dict[str, Any]:
        """The payload bytes a udp packet carries per TCP flow (the wire's MSS)."""
        mss = [traffic.mss_on_the_wire(f) if f.kind == "tcp" else None for f in spec.flows]
        return {"transport": {"mss_bytes": mss}}


def _engine() -> Any:
    import ccarena._engine as engine

    return engine
