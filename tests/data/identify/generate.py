"""Regenerate the kernel-backend traces of this directory (needs root; ~12 minutes).

Each trace is one Linux TCP flow (reno, cubic or bbr, the kernel's own modules) alone on a
single emulated link (the relay: rate, one-way delay, drop-tail buffer in BDPs, random loss),
run for 18 s with a 10 ms sample interval; the flow's samples table is kept, trimmed to the
columns ``ccarena identify`` reads, as ``<name>.parquet``, and its path is a row of index.csv
(with its set: ``development``, looked at while the features were designed, or ``held-out``,
made after the method was frozen).
These are measurements, not expected outputs: tests/python/test_identify.py identifies them.

    PYTHONPATH=python python3 tests/data/identify/generate.py [--force]

Traces already there are kept unless ``--force``.
"""

from __future__ import annotations

import csv
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator

import pandas as pd

HERE = Path(__file__).resolve().parent
COLUMNS = ["time_s", "goodput_bps", "cwnd_bytes", "srtt_s", "retransmits"]
# (flavor, rate Mbit/s, base RTT ms, buffer in BDP, random loss %): rates 10-100 Mbit/s, RTTs
# 10-100 ms, buffers 0.5-2 BDP, loss 0-1 %, each flavor on a different mix.
TRACES = [
    ("reno", 10, 20, 1.0, 0.0), ("reno", 50, 60, 0.5, 0.1), ("reno", 100, 10, 2.0, 0.0),
    ("reno", 20, 100, 1.5, 0.5), ("reno", 30, 40, 1.0, 1.0),
    ("cubic", 20, 40, 0.5, 0.0), ("cubic", 100, 20, 1.0, 0.1), ("cubic", 10, 100, 2.0, 0.0),
    ("cubic", 50, 10, 1.5, 0.5), ("cubic", 30, 60, 1.0, 1.0),
    ("bbr", 50, 20, 1.0, 0.0), ("bbr", 10, 60, 2.0, 0.1), ("bbr", 100, 40, 0.5, 0.0),
    ("bbr", 20, 10, 1.5, 1.0), ("bbr", 30, 100, 1.0, 0.5),
]
"""The development set: looked at while the features were designed."""
HELD_OUT = [
    ("reno", 40, 30, 0.75, 0.0), ("reno", 15, 80, 1.25, 0.2), ("reno", 80, 15, 1.0, 0.05),
    ("reno", 25, 50, 2.0, 0.3),
    ("cubic", 40, 80, 1.0, 0.05), ("cubic", 15, 15, 2.0, 0.0), ("cubic", 80, 50, 0.75, 0.2),
    ("cubic", 25, 30, 1.25, 0.8),
    ("bbr", 40, 50, 1.25, 0.2), ("bbr", 15, 30, 0.75, 0.0), ("bbr", 80, 80, 2.0, 0.05),
    ("bbr", 25, 15, 1.0, 0.8),
]
"""The held-out set: made after the method was frozen, only identified (never tuned on)."""
SCENARIO = """
name = "{name}"
duration = "18s"
seed = {seed}
[topology]
kind = "single_link"
link = {{ rate = "{rate}Mbps", delay = "{delay}ms", loss = "{loss}%", queue = {{ limit = "{limit}pkt" }} }}
[[flows]]
from = "a"
to = "b"
flavor = "{flavor}"
[output]
sample_interval = "10ms"
"""


FRAME_BYTES = 1514
"""Bytes a full-size packet takes in the buffer (an Ethernet frame), as the buffer sizes count it."""


def buffer_packets(rate: int, rtt: int, bdp: float) -> int:
    """The drop-tail buffer of a path in packets: ``bdp`` times the bandwidth-delay product of
    ``rate`` Mbit/s and ``rtt`` ms, in :data:`FRAME_BYTES` packets, at least 4."""
    return max(4, round(bdp * rate * 1e6 * rtt * 1e-3 / 8 / FRAME_BYTES))


def held_out_missing(out: Path, suffix: str,
                     first_seed: int) -> Iterator[tuple[int, str, int, int, float, float, str, Path]]:
    """Each held-out path (:data:`HELD_OUT`) whose file ``out/<name><suffix>`` is not there yet
    (every one when ``--force`` is on the command line), as (seed, flavor, rate Mbit/s, RTT ms,
    buffer BDP, loss %, name, file); seeds count from ``first_seed`` in the list's order. Makes
    ``out`` if need be."""
    out.mkdir(exist_ok=True)
    for seed, (flavor, rate, rtt, bdp, loss) in enumerate(HELD_OUT, start=first_seed):
        name = name_of(flavor, rate, rtt, bdp, loss)
        path = out / f"{name}{suffix}"
        if not path.exists() or "--force" in sys.argv:
            yield seed, flavor, rate, rtt, bdp, loss, name, path


def name_of(flavor: str, rate: int, rtt: int, bdp: float, loss: float) -> str:
    """The trace's file name: flavor and path, e.g. ``cubic-20M-40ms-0.5bdp-0loss``."""
    return f"{flavor}-{rate}M-{rtt}ms-{bdp:g}bdp-{loss:g}loss"


def main() -> None:
    rows = []
    runs = ([("development", i, t) for i, t in enumerate(TRACES, start=1)]
            + [("held-out", i, t) for i, t in enumerate(HELD_OUT, start=101)])
    for role, seed, (flavor, rate, rtt, bdp, loss) in runs:
        name = name_of(flavor, rate, rtt, bdp, loss)
        limit = buffer_packets(rate, rtt, bdp)
        rows.append({"trace": name, "set": role, "flavor": flavor, "rate_mbps": rate, "rtt_ms": rtt,
                     "buffer_bdp": bdp, "buffer_pkt": limit, "loss_percent": loss})
        if (HERE / f"{name}.parquet").exists() and "--force" not in sys.argv:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            toml = Path(tmp) / "s.toml"
            toml.write_text(SCENARIO.format(name=name, seed=seed, rate=rate, delay=rtt / 2,
                                            loss=loss, limit=limit, flavor=flavor))
            subprocess.run([sys.executable, "-m", "ccarena", "run", str(toml), "--backend",
                            "kernel", "--out", f"{tmp}/out", "-q", "--no-report"], check=True)
            run = next((Path(tmp) / "out" / "runs").iterdir())
            samples = pd.read_parquet(run / "samples.parquet")
        samples[COLUMNS].to_parquet(HERE / f"{name}.parquet", compression="zstd", index=False)
        print(name, flush=True)
    with open(HERE / "index.csv", "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main()
