#!/usr/bin/env bash
# find_in_files against ripgrep (its own crates, same walker): the same
# queries over a large real tree (a copy of the Python standard library by
# default), in the same run. plangate's time is a whole `plangate run` of a
# one-step plan (load, classify, search, report, secrets sweep of the result);
# rg prints every match with 2 lines of context to /dev/null.
#
#   bash bench/find_vs_rg.sh                 # tree: the Python stdlib, 10 runs each
#   TREE=/path/to/tree RUNS=5 bash bench/find_vs_rg.sh
#
# Needs: ripgrep (apt install ripgrep), hyperfine (apt install hyperfine).
set -euo pipefail
RUNS=${RUNS:-10}
root=$(cd "$(dirname "$0")/.." && pwd)
src=${TREE:-$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')}
command -v rg >/dev/null || { echo "needs ripgrep (apt install ripgrep)" >&2; exit 2; }
command -v hyperfine >/dev/null || { echo "needs hyperfine (apt install hyperfine)" >&2; exit 2; }
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
bin="$root/target/release/plangate"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A private copy: the workspace must not be the system's, and both tools see the same files.
mkdir -p "$work/ws" && cp -r "$src/." "$work/ws/tree"
files=$(rg --files -uu "$work/ws/tree" | wc -l)
bytes=$(du -sb "$work/ws/tree" | cut -f1)
echo "tree: $src ($files files, $((bytes / 1024 / 1024)) MiB)"

# name | query | case_sensitive | rg flags
queries=(
  "literal|def __init__|true|-s -F"
  "regex|^\\s*(async\\s+)?def\\s+test_\\w+|true|-s"
  "insensitive|todo|false|-i"
)
printf '\n%-12s %12s %12s %8s %14s\n' query plangate_ms rg_ms ratio "matches (pg/rg)"
for q in "${queries[@]}"; do
  IFS='|' read -r name query cs flags <<<"$q"
  plan="$work/$name.yaml"
  python3 - "$plan" "$query" "$cs" <<'PY'
import json, sys
path, query, cs = sys.argv[1], sys.argv[2], sys.argv[3] == "true"
plan = {"version": 1, "id": "bench-find", "steps": [{"id": "find", "tool": "find_in_files",
        "parameters": {"query": query, "path": "tree", "case_sensitive": cs, "max_context_lines": 2,
                       "max_matches": 20, "hidden": False}}]}
open(path, "w").write(json.dumps(plan))
PY
  pg="$bin run $plan --workspace $work/ws --out $work/out --quiet"
  rgc="rg $flags -n -C2 -e $(printf %q "$query") $work/ws/tree"
  hyperfine --warmup 2 --runs "$RUNS" -i --export-json "$work/$name.json" "$pg" "$rgc" >/dev/null
  # shellcheck disable=SC2086
  rg_count=$(rg $flags -c -e "$query" "$work/ws/tree" | awk -F: '{s+=$NF} END {print s+0}')
  "$bin" run "$plan" --workspace "$work/ws" --out "$work/out" --quiet || true
  pg_count=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total_matches"])' "$work/out/artifacts/find/result.json")
  python3 - "$work/$name.json" "$name" "$pg_count" "$rg_count" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
pg, rg = r[0]["mean"] * 1000, r[1]["mean"] * 1000
print(f"{sys.argv[2]:<12} {pg:12.1f} {rg:12.1f} {pg / rg:7.2f}x {sys.argv[3]:>6}/{sys.argv[4]:<6}")
PY
done
echo
echo "target: plangate at most 1.5x rg; matches must agree (plangate counts matching lines, as rg -c)."
