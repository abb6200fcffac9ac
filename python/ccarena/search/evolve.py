"""ccarena's own genetic algorithm over packet-level traces (``--over trace:LINK=packets``): the
genome is each link's Mahimahi trace, thousands of delivery times
(:mod:`ccarena.search.packet_traces`), which fits no fixed-dimension Optuna sampler; so this loop
keeps the population, selects, recombines and mutates, in the spirit of CC-Fuzz (Agarwal et al.,
"CC-Fuzz: Genetic algorithm-based fuzzing for stress testing congestion control algorithms",
HotNets 2022), and plugs into the search's trial loop (:func:`ccarena.search.study.run_search`)
as a proposer: the same runners, executors, seeds, outputs and report.

The algorithm, elitist (μ + λ) with batches of ``jobs`` children:

- the first ``P = max(jobs, min(20, max(4, trials // 4)))`` trials (the population size NSGA-II
  gets in :func:`ccarena.search.study.make_sampler`) are random traces
  (:func:`~ccarena.search.packet_traces.random_trace`);
- each later trial picks two parents by tournaments of 3 among the best ``P`` complete trials
  told so far, splices them (probability 0.7; else copies the first) and mutates the child with 1
  to 3 operators (:func:`~ccarena.search.packet_traces.mutate`).

Reproducible: trial ``n`` draws from ``numpy.random.default_rng([seed, n])`` and the population
changes only when trials are told, in trial order, after the whole batch was asked — so the same
``seed`` and ``jobs`` give the same traces on any executor.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ccarena.errors import UserError
from ccarena.search import packet_traces as pt
from ccarena.search.objectives import Objective
from ccarena.search.proposals import Proposal
from ccarena.search.space import SearchSpace

CROSSOVER_RATE = 0.7
"""The probability that a child splices two parents (else it mutates a copy of one)."""

TOURNAMENT = 3
"""Contestants of each parent's tournament."""


def check_sampler(space: SearchSpace, sampler: str | None) -> str:
    """The sampler a search over ``space`` uses: ``sampler``, or when not given ``ga`` with a
    ``packets`` trace and ``tpe`` without.

    Raises:
        UserError: a ``packets`` trace with a sampler other than ``ga`` (Optuna's samplers search
            a fixed set of numbers; a trace of thousands of delivery times is evolved by this
            module).
    """
    packets = space.packet_traces()
    if not packets:
        return sampler or "tpe"
    if sampler not in (None, "ga"):
        raise UserError(f"--sampler {sampler}: trace:{packets[0].link}=packets is a genome of "
                        "thousands of delivery times, evolved by ccarena's genetic algorithm; give "
                        "--sampler ga or leave --sampler out")
    return "ga"


class TraceEvolution:
    """The proposer of :func:`ccarena.search.study.run_search` for ``packets`` traces (see the
    module docs). ``study`` is an Optuna study the trials are added to, with each trace's
    features (:func:`~ccarena.search.packet_traces.features`) as its parameters, so the report's
    importance ranks the features."""

    def __init__(self, space: SearchSpace, objective: Objective, *, seed: int, trials: int,
                 jobs: int) -> None:
        import optuna

        self.space, self.objective, self.seed = space, objective, seed
        self.links = space.packet_traces()
        self.size = max(jobs, min(20, max(4, trials // 4)))
        self.population: list[tuple[float, int, dict[str, np.ndarray]]] = []
        self.asked = 0
        self.study = optuna.create_study(direction=objective.direction,
                                         sampler=optuna.samplers.RandomSampler(seed=seed))

    def _select(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """A parent: the best of :data:`TOURNAMENT` members of the population drawn at random."""
        picks = rng.integers(0, len(self.population), size=min(TOURNAMENT, len(self.population)))
        return self.population[int(min(picks))][2]  # the population is kept sorted, best first

    def _child(self, rng: np.random.Generator) -> tuple[dict[str, np.ndarray], str]:
        """A new genome per link and how it was made."""
        if self.asked < self.size or not self.population:
            return {t.link: pt.random_trace(rng, t.shape) for t in self.links}, "random"
        first = self._select(rng)
        how = "mutation"
        if rng.random() < CROSSOVER_RATE and len(self.population) > 1:
            second = self._select(rng)
            child = {t.link: pt.crossover(first[t.link], second[t.link], rng, t.shape)
                     for t in self.links}
            how = "crossover+mutation"
        else:
            child = {link: g.copy() for link, g in first.items()}
        ops: list[str] = []
        for t in self.links:
            child[t.link], applied = pt.mutate(child[t.link], rng, t.shape)
            ops += applied
        return child, f"{how} ({', '.join(ops)})"

    def ask(self) -> Proposal:
        """The next trial: its genomes and their features (the trials table's columns)."""
        number = self.asked
        rng = np.random.default_rng([self.seed, number])
        genomes, how = self._child(rng)
        self.asked += 1
        values: dict[str, Any] = {}
        for t in self.links:
            found = pt.features(genomes[t.link], t.shape)
            values.update({name: found[p.name] for name, p in zip(t.names, t.params)})
        return Proposal(number=number, values=values, genomes=genomes, handle=how)

    def tell(self, proposal: Proposal, outcome: Any) -> None:
        """Add the trial to the study and, if complete, its genomes to the population (which
        keeps the best :attr:`size`)."""
        import optuna
        from optuna.distributions import FloatDistribution

        dists = {name: FloatDistribution(p.low, p.high)
                 for t in self.links for name, p in zip(t.names, t.params)}
        params = {n: min(max(float(proposal.values[n]), d.low), d.high) for n, d in dists.items()}
        done = outcome.state == "complete"
        self.study.add_trial(optuna.trial.create_trial(
            params=params, distributions=dists, value=outcome.value if done else None,
            state=optuna.trial.TrialState.COMPLETE if done else optuna.trial.TrialState.FAIL,
            user_attrs={"origin": proposal.handle, **({} if done else {"error": outcome.error})}))
        if not done:
            return
        sign = 1.0 if self.objective.direction == "minimize" else -1.0
        self.population.append((sign * outcome.value, proposal.number, proposal.genomes))
        self.population.sort(key=lambda member: (member[0], member[1]))
        del self.population[self.size:]
