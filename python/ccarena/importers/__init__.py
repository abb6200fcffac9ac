"""Real measurements in the same tables as simulated runs: ``ccarena import iperf3 FILE.json…``,
``ccarena import flent FILE.flent.gz…`` and ``ccarena import pcap FILE.pcap…`` turn measurement
files into an experiment directory
(:mod:`ccarena.store` layout), so ``ccarena report``, ``query``, ``plot`` and ``compare`` read them
like any experiment.

- :mod:`ccarena.importers.model`: one imported run and its flows, as parsed from a file;
- :mod:`ccarena.importers.iperf3`: iperf3's ``--json`` output;
- :mod:`ccarena.importers.align`: an iperf3 stream's two halves (client, server) aligned by time;
- :mod:`ccarena.importers.flent`: Flent's ``.flent.gz`` data files;
- :mod:`ccarena.importers.pcap`: pcap/pcapng captures of TCP flows (dpkt), read by
  :mod:`ccarena.importers.tcp_trace`, the per-connection TCP analysis (goodput, RTT by data/ACK
  matching, bytes in flight, retransmissions, ECN);
- :mod:`ccarena.importers.imported_tables`: a parsed run → the store's flows, samples and regions tables;
- :mod:`ccarena.importers.checks`: the metrics an import left empty, as warning lines;
- :mod:`ccarena.importers.writer`: the runs written into an experiment directory;
- the commands themselves: :mod:`ccarena.cli.measurement_import`.

Each file becomes one run (``backend`` = the tool: ``iperf3``, ``flent`` or ``pcap``), the files of one
import being repeats of one point. Columns a file has no value for stay null (nothing is
invented), and the import warns about each one a flow should have
(:mod:`ccarena.importers.checks`). This package imports nothing heavy at import time (the CLI loads it on start).
"""
