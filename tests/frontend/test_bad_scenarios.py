"""A corpus of bad scenarios: each gives exactly one clear line naming the field, exit status 2,
no traceback, and leaves an existing results directory byte-for-byte unchanged."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from conftest import EXAMPLES, ccarena

QUICKSTART = (EXAMPLES / "quickstart.toml").read_text()


def edit(old: str, new: str) -> str:
    assert old in QUICKSTART, old
    return QUICKSTART.replace(old, new, 1)


# (id, scenario text, a fragment the one error line must contain)
CORPUS = [
    ("unknown-flavor", edit('flavor = "cubic"', 'flavor = "cubik"'), "flows[0].flavor: unknown flavor 'cubik' (did you mean 'cubic'?)"),
    ("bad-rate-unit", edit('rate = "20Mbps"', 'rate = "20Mbsp"'), "topology.bottleneck.rate"),
    ("negative-rate", edit('rate = "20Mbps"', 'rate = "-20Mbps"'), "topology.bottleneck.rate"),
    ("zero-rate", edit('rate = "20Mbps"', 'rate = "0Mbps"'), "topology.bottleneck.rate"),
    ("loss-over-100", edit('delay = "18ms",', 'delay = "18ms", loss = "120%",'), "topology.bottleneck.loss"),
    ("negative-loss", edit('delay = "18ms",', 'delay = "18ms", loss = "-1%",'), "topology.bottleneck.loss"),
    ("bad-delay-unit", edit('delay = "18ms"', 'delay = "18 parsecs"'), "topology.bottleneck.delay"),
    ("bad-queue-limit", edit('limit = "100pkt"', 'limit = "lots"'), "topology.bottleneck.queue.limit"),
    ("unknown-node", edit('to = "right0"', 'to = "right9"'), "flows[0].to: unknown node 'right9'"),
    ("flow-to-itself", edit('to = "right0"', 'to = "left0"'), "flows[0].to"),
    ("stop-before-start", edit('start = "2s"', 'start = "5s"\nstop = "3s"'), "flows[1].stop"),
    ("unknown-top-field", edit("seed = 1", 'seed = 1\ncolour = "red"'), "colour"),
    ("unknown-flow-field", edit('flavor = "reno"', 'flavor = "reno"\nwindow = 3'), "flows[1].window"),
    ("empty-file", "", "empty"),
    ("not-toml", 'name = "x" [[[', "not valid TOML"),
    ("duplicate-flow-names", edit('flavor = "reno"', 'flavor = "reno"\nname = "cubic"'), "flows[1].name"),
    ("zero-duration", edit('duration = "20s"', 'duration = "0s"'), "duration"),
    ("bad-duration-unit", edit('duration = "20s"', 'duration = "20 fortnights"'), "duration"),
    ("unknown-topology-kind", edit('kind = "dumbbell"', 'kind = "donut"'), "topology"),
    ("zero-pairs", edit("pairs = 2", "pairs = 0"), "topology.pairs"),
    ("missing-flows", QUICKSTART.split("[[flows]]")[0], "flows"),
    ("zero-sample-interval", edit('sample_interval = "100ms"', 'sample_interval = "0ms"'), "output.sample_interval"),
    ("negative-start", edit('start = "2s"', 'start = "-2s"'), "flows[1].start"),
    ("udp-without-rate", edit('flavor = "reno"', 'flavor = "udp-cbr"'), "flows[1]"),
    ("sweep-unknown-path", QUICKSTART + '\n[sweep]\n"topology.bottleneck.colour" = ["1", "2"]\n', "sweep"),
    ("red-field-on-droptail", edit('limit = "100pkt"', 'limit = "100pkt", max_p = 0.1'),
     'topology.bottleneck.queue.max_p: is a RED setting; add discipline = "red"'),
    ("red-max-th-over-limit", edit('limit = "100pkt"', 'discipline = "red", limit = "100pkt", max_th = "150pkt"'),
     "topology.bottleneck.queue.max_th: 150 packets exceeds the queue limit"),
    ("red-thresholds-swapped", edit('limit = "100pkt"', 'discipline = "red", limit = "100pkt", min_th = "50pkt", max_th = "20pkt"'),
     "topology.bottleneck.queue.max_th: must be greater than min_th"),
    # The engine's queue rules (crates/link), named by the scenario's field.
    ("codel-target-not-below-interval", edit('limit = "100pkt"', 'discipline = "codel", limit = "100pkt", target = "200ms"'),
     "topology.bottleneck.queue.target: must be shorter than the interval (100 ms)"),
    ("ecn-threshold-over-limit", edit('limit = "100pkt"', 'limit = "100pkt", ecn_threshold = "150pkt"'),
     "topology.bottleneck.queue.ecn_threshold: must not exceed the queue limit"),
    ("ecn-threshold-on-codel", edit('limit = "100pkt"', 'discipline = "codel", limit = "100pkt", ecn_threshold = "10pkt"'),
     "topology.bottleneck.queue.ecn_threshold: is a DropTail setting; this queue marks with ecn = true"),
    ("fq-too-many-flows", edit('limit = "100pkt"', 'discipline = "fq", limit = "100pkt", flows = 70000'),
     "topology.bottleneck.queue.flows: 70000 is not in [1, 65536]"),
    ("event-unknown-link", QUICKSTART + '\n[[events]]\nat = "5s"\nlink = "r9-r0"\nset = { rate = "5Mbps" }\n',
     "events[0].link: no link 'r9-r0'"),
    ("event-after-end", QUICKSTART + '\n[[events]]\nat = "50s"\nlink = "bottleneck"\nset = { rate = "5Mbps" }\n',
     "events[0].at"),
    ("event-limit-wrong-unit", QUICKSTART + '\n[[events]]\nat = "5s"\nlink = "bottleneck"\nset = { limit = "30KB" }\n',
     "events[0].set.limit: this queue's limit is in packets"),
    ("event-set-and-increase", QUICKSTART + '\n[[events]]\nat = "5s"\nlink = "bottleneck"\nset = { rate = "5Mbps" }\nincrease = { rate = "1Mbps" }\n',
     "events[0].set: give one of set = {...} (new values) or increase"),
    ("unknown-kernel-emulation", QUICKSTART + '\n[kernel]\nemulation = "netem"\n',
     "kernel.emulation: Input should be 'auto', 'relay' or 'tc' (got 'netem')"),
    ("matrix-unknown-flavor", QUICKSTART.split("[[flows]]")[0] + '\n[matrix]\nflavors = ["cubic", "vegaz"]\n',
     "matrix.flavors[1]: unknown flavor 'vegaz'"),
    ("matrix-and-sweep", QUICKSTART.split("[[flows]]")[0] + '\n[matrix]\nflavors = ["cubic", "reno"]\n[sweep]\n"topology.bottleneck.loss" = ["0%", "1%"]\n',
     "matrix: a scenario takes [matrix] or [sweep], not both"),
    ("parts-same-name", QUICKSTART + '\n[[parts]]\nname = "a"\n[[parts]]\nname = "a"\n', "parts[1].name: 'a' names two parts"),
    ("part-bad-field", QUICKSTART + '\n[[parts]]\nname = "a"\nduration = "0s"\n', "parts[0] (a): duration"),
    # Issue 18, item 1: values that validated and then failed inside the engine.
    ("rate-beyond-u64", edit('rate = "20Mbps"', 'rate = "1e30Tbps"'), "topology.bottleneck.rate: '1e30Tbps' is too large"),
    ("rate-beyond-double", edit('rate = "20Mbps"', 'rate = "1e309Mbps"'), "topology.bottleneck.rate: '1e309Mbps' is too large"),
    ("mss-beyond-a-segment", edit('flavor = "reno"', 'flavor = "reno"\nmss = "1e12B"'), "flows[1].mss"),
    ("mss-one-megabyte", edit('flavor = "reno"', 'flavor = "reno"\nmss = "1MB"'), "flows[1].mss: 1000000 B is more than one segment"),
    ("bytes-beyond-u64", edit('flavor = "reno"', 'flavor = "reno"\nbytes = "1e30B"'), "flows[1].bytes: '1e30B' is too large"),
    ("duration-beyond-u64", edit('duration = "20s"', 'duration = "18446744073709551616ns"'), "duration: '18446744073709551616ns' is too large"),
    ("delay-beyond-u64", edit('delay = "18ms"', 'delay = "1e12s"'), "topology.bottleneck.delay: '1e12s' is too large"),
    ("limit-beyond-u64", edit('limit = "100pkt"', 'limit = "1e30B"'), "topology.bottleneck.queue.limit"),
    ("limit-1e18-packets", edit('limit = "100pkt"', 'limit = "1e18pkt"'), "topology.bottleneck.queue.limit: '1e18pkt' is too large"),
    ("flavor-param-nan", edit('flavor = "reno"', 'flavor = { name = "vegas", alpha = nan }'), "flows[1].params.alpha: Input should be a finite number"),
    ("flavor-param-inf", edit('flavor = "reno"', 'flavor = { name = "vegas", beta = inf }'), "flows[1].params.beta: Input should be a finite number"),
    ("loss-underflows-to-zero", edit('delay = "18ms",', 'delay = "18ms", loss = "1e-400%",'), "topology.bottleneck.loss: '1e-400%' is too small"),
    ("initial-cwnd-1e10", edit('flavor = "reno"', 'flavor = "reno"\ninitial_cwnd = "1e10pkt"'), "flows[1].initial_cwnd"),
    # Issue 18, item 2: tracebacks instead of one line.
    ("start-beyond-double", edit('start = "2s"', 'start = "1e400s"'), "flows[1].start: '1e400s' is too large"),
    ("deep-inline-tables", QUICKSTART + "\ndeep = " + "{ a = " * 5000 + "1" + " }" * 5000 + "\n", "nested too deeply"),
    # Issue 18, item 8: a control character in a name is shown escaped, not written raw.
    ("nul-in-name", edit('name = "quickstart"', 'name = "a\\u0000b\\u001b[2J"'), "'a\\x00b\\x1b[2J' is not a usable directory name"),
    ("sweep-grid-1e6", QUICKSTART + '\n[sweep]\n"topology.bottleneck.delay" = [' + ", ".join(f'"{i + 1}ms"' for i in range(1000))
     + ']\n"flows[0].start" = [' + ", ".join(f'"{i}ms"' for i in range(1000)) + "]\n",
     "sweep: 1000 × 1000 values × 1 repeats is more than 100,000 runs"),
    ("matrix-repeats-1e6", QUICKSTART.split("[[flows]]")[0] + '\n[matrix]\nflavors = ["cubic", "reno", "bbr", "vegas", "htcp"]\nrepeats = 10000\n',
     "matrix.repeats: 5² pairs × 10000 repeats"),
    # Issue 18, item 3: runs that would exhaust memory are refused before they start.
    ("sample-interval-1ns", edit('sample_interval = "100ms"', 'sample_interval = "1ns"'),
     "would need ~"),
    ("initial-cwnd-1e9", edit('flavor = "reno"', 'flavor = "reno"\ninitial_cwnd = "1000000000pkt"'),
     "would need ~"),
    ("deep-arrays", QUICKSTART + "\ndeep = " + "[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply"),
    # Issue 32: Multipath TCP fields.
    ("coupling-on-cubic", edit('flavor = "cubic"', 'flavor = "cubic"\nsubflows = 2\ncoupling = "lia"'),
     'flows[0].coupling: lia couples Reno\'s increase across the subflows: give flavor = "reno"'),
    ("unknown-coupling", edit('flavor = "reno"', 'flavor = "reno"\ncoupling = "wvegas2"'), "flows[1].coupling"),
    ("subflows-zero", edit('flavor = "reno"', 'flavor = "reno"\nsubflows = 0'), "flows[1].subflows"),
    ("subflows-33", edit('flavor = "reno"', 'flavor = "reno"\nsubflows = 33'), "flows[1].subflows"),
    ("subflows-on-udp", edit('flavor = "reno"', 'flavor = "udp-cbr"\nrate = "1Mbps"\nsubflows = 2'),
     "flows[1].subflows: only TCP flows take `subflows`"),
    ("subflows-on-udt", edit('flavor = "reno"', 'flavor = "udt"\nsubflows = 2'), "flows[1].subflows"),
    ("unknown-mptcp-scheduler", edit('flavor = "reno"', 'flavor = "reno"\nsubflows = 2\nscheduler = "blest"'),
     "flows[1].scheduler"),
    # Issue 33: QUIC (transport = "quic") and its fields.
    # Issue 34, item 1: [output] pcap names links or hosts of the topology.
    ("pcap-unknown-link", edit('sample_interval = "100ms"', 'sample_interval = "100ms"\npcap = ["r0->r1", "r7->*"]'),
     "output.pcap[1]: 'r7->*' names no link or host of this topology"),
    ("pcap-not-a-list", edit('sample_interval = "100ms"', 'sample_interval = "100ms"\npcap = "r0->r1"'),
     "output.pcap"),
    ("pcap-limit-too-small", edit('sample_interval = "100ms"', 'sample_interval = "100ms"\npcap = ["left0"]\npcap_max_bytes = "100B"'),
     "output.pcap_max_bytes: must be at least 1KB"),
    ("unknown-transport", edit('flavor = "reno"', 'flavor = "reno"\ntransport = "sctp"'),
     "flows[1].transport: Input should be 'tcp' or 'quic'"),
    ("quic-on-udp", edit('flavor = "reno"', 'flavor = "udp-cbr"\nrate = "1Mbps"\ntransport = "quic"'),
     "flows[1].transport: only TCP flavors take `transport` (udp-cbr is UDP)"),
    ("quic-on-udt", edit('flavor = "reno"', 'flavor = "udt"\ntransport = "quic"'),
     "flows[1].transport: only TCP flavors take `transport`"),
    ("quic-with-subflows", edit('flavor = "reno"', 'flavor = "reno"\ntransport = "quic"\nsubflows = 2'),
     "flows[1].subflows: a QUIC connection is single-path"),
    ("quic-with-recovery", edit('flavor = "reno"', 'flavor = "reno"\ntransport = "quic"\nrecovery = "prr"'),
     "flows[1].recovery: is a TCP setting and this flow runs over QUIC"),
    ("quic-with-dupthresh", edit('flavor = "reno"', 'flavor = "reno"\ntransport = "quic"\ndupthresh = 5'),
     "flows[1].dupthresh: is a TCP setting and this flow runs over QUIC"),
    ("quic-with-min-rto", edit('flavor = "reno"', 'flavor = "reno"\ntransport = "quic"\nmin_rto = "10ms"'),
     "flows[1].min_rto: is a TCP setting and this flow runs over QUIC: QUIC has a probe timeout"),
    ("quic-with-delayed-ack", edit('flavor = "reno"', 'flavor = "reno"\ntransport = "quic"\ndelayed_ack = "10ms"'),
     "flows[1].delayed_ack: is a TCP setting and this flow runs over QUIC"),
    ("quic-with-ack-every", edit('flavor = "reno"', 'flavor = "reno"\ntransport = "quic"\nack_every = 4'),
     "give ack_eliciting_threshold instead"),
    ("quic-field-without-quic", edit('flavor = "reno"', 'flavor = "reno"\nmax_ack_delay = "5ms"'),
     'flows[1].max_ack_delay: is a QUIC setting; give transport = "quic"'),
    ("quic-ack-eliciting-zero", edit('flavor = "reno"', 'flavor = "reno"\ntransport = "quic"\nack_eliciting_threshold = 0'),
     "flows[1].ack_eliciting_threshold"),
    ("quic-stream-window-below-a-packet", edit('flavor = "reno"', 'flavor = "reno"\ntransport = "quic"\nmax_stream_data = "1000B"'),
     "flows[1].max_stream_data: 1000 B is less than one packet's stream data (1437 B)"),
    ("quic-mss-without-stream-data", edit('flavor = "reno"', 'flavor = "reno"\ntransport = "quic"\nmss = "10B"'),
     "flows[1].mss: 10 B leaves a QUIC packet no stream data"),
]


def tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def existing_results(tmp_path_factory) -> Path:
    """A results directory with a finished quickstart run in it, shared by the corpus."""
    work = tmp_path_factory.mktemp("results-kept")
    scenario = work / "quickstart.toml"
    scenario.write_text(QUICKSTART.replace('duration = "20s"', 'duration = "3s"'))
    done = ccarena("run", str(scenario), "--out", "out", "-q", "--no-report", cwd=work)
    assert done.returncode == 0, done.stderr
    return work


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 20
    assert len({c[0] for c in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize("name, text, fragment", CORPUS, ids=[c[0] for c in CORPUS])
def test_bad_scenario_gives_one_clear_line_and_exit_2(existing_results: Path, name: str, text: str, fragment: str):
    before = tree_digest(existing_results / "out")
    bad = existing_results / f"{name}.toml"
    bad.write_text(text)
    for command in (("validate", str(bad)), ("run", str(bad), "--out", "out", "-q")):
        done = ccarena(*command, cwd=existing_results)
        lines = [l for l in done.stderr.splitlines() if l.strip()]
        assert done.returncode == 2, (command, done.stdout, done.stderr)
        assert len(lines) == 1, done.stderr  # one problem in each (test_terminal.py lists several)
        assert "Traceback" not in done.stderr + done.stdout
        assert fragment in lines[0], lines[0]
    assert tree_digest(existing_results / "out") == before, "a bad scenario altered stored results"


def test_a_run_over_the_engines_memory_budget_stops_with_one_line(tmp_path: Path):
    """The estimate lets the quickstart through a 100 MB budget, but the process already holds
    more (Python, pandas): the engine stops the run at its first check, and the CLI says so in one
    line with exit 2 (issue 18, item 3)."""
    scenario = tmp_path / "q.toml"
    scenario.write_text(QUICKSTART)
    done = ccarena("run", str(scenario), "--out", "out", "-q", "--no-report", "-j", "1",
                   "--max-memory", "100MB", cwd=tmp_path)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "over the memory budget of 95 MB" in lines[0] and "--max-memory" in lines[0], lines[0]
