"""The kernel backend: scenarios run on the real Linux TCP stack in network namespaces.

Modules: :mod:`.names` (per-run names), :mod:`.capabilities` (what this kernel offers, detected
at run time), :mod:`.preflight` (a scenario checked against it), :mod:`.netns` (namespaces, veths,
addresses, routes), :mod:`.shaping` (rate and queue qdiscs, their statistics), :mod:`.loss`
(random loss by nftables), :mod:`.delay` (propagation delay: netem or ccarena's relay),
:mod:`.trafficgen` (the traffic generator run inside the namespaces), :mod:`.traffic` (starting
and collecting it), :mod:`.tables` (the simulator's four tables from the measurements),
:mod:`.backend` (:class:`KernelBackend`, :func:`run_kernel`), :mod:`.cleanup` and :mod:`.doctor`.
"""
