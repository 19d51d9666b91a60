#!/usr/bin/env bash
# Sharding cost: expand + shard (`plangate shard`, which loads, checks and
# expands the plan, then partitions it) and merge (`plangate merge` of every
# shard's report) for plans of 10,000 and 100,000 expanded steps.
#
#   bash bench/shard.sh                  # SIZES="10000 100000", JOBS=16
#   SIZES=10000 JOBS=64 bash bench/shard.sh
#
# The plan: components of one plain step and a matrix template of 33
# expansions depending on it (34 steps each: ~300 components for 10k,
# ~3,000 for 100k). Shard reports come from `run --dry-run --shard i/N`
# (setup, not timed): merge joins real reports with every step in them.
set -euo pipefail
SIZES=${SIZES:-"10000 100000"}
JOBS=${JOBS:-16}
root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
bin="${CARGO_TARGET_DIR:-$root/target}/release/plangate"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

now() { date +%s.%N; }
secs() { python3 -c "print(f'{$2 - $1:.3f}')"; }

for n in $SIZES; do
  plan="$work/plan-$n.yaml"
  python3 - "$n" "$plan" <<'PY'
import sys
n, path = int(sys.argv[1]), sys.argv[2]
comps = max(1, round(n / 34))
vals = ", ".join(str(i) for i in range(33))
with open(path, "w") as f:
    f.write(f"version: 1\nid: bench-shard-{n}\npolicy: {{risk_tolerance: low}}\nsteps:\n")
    for c in range(comps):
        f.write(f"  - {{id: r{c}, tool: bash, parameters: {{command: 'true'}}}}\n")
        f.write(f"  - {{id: m{c}, tool: bash, dependencies: [r{c}], matrix: {{k: [{vals}]}}, parameters: {{command: 'true'}}}}\n")
PY
  ws="$work/ws-$n"; mkdir -p "$ws"
  t0=$(now)
  "$bin" shard "$plan" --jobs "$JOBS" --format json > "$work/part-$n.json" 2> "$work/shard-$n.err"
  t1=$(now)
  steps=$(python3 -c "import json;d=json.load(open('$work/part-$n.json'));print(d['steps'], d['components'], d['count'])")
  reports=()
  for i in $(seq 1 "$JOBS"); do
    "$bin" run "$plan" --workspace "$ws" --out "$work/out-$n-$i" --dry-run --quiet --shard "$i/$JOBS" > /dev/null 2>&1 || true
    reports+=("$work/out-$n-$i/report.json")
  done
  t2=$(now)
  "$bin" merge "${reports[@]}" --out "$work/merged-$n" --quiet
  t3=$(now)
  # shellcheck disable=SC2086 # split "steps components shards" into $1 $2 $3 on purpose
  set -- $steps
  echo "steps=$1 components=$2 shards=$3: expand+shard $(secs "$t0" "$t1") s, merge $(secs "$t2" "$t3") s, total $(python3 -c "print(f'{($t1-$t0)+($t3-$t2):.3f}')") s"
done
