#!/usr/bin/env bash
# Cost of an agent CLI's staged copy: one agent step whose CLI answers at
# once, on workspaces of 1,000 and 50,000 files (2 KiB each, 100 per folder,
# under git), run three ways in the same run:
#   staged   the `command` provider: plangate copies the workspace first
#   replay   the same answer from the `replay` provider: no copy (plangate's own cost)
#   cp -a    coreutils copying the same workspace (the anchor)
# Prints median times, the copy's cost (staged - replay) and its ratio to `cp -a`.
#
#   bash bench/stage_copy.sh                 # 1000 and 50000 files, 5 runs each
#   SIZES="1000" RUNS=9 bash bench/stage_copy.sh
set -euo pipefail
SIZES=${SIZES:-"1000 50000"}
RUNS=${RUNS:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
bin="${CARGO_TARGET_DIR:-$root/target}/release/plangate"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$bin" "$work" "$RUNS" "$SIZES" <<'PY'
import json, os, shutil, statistics, subprocess, sys, time

binary, work, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
sizes = [int(n) for n in sys.argv[4].split()]
answer = json.dumps({"status": "OK", "summary": "nothing to change"})

def make_ws(n):
    ws = os.path.join(work, f"ws{n}")
    os.makedirs(ws)
    block = (b"0123456789abcdef" * 128)
    for i in range(n):
        d = os.path.join(ws, f"d{i // 100}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{i}.txt"), "wb") as f:
            f.write(block)
    run = lambda *a: subprocess.run(["git", *a], cwd=ws, check=True, capture_output=True)
    run("init", "-q")
    run("add", "-A")
    run("-c", "user.email=b@example.com", "-c", "user.name=b", "commit", "-qm", "bench")
    return ws

def plan(path, agent):
    with open(path, "w") as f:
        f.write("version: 1\nid: bench-stage\npolicy: {risk_tolerance: medium}\nagents:\n")
        f.write(agent)
        f.write("steps:\n  - {id: ask, tool: agent, parameters: {agent: a, prompt: Look., max_attempts: 1}}\n")

def median(cmd, cleanup=None):
    times = []
    for _ in range(runs):
        if cleanup:
            cleanup()
        t = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True)
        times.append(time.perf_counter() - t)
        if r.returncode != 0:
            sys.exit(f"failed: {' '.join(cmd)}\n{r.stderr.decode()}")
    return statistics.median(times)

replay = os.path.join(work, "answers.jsonl")
with open(replay, "w") as f:
    f.write(json.dumps({"step": "ask", "attempt": 1, "answer": answer}) + "\n")
cli = os.path.join(work, "cli.sh")
with open(cli, "w") as f:
    f.write("cat >/dev/null\nprintf '%s\\n' " + "'" + answer + "'\n")
plan(os.path.join(work, "staged.yaml"), f"  a:\n    command: [sh, {cli}]\n")
plan(os.path.join(work, "replay.yaml"), f"  a:\n    provider: replay\n    file: {replay}\n")

print(f"== staged copy: {runs} runs each, {os.cpu_count()} cores, {os.uname().release}")
print(f"{'files':>7} {'staged':>9} {'replay':>9} {'copy cost':>10} {'cp -a':>9} {'cost / cp -a':>13}")
for n in sizes:
    ws = make_ws(n)
    out = os.path.join(work, "out")
    run = lambda p: [binary, "run", os.path.join(work, p), "--workspace", ws, "--out", out, "--quiet"]
    staged = median(run("staged.yaml"))
    replayed = median(run("replay.yaml"))
    dest = os.path.join(work, "cp")
    cp = median(["cp", "-a", ws, dest], cleanup=lambda: shutil.rmtree(dest, ignore_errors=True))
    cost = staged - replayed
    print(f"{n:>7} {staged*1000:>7.0f}ms {replayed*1000:>7.0f}ms {cost*1000:>8.0f}ms {cp*1000:>7.0f}ms {cost/cp:>12.2f}x")
    shutil.rmtree(ws)
PY
