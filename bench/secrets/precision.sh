#!/usr/bin/env bash
# Precision and recall of `plangate scan` (issue 27), through the binary and its JSON report:
#
#  1. on the labeled corpus tests/fixtures/secrets/precision/{positives,negatives}.tsv (written by
#     its gen.py: names, echoes, secret names, references, placeholders, publishable keys and
#     Kubernetes settings that are not secrets, beside the secrets that must be found) and on
#     the real-world samples of other scanners (tests/fixtures/secrets/real_world/): one file
#     per sample; a positive counts as found when a finding of its rule is in its file; every
#     other finding (in a negative, or of another rule in a positive) is a false positive;
#  2. on a real tree, Python's standard library and site-packages (awscli and botocore installed
#     into a venv under /tmp when missing): the finding count by rule and a sample of findings.
#
#   bash bench/secrets/precision.sh                          # target/debug/plangate
#   BIN=/tmp/plangate-before bash bench/secrets/precision.sh # another build
#   TREES="/some/dir /other" SAMPLE=40 bash bench/secrets/precision.sh
#   SKIP_TREE=1 bash bench/secrets/precision.sh              # the corpora only
#   CORPUS=/tmp/held-out SKIP_TREE=1 bash bench/secrets/precision.sh  # after SEED=5 OUT=/tmp/held-out gen.py
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-target/debug/plangate}
SAMPLE=${SAMPLE:-25}
CORPUS=${CORPUS:-tests/fixtures/secrets/precision}   # or a held-out one: SEED=5 OUT=DIR gen.py
VENV=${VENV:-/tmp/plangate-precision-venv}
[[ -x "$BIN" ]] || { echo "no binary at $BIN (cargo build first, or set BIN)" >&2; exit 2; }
work=$(mktemp -d /tmp/plangate-precision.XXXXXX)
trap 'rm -rf "$work"' EXIT

# ---------------------------------------------------------------- the corpora
python3 - "$work" "$CORPUS" <<'PY'
import json, os, sys
work, corpus_dir = sys.argv[1], sys.argv[2]
def unescape(s):
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s) and s[i + 1] in "\\tn":
            out.append({"\\": "\\", "t": "\t", "n": "\n"}[s[i + 1]]); i += 2
        else:
            out.append(s[i]); i += 1
    return "".join(out)
def rows(path):
    with open(path) as f:
        return [l.rstrip("\n").split("\t") for l in f if l.strip() and not l.startswith("#")]
labels = {}
for corpus, pos, neg in [
    ("precision", os.path.join(corpus_dir, "positives.tsv"), os.path.join(corpus_dir, "negatives.tsv")),
    ("real_world", "tests/fixtures/secrets/real_world/positives.tsv", "tests/fixtures/secrets/real_world/negatives.tsv"),
]:
    d = os.path.join(work, corpus)
    os.makedirs(d)
    for i, r in enumerate(rows(pos)):
        name = f"p{i:04d}.txt"
        open(os.path.join(d, name), "w").write(unescape(r[1]) + "\n")
        labels[f"{corpus}/{name}"] = {"rule": r[0], "family": r[2] if corpus == "precision" else "real-world"}
    for i, r in enumerate(rows(neg)):
        name = f"n{i:04d}.txt"
        open(os.path.join(d, name), "w").write(unescape(r[0]) + "\n")
        labels[f"{corpus}/{name}"] = {"rule": None, "family": r[1] if corpus == "precision" else "real-world"}
json.dump(labels, open(os.path.join(work, "labels.json"), "w"))
PY

score() { # corpus dir name
    local rc=0
    "$BIN" scan --format json "$work/$1" >"$work/$1.json" || rc=$?
    [[ $rc == 0 || $rc == 4 ]] || { echo "scan failed ($rc)" >&2; exit 1; }
    python3 - "$work" "$1" <<'PY'
import collections, json, os, sys
work, corpus = sys.argv[1], sys.argv[2]
labels = json.load(open(os.path.join(work, "labels.json")))
report = json.load(open(os.path.join(work, corpus + ".json")))
by_file = collections.defaultdict(list)
for f in report["findings"]:
    by_file[os.path.basename(f["file"])].append(f["type"])
tp = fn = fp = 0
fam = collections.defaultdict(lambda: [0, 0, 0])  # tp, fn, fp per family
misses, fps = [], []
for key, lab in sorted(labels.items()):
    c, name = key.split("/")
    if c != corpus:
        continue
    got = by_file.get(name, [])
    if lab["rule"]:
        hit = lab["rule"] in got
        tp += hit; fn += not hit
        fam[lab["family"]][0 if hit else 1] += 1
        if not hit:
            misses.append(f"{name} {lab['rule']} got {got}")
        extra = [g for g in got if g != lab["rule"]]
    else:
        extra = got
    fp += len(extra)
    fam[lab["family"]][2] += len(extra)
    if extra:
        fps.append(f"{name} ({lab['family']}): {extra}")
prec = tp / (tp + fp) if tp + fp else 1.0
rec = tp / (tp + fn) if tp + fn else 1.0
print(f"{corpus}: positives {tp + fn}, found {tp}, missed {fn}, false positives {fp}, "
      f"negatives {sum(1 for k, l in labels.items() if k.startswith(corpus + '/') and not l['rule'])}")
print(f"{corpus}: precision {prec:.3f}  recall {rec:.3f}")
for k, (a, b, c) in sorted(fam.items()):
    print(f"  {k:22} found {a:3}  missed {b:3}  false positives {c:3}")
for m in misses:
    print("  MISS", m)
for m in fps:
    print("  FP  ", m)
PY
}
score precision
score real_world
[[ -n "${SKIP_TREE:-}" ]] && exit 0

# ---------------------------------------------------------------- a real tree
if [[ -z "${TREES:-}" ]]; then
    if [[ ! -x "$VENV/bin/python" ]]; then
        python3 -m venv "$VENV"
        "$VENV/bin/pip" install -q awscli botocore
    fi
    TREES=$("$VENV/bin/python" -c 'import sysconfig as s; p = s.get_paths(); print(p["stdlib"], p["purelib"])')
fi
rc=0
read -r -a trees <<<"$TREES"
"$BIN" scan --format json "${trees[@]}" >"$work/tree.json" || rc=$?
[[ $rc == 0 || $rc == 4 ]] || { echo "scan failed ($rc)" >&2; exit 1; }
python3 - "$work/tree.json" "$SAMPLE" "${trees[@]}" <<'PY'
import collections, json, random, sys
report, n, trees = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3:]
f = report["findings"]
print(f"tree ({' '.join(trees)}): {report['files_scanned']} files, {report['bytes_scanned'] >> 20} MiB, "
      f"{len(f)} findings in {report['scan_time']:.1f}s")
for rule, c in collections.Counter(x["type"] for x in f).most_common():
    print(f"  {c:4}  {rule}")
print(f"sample of {min(n, len(f))} findings (the line, cut at 110 characters):")
for x in sorted(random.Random(27).sample(f, min(n, len(f))), key=lambda x: (x["file"], x["line"])):
    try:
        line = open(x["file"], errors="replace").read().split("\n")[x["line"] - 1].strip()
    except OSError as e:
        line = str(e)
    path = x["file"]
    for t in trees:
        path = path.replace(t, "…")
    print(f"  {x['type']:22} {path}:{x['line']}  {line[:110]}")
PY
