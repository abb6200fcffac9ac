"""What an import left empty, said in one line per flow and reason, so that no metric is dropped
silently: ``goodput left empty for flow cubic-upload: <why>`` (every sample of the flow lacks it)
or, for goodput, ``goodput left empty in 3 of 21 samples of flow cubic-upload: <why>``.

Every data flow (not a latency probe) should have goodput samples and a mean goodput; a parser
names further metrics it expected for a flow (:attr:`ImportedFlow.expected`) and why the file
lacks each one it cannot give (:attr:`ImportedFlow.missing`).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ccarena.importers.model import ImportedRun

ALWAYS = ("goodput_bps", "goodput_mean_bps")
"""Metrics every data flow of an import should have."""

LABELS = {
    "goodput_bps": "goodput", "goodput_mean_bps": "mean goodput", "throughput_bps": "throughput",
    "cwnd_bytes": "cwnd", "srtt_s": "RTT (srtt)", "rtt_mean_s": "mean RTT", "loss_rate": "loss rate",
    "jitter_s": "jitter",
}
"""How each checked metric is named in a warning."""

GENERIC = "the file has no value for it"
"""The reason given when the parser names none."""


def _join(names: Sequence[str]) -> str:
    return ", ".join(LABELS.get(n, n) for n in names)


def empty_metrics(run: ImportedRun, flows: pd.DataFrame, samples: pd.DataFrame) -> list[str]:
    """One warning line per flow and reason for each checked metric the import left empty.

    Args:
        run: the parsed run (its flows' ``expected`` metrics and ``missing`` reasons).
        flows, samples: its flows and samples tables (:mod:`ccarena.importers.imported_tables`), whose
            columns are the checked metrics (a sample column is checked per sample, a flow
            column once per flow).

    Returns:
        Lines such as ``goodput left empty for flow cubic-upload: <why>``, in flow order; empty
        when every checked metric has a value (goodput: in every sample; another sample column:
        in one sample at least).
    """
    lines: list[str] = []
    by_flow = {int(k): g for k, g in samples.groupby("flow", sort=False)} if len(samples) else {}
    for i, flow in enumerate(run.flows):
        if flow.kind == "ping":
            continue
        mine = by_flow.get(i, samples.iloc[0:0])
        row = flows[flows["flow"] == i]
        whole: dict[str, list[str]] = {}
        for metric in dict.fromkeys(ALWAYS + tuple(flow.expected)):
            why = flow.missing.get(metric, GENERIC)
            if metric in samples.columns:
                empty = int(mine[metric].isna().sum())
                # Goodput is checked per sample; other sample columns only as a whole (the
                # receiver's trailing samples, say, have no sender's cwnd by nature).
                if metric == "goodput_bps" and empty and empty < len(mine):
                    lines.append(f"{LABELS.get(metric, metric)} left empty in {empty} of {len(mine)} "
                                 f"samples of flow {flow.name}: {why}")
                    continue
                if empty == len(mine):
                    whole.setdefault(why, []).append(metric)
            elif metric in flows.columns and (row.empty or row[metric].isna().all()):
                whole.setdefault(why, []).append(metric)
        lines += [f"{_join(metrics)} left empty for flow {flow.name}: {why}" for why, metrics in whole.items()]
    return lines
