"""Regenerate the iperf3 traces of ``iperf3/`` (needs root and iperf3; ~5 minutes).

Each trace is one real iperf3 3.12 test (``iperf3 -c … -J -t 18 -i 0.1 -C <flavor>``: Linux's own
reno, cubic or bbr module) between two network namespaces joined through ccarena's relay, which
emulates the same paths as the held-out samples tables of this directory (``HELD_OUT`` of
generate.py: rate, one-way delay = RTT/2, drop-tail buffer in BDPs, random loss both ways). The
client's JSON is kept as iperf3 printed it, only without its indentation, as
``iperf3/<name>.json``. These are measurements, made after identify's method was frozen and only
identified, never tuned on (tests/python/test_identify.py).

    PYTHONPATH=python python3 tests/data/identify/generate_iperf3.py [--force]

Traces already there are kept unless ``--force``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from ccarena.backends.kernel.testbed import RelayTestbed, link_config

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from generate import buffer_packets, held_out_missing  # noqa: E402  (the held-out paths)

OUT = HERE / "iperf3"
DURATION_S = 18
INTERVAL_S = 0.1


def main() -> None:
    """Write ``iperf3/<name>.json`` for each held-out path that has none (every one with
    ``--force``), printing each name as it is done.

    Raises:
        RuntimeError: the relay did not start, or iperf3 failed or printed no JSON.
    """
    for seed, flavor, rate, rtt, bdp, loss, name, path in held_out_missing(OUT, ".json", 201):
        limit = buffer_packets(rate, rtt, bdp)
        config = link_config(rate_bps=rate * 1_000_000, delay_ns=rtt * 1_000_000 // 2,
                             limit_packets=limit, loss=loss / 100, seed=seed)
        with tempfile.TemporaryDirectory() as tmp, RelayTestbed(f"ccid{os.getpid()}") as testbed:
            relay = testbed.start_relay(config, Path(tmp))
            client, _ = testbed.iperf(5201, ["-t", str(DURATION_S), "-i", str(INTERVAL_S), "-C", flavor],
                                      timeout_s=DURATION_S + 30)
            relay.stop()
        path.write_text(json.dumps(client, separators=(",", ":")) + "\n")
        print(name, flush=True)


if __name__ == "__main__":
    main()
