#!/usr/bin/env bash
# Install everything the tests need, then run every test: Rust (cargo nextest) and Python (pytest).
# This is the README's test command; .ci/run calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

# Rust tests run in release: the simulator's behaviour tests simulate minutes of traffic.
cargo nextest --version >/dev/null 2>&1 || cargo install --locked cargo-nextest
python3 -m pip install --quiet --upgrade pip >/dev/null
python3 -m pip install --quiet -e ".[test]"
cargo nextest run --release --workspace --exclude ccarena-py --no-fail-fast
python3 -m pytest -q
