"""The udp backend: scenario TCP flows run as ccarena's own transport (crates/transport, every TCP
flavor of the catalogue) over real UDP sockets, between the kernel backend's network namespaces
and over its emulated links.

Only the flow generator differs from :mod:`ccarena.backends.kernel`: its testbed (namespaces,
veths, routes), link emulation (ccarena's relay, or tc) and queue/link tables are reused as they
are. A TCP flow's two ends are :mod:`.endpoint` processes (``ccarena._engine.udp_stream_send``
and ``UdpSink``, crates/udp's stream mode); a UDP CBR flow runs on the kernel backend's own
generator; a UDT flow runs the reference UDT4 (libudt) through ``tools/udt-peer`` (:mod:`.libudt`).
Modules: :mod:`.traffic` (preflight of TCP flows, starting the endpoints, the flow tables),
:mod:`.endpoint` (the process run in a namespace), :mod:`.backend` (:class:`UdpBackend`),
:mod:`.libudt` (the UDT4 peer: build, command lines, flow row).
"""
