#!/usr/bin/env bash
# Run every fuzz target for SECONDS_PER_TARGET seconds each (default 60).
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
# Crashes land in fuzz/artifacts/<target>/ (ignored by git): copy each into
# fuzz/regressions/<target>/, where `cargo test` replays it (tests/integration/fuzz_regressions.rs).
set -uo pipefail
cd "$(dirname "$0")" || exit 1
secs=${SECONDS_PER_TARGET:-60}
status=0
for t in $(cargo +nightly fuzz list); do
  mkdir -p "corpus/$t"
  # The seed corpus is kept in the repository (fuzz/seeds/<target>); runs grow corpus/ locally.
  [ -d "seeds/$t" ] && cp -n seeds/"$t"/* "corpus/$t/" 2>/dev/null
  echo "== $t ($secs s)"
  if cargo +nightly fuzz run "$t" "corpus/$t" -- -max_total_time="$secs" -max_len=65536 > "/tmp/fuzz-$t.log" 2>&1; then
    grep -E "^Done [0-9]+ runs" "/tmp/fuzz-$t.log" || tail -n 2 "/tmp/fuzz-$t.log"
  else
    status=1
    echo "FAILED: see /tmp/fuzz-$t.log"; grep -E "panicked|ERROR|SUMMARY|Test unit written" "/tmp/fuzz-$t.log" | head -n 5
  fi
done
exit $status
