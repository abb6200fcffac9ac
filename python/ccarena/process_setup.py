"""How ccarena's own processes — the command line (``ccarena``, ``python -m ccarena``) and its
pool workers — are set up: the cyclic garbage collector's thresholds and numpy's BLAS threads.
A library user's process (``import ccarena`` in a notebook) keeps its own settings."""

from __future__ import annotations

import gc
import os

GEN0_THRESHOLD = 50_000
"""Allocations (minus deallocations) between two young-generation collections (Python's default:
700). A command builds large object graphs once and keeps them to its end — the modules it
imports, a spec of thousands of flows, result tables — and with the default the collector scanned
them again and again: about 120 ms of collections in a 1,000-flow ``ccarena run`` (issue 16's
benchmark, ``benches/frontend.py``), 20 ms with this. mypy raises it for the same reason."""


def tune_process() -> None:
    """Set this process up for a command; call it before numpy is imported.

    - The collector collects young objects every :data:`GEN0_THRESHOLD` allocations, and older
      generations after 20 collections of the younger one (default 10): cyclic garbage is still
      freed, in fewer, larger passes (``gc.set_threshold``,
      https://docs.python.org/3/library/gc.html).
    - OpenBLAS, which numpy loads, starts one worker thread per extra core that spins while it
      waits for work; the front end does no linear algebra, and that spinning thread took the
      engine's core from it: 50–75 ms of a run's engine time off its CPU (measured with
      ``getrusage(RUSAGE_THREAD)``; 1–25 ms without it). ``OPENBLAS_NUM_THREADS=1`` unless the
      user set it (inherited by the pool's workers).
    """
    gc.set_threshold(GEN0_THRESHOLD, 20, 20)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
