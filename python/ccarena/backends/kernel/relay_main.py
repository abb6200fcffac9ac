"""The link relay's process: ``python -m ccarena.backends.kernel.relay_main CONFIG_JSON_PATH STATS_JSON_PATH``.

Run inside the relay namespace (``ip netns exec <ns> ...``). It reads the config (format in
``crates/relay/src/config.rs``), opens every pipe's sockets, prints ``ready`` on stdout once they
are bound (traffic sent after that is relayed), and forwards frames until SIGTERM/SIGINT, the
config's ``duration_ns`` or the death of its parent. A line ``start <ns>`` on stdin sets the
instant (CLOCK_MONOTONIC, ``time.monotonic_ns()``) the links' scheduled changes count from,
when the config did not give it. It then writes the stats JSON (per pipe and
direction: frames, bytes, drops, lateness percentiles, and what its pcap capture wrote if the
config asked for one; ``wall_s``) to STATS_JSON_PATH atomically (a temporary file renamed into
place), so a reader never sees half a file. Capture files are complete once it has exited.

``$CCARENA_RELAY_WORKERS`` sets how many threads serve the links (default: one per CPU; the
benchmark sets it to compare).

Exit status: 0 after writing the stats; 2 for a bad config or a missing interface (one line on
stderr naming the field); 1 when the system refused (no root, forwarding failed).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ccarena.durable_files import atomic_write_bytes

WORKERS_ENV = "CCARENA_RELAY_WORKERS"


def _announce_ready() -> None:
    print("ready", flush=True)


def _read_start_lines(set_start) -> None:
    """Pass every ``start <ns>`` line of stdin to ``set_start`` until stdin closes."""
    try:
        for line in sys.stdin:
            words = line.split()
            if len(words) == 2 and words[0] == "start" and words[1].isdigit():
                set_start(int(words[1]))
    except (OSError, ValueError):
        pass


def main(argv: list[str] | None = None) -> int:
    """Run the relay; returns the exit status."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m ccarena.backends.kernel.relay_main CONFIG_JSON_PATH STATS_JSON_PATH", file=sys.stderr)
        return 2
    config_path, stats_path = Path(args[0]), Path(args[1])
    try:
        config_json = config_path.read_text()
    except OSError as e:
        print(f"error: reading the relay config {config_path}: {e.strerror}", file=sys.stderr)
        return 2
    import threading

    from ccarena import _engine

    if sys.stdin is not None and not sys.stdin.isatty():  # never read a user's terminal
        threading.Thread(target=_read_start_lines, args=(_engine.relay_set_start,), daemon=True).start()
    workers = os.environ.get(WORKERS_ENV, "").strip()
    if workers and not (workers.isdigit() and int(workers) > 0):
        print(f"error: ${WORKERS_ENV} must be a positive integer, not '{workers}'", file=sys.stderr)
        return 2
    try:
        extra = {"workers": int(workers)} if workers else {}
        stats_json = _engine.relay_run(config_json, on_ready=_announce_ready, **extra)
    except ValueError as e:
        print(f"error: {config_path}: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    try:
        atomic_write_bytes(stats_path, stats_json.encode())
    except OSError as e:
        print(f"error: writing the relay stats {stats_path}: {e.strerror}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
