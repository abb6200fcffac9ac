"""The kernel backend: scenarios run on the real Linux TCP stack in network namespaces.

Modules: :mod:`.names` (per-run names), :mod:`.capabilities` (what this kernel offers, detected
at run time), :mod:`.emulation_choice` (which mechanism emulates the links: ccarena's relay or
tc), :mod:`.preflight` (a scenario checked against both), :mod:`.netns` (namespaces, veths,
addresses) and :mod:`.routes` (their routes), :mod:`.shaping` (rate and queue by htb, its
statistics), :mod:`.netem` (propagation delay by netem), :mod:`.loss` (random loss by nftables),
:mod:`.relay_driver` (ccarena's link relay for one run: its config, process and readings),
:mod:`.relay_main` (the relay process's entry point), :mod:`.trafficgen` (the traffic generator
run inside the namespaces), :mod:`.flow_processes` (each flow's generator processes: started,
watched, collected), :mod:`.measured_tables` (the simulator's four tables from the
measurements), :mod:`.backend` (:class:`KernelBackend`, :func:`run_kernel`), :mod:`.options`
(the scenario's ``[kernel]`` table), :mod:`.ecn_modes` (the ECN feedback the kernel's TCP
negotiates: probed, and set per host), :mod:`.testbed` (two hosts joined by the relay, for its
tests and benchmark), :mod:`.cleanup` and :mod:`.doctor`. This package declares the backend
(:data:`DECLARATION`, :mod:`ccarena.backends.declaration`).
"""

from ccarena.backends.declaration import BackendDeclaration, Comparison, Needs
from ccarena.backends.kernel.capabilities import TOOLS
from ccarena.backends.kernel.options import KernelOptions

NAMESPACE_TESTBED_NEEDS = Needs(root=True, commands=TOOLS,
                                kernel_features=("network namespaces", "veth"))
"""What the namespace testbed (this backend's, and the udp backend's) needs of the machine."""

DECLARATION = BackendDeclaration(
    name="kernel",
    implementation="ccarena.backends.kernel.backend:KernelBackend",
    options_table="kernel",
    options_model=KernelOptions,
    needs=NAMESPACE_TESTBED_NEEDS,
    real_tcp=True,
    offered_flavors="ccarena.backends.kernel.capabilities:available_congestion_controls",
    comparison=Comparison(
        title="Simulator vs kernel, side by side",
        intro="Each run on ccarena's simulator and on this machine's Linux TCP stack (network "
              "namespaces), with the same resolved spec and seed. Differences are kernel − sim. "
              "Both sides recover losses as Linux does for every flavor: SACK, RACK-TLP and PRR "
              "(recovery = \"linux\"; RFC 6675, RFC 8985, RFC 6937).",
        slug=""),
)
"""The kernel backend, as the layers outside :mod:`ccarena.backends` know it."""
