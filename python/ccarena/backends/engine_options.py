"""``[engine]``: the scenario's options of the simulator.

The scenario validates the table with this model (:mod:`ccarena.scenario.schema` reads it from
the backends' declarations, :func:`ccarena.backends.options_models`); the run record stores it
and :func:`ccarena.backends.get_backend` passes its fields to the simulator backend's constructor.
"""

from __future__ import annotations

from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field, model_serializer


class EngineOptions(BaseModel):
    """``[engine]``: options of the simulator (ignored by the other backends).

    ``threads`` (default 1, at most 256): threads one run may use. With more than one, the run's
    network is split into up to that many parts (hosts in blocks, each switch with the hosts
    nearest it), each simulated on a thread of its own and synchronized in windows as long as
    the shortest propagation delay between two parts; the results are bit-identical to one
    thread's (``ccarena_sim::parallel``). Parts are joined where a split would be wrong: a
    link of zero delay or one that ``[[events]]`` change, an MPTCP connection, a TCP flow with
    receive-buffer autotuning or SACK compression (the ``linux`` host model) keep their ends
    together, and a run that captures packets (``[output] pcap``) runs on one thread. Worth it
    for one large run (a fat-tree of hundreds of flows) on idle cores: every window waits for
    every thread, so beside other work a split run is slower than one thread; a sweep already
    fills the cores with one run per core.
    """

    # The scenario's models' configuration (ccarena.quantities.StrictModel): unknown fields are
    # errors, defaults are validated, the table is immutable.
    model_config = ConfigDict(extra="forbid", validate_default=True, populate_by_name=False,
                              frozen=True)

    threads: int = Field(1, ge=1, le=256)

    @model_serializer(mode="wrap")
    def _dump(self, dump: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
        # Run records store this table (ccarena.executor.run): one thread, the default, is left
        # out, so a record reads as it did before the table existed.
        out = dump(self)
        if out.get("threads") == 1:
            del out["threads"]
        return out
