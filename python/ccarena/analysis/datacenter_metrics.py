"""Data-center metrics: flow completion time slowdown per size bucket, utilization and queue
occupancy per link role, ECMP load balance.

Definitions:

- **ideal FCT** of a finite flow of S payload bytes: the time it would take alone on an empty
  network, sending back to back from its first packet — the definition of pFabric (Alizadeh et
  al., SIGCOMM 2013, §5: FCT "normalized to the best possible FCT" for the flow's size) and HPCC
  (Li et al., SIGCOMM 2019, §5.1: "the FCT when the network has only this flow"), base RTT +
  size / line rate, here counted exactly so that it is a lower bound (a flow's slowdown on an
  empty network is ≥ 1): the flow's n = ⌈S / MSS⌉ packets (wire bytes p₁ … pₙ, each payload +
  header; W = Σ p) cross store-and-forward hops of rates r₁ … r_h; the last packet is delivered
  no earlier than max over hops j of Σ_{i<j} p₁/rᵢ + W/r_j + Σ_{i>j} pₙ/rᵢ after the start, plus
  the propagation delays; its ACK then returns. So
  ``ideal = base_rtt_s − Σᵢ p_full/rᵢ + maxⱼ(…)`` (bits: ×8), with ``base_rtt_s`` (propagation
  both ways, one full data packet p_full = MSS + header serialized at every hop out and one ACK
  back: :func:`ccarena.experiment.resolve`) and the path's link rates. Without the path's rates,
  the bottleneck alone stands for the path: base RTT + 8 · (W − p_full) / bottleneck rate.
- **FCT slowdown** = FCT / ideal FCT (the engine's ``completion_time_s``: start until the last
  byte is acknowledged). Flows still running at the end of the run have no FCT and are counted
  apart (``unfinished``), as the percentiles would otherwise favour short flows.
- **size buckets** (:data:`SIZE_BUCKETS`): < 100 KB, 100 KB – 1 MB, 1 – 10 MB, ≥ 10 MB (SI
  units), the split of the DCTCP/pFabric/HPCC figures (small flows: latency; large: throughput).
  Percentiles are numpy's linear-interpolation percentiles of the flows in the bucket.
- **utilization** of a link = 8 · bytes transmitted / (rate · duration)
  (:func:`ccarena.analysis.metrics.link_utilization`), summarized per link role.
- **ECMP balance** of a role's links (the parallel links of one tier, e.g. every aggregation →
  core link): max/mean and the coefficient of variation (population SD / mean) of the bytes each
  carried; 1 and 0 when perfectly balanced.
- **queue occupancy** per role: p50/p99 of the sampled backlog (packets) pooled over every
  sample of every link of the role (a link's queue is its sending node's egress queue, so a role
  names a tier's queues).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ccarena.runspec import QUIC_DATA_OVERHEAD_BYTES, TcpFlowSpec, UdtFlowSpec

SIZE_BUCKETS: tuple[tuple[str, float, float], ...] = (
    ("<100KB", 0.0, 100e3),
    ("100KB-1MB", 100e3, 1e6),
    ("1MB-10MB", 1e6, 10e6),
    (">=10MB", 10e6, math.inf),
)
"""(label, lowest size, size bound) in bytes: a flow of S bytes is in the bucket with low ≤ S < bound."""

SINGLE_PATH_ROLES = ("access", "bottleneck", "bottleneck-reverse", "link", "link-reverse")
"""Roles of links that are no one's alternative (a host's access link, the one bottleneck):
ECMP balance is not computed for them."""

UNLIMITED_BYTES = (2**64 - 1) // 4
"""The ``bytes_offered`` the engine reports for a flow without a size (``UNLIMITED_BYTES`` in
crates/sim/src/flow.rs): such a flow is bulk, not finite."""

HEADER_BYTES = {"tcp": TcpFlowSpec.model_fields["header_bytes"].default,
                "quic": QUIC_DATA_OVERHEAD_BYTES,
                "udt": UdtFlowSpec.model_fields["header_bytes"].default}
"""Bytes of headers per data packet by flow kind (the run spec's defaults, which the front end
never changes; a QUIC packet's, :data:`ccarena.runspec.QUIC_DATA_OVERHEAD_BYTES`)."""


def ideal_fct_s(size_bytes: float, base_rtt_s: float, path_rates_bps: Sequence[float],
                mss_bytes: float, header_bytes: float) -> float:
    """The ideal FCT (seconds) of a flow of ``size_bytes`` payload over links of
    ``path_rates_bps`` (in path order; module doc); NaN when an input is NaN or the path empty."""
    values = (size_bytes, base_rtt_s, mss_bytes, header_bytes)
    if not path_rates_bps or any(not math.isfinite(float(v)) for v in values):
        return math.nan
    s, mss, hdr = float(size_bytes), float(mss_bytes), float(header_bytes)
    n = math.ceil(s / mss)
    first = min(s, mss) + hdr
    last = s - (n - 1) * mss + hdr
    wire = s + n * hdr
    inv = [8.0 / float(r) for r in path_rates_bps]
    best = max(sum(inv[:j]) * first + inv[j] * wire + sum(inv[j + 1:]) * last
               for j in range(len(inv)))
    return float(base_rtt_s) - (mss + hdr) * sum(inv) + best


def size_bucket(size_bytes: Any) -> np.ndarray:
    """The :data:`SIZE_BUCKETS` label of each size (``""`` for NaN)."""
    s = np.asarray(size_bytes, dtype=float)
    out = np.full(s.shape, "", dtype=object)
    for label, low, high in SIZE_BUCKETS:
        out[(s >= low) & (s < high)] = label
    return out


def slowdown_table(flows: pd.DataFrame) -> pd.DataFrame:
    """The finite flows of a flows table with their FCT slowdown.

    Args:
        flows: :func:`ccarena.analysis.metrics.flow_table` rows (``kind``, ``bytes_offered``,
            ``fct_s``, ``base_rtt_s``, ``bottleneck_rate_bps``, ``mss_bytes``, and
            ``ideal_fct_s`` where the caller knew the path's rates; any other column, e.g.
            ``flavor`` or ``run_id``, is kept).

    Returns:
        One row per finite flow (TCP or UDT with a size) with ``size_bytes``, ``ideal_fct_s``,
        ``fct_slowdown`` (NaN for a flow that did not finish), ``finished`` and ``size_bucket``.
    """
    if flows.empty or "bytes_offered" not in flows.columns:
        return pd.DataFrame(columns=[*flows.columns, "size_bytes", "ideal_fct_s", "fct_slowdown",
                                     "finished", "size_bucket"])
    kind = flows["kind"].astype(str)
    size = pd.to_numeric(flows["bytes_offered"], errors="coerce").to_numpy(dtype=float)
    finite = kind.isin(list(HEADER_BYTES)).to_numpy() & np.isfinite(size) & (size > 0) \
        & (size < UNLIMITED_BYTES / 2)
    out = flows[finite].copy()
    out["size_bytes"] = size[finite]
    if "ideal_fct_s" not in out.columns:  # the bottleneck stands for the path
        header = out["kind"].astype(str).map(HEADER_BYTES).to_numpy(dtype=float)
        out["ideal_fct_s"] = [ideal_fct_s(sz, rtt, [rate], mss, hdr) for sz, rtt, rate, mss, hdr in
                              zip(out["size_bytes"], out["base_rtt_s"], out["bottleneck_rate_bps"],
                                  out["mss_bytes"], header)]
    fct = pd.to_numeric(out["fct_s"], errors="coerce").to_numpy(dtype=float)
    out["fct_slowdown"] = fct / out["ideal_fct_s"].to_numpy(dtype=float)
    out["finished"] = np.isfinite(fct)
    out["size_bucket"] = size_bucket(out["size_bytes"])
    return out


def fct_slowdown(flows: pd.DataFrame) -> np.ndarray:
    """Per row of ``flows`` (a flows table), its FCT slowdown; NaN for bulk, UDP or unfinished
    flows (:func:`slowdown_table`)."""
    table = slowdown_table(flows)
    out = np.full(len(flows), np.nan)
    if len(table):
        out[flows.index.get_indexer(table.index)] = table["fct_slowdown"].to_numpy(dtype=float)
    return out


def _percentile(x: np.ndarray, q: float) -> float:
    x = x[np.isfinite(x)]
    return float(np.percentile(x, q)) if x.size else math.nan


def slowdown_by_bucket(table: pd.DataFrame, by: Sequence[str] = ()) -> pd.DataFrame:
    """p50 and p99 of FCT slowdown per size bucket (and per ``by`` group, e.g. ``flavor``).

    Args:
        table: :func:`slowdown_table` rows (pooled over runs if the caller concatenated them).

    Returns:
        Columns ``*by, size_bucket, flows, unfinished, slowdown_p50, slowdown_p99,
        slowdown_mean, fct_p50_s, fct_p99_s``; buckets in :data:`SIZE_BUCKETS` order, then a row
        ``"all"``; empty buckets left out.
    """
    columns = [*by, "size_bucket", "flows", "unfinished", "slowdown_p50", "slowdown_p99",
               "slowdown_mean", "fct_p50_s", "fct_p99_s"]
    rows: list[dict[str, Any]] = []
    groups = table.groupby(list(by), sort=False, dropna=False) if by else [((), table)]
    order = [label for label, _, _ in SIZE_BUCKETS] + ["all"]
    for key, group in groups:
        key = key if isinstance(key, tuple) else (key,)
        for label in order:
            mine = group if label == "all" else group[group["size_bucket"] == label]
            if mine.empty:
                continue
            s = mine["fct_slowdown"].to_numpy(dtype=float)
            fct = pd.to_numeric(mine["fct_s"], errors="coerce").to_numpy(dtype=float)
            done = s[np.isfinite(s)]
            rows.append({**dict(zip(by, key)), "size_bucket": label, "flows": int(len(mine)),
                         "unfinished": int(len(mine) - done.size),
                         "slowdown_p50": _percentile(s, 50), "slowdown_p99": _percentile(s, 99),
                         "slowdown_mean": float(done.mean()) if done.size else math.nan,
                         "fct_p50_s": _percentile(fct, 50), "fct_p99_s": _percentile(fct, 99)})
    return pd.DataFrame(rows, columns=columns)


def utilization_by_role(links: pd.DataFrame, duration_s: float) -> pd.DataFrame:
    """Utilization (8 · bytes transmitted / (rate · duration)) per link, summarized per role:
    ``role, links, utilization_mean, utilization_max``.

    Args:
        links: a links table with ``role``, ``bytes_transmitted``, ``rate_bps``.
    """
    util = 8.0 * links["bytes_transmitted"].to_numpy(dtype=float) \
        / (links["rate_bps"].to_numpy(dtype=float) * duration_s)
    df = pd.DataFrame({"role": links["role"].astype(str).to_numpy(), "u": util})
    out = df.groupby("role", sort=False)["u"].agg(links="size", utilization_mean="mean",
                                                  utilization_max="max").reset_index()
    return out


def ecmp_balance(links: pd.DataFrame, roles: Sequence[str] | None = None) -> pd.DataFrame:
    """Load balance over the parallel links of each role: ``role, links, bytes_mean,
    max_over_mean, cv`` (cv = population SD / mean of the bytes each link carried; NaN when
    the role carried nothing).

    Args:
        links: a links table with ``role`` and ``bytes_transmitted``.
        roles: the roles to compute (default: every role with ≥ 2 links that is not in
            :data:`SINGLE_PATH_ROLES`).
    """
    rows = []
    for role, group in links.groupby(links["role"].astype(str), sort=False):
        if roles is None and (role in SINGLE_PATH_ROLES or len(group) < 2):
            continue
        if roles is not None and role not in roles:
            continue
        b = group["bytes_transmitted"].to_numpy(dtype=float)
        mean = float(b.mean())
        rows.append({"role": role, "links": int(b.size), "bytes_mean": mean,
                     "max_over_mean": float(b.max()) / mean if mean > 0 else math.nan,
                     "cv": float(b.std(ddof=0)) / mean if mean > 0 else math.nan})
    return pd.DataFrame(rows, columns=["role", "links", "bytes_mean", "max_over_mean", "cv"])


def queue_by_role(queues: pd.DataFrame, links: pd.DataFrame) -> pd.DataFrame:
    """Sampled queue backlog pooled per link role: ``role, links, samples, backlog_p50_packets,
    backlog_p99_packets, backlog_max_packets, backlog_p99_bytes``.

    Args:
        queues: the queues table (``link``, ``backlog_packets``, ``backlog_bytes``).
        links: a links table with ``link`` and ``role``.
    """
    roles = dict(zip(links["link"].astype(int), links["role"].astype(str)))
    q = queues.assign(role=queues["link"].astype(int).map(roles))
    rows = []
    for role, group in q.groupby("role", sort=False):
        p = group["backlog_packets"].to_numpy(dtype=float)
        by = group["backlog_bytes"].to_numpy(dtype=float)
        rows.append({"role": role, "links": int(group["link"].nunique()), "samples": int(p.size),
                     "backlog_p50_packets": _percentile(p, 50),
                     "backlog_p99_packets": _percentile(p, 99),
                     "backlog_max_packets": float(np.nanmax(p)) if p.size else math.nan,
                     "backlog_p99_bytes": _percentile(by, 99)})
    return pd.DataFrame(rows, columns=["role", "links", "samples", "backlog_p50_packets",
                                       "backlog_p99_packets", "backlog_max_packets",
                                       "backlog_p99_bytes"])


def _key(label: str) -> str:
    """A size bucket or role as part of a column name (``<100KB`` → ``lt100KB``)."""
    return label.replace("<", "lt").replace(">=", "ge").replace("-", "_").replace(">", "to")


def run_summary(flows: pd.DataFrame, links: pd.DataFrame, queues: pd.DataFrame | None,
                duration_s: float) -> dict[str, float]:
    """The data-center numbers of one run, for its row in summary.parquet, only where they mean
    something: nothing for a run of bulk flows on single-path roles (a classic dumbbell).

    With finite flows: ``fct_slowdown_p50``, ``fct_slowdown_p99``, ``flows_finite``,
    ``flows_unfinished``, and ``fct_slowdown_p50_<bucket>``/``fct_slowdown_p99_<bucket>`` per
    non-empty size bucket (``lt100KB``, ``100KB_1MB``, ``1MB_10MB``, ``ge10MB``); then also
    ``utilization_mean_<role>`` and ``queue_p50_packets_<role>``/``queue_p99_packets_<role>``
    per link role. With multipath roles (any role not in :data:`SINGLE_PATH_ROLES` with ≥ 2
    links): ``ecmp_max_over_mean_<role>`` and ``ecmp_cv_<role>``, and the per-role numbers.
    """
    out: dict[str, float] = {}
    table = slowdown_table(flows)
    balance = ecmp_balance(links) if "role" in links.columns else pd.DataFrame()
    if table.empty and balance.empty:
        return out
    if not table.empty:
        for row in slowdown_by_bucket(table).to_dict("records"):
            suffix = "" if row["size_bucket"] == "all" else f"_{_key(row['size_bucket'])}"
            out[f"fct_slowdown_p50{suffix}"] = row["slowdown_p50"]
            out[f"fct_slowdown_p99{suffix}"] = row["slowdown_p99"]
            if row["size_bucket"] == "all":
                out["flows_finite"] = float(row["flows"])
                out["flows_unfinished"] = float(row["unfinished"])
    for row in balance.to_dict("records"):
        out[f"ecmp_max_over_mean_{row['role']}"] = row["max_over_mean"]
        out[f"ecmp_cv_{row['role']}"] = row["cv"]
    if "role" in links.columns:
        for row in utilization_by_role(links, duration_s).to_dict("records"):
            out[f"utilization_mean_{row['role']}"] = row["utilization_mean"]
        if queues is not None and len(queues):
            for row in queue_by_role(queues, links).to_dict("records"):
                out[f"queue_p50_packets_{row['role']}"] = row["backlog_p50_packets"]
                out[f"queue_p99_packets_{row['role']}"] = row["backlog_p99_packets"]
    return out
