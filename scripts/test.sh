#!/usr/bin/env bash
# Install everything the tests need, then run every test: Rust (cargo nextest) and Python (pytest).
# This is the README's test command; .ci/run calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

# The kernel backend's tests drive the real Linux stack: iproute2 (ip, tc, ss), ethtool, nftables,
# iperf3 and ping come from Debian; the report tests look at pages in headless Chromium; the pcap
# tests read the simulator's captures with tshark. Install only what is missing, so a prepared
# machine starts at once.
need=()
for pair in ip:iproute2 tc:iproute2 ss:iproute2 ethtool:ethtool nft:nftables iptables:iptables \
            iperf3:iperf3 ping:iputils-ping chromium:chromium tshark:tshark; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || need+=("${pair##*:}")
done
# The udp backend's UDT flows run the reference UDT4 (tools/udt-peer, built with g++ against libudt).
command -v g++ >/dev/null 2>&1 || need+=(g++)
test -f /usr/include/udt/udt.h || need+=(libudt-dev)
if ((${#need[@]})); then
    export DEBIAN_FRONTEND=noninteractive
    # tshark's package asks whether non-root users may capture: no (and no question asked).
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends $(printf '%s\n' "${need[@]}" | sort -u) >/dev/null
fi

# Rust tests run in release: the simulator's behaviour tests simulate minutes of traffic.
cargo nextest --version >/dev/null 2>&1 || cargo install --locked cargo-nextest
python3 -m pip install --quiet --upgrade pip >/dev/null
python3 -m pip install --quiet -e ".[test]"
# Byte-compiled once, as `pip install .` leaves the package: where PYTHONDONTWRITEBYTECODE=1 is set
# (this VM), every `python -m ccarena` a test starts would otherwise compile each module again.
python3 -m compileall -q python/ccarena >/dev/null
# The property tests (proptest in Rust, hypothesis in Python) and the fuzz runs below draw the same
# cases on every run of this command, so CI repeats what passed here; CCARENA_TEST_SEED=<n> draws others (a failing case
# proptest finds is kept in its *.proptest-regressions file and then runs first every time).
seed="${CCARENA_TEST_SEED:-1}"
PROPTEST_RNG_SEED="$seed" cargo nextest run --release --workspace --exclude ccarena-py --no-fail-fast
python3 -m pytest -q --hypothesis-seed="$seed" --durations=25

# A short fuzz run of ccarena-udp's wire decoder and of the state machines of its two listening
# services, the file receiver and the scenario sink (crates/udp/fuzz, outside the workspace; needs
# nightly). cargo-fuzz is installed only if missing.
if cargo +nightly --version >/dev/null 2>&1; then
    cargo fuzz --version >/dev/null 2>&1 || cargo install --locked cargo-fuzz
    fuzz_log=$(mktemp)
    for target in wire_decode receiver_state sink_state; do
        if ! (cd crates/udp/fuzz && cargo +nightly fuzz run -O "$target" -- -max_total_time=10 \
                -seed="$seed" -print_final_stats=1) >"$fuzz_log" 2>&1; then
            tail -n 60 "$fuzz_log"
            echo "fuzz $target: FAILED (the crashing input is under crates/udp/fuzz/artifacts/$target)"
            exit 1
        fi
        grep -E '^stat::(number_of_executed_units|average_exec_per_sec)' "$fuzz_log" | sed "s/^/fuzz $target: /" || true
    done
    rm -f "$fuzz_log"
else
    echo "fuzz: skipped (no nightly toolchain)"
fi
