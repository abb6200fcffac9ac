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

The other ``--over`` options of the same search (fields, parameterized traces) are genes too: a
first-generation value is drawn uniformly over the range (log-uniformly on a log range; a choice
at random); a crossover takes each from either parent with even odds; a mutation changes each with
probability :data:`FIELD_MUTATION` — a Gaussian step of a tenth of the range (of its log on a log
range), clipped into it, or a new draw of a choice.

Reproducible: trial ``n`` draws from ``numpy.random.default_rng([seed, n])`` and the population
changes only when trials are told, in trial order, after the whole batch was asked — so the same
``seed`` and ``jobs`` give the same traces on any executor.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ccarena.errors import UserError
from ccarena.search import packet_traces as pt
from ccarena.search.objectives import Objective
from ccarena.search.proposals import Proposal
from ccarena.search.space import SearchSpace
from ccarena.search.value_ranges import Choice

CROSSOVER_RATE = 0.7
"""The probability that a child splices two parents (else it mutates a copy of one)."""

TOURNAMENT = 3
"""Contestants of each parent's tournament."""

FIELD_MUTATION = 0.3
"""The probability that a mutation changes each field or trace parameter."""

Domain = Any
"""A searched value's range: a :class:`~ccarena.search.value_ranges.NumberRange` or
:class:`~ccarena.search.trace_shapes.TraceParam` (``low``, ``high``, ``log``, ``integer``) or a
:class:`~ccarena.search.value_ranges.Choice` (``values``)."""


def _bounds(domain: Domain) -> tuple[float, float]:
    """The range's ends (whole numbers inside it for an integer range)."""
    if domain.integer:
        return float(math.ceil(domain.low)), float(math.floor(domain.high))
    return float(domain.low), float(domain.high)


def _snap(domain: Domain, x: float) -> float | int:
    """``x`` clipped into the range (rounded for an integer range)."""
    low, high = _bounds(domain)
    x = min(max(x, low), high)
    return int(round(x)) if domain.integer else float(x)


def draw(domain: Domain, rng: np.random.Generator) -> Any:
    """A uniform value of ``domain`` (log-uniform on a log range; a choice at random)."""
    if isinstance(domain, Choice):
        return domain.values[int(rng.integers(len(domain.values)))]
    low, high = _bounds(domain)
    if domain.log and low > 0:
        return _snap(domain, math.exp(rng.uniform(math.log(low), math.log(high))))
    return _snap(domain, rng.uniform(low, high))


def nudge(domain: Domain, value: Any, rng: np.random.Generator) -> Any:
    """``value`` after a Gaussian step of a tenth of the range (of its log on a log range),
    clipped into it; a choice drawn again."""
    if isinstance(domain, Choice):
        return draw(domain, rng)
    low, high = _bounds(domain)
    if domain.log and low > 0:
        step = rng.normal(0.0, 0.1 * (math.log(high) - math.log(low)))
        return _snap(domain, math.exp(math.log(max(float(value), low)) + step))
    return _snap(domain, float(value) + rng.normal(0.0, 0.1 * (high - low)))


def distribution(domain: Domain) -> Any:
    """The Optuna distribution of ``domain`` (for the study the report's importance reads)."""
    from optuna.distributions import (
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )

    if isinstance(domain, Choice):
        return CategoricalDistribution(list(domain.values))
    low, high = _bounds(domain)
    if domain.integer:
        return IntDistribution(int(low), int(high), log=domain.log and low > 0)
    return FloatDistribution(low, high, log=domain.log and low > 0)


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


Individual = tuple[dict[str, np.ndarray], dict[str, Any]]
"""One trial's genes: each ``packets`` link's genome, and each other searched value by name."""


class TraceEvolution:
    """The proposer of :func:`ccarena.search.study.run_search` for a space with ``packets``
    traces (see the module docs). ``study`` is an Optuna study the trials are added to, with the
    searched values and each trace's features (:func:`~ccarena.search.packet_traces.features`)
    as its parameters, so the report's importance ranks them."""

    def __init__(self, space: SearchSpace, objective: Objective, *, seed: int, trials: int,
                 jobs: int) -> None:
        import optuna

        self.space, self.objective, self.seed = space, objective, seed
        self.links = space.packet_traces()
        self.genes: dict[str, Domain] = {f.name: f.domain for f in space.fields}
        for t in space.traces:
            if not t.packets:
                self.genes.update(zip(t.names, t.params))
        self.size = max(jobs, min(20, max(4, trials // 4)))
        self.population: list[tuple[float, int, Individual]] = []
        self.asked = 0
        self.study = optuna.create_study(direction=objective.direction,
                                         sampler=optuna.samplers.RandomSampler(seed=seed))

    def _select(self, rng: np.random.Generator) -> Individual:
        """A parent: the best of :data:`TOURNAMENT` members of the population drawn at random."""
        picks = rng.integers(0, len(self.population), size=min(TOURNAMENT, len(self.population)))
        return self.population[int(min(picks))][2]  # the population is kept sorted, best first

    def _child(self, rng: np.random.Generator) -> tuple[Individual, str]:
        """A new individual and how it was made."""
        if self.asked < self.size or not self.population:
            genomes = {t.link: pt.random_trace(rng, t.shape) for t in self.links}
            return (genomes, {n: draw(d, rng) for n, d in self.genes.items()}), "random"
        first_genomes, first_values = self._select(rng)
        how = "mutation"
        if rng.random() < CROSSOVER_RATE and len(self.population) > 1:
            second_genomes, second_values = self._select(rng)
            genomes = {t.link: pt.crossover(first_genomes[t.link], second_genomes[t.link], rng,
                                            t.shape) for t in self.links}
            values = {n: (first_values if rng.random() < 0.5 else second_values)[n]
                      for n in self.genes}
            how = "crossover+mutation"
        else:
            genomes = {link: g.copy() for link, g in first_genomes.items()}
            values = dict(first_values)
        ops: list[str] = []
        for t in self.links:
            genomes[t.link], applied = pt.mutate(genomes[t.link], rng, t.shape)
            ops += applied
        for name, domain in self.genes.items():
            if rng.random() < FIELD_MUTATION:
                values[name] = nudge(domain, values[name], rng)
                ops.append(name)
        return (genomes, values), f"{how} ({', '.join(ops)})"

    def ask(self) -> Proposal:
        """The next trial: its genomes, its searched values and its traces' features (the trials
        table's columns)."""
        number = self.asked
        rng = np.random.default_rng([self.seed, number])
        (genomes, genes), how = self._child(rng)
        self.asked += 1
        values: dict[str, Any] = dict(genes)
        for t in self.links:
            found = pt.features(genomes[t.link], t.shape)
            values.update({name: found[p.name] for name, p in zip(t.names, t.params)})
        return Proposal(number=number, values=values, genomes=genomes, handle=(how, genes))

    def tell(self, proposal: Proposal, outcome: Any) -> None:
        """Add the trial to the study and, if complete, its genes to the population (which keeps
        the best :attr:`size`)."""
        import optuna
        from optuna.distributions import FloatDistribution

        how, genes = proposal.handle
        dists = {name: distribution(d) for name, d in self.genes.items()}
        params = {name: proposal.values[name] for name in self.genes}
        for t in self.links:
            for name, p in zip(t.names, t.params):
                dists[name] = FloatDistribution(p.low, p.high)
                params[name] = min(max(float(proposal.values[name]), p.low), p.high)
        done = outcome.state == "complete"
        self.study.add_trial(optuna.trial.create_trial(
            params=params, distributions=dists, value=outcome.value if done else None,
            state=optuna.trial.TrialState.COMPLETE if done else optuna.trial.TrialState.FAIL,
            user_attrs={"origin": how, **({} if done else {"error": outcome.error})}))
        if not done:
            return
        sign = 1.0 if self.objective.direction == "minimize" else -1.0
        self.population.append((sign * outcome.value, proposal.number,
                                (proposal.genomes, genes)))
        self.population.sort(key=lambda member: (member[0], member[1]))
        del self.population[self.size:]
