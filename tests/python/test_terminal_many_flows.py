"""The terminal summary of runs with many flows (a permutation, an incast): one row per run, one
table per part, within 80 columns."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
from ccarena.report import terminal_table
from rich.console import Console


def _summary(parts: list[str], flavors: list[str], flows: int) -> pd.DataFrame:
    rows = []
    for part in parts:
        for flavor in flavors:
            for f in range(flows):
                rows.append({"run_id": f"{part}__flavor={flavor}_r0", "part": part, "point": 0, "repeat": 0,
                             "traffic[0].flow.flavor": flavor, "flow": f, "name": f"perm-{f}",
                             "flavor": flavor, "goodput_mean_bps": 1e6 * (f + 1),
                             "retransmission_rate": 0.01, "jain_index": 0.9,
                             "fct_s": 0.01 * (f + 1), "fct_slowdown": 2.0 + f})
    return pd.DataFrame(rows)


def _render(table) -> str:
    out = io.StringIO()
    Console(file=out, width=80, color_system=None).print(table)
    return out.getvalue()


def test_many_flows_give_one_row_per_run_and_a_table_per_part():
    summary = _summary(["fat-tree-dc-incast", "leaf-spine-dc-incast"], ["reno", "cubic", "dctcp"], 150)
    text = _render(terminal_table(summary, ["traffic[0].flow.flavor"], "seed-000"))
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert sum("seed-000 — fat-tree-dc-incast" in line for line in lines) == 1
    assert sum("seed-000 — leaf-spine-dc-incast" in line for line in lines) == 1
    body = [line for line in lines if line.strip().startswith("150")]
    assert len(body) == 6  # one row per run, not 900 per-flow rows
    # total goodput Σ (1+…+150) Mbps = 11.3 Gbps; FCT p99 of 0.01…1.5 s
    assert "11.3 Gbps" in body[0]
    assert f"{np.quantile(np.arange(1, 151) * 0.01, 0.99):.3g} s" in body[0]


def test_few_flows_keep_one_row_per_flow():
    summary = _summary([""], ["reno", "cubic"], 2)
    text = _render(terminal_table(summary, ["traffic[0].flow.flavor"], "small"))
    assert sum("perm-" in line for line in text.splitlines()) == 4
