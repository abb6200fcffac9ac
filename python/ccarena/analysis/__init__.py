"""Analysis: numbers computed from a run's tables and from stored results.

- :mod:`ccarena.analysis.catalogue`: every metric's label, unit, format, aliases and better side,
  read by every table, figure and command;
- :mod:`ccarena.analysis.metrics`: goodput, throughput, loss, RTT, Jain's index, stability,
  regions, utilization, mean ± CI over repeats;
- :mod:`ccarena.analysis.theory`: Mathis, Padhye (PFTK) and CUBIC response functions, and which
  flavors each models;
- :mod:`ccarena.analysis.study_tables`: the seed studies' tables (matrix, regions, drop rates,
  goodput per interval, references);
- :mod:`ccarena.analysis.calibration_cells`: ``ccarena calibrate``'s cells, simulator vs kernel, with
  bands and verdicts.
"""
