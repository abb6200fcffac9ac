"""Regenerate the packet-capture traces of ``pcap/`` (needs root, mergecap; ~5 minutes).

Each trace is one Linux TCP flow (the kernel's own reno, cubic or bbr) on the kernel backend over
the held-out set's paths (``HELD_OUT`` of generate.py), captured as a user of ccarena captures a
sender: a one-pair dumbbell whose bottleneck is the path (rate, one-way delay = RTT/2, drop-tail
buffer in BDPs, random loss) behind 1 Gbit/s, zero-delay access links, ``[output] pcap =
["left0"]`` (the relay writes both directions of the sender's access link, headers only), the two
files merged by ``mergecap`` as a tcpdump on the host would have written them, and imported by
``ccarena import pcap`` (bytes in flight for cwnd, RTT from data/ACK matching, 0.1 s samples).
The raw captures are 2–8 MB each, too large to keep; what is kept is the import's samples table,
trimmed to the columns ``ccarena identify`` reads (``cwnd_bytes``: the import's bytes in
flight), as ``pcap/<name>.parquet`` (identify reads the capture and its import the same way:
``ccarena identify sender.pcap`` answers as ``ccarena identify pcap/<name>.parquet``). These
are measurements, made after identify's method was frozen and only identified, never tuned on
(tests/python/test_identify.py).

    PYTHONPATH=python python3 tests/data/identify/generate_pcap.py [--force]

Traces already there are kept unless ``--force``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from generate import COLUMNS, buffer_packets, held_out_missing  # noqa: E402  (the held-out paths)

OUT = HERE / "pcap"
SCENARIO = """
name = "{name}"
duration = "18s"
seed = {seed}
[topology]
kind = "dumbbell"
pairs = 1
bottleneck = {{ rate = "{rate}Mbps", delay = "{delay}ms", loss = "{loss}%", queue = {{ limit = "{limit}pkt" }} }}
access = {{ rate = "1Gbps", delay = "0ms" }}
[[flows]]
from = "left0"
to = "right0"
flavor = "{flavor}"
[output]
sample_interval = "10ms"
pcap = ["left0"]
"""


def main() -> None:
    """Write ``pcap/<name>.parquet`` for each held-out path that has none (every one with
    ``--force``), printing each name as it is done.

    Raises:
        RuntimeError: mergecap is not installed.
        subprocess.CalledProcessError: the run, the merge or the import failed.
    """
    mergecap = shutil.which("mergecap")
    if mergecap is None:
        raise RuntimeError("mergecap is not installed (Debian package wireshark-common)")
    for seed, flavor, rate, rtt, bdp, loss, name, path in held_out_missing(OUT, ".parquet", 301):
        limit = buffer_packets(rate, rtt, bdp)
        with tempfile.TemporaryDirectory() as tmp:
            toml = Path(tmp) / "s.toml"
            toml.write_text(SCENARIO.format(name=name, seed=seed, rate=rate, delay=rtt / 2,
                                            loss=loss, limit=limit, flavor=flavor))
            ccarena = [sys.executable, "-m", "ccarena"]
            subprocess.run([*ccarena, "run", str(toml), "--backend", "kernel", "--out", f"{tmp}/out",
                            "-q", "--no-report"], check=True)
            run = next((Path(tmp) / "out" / "runs").iterdir())
            merged = Path(tmp) / f"{name}.pcap"
            captures = sorted((run / "pcap").glob("*.pcap"))
            subprocess.run([mergecap, "-F", "pcap", "-w", str(merged), *map(str, captures)], check=True)
            subprocess.run([*ccarena, "import", "pcap", str(merged), "--out", f"{tmp}/imported"], check=True,
                           capture_output=True)
            imported = next((Path(tmp) / "imported" / "runs").iterdir())
            samples = pd.read_parquet(imported / "samples.parquet")
        samples[COLUMNS].to_parquet(path, compression="zstd", index=False)
        print(name, flush=True)


if __name__ == "__main__":
    main()
