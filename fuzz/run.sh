#!/usr/bin/env bash
# Run every fuzz target for SECONDS each (default 60). Needs the nightly
# toolchain and cargo-fuzz (`cargo install cargo-fuzz`). Crashes land in
# fuzz/artifacts/<target>/; turn each into a regression test.
set -euo pipefail
cd "$(dirname "$0")"
secs=${SECONDS_PER_TARGET:-60}
for t in $(cargo +nightly fuzz list); do
  mkdir -p "corpus/$t"
  echo "== $t ($secs s)"
  cargo +nightly fuzz run "$t" "corpus/$t" -- -max_total_time="$secs" -max_len=65536 2>&1 | tail -n 3
done
