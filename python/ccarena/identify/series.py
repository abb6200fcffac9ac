"""A trace → one flow's time series (:class:`FlowSeries`), the input of path estimation,
features and replay alike.

A trace is (1) a stored run directory (``samples.parquet`` and ``flows.parquet``, as every
backend writes them) or an experiment directory holding exactly one run; (2) an iperf3 ``--json``
file (:func:`ccarena.importers.iperf3.parse`); (3) a pcap or pcapng capture
(:mod:`ccarena.importers.pcap`, bytes in flight as the cwnd estimate), or a directory of the
capture files of one capture point (a run's ``pcap/`` for ``[output] pcap = ["left0"]``: both
directions of the sender's access link), merged by timestamp. The flow is chosen by
``flow``: its index in the trace's flow list or its id/name; by default the trace must hold one
TCP flow.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ccarena.errors import UserError

SERIES_COLUMNS = ("time_s", "cwnd_bytes", "srtt_s", "goodput_bps", "delivered_bytes",
                  "retransmits", "pacing_rate_bps")
"""The sample columns a trace is read for (any may be missing, except time and cwnd)."""


@dataclass
class FlowSeries:
    """One flow's samples, time-ordered, as numpy float64 arrays of one length.

    Attributes:
        time_s: sample instants, seconds from the flow's first sample.
        cwnd_bytes: congestion window (or bytes in flight for a capture), bytes.
        srtt_s: smoothed RTT, seconds (NaN where unknown).
        goodput_bps: delivery rate over the preceding interval, bit/s (NaN where unknown).
        retransmits: cumulative retransmitted packets (NaN where unknown).
        pacing_rate_bps: pacing rate, bit/s (NaN where unknown).
        mss_bytes: the flow's MSS, bytes.
        label: the flavor the trace itself names (``unknown`` when none), for display only:
            identification never reads it.
        source: what the series came from, one phrase.
        ce_packets: data packets that arrived CE-marked over the whole flow (RFC 3168 §5; the
            run's ``ce_packets`` flow column, a capture's CE codepoints), NaN when the trace
            does not say (iperf3, a samples table).
        packets_sent: data packets sent over the whole flow, NaN when unknown.
        ecn_echo_acks: ACKs carrying ECN-Echo (RFC 3168 §6.1.3) over the whole flow, NaN when
            unknown (a capture at the sender sees these, not the CE marks made past it).
    """

    time_s: np.ndarray
    cwnd_bytes: np.ndarray
    srtt_s: np.ndarray
    goodput_bps: np.ndarray
    retransmits: np.ndarray
    pacing_rate_bps: np.ndarray
    mss_bytes: float = 1448.0
    label: str = "unknown"
    source: str = ""
    ce_packets: float = math.nan
    packets_sent: float = math.nan
    ecn_echo_acks: float = math.nan

    @property
    def duration_s(self) -> float:
        """Span of the samples, seconds."""
        return float(self.time_s[-1] - self.time_s[0]) if len(self.time_s) > 1 else 0.0

    @property
    def interval_s(self) -> float:
        """Median spacing of the samples, seconds."""
        return float(np.median(np.diff(self.time_s))) if len(self.time_s) > 1 else math.nan


def from_frame(samples: Any, *, mss_bytes: float = 1448.0, label: str = "unknown",
               source: str = "", ce_packets: float = math.nan,
               packets_sent: float = math.nan, ecn_echo_acks: float = math.nan) -> FlowSeries:
    """A :class:`FlowSeries` from one flow's samples (a pandas DataFrame or a list of dicts with
    the store's sample columns, :data:`SERIES_COLUMNS`; ``goodput_bps`` may be replaced by
    ``throughput_bps`` or derived from ``delivered_bytes``), with the flow's CE-marked and sent
    packet and ECN-Echo ACK totals when the trace has them (NaN: unknown).

    Raises:
        UserError: fewer than 20 samples with a cwnd, or no ``time_s``/``cwnd_bytes`` column.
    """
    import pandas as pd

    frame = samples if isinstance(samples, pd.DataFrame) else pd.DataFrame(list(samples))
    what = source or "TRACE"
    for column in ("time_s", "cwnd_bytes"):
        if column not in frame.columns or frame[column].isna().all():
            raise UserError(f"{what}: the flow has no {column} samples; identify needs a cwnd "
                            "(or bytes-in-flight) series: give a TCP flow's trace")
    frame = frame.dropna(subset=["time_s", "cwnd_bytes"]).sort_values("time_s")
    if len(frame) < 20:
        raise UserError(f"{what}: the flow has {len(frame)} samples with a cwnd; identify needs "
                        "at least 20: give a longer trace or a shorter sample interval")

    def column(name: str) -> np.ndarray:
        if name in frame.columns:
            return frame[name].to_numpy(dtype=float, na_value=np.nan)
        return np.full(len(frame), np.nan)

    time_s = column("time_s")
    goodput = column("goodput_bps")
    if np.isnan(goodput).all() and "delivered_bytes" in frame.columns:
        delivered = column("delivered_bytes")
        goodput = np.concatenate([[np.nan], np.diff(delivered) * 8 / np.maximum(np.diff(time_s), 1e-9)])
    if np.isnan(goodput).all():
        goodput = column("throughput_bps")
    return FlowSeries(time_s=time_s - time_s[0], cwnd_bytes=column("cwnd_bytes"),
                      srtt_s=column("srtt_s"), goodput_bps=goodput,
                      retransmits=column("retransmits"), pacing_rate_bps=column("pacing_rate_bps"),
                      mss_bytes=float(mss_bytes), label=label, source=source,
                      ce_packets=_number(ce_packets), packets_sent=_number(packets_sent),
                      ecn_echo_acks=_number(ecn_echo_acks))


def _number(value: Any) -> float:
    """``value`` as a float, NaN for None, NA or anything not a number."""
    try:
        return float(value) if value is not None else math.nan
    except (TypeError, ValueError):
        return math.nan


def _pick(names: list[str], ids: list[str], flow: str | None, where: str) -> int:
    """Position of the flow ``flow`` names (an index, or an id or name) among a trace's flows.

    Raises:
        UserError: no such flow, or several flows and no ``flow``.
    """
    listing = ", ".join(f"{i}={n}" for i, n in enumerate(names[:8])) + (" …" if len(names) > 8 else "")
    if flow is None:
        if len(names) == 1:
            return 0
        raise UserError(f"--flow: {where} has {len(names)} flows ({listing}); name one by index or "
                        "name, e.g. --flow 0")
    if flow in names:
        return names.index(flow)
    if flow in ids:
        return ids.index(flow)
    if flow.lstrip("-").isdigit() and 0 <= int(flow) < len(names):
        return int(flow)
    raise UserError(f"--flow: no flow {flow!r} in {where} (flows: {listing}); give an index "
                    "or a name listed")


def _run_directory(path: Path) -> Path:
    """The run directory ``path`` names: itself, or an experiment's only run.

    Raises:
        UserError: no run there, or several runs.
    """
    if (path / "samples.parquet").is_file():
        return path
    runs = path / "runs"
    found = sorted(p for p in runs.iterdir() if (p / "samples.parquet").is_file()) if runs.is_dir() else []
    if not found:
        raise UserError(f"TRACE: {path} is neither a run directory (samples.parquet), an "
                        "experiment directory (runs/) nor a directory of captures (.pcap); give "
                        "one of them, an iperf3 JSON or a pcap")
    if len(found) > 1:
        names = ", ".join(p.name for p in found[:4]) + (" …" if len(found) > 4 else "")
        raise UserError(f"TRACE: {path} holds {len(found)} runs ({names}); give one run "
                        f"directory, e.g. {found[0]}")
    return found[0]


def _from_store(path: Path, flow: str | None) -> FlowSeries:
    """One flow of a stored run (parquet tables as every backend writes them)."""
    import pandas as pd

    from ccarena.store.verify import read_parquet

    run = _run_directory(path)
    samples = read_parquet(run / "samples.parquet").to_pandas()
    flows = (read_parquet(run / "flows.parquet").to_pandas() if (run / "flows.parquet").is_file()
             else pd.DataFrame({"flow": sorted(samples["flow"].unique())}))
    ids = [str(v) for v in flows["flow"]]
    names = [str(v) for v in flows["name"]] if "name" in flows.columns else ids
    row = flows.iloc[_pick(names, ids, flow, str(run))]
    mss = float(row["mss_bytes"]) if "mss_bytes" in flows.columns and pd.notna(row.get("mss_bytes")) else 1448.0
    label = str(row["flavor"]) if "flavor" in flows.columns else "unknown"
    own = samples[samples["flow"] == row["flow"]]
    if "start_s" in flows.columns and pd.notna(row["start_s"]):
        own = own[own["time_s"] > float(row["start_s"])]
    return from_frame(own, mss_bytes=mss, label=label, source=f"{run.name}, flow {row['flow']}",
                      ce_packets=row.get("ce_packets"), packets_sent=row.get("packets_sent"))


CAPTURE_SUFFIXES = (".pcap", ".pcapng", ".cap")
"""The file names read as packet captures."""


def _captures_in(path: Path) -> list[Path]:
    """The capture files directly in directory ``path`` (by name), sorted."""
    return sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in CAPTURE_SUFFIXES)


def _from_import(path: Path, flow: str | None, module: str) -> FlowSeries:
    """One TCP flow of a measurement file parsed by ``ccarena.importers.<module>``, or, for
    ``pcap`` and a directory ``path``, of its capture files merged by timestamp
    (:func:`ccarena.importers.pcap.parse_files`)."""
    from ccarena.importers.model import ImportProblem

    try:
        parser = importlib.import_module(f"ccarena.importers.{module}")
    except ImportError:
        raise UserError(f"TRACE: this ccarena cannot read {path.suffix} files yet (no "
                        f"ccarena.importers.{module}); give a run directory or an iperf3 JSON") from None
    try:
        run = parser.parse_files(_captures_in(path)) if path.is_dir() else parser.parse(path)
    except ImportProblem as err:
        # A file's problem reads "<file> is truncated …"; a directory's names the merge.
        raise UserError(f"TRACE: the captures in {path}: {err}" if path.is_dir()
                        else f"TRACE: {path.name} {err}") from None
    # How messages name the trace: a file by its name, a directory of captures by its path (its
    # name alone, "pcap", would not say which run's).
    where = str(path) if path.is_dir() else path.name
    flows = [f for f in run.flows if f.kind == "tcp"]
    if not flows:
        raise UserError(f"TRACE: {where} has no TCP flow; identify needs a TCP sender's trace")
    names = [f.name for f in flows]
    chosen = flows[_pick(names, names, flow, where)]
    mss = chosen.totals.get("mss_bytes") or 1448.0
    if not any(sample.get("cwnd_bytes") is not None for sample in chosen.samples):
        why = chosen.missing.get("cwnd_bytes", "the file has no cwnd or bytes-in-flight series")
        raise UserError(f"TRACE: {where}, flow {chosen.name}: no cwnd samples ({why}); "
                        "identify needs the sender's window: give a capture of both directions "
                        "(data and ACKs) or an iperf3 JSON written by the sender")
    samples = [s for s in chosen.samples if s.get("time_s", 0.0) > chosen.start_s]
    # A capture's CE codepoints are counted per flow in the import's info (pcap only).
    ecn = next((f for f in (run.info or {}).get("flows", []) if f.get("name") == chosen.name), {})
    return from_frame(samples, mss_bytes=float(mss or 1448.0), label=chosen.flavor,
                      source=f"{where}, flow {chosen.name}", ce_packets=ecn.get("ce_packets"),
                      packets_sent=chosen.totals.get("packets_sent"),
                      ecn_echo_acks=ecn.get("ece_acks"))


def load_series(trace: str | Path, flow: str | int | None = None) -> FlowSeries:
    """The series of one flow of ``trace`` (a run or experiment directory, an iperf3 JSON, a
    pcap/pcapng or a directory of the captures of one capture point), chosen by ``flow`` (index,
    id or name; None when the trace has one flow).

    Raises:
        UserError: the trace does not exist or is of no kind known, the flow is not there, or
            it has too few samples with a cwnd (the message names the field and the fix).
    """
    path = Path(trace)
    chosen = None if flow is None else str(flow)
    if not path.exists():
        raise UserError(f"TRACE: {path} does not exist; give a run directory, an iperf3 JSON "
                        "or a pcap")
    if path.is_dir():
        stored = (path / "samples.parquet").is_file() or (path / "runs").is_dir()
        if not stored and _captures_in(path):
            return _from_import(path, chosen, "pcap")
        return _from_store(path, chosen)
    suffix = path.suffix.lower()
    if suffix in CAPTURE_SUFFIXES:
        return _from_import(path, chosen, "pcap")
    if suffix == ".json":
        return _from_import(path, chosen, "iperf3")
    if suffix in (".parquet", ".csv"):
        return _from_table(path)
    raise UserError(f"TRACE: {path.name} is of no kind identify reads; give a run directory, an "
                    "iperf3 JSON (.json), a pcap (.pcap/.pcapng) or a samples table (.parquet/.csv)")


def _from_table(path: Path) -> FlowSeries:
    """A single flow's samples table saved as Parquet or CSV (store sample columns)."""
    import pandas as pd

    frame = pd.read_parquet(path) if path.suffix.lower() == ".parquet" else pd.read_csv(path)
    return from_frame(frame, source=path.name)
