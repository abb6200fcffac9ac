"""The cyclic garbage collector's settings for ccarena's own processes: the command line
(``ccarena``, ``python -m ccarena``) and its pool workers. A library user's process (``import
ccarena`` in a notebook) keeps its own settings."""

from __future__ import annotations

import gc

GEN0_THRESHOLD = 50_000
"""Allocations (minus deallocations) between two young-generation collections (Python's default:
700). A command builds large object graphs once and keeps them to its end — the modules it
imports, a spec of thousands of flows, result tables — and with the default the collector scanned
them again and again: about 120 ms of collections in a 1,000-flow ``ccarena run`` (issue 16's
benchmark, ``benches/frontend.py``), 20 ms with this. mypy raises it for the same reason."""


def collect_less() -> None:
    """Collect young objects every :data:`GEN0_THRESHOLD` allocations, and older generations
    after 20 collections of the younger one (default 10): cyclic garbage is still freed, in fewer,
    larger passes (``gc.set_threshold``, https://docs.python.org/3/library/gc.html)."""
    gc.set_threshold(GEN0_THRESHOLD, 20, 20)
