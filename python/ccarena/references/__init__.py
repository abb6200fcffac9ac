"""Independent references for the simulator: other simulators run on the calibration suite's cells
(``ccarena calibrate --reference ns3``: :mod:`ccarena.references.ns3_suite`)."""
