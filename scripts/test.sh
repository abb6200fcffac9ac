#!/usr/bin/env bash
# Install everything the tests need, then run every test: Rust (cargo nextest) and Python (pytest).
# This is the README's test command; .ci/run calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

# The kernel backend's tests drive the real Linux stack: iproute2 (ip, tc, ss), ethtool, nftables,
# iperf3 and ping come from Debian; the report tests look at pages in headless Chromium. Install only what is missing, so a prepared machine starts at once.
need=()
for pair in ip:iproute2 tc:iproute2 ss:iproute2 ethtool:ethtool nft:nftables iptables:iptables \
            iperf3:iperf3 ping:iputils-ping chromium:chromium; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || need+=("${pair##*:}")
done
if ((${#need[@]})); then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends $(printf '%s\n' "${need[@]}" | sort -u) >/dev/null
fi

# Rust tests run in release: the simulator's behaviour tests simulate minutes of traffic.
cargo nextest --version >/dev/null 2>&1 || cargo install --locked cargo-nextest
python3 -m pip install --quiet --upgrade pip >/dev/null
python3 -m pip install --quiet -e ".[test]"
cargo nextest run --release --workspace --exclude ccarena-py --no-fail-fast
python3 -m pytest -q
