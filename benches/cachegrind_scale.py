#!/usr/bin/env python3
"""Cache misses per bottleneck packet of the scale bench's dumbbells, by flow count (issue 35).

Runs `benches/scale.rs` (bench profile) under valgrind's cache simulator (callgrind with
`--cache-sim=yes`, the same simulation as cachegrind's, collecting only inside
`Simulation::run_until`: the engine alone, without building the spec or the result tables) for
each dumbbell and prints, per bottleneck packet (departures of link 0, the forward
bottleneck): instructions (Ir), data reads (Dr), D1 misses (read + write) and last-level misses
(read + write), then the same split by phase: event queue, link + qdisc (and routing), sender
(transport sender and congestion control), receiver, engine glue (dispatch, endpoints, RTT
histogram), samplers, allocator and memcpy, other. The counts are deterministic, so two
builds compare exactly where wall time on a shared machine does not.

The phase of an instruction is the source file its debug line names (inlined code keeps its
own file); code inlined from the standard library (`/rustc/...`) goes by the function it was
inlined into. With fat LTO most of the engine is inlined into `Simulation::run_until`, so the
standard library's share of it (VecDeque, Vec, moves of packets) shows as "engine (std inlined)".

The caches simulated are fixed, not the host's (valgrind 3.19 reads this VM's L3 as 256 MB
direct-mapped): D1 32 KiB 8-way, LL 32 MiB 16-way (this machine's L3), 64-byte lines.

Usage:
    python3 benches/cachegrind_scale.py [--duration-ms 1000] [--flows 1 10 100 1000 10000]
        [--bench-exe PATH] [--keep DIR]

Needs valgrind; builds the bench with `cargo bench --no-run` unless `--bench-exe` is given
(set CARGO_TARGET_DIR as for any build). Slow: valgrind runs about 50x slower than native, so
10,000 flows over 1 simulated second take a few minutes.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
D1 = "32768,8,64"
LL = "33554432,16,64"
EVENTS = ("Ir", "Dr", "D1mr", "DLmr", "Dw", "D1mw", "DLmw")
PHASES = (
    "event queue",
    "link+qdisc",
    "sender",
    "receiver",
    "engine glue",
    "engine (std inlined)",
    "samplers",
    "results",
    "build",
    "alloc+memcpy",
    "other",
)


def bench_exe() -> str:
    """Build the scale bench (bench profile) and return its executable's path."""
    out = subprocess.run(
        ["cargo", "bench", "-p", "ccarena-sim", "--bench", "scale", "--no-run", "--message-format=json"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    for line in out.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg.get("executable") and msg["target"]["name"] == "scale":
            return msg["executable"]
    sys.exit("cachegrind_scale: cargo built no scale bench executable; fix: run the cargo command by hand")


def phase(path: str, function: str) -> str:
    """The phase of code from source file `path` inlined into `function`."""
    f = function
    if "/crates/sim/src/event.rs" in path:
        return "event queue"
    if any(s in path for s in ("/crates/sim/src/link.rs", "/crates/sim/src/queue.rs", "/crates/sim/src/routing.rs", "/crates/sim/src/packet.rs")):
        return "link+qdisc"
    if "/crates/link/src/histogram.rs" in path:
        return "engine glue"
    if "/crates/link/" in path:
        return "link+qdisc"
    if "/crates/transport/src/receiver" in path:
        return "receiver"
    if "/crates/transport/" in path or "/crates/cc/" in path:
        return "sender"
    if any(s in path for s in ("/crates/sim/src/sampler.rs", "/crates/sim/src/subflows.rs")):
        return "samplers"
    if any(s in path for s in ("/crates/sim/src/results.rs", "/crates/sim/src/table.rs", "/crates/sim/src/testkit.rs")):
        return "results"
    if "/crates/sim/src/spec.rs" in path or "serde" in path or "/benches/" in path:
        return "build"
    if any(s in path for s in ("/crates/sim/src/engine.rs", "/crates/sim/src/endpoint.rs", "/crates/sim/src/flow.rs")):
        return "build" if "Simulation::new" in f or "Flow::build" in f else "engine glue"
    if re.search(r"malloc|free|realloc|memcpy|memmove|memset|_int_|cfree|alloc::alloc", f):
        return "alloc+memcpy"
    # Standard library code: by the function it was inlined into.
    if "sampler" in f or "Sampler" in f:
        return "samplers"
    if "fingerprint" in f or "results" in f or "Table" in f or "table" in f or "hash" in f.lower():
        return "results"
    if "serde" in f or "Spec" in f or "Simulation::new" in f or "Routes::compute" in f or "from_json" in f:
        return "build"
    if "transport::receiver" in f:
        return "receiver"
    if "ccarena_transport" in f or "ccarena_cc" in f:
        return "sender"
    if "ccarena_link" in f or "Link::" in f or "qdisc" in f.lower():
        return "link+qdisc"
    if "EventQueue" in f:
        return "event queue"
    if "ccarena_sim" in f:
        return "engine (std inlined)"
    return "other"


def parse(out_file: Path) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """Totals and per-phase self costs of a callgrind output file (name compression and
    inlined-file switches `fi=`/`fe=` followed; a call's inclusive cost line is skipped, so
    each cost counts once, in the function and file that spent it)."""
    events: list[str] = []
    names: dict[str, str] = {}
    total: collections.Counter = collections.Counter()
    by_phase: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    fl = path = fn = ""
    skip_next = False

    def name(value: str) -> str:
        m = re.match(r"\((\d+)\)(?: (.*))?", value)
        if not m:
            return value
        if m.group(2) is not None:
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), "")

    current = by_phase["other"]
    for line in out_file.read_text().splitlines():
        if not line:
            continue
        head = line[0]
        if head.isdigit() or head in "+-*":
            if skip_next:
                skip_next = False
                continue
            for event, v in zip(events, line.split()[1:]):
                if event in EVENTS:
                    current[event] += int(v)
                    total[event] += int(v)
        elif line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("fl="):
            fl = path = name(line[3:])
        elif line.startswith(("fi=", "fe=")):
            path = name(line[3:])
            current = by_phase[phase(path, fn)]
        elif line.startswith("fn="):
            fn = name(line[3:])
            path = fl
            current = by_phase[phase(path, fn)]
        elif line.startswith(("cfn=", "cfi=", "cfl=", "cob=", "ob=")):
            # Register compressed names; the callee does not change where self costs go.
            if "=" in line:
                name(line.split("=", 1)[1])
        elif line.startswith("calls="):
            skip_next = True
    return dict(total), {k: dict(v) for k, v in by_phase.items()}


def run(exe: str, flows: int, duration_ms: int, keep: Path) -> tuple[int, str, dict, dict]:
    """Cachegrind one dumbbell; (bottleneck packets, the bench's line, totals, phases)."""
    out = keep / f"callgrind.dumbbell-{flows}.out"
    env = dict(os.environ, SCALE_DURATION_MS=str(duration_ms))
    proc = subprocess.run(
        ["valgrind", "--tool=callgrind", "--cache-sim=yes", f"--D1={D1}", f"--LL={LL}",
         "--toggle-collect=ccarena_sim::engine::Simulation::run_until",
         f"--callgrind-out-file={out}", exe, f"dumbbell-{flows}"],
        env=env, check=True, capture_output=True, text=True,
    )
    line = next(l for l in proc.stdout.splitlines() if l.startswith("dumbbell-"))
    m = re.search(r"bottleneck (\d+) pkts", line)
    if not m:
        sys.exit("cachegrind_scale: the bench printed no bottleneck packet count; fix: rebuild benches/scale.rs")
    total, phases = parse(out)
    return int(m.group(1)), line, total, phases


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration-ms", type=int, default=1000, help="simulated ms per run (SCALE_DURATION_MS)")
    ap.add_argument("--flows", type=int, nargs="+", default=[1, 10, 100, 1000, 10_000])
    ap.add_argument("--bench-exe", help="the scale bench executable (default: build it)")
    ap.add_argument("--keep", type=Path, help="directory for callgrind's output files (default: a temporary one)")
    args = ap.parse_args()
    exe = args.bench_exe or bench_exe()
    keep = args.keep or Path(tempfile.mkdtemp(prefix="callgrind-scale-"))
    keep.mkdir(parents=True, exist_ok=True)
    print(f"valgrind cache sim (callgrind), Simulation::run_until only, {args.duration_ms} simulated ms")
    print(f"caches D1 {D1}, LL {LL} (bytes,ways,line); per bottleneck packet:")
    print(f"{'flows':>6} {'pkts':>8} {'Ir':>7} {'Dr':>6} {'D1 miss':>8} {'LL miss':>8}  results")
    rows = []
    for n in args.flows:
        pkts, line, total, phases = run(exe, n, args.duration_ms, keep)
        d1 = total["D1mr"] + total["D1mw"]
        ll = total["DLmr"] + total["DLmw"]
        digest = re.search(r"results ([0-9a-f]{16})", line)
        print(f"{n:>6} {pkts:>8} {total['Ir'] / pkts:>7.0f} {total['Dr'] / pkts:>6.0f} {d1 / pkts:>8.2f} {ll / pkts:>8.3f}  {digest.group(1) if digest else '?'}")
        rows.append((n, pkts, phases))
    for event, label in (("Ir", "instructions"), ("D1", "D1 misses"), ("LL", "LL misses")):
        print(f"\n{label} per bottleneck packet by phase")
        print(f"{'phase':<21}" + "".join(f"{n:>9}" for n, _, _ in rows))
        for p in PHASES:
            def count(ph: dict) -> int:
                c = ph.get(p, {})
                if event == "Ir":
                    return c.get("Ir", 0)
                return c.get(f"{event[0]}{event[1:]}mr" if event == "D1" else "DLmr", 0) + c.get("D1mw" if event == "D1" else "DLmw", 0)
            fmt = "{:>9.0f}" if event == "Ir" else "{:>9.2f}" if event == "D1" else "{:>9.3f}"
            print(f"{p:<21}" + "".join(fmt.format(count(ph) / pkts) for _, pkts, ph in rows))
    print(f"\ncallgrind files in {keep}")


if __name__ == "__main__":
    main()
