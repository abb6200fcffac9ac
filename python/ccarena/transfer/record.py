"""A transfer's record for people (a table) and scripts (JSON), with the quantities of a
simulated flow: goodput, retransmissions, RTT percentiles, cwnd samples, and the sender's CPU
cost (``sender_cpu_s``, ``cpu_mhz``, ``cpu_percent``, ``mhz_per_mbps``: None where unmeasured)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.table import Table


def human_bytes(n: float) -> str:
    """``n`` bytes as ``12.3 MB`` (decimal units)."""
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def cpu_text(record: dict[str, Any]) -> str:
    """The sending thread's CPU: ``0.41 s (12.3 % of a core), 1.05 MHz/Mbps`` (seed 001's
    cycles per bit), or ``not measured``."""
    cpu_s = record.get("sender_cpu_s")
    if cpu_s is None:
        return "not measured"
    text = f"{cpu_s:.3f} s ({record.get('cpu_percent') or 0:.1f} % of a core)"
    if record.get("mhz_per_mbps") is not None:
        text += f", {record['mhz_per_mbps']:.3g} MHz/Mbps at {record['cpu_mhz']:.0f} MHz"
    return text


def record_json(record: dict[str, Any]) -> str:
    """The record as one JSON document (cwnd samples as ``[t_s, cwnd_bytes]`` pairs)."""
    return json.dumps(record, sort_keys=True)


def record_table(record: dict[str, Any]) -> Table:
    """The record as a two-column table."""
    from rich.table import Table

    rtt = record["rtt"]
    table = Table(title=f"{record['name']} → {record['peer']}", show_header=False)
    table.add_column("quantity", style="bold")
    table.add_column("value")
    rows = [
        ("flavor / recovery", f"{record['flavor']} / {record['recovery']}"),
        ("file", human_bytes(record["file_bytes"])),
        ("sent this run", human_bytes(record["stream_bytes"])),
        ("resumed (already held)", human_bytes(record["resumed_bytes"])),
        ("duration", f"{record['duration_s']:.2f} s"),
        ("goodput", f"{record['goodput_bps'] / 1e6:.1f} Mbit/s"),
        ("retransmissions", f"{record['retransmissions']} segments "
                            f"({human_bytes(record['bytes_retransmitted'])})"),
        ("RTOs / fast recoveries", f"{record['rto_count']} / {record['fast_recoveries']}"),
        ("RTT min / p50 / p90 / p99 / max",
         " / ".join(f"{rtt[k]:.2f}" for k in ("min_ms", "p50_ms", "p90_ms", "p99_ms", "max_ms"))
         + " ms"),
        ("cwnd samples", str(len(record["cwnd_samples"]))),
        ("sender CPU", cpu_text(record)),
        ("SHA-256 (verified)", record["sha256"]),
    ]
    for k, v in rows:
        table.add_row(k, v)
    return table
