"""The udp backend: scenario TCP flows run as ccarena's own transport (crates/transport, every TCP
flavor of the catalogue) over real UDP sockets, between the kernel backend's network namespaces
and over its emulated links.

Only the flow generator differs from :mod:`ccarena.backends.kernel`: its testbed (namespaces,
veths, routes), link emulation (ccarena's relay, or tc) and queue/link tables are reused as they
are. A TCP flow's two ends are :mod:`.endpoint` processes (``ccarena._engine.udp_stream_send``
and ``UdpSink``, crates/udp's stream mode); a UDP CBR flow runs on the kernel backend's own
generator; a UDT flow runs the reference UDT4 (libudt) through ``tools/udt-peer`` (:mod:`.libudt`).
Modules: :mod:`.endpoint_flows` (preflight of TCP flows, starting the endpoints, the flow tables),
:mod:`.endpoint` (the process run in a namespace), :mod:`.backend` (:class:`UdpBackend`),
:mod:`.libudt` (the UDT4 peer: build, command lines, flow row). This package declares the
backend (:data:`DECLARATION`, :mod:`ccarena.backends.declaration`).
"""

from ccarena.backends.declaration import BackendDeclaration, Comparison
from ccarena.backends.kernel import NAMESPACE_TESTBED_NEEDS
from ccarena.backends.kernel.options import KernelOptions

DECLARATION = BackendDeclaration(
    name="udp",
    implementation="ccarena.backends.udp.backend:UdpBackend",
    options_table="kernel",  # it runs on the kernel backend's testbed and takes its options
    options_model=KernelOptions,
    needs=NAMESPACE_TESTBED_NEEDS,
    comparison=Comparison(
        title="Simulator vs ccarena's transport on UDP sockets, side by side",
        intro="Each run on ccarena's simulator and with the same sans-IO transport and congestion "
              "controller on real UDP sockets between network namespaces, over the same emulated "
              "links (docs/udp-backend.md), with the same resolved spec and seed. Differences are "
              "udp − sim.",
        slug="udp"),
)
"""The udp backend, as the layers outside :mod:`ccarena.backends` know it."""
