"""What a proposer hands the search loop (:func:`ccarena.search.study.run_search`) for each
trial: Optuna's samplers (:class:`ccarena.search.study.OptunaProposer`) and ccarena's genetic
algorithm over packet traces (:class:`ccarena.search.evolve.TraceEvolution`) both give
:class:`Proposal` objects from ``ask()`` and take them back, with the trial's outcome, in
``tell(proposal, outcome)``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Proposal:
    """One point to try: the trial ``number``, ``values`` (parameter name → value, the trials
    table's columns), ``genomes`` (link → a packet-level trace, :mod:`ccarena.search.packet_traces`;
    empty for Optuna's samplers) and the proposer's own ``handle``."""

    number: int
    values: dict[str, Any]
    genomes: dict[str, Any] = field(default_factory=dict)
    handle: Any = None
