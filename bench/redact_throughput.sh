#!/usr/bin/env bash
# Throughput of the redaction layer (redact::clean, release) on a generated
# log-like corpus with declared secrets known (examples/redact_throughput.rs).
# Usage: bench/redact_throughput.sh [MB] [CHUNK_BYTES]   (env: CARGO_TARGET_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build --release --quiet --example redact_throughput
BIN="$CARGO_TARGET_DIR/release/examples/redact_throughput"
"$BIN" "${1:-16}" "${2:-65536}"
"$BIN" "${1:-16}" 256
