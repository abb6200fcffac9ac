"""``[kernel]``: the scenario's options of the backends on the namespace testbed (kernel and udp).

The scenario validates the table with this model (:mod:`ccarena.scenario.schema` reads it from
the backends' declarations, :func:`ccarena.backends.options_models`); the run record stores it
and :func:`ccarena.backends.get_backend` passes its fields to the backend's constructor.
"""

from __future__ import annotations

from typing import Any, Callable, Literal

from pydantic import BaseModel, ConfigDict, model_serializer


class KernelOptions(BaseModel):
    """``[kernel]``: options of the kernel backend (ignored by the simulator).

    ``emulation``: how the links are emulated (:mod:`ccarena.backends.kernel.emulation_choice`) —
    ``"auto"`` (default: ``"tc"`` where the kernel has netem, else ``"relay"``), ``"relay"``
    (ccarena's link emulator does the rate, queue, delay and loss with the simulator's link model)
    or ``"tc"`` (htb + pfifo/bfifo, netem or the relay for the delay, nftables for the loss).
    The udp backend runs on the same testbed and takes these options too; ``udt_impl`` is its
    own: who runs UDT flows on it — ``"ccarena"`` (default: ccarena's UDT, the simulator's code,
    over UDP sockets) or ``"libudt"`` (the reference UDT4 library, docs/udp-backend.md); so is
    ``quic_impl``: who runs QUIC flows (``transport = "quic"``) on it — ``"ccarena"`` (default:
    the simulator's sans-IO QUIC in ccarena's frames), ``"quinn"`` (the quinn QUIC stack with
    TLS 1.3, the flow's flavor being ccarena's controller inside quinn) or ``"quinn-native"``
    (quinn with its own NewReno, CUBIC or BBR: flavors ``reno``, ``cubic``, ``bbr``); and
    ``tcp_impl``: who runs its TCP flows — ``"ccarena"`` (default: ccarena's transport on UDP) or
    ``"linux"`` (this kernel's TCP, as on the kernel backend: QUIC beside Linux TCP in one run).

    ``ecn``: the ECN feedback the kernel's TCP negotiates for the flows with ``ecn = true``
    (``net.ipv4.tcp_ecn`` per host, :func:`ccarena.backends.kernel.ecn_modes.host_tcp_ecn`) —
    ``"classic"`` (default: RFC 3168, ECE until CWR), ``"accecn"`` (Accurate ECN, RFC 9768: the
    ACE counter and the AccECN option; needs a kernel that negotiates it, refused before the run
    on one that does not) or ``"off"`` (no host requests or accepts ECN; flows with ``ecn = true``
    are refused). The udp backend's flows are ccarena's transport, not the kernel's TCP: it
    ignores ``ecn``.
    """

    # The scenario's models' configuration (ccarena.quantities.StrictModel): unknown fields are
    # errors, defaults are validated, the table is immutable.
    model_config = ConfigDict(extra="forbid", validate_default=True, populate_by_name=False,
                              frozen=True, arbitrary_types_allowed=True)

    emulation: Literal["auto", "relay", "tc"] = "auto"
    udt_impl: Literal["ccarena", "libudt"] = "ccarena"
    quic_impl: Literal["ccarena", "quinn", "quinn-native"] = "ccarena"
    tcp_impl: Literal["ccarena", "linux"] = "ccarena"
    ecn: Literal["off", "classic", "accecn"] = "classic"

    @model_serializer(mode="wrap")
    def _dump(self, dump: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
        # Run records store this table (ccarena.executor.run): a scenario that leaves ``ecn`` at
        # its default keeps the record it had before the field existed.
        out = dump(self)
        if out.get("ecn") == "classic":
            del out["ecn"]
        for key in ("quic_impl", "tcp_impl"):
            if out.get(key) == "ccarena":
                del out[key]
        return out
