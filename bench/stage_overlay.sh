#!/usr/bin/env bash
# An agent CLI step that changes one file, against a bash step that changes
# the same file, on one workspace shaped like a large repository (default
# 95,000 files of 12 KiB, ~1.2 GB, 100 per folder, under git), in one run:
#   bash      a `bash` step: `echo x >> d0/f0.txt` (the anchor)
#   overlay   an agent step (`command` provider) whose CLI does the same:
#             PLANGATE_STAGE=overlay (the workspace under an overlay mount)
#   copy      the same with PLANGATE_STAGE=copy (the staged copy)
# Prints the median of each, and each agent step's ratio to the bash step
# (the target: overlay <= 1.5x). The workspace is restored between runs.
#
#   bash bench/stage_overlay.sh
#   FILES=20000 RUNS=5 bash bench/stage_overlay.sh
#   BIN=target/debug/plangate bash bench/stage_overlay.sh   # no release build
set -euo pipefail
FILES=${FILES:-95000}
KIB=${KIB:-12}
RUNS=${RUNS:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet --manifest-path "$root/Cargo.toml"
  BIN="${CARGO_TARGET_DIR:-$root/target}/release/plangate"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$BIN" "$work" "$RUNS" "$FILES" "$KIB" <<'PY'
import json, os, statistics, subprocess, sys, time

binary, work, runs, files, kib = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
answer = json.dumps({"status": "OK", "summary": "appended x"})
ws = os.path.join(work, "ws")
os.makedirs(ws)
block = os.urandom(kib * 1024 // 2).hex().encode()
for i in range(files):
    d = os.path.join(ws, f"d{i // 100}")
    if i % 100 == 0:
        os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"f{i}.txt"), "wb") as f:
        f.write(block[: kib * 1024 - 8] + f"{i:08d}".encode())
git = lambda *a: subprocess.run(["git", *a], cwd=ws, check=True, capture_output=True)
git("init", "-q")
git("add", "-A")
git("-c", "user.email=b@example.com", "-c", "user.name=b", "commit", "-qm", "bench")
target = os.path.join(ws, "d0", "f0.txt")
original = open(target, "rb").read()

cli = os.path.join(work, "cli.sh")
with open(cli, "w") as f:
    f.write("cat >/dev/null\necho x >> d0/f0.txt\nprintf '%s\\n' '" + answer + "'\n")
head = "version: 1\nid: bench-overlay\npolicy: {risk_tolerance: medium}\n"
with open(os.path.join(work, "agent.yaml"), "w") as f:
    f.write(head + f"agents:\n  a:\n    command: [sh, {cli}]\n")
    f.write("steps:\n  - {id: edit, tool: agent, parameters: {agent: a, prompt: Append x., max_attempts: 1}}\n")
with open(os.path.join(work, "bash.yaml"), "w") as f:
    f.write(head + "steps:\n  - {id: edit, tool: bash, parameters: {command: 'echo x >> d0/f0.txt'}}\n")

def median(plan, kind=None):
    times = []
    env = dict(os.environ)
    if kind:
        env["PLANGATE_STAGE"] = kind
    for _ in range(runs):
        with open(target, "wb") as f:
            f.write(original)
        out = os.path.join(work, "out")
        cmd = [binary, "run", os.path.join(work, plan), "--workspace", ws, "--out", out, "--quiet", "--approve", "edit"]
        t = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, env=env)
        times.append(time.perf_counter() - t)
        if r.returncode != 0:
            sys.exit(f"failed ({kind or 'bash'}): {r.stderr.decode()}")
        if open(target, "rb").read() != original + b"x\n":
            sys.exit(f"{kind or 'bash'}: the change was not applied")
        if kind:
            step = json.load(open(os.path.join(out, "report.json")))["steps"][0]
            got = step.get("agent_changes", {}).get("stage")
            if got != kind:
                sys.exit(f"asked for the {kind} stage, the report says {got}")
    return statistics.median(times)

print(f"== stage overlay: {files} files of {kib} KiB, {runs} runs each, {os.cpu_count()} cores, {os.uname().release}")
b = median("bash.yaml")
o = median("agent.yaml", "overlay")
c = median("agent.yaml", "copy")
print(f"{'bash step':>14} {b*1000:>8.0f}ms")
print(f"{'agent overlay':>14} {o*1000:>8.0f}ms {o/b:>6.2f}x the bash step")
print(f"{'agent copy':>14} {c*1000:>8.0f}ms {c/b:>6.2f}x the bash step")
PY
