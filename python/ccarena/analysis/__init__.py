"""Analysis: numbers computed from a run's tables and from stored results.

- :mod:`ccarena.analysis.metrics`: goodput, throughput, loss, RTT, Jain's index, stability,
  regions, utilization, mean ± CI over repeats;
- :mod:`ccarena.analysis.theory`: Mathis, Padhye (PFTK) and CUBIC response functions;
- :mod:`ccarena.analysis.studies`: the seed studies' tables (matrix, regions, drop rates,
  goodput per interval, references);
- :mod:`ccarena.analysis.calibration`: ``ccarena calibrate``'s cells, simulator vs kernel, with
  bands and verdicts.
"""
