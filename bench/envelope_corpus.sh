#!/usr/bin/env bash
# Issue 27: prints the envelope corpus counts (exact accepts, wrong accepts, rejects per group).
# Usage: bash bench/envelope_corpus.sh   (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
cargo test --quiet --test integration guard_envelope_corpus -- --nocapture --test-threads=1
