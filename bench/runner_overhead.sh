#!/usr/bin/env bash
# Runner overhead: plangate running plans of N trivial steps (`true`), as a
# chain and as a fan-out, against a shell loop that spawns `sh -c true` N
# times, in the same run. Prints times, ratios and peak memory.
#
#   bash bench/runner_overhead.sh            # N=1000, 5 runs each (hyperfine if installed)
#   N=5000 RUNS=3 bash bench/runner_overhead.sh
#
# Needs: hyperfine (apt install hyperfine) for the timings, GNU time
# (apt install time) for peak memory. Without hyperfine it times with `date`.
set -euo pipefail
N=${N:-1000}
RUNS=${RUNS:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
bin="${CARGO_TARGET_DIR:-$root/target}/release/plangate"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

gen() { # gen KIND N FILE MAX_PARALLEL
  python3 - "$1" "$2" "$3" "$4" <<'PY'
import sys
kind, n, path, par = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
with open(path, "w") as f:
    f.write(f"version: 1\nid: bench-{kind}\npolicy: {{risk_tolerance: low, max_parallel: {par}}}\nsteps:\n")
    f.write("  - {id: s0, tool: bash, parameters: {command: 'true'}}\n")
    for i in range(1, n):
        dep = f"s{i-1}" if kind == "chain" else "s0"
        f.write(f"  - {{id: s{i}, tool: bash, dependencies: [{dep}], parameters: {{command: 'true'}}}}\n")
PY
}
gen chain "$N" "$work/chain.yaml" 1
gen fanout "$N" "$work/fanout.yaml" 1
gen fanout "$N" "$work/fanout2.yaml" 2

run_pg() { "$bin" run "$1" --workspace "$work" --out "$work/out" --quiet; }
export -f run_pg; export bin work
shell_loop="i=0; while [ \$i -lt $N ]; do sh -c true; i=\$((i+1)); done"
bash_loop="i=0; while [ \$i -lt $N ]; do bash --noprofile --norc -eo pipefail -c true; i=\$((i+1)); done"

echo "== runner overhead: $N trivial steps, $RUNS runs each, $(nproc) cores"
declare -A mean
if command -v hyperfine >/dev/null; then
  hyperfine --runs "$RUNS" --warmup 1 --export-json "$work/h.json" -N \
    -n "sh loop" "sh -c '$shell_loop'" \
    -n "bash loop" "sh -c '$bash_loop'" \
    -n "plangate chain" "$bin run $work/chain.yaml --workspace $work --out $work/out --quiet" \
    -n "plangate fan-out" "$bin run $work/fanout.yaml --workspace $work --out $work/out --quiet" \
    -n "plangate fan-out x2" "$bin run $work/fanout2.yaml --workspace $work --out $work/out --quiet" >/dev/null
  while IFS=$'\t' read -r name m; do mean[$name]=$m; done < <(python3 -c "
import json
for r in json.load(open('$work/h.json'))['results']:
    print(r['command'] + '\t' + str(r['mean']))")
else
  t() { local s e; s=$(date +%s%N); for _ in $(seq "$RUNS"); do "$@" >/dev/null; done; e=$(date +%s%N); python3 -c "print(($e-$s)/1e9/$RUNS)"; }
  mean["sh loop"]=$(t sh -c "$shell_loop")
  mean["bash loop"]=$(t sh -c "$bash_loop")
  mean["plangate chain"]=$(t run_pg "$work/chain.yaml")
  mean["plangate fan-out"]=$(t run_pg "$work/fanout.yaml")
  mean["plangate fan-out x2"]=$(t run_pg "$work/fanout2.yaml")
fi
base=${mean["sh loop"]}
for k in "sh loop" "bash loop" "plangate chain" "plangate fan-out" "plangate fan-out x2"; do
  python3 -c "print(f'{\"$k\":<22} {${mean[$k]}:8.3f} s   {${mean[$k]}/$base:5.2f}x sh loop   {${mean[$k]}/${mean["bash loop"]}:5.2f}x bash loop')"
done

echo "== peak memory (chain), flat in the number of steps?"
if [ -x /usr/bin/time ]; then
  for n in 100 1000 5000; do
    gen chain "$n" "$work/c$n.yaml" 1
    kb=$( { /usr/bin/time -f "%M" "$bin" run "$work/c$n.yaml" --workspace "$work" --out "$work/out$n" --quiet; } 2>&1 | tail -1)
    echo "steps=$n peak_rss=${kb} KB"
  done
else
  echo "GNU time not installed (apt install time): skipped"
fi
