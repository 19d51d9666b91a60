#!/usr/bin/env python3
"""A/B of plangate's CPU per step, unsandboxed only: an N-step chain of `true`
run by each given binary and a `bash -c true` loop, ROUNDS rounds, the order
reversed every other round (a loaded machine's drift falls on each side
alike), after one warm-up run each (every output file exists already, as in
step_cpu.py's later rounds). Prints the median CPU (user+sys of plangate, its
lane and its steps) per step and the median per-round ratio to the loop.
Narrower than step_cpu.py (no Landlock or bwrap), for telling two builds apart.
Usage: python3 bench/step_cpu_ab.py N ROUNDS BIN [BIN...]"""
import os, resource, statistics, subprocess, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_of import reap  # noqa: E402  (also makes this script a subreaper)
n = int(sys.argv[1]); rounds = int(sys.argv[2]); bins = sys.argv[3:]
work = tempfile.mkdtemp()
ws = os.path.join(work, "ws"); os.makedirs(ws)
subprocess.run(["git", "-C", ws, "init", "-q"], check=True)
with open(os.path.join(work, "bare.yaml"), "w") as f:
    f.write("version: 1\nid: bench-ab\nsteps:\n")
    f.write("  - {id: s0, tool: bash, parameters: {sandbox: false, command: 'true'}}\n")
    for i in range(1, n):
        f.write(f"  - {{id: s{i}, tool: bash, dependencies: [s{i-1}], parameters: {{sandbox: false, command: 'true'}}}}\n")
with open(os.path.join(work, "op.yaml"), "w") as f:
    f.write("risk_tolerance: high\nallow_unsandboxed: true\n")
def measure(cmd):
    reap()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    reap()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
variants = {"loop": f"sh -c 'i=0; while [ $i -lt {n} ]; do bash --noprofile --norc -eo pipefail -c true; i=$((i+1)); done'"}
for i, b in enumerate(bins):
    name = f"{i}:{os.path.basename(b)}"
    variants[name] = f"{b} run {work}/bare.yaml --workspace {ws} --out {work}/out{i} --quiet --policy {work}/op.yaml --risk-tolerance high"
for c in variants.values():
    measure(c)
res = {k: [] for k in variants}
for r in range(rounds):
    order = list(variants.items())
    if r % 2:
        order.reverse()
    for k, c in order:
        res[k].append(measure(c))
print(f"== {n}-step chain of `true`, unsandboxed, {rounds} alternating rounds, {os.cpu_count()} cores")
for k, v in res.items():
    ratio = statistics.median(v[i] / res["loop"][i] for i in range(rounds))
    print(f"{k:28} cpu {statistics.median(v)*1000/n:5.2f} ms/step (min {min(v)*1000/n:5.2f})  {ratio:4.2f}x loop")
