#!/usr/bin/env bash
# Sandbox overhead: the N-step chain of trivial bash steps (`true`) run by
# plangate in each sandbox backend that works here, unsandboxed (each step
# `sandbox: false`, allowed by an operator policy with `allow_unsandboxed:
# true` and tolerance `high`), and a shell loop that
# spawns `bash -c true` N times, in the same run. Prints the mean times and
# the ratios; the target is sandboxed <= 1.5x unsandboxed.
#
#   bash bench/sandbox_overhead.sh              # N=1000, 3 runs each
#   N=200 RUNS=5 bash bench/sandbox_overhead.sh
#   PLANGATE_BIN=/tmp/plangate N=200 bash bench/sandbox_overhead.sh   # a given binary
#
# The workspace is a fresh `git init` (so the git hooks guard has the usual
# sample hooks to record and compare around every step). Uses hyperfine when
# installed, else `date`.
set -euo pipefail
N=${N:-1000}
RUNS=${RUNS:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${PLANGATE_BIN:-}" ]; then
  bin=$PLANGATE_BIN   # compare two builds: PLANGATE_BIN=/path/to/plangate
else
  cargo build --release --quiet --manifest-path "$root/Cargo.toml"
  bin="${CARGO_TARGET_DIR:-$root/target}/release/plangate"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/ws"
git -C "$work/ws" init -q

python3 - "$N" "$work/chain.yaml" "$work/bare.yaml" <<'PY'
import sys
n = int(sys.argv[1])
for path, extra in ((sys.argv[2], ""), (sys.argv[3], "sandbox: false, ")):
    with open(path, "w") as f:
        f.write("version: 1\nid: bench-sandbox\nsteps:\n")
        f.write(f"  - {{id: s0, tool: bash, parameters: {{{extra}command: 'true'}}}}\n")
        for i in range(1, n):
            f.write(f"  - {{id: s{i}, tool: bash, dependencies: [s{i-1}], parameters: {{{extra}command: 'true'}}}}\n")
PY
printf 'risk_tolerance: high\nallow_unsandboxed: true\n' > "$work/operator.yaml"

variants=("unsandboxed")
cmds=("$bin run $work/bare.yaml --workspace $work/ws --out $work/out --quiet --policy $work/operator.yaml --risk-tolerance high")
for b in bwrap landlock; do
  if "$bin" run "$work/chain.yaml" --workspace "$work/ws" --out "$work/probe-$b" --quiet \
      --sandbox-backend "$b" --steps s0 >/dev/null 2>&1; then
    variants+=("sandboxed ($b)")
    cmds+=("$bin run $work/chain.yaml --workspace $work/ws --out $work/out --quiet --sandbox-backend $b")
  else
    echo "skipped: the $b backend does not work here"
  fi
done
variants+=("bash -c true loop")
cmds+=("sh -c 'i=0; while [ \$i -lt $N ]; do bash --noprofile --norc -eo pipefail -c true; i=\$((i+1)); done'")

echo "== sandbox overhead: $N-step chain, $RUNS runs each, $(nproc) cores, $(uname -r)"
declare -A mean
if command -v hyperfine >/dev/null; then
  args=()
  for i in "${!variants[@]}"; do args+=(-n "${variants[$i]}" "${cmds[$i]}"); done
  hyperfine --runs "$RUNS" --warmup 1 --export-json "$work/h.json" -N "${args[@]}" >/dev/null
  while IFS=$'\t' read -r name m; do mean[$name]=$m; done < <(python3 -c "
import json
for r in json.load(open('$work/h.json'))['results']:
    print(r['command'] + '\t' + str(r['mean']))")
else
  for i in "${!variants[@]}"; do
    s=$(date +%s%N)
    for _ in $(seq "$RUNS"); do sh -c "${cmds[$i]}" >/dev/null; done
    e=$(date +%s%N)
    mean[${variants[$i]}]=$(python3 -c "print(($e-$s)/1e9/$RUNS)")
  done
fi
un=${mean["unsandboxed"]}
loop=${mean["bash -c true loop"]}
for k in "${variants[@]}"; do
  python3 -c "print(f'{\"$k\":<28} {${mean[$k]}:8.3f} s  {${mean[$k]}*1000/$N:6.2f} ms/step  {${mean[$k]}/$un:5.2f}x unsandboxed  {${mean[$k]}/$loop:5.2f}x bash loop')"
done
