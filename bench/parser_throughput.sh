#!/usr/bin/env bash
# Throughput of parse_envelope (release) vs Python json_repair on the same files.
# Usage: bench/parser_throughput.sh   (env: BENCH_DIR, CARGO_TARGET_DIR, PY_TIMEOUT)
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_DIR=${BENCH_DIR:-/tmp/plangate-bench}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
PY_TIMEOUT=${PY_TIMEOUT:-120}
VENV=${VENV:-/tmp/json-repair-venv}

cargo build --release --quiet --example bench_envelope
BIN="$CARGO_TARGET_DIR/release/examples/bench_envelope"
"$BIN" gen "$BENCH_DIR"
FILES=(valid_100k valid_1m valid_4m tier2_100k tier2_1m tier2_4m tier2dense_100k tier2dense_1m tier2dense_4m)

echo "== plangate parse_envelope (release, median) =="
INPUTS=()
for f in "${FILES[@]}"; do INPUTS+=("$BENCH_DIR/$f.txt"); done
OURS=$("$BIN" run "${INPUTS[@]}" | sed "s/\.txt//")
echo "$OURS"

if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet json-repair
fi
echo "== python json_repair $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("json-repair"))') (timeout ${PY_TIMEOUT}s per file) =="
for f in valid_1m tier2_100k tier2_1m tier2dense_1m; do
  ours_ms=$(echo "$OURS" | awk -v f="$f" '$1==f {print $5}')
  # Timed inside Python (the parse only, not interpreter start-up).
  if py_ms=$(timeout "$PY_TIMEOUT" "$VENV/bin/python" -c '
import sys, time, json_repair
text = open(sys.argv[1], encoding="utf-8").read()
t = time.perf_counter()
json_repair.loads(text)
print("%.1f" % ((time.perf_counter() - t) * 1000))
' "$BENCH_DIR/$f.txt"); then
    printf "%-14s json_repair %10.1f ms   plangate %8s ms   ratio %8.1fx\n" "$f" "$py_ms" "$ours_ms" "$(echo "$py_ms / $ours_ms" | bc -l)"
  else
    printf "%-14s json_repair TIMEOUT (>%ss)   plangate %8s ms   ratio > %.0fx\n" "$f" "$PY_TIMEOUT" "$ours_ms" "$(echo "$PY_TIMEOUT * 1000 / $ours_ms" | bc -l)"
  fi
done
