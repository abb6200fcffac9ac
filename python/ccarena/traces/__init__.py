"""Trace-driven links: a link's capacity given by a recorded or synthetic trace instead of a
constant rate.

A scenario writes ``rate = { trace = "traces/lte.mahi" }`` (Mahimahi's format) or ``rate = {
trace = "steps.csv", loop = false }`` (rate steps) on any link; paths are relative to the
scenario file. :mod:`.files` reads and checks the file into the run spec's trace;
:mod:`.generate` makes synthetic traces (on/off, Gilbert–Elliott, random walk) in Mahimahi's
format, also from the command line (``ccarena trace gen``).
"""

from ccarena.traces.trace_files import (
    TraceFormatError,
    TraceRate,
    mean_rate_bps,
    parse_link_rate,
    parse_mahimahi,
    parse_steps_csv,
    read_trace,
)

__all__ = ["TraceFormatError", "TraceRate", "mean_rate_bps", "parse_link_rate", "parse_mahimahi",
           "parse_steps_csv", "read_trace"]
