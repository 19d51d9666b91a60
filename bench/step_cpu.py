#!/usr/bin/env python3
"""CPU time (user+sys of plangate, its lanes and steps) and wall time per step of an N-step
chain of `true`, unsandboxed, under Landlock and under bubblewrap (each backend that works
here), for each given binary, beside a `bash -c true` loop, all in the same round: steadier
than wall time alone on a loaded machine. Orphans (bwrap's pid-1 child) are reaped and counted. Each round measures every variant once, in turn;
the ratios are taken within a round, and the medians over the rounds are printed.
Usage: python3 bench/step_cpu.py N ROUNDS BIN [BIN...]"""
import os, resource, statistics, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_of import reap  # noqa: E402  (also makes this script a subreaper)
n = int(sys.argv[1]); reps = int(sys.argv[2]); bins = sys.argv[3:]
work = tempfile.mkdtemp()
ws = os.path.join(work, "ws"); os.makedirs(ws)
subprocess.run(["git", "-C", ws, "init", "-q"], check=True)
for name, extra in (("chain", ""), ("bare", "sandbox: false, ")):
    with open(os.path.join(work, name + ".yaml"), "w") as f:
        f.write("version: 1\nid: bench-sandbox\nsteps:\n")
        f.write(f"  - {{id: s0, tool: bash, parameters: {{{extra}command: 'true'}}}}\n")
        for i in range(1, n):
            f.write(f"  - {{id: s{i}, tool: bash, dependencies: [s{i-1}], parameters: {{{extra}command: 'true'}}}}\n")
with open(os.path.join(work, "op.yaml"), "w") as f:
    f.write("risk_tolerance: high\nallow_unsandboxed: true\n")
def measure(cmd):
    reap()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.time()
    r = subprocess.run(cmd, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    reap()
    wall = time.time() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, r.returncode
def works(b, backend):
    cmd = f"{b} run {work}/chain.yaml --workspace {ws} --out {work}/probe --quiet --sandbox-backend {backend} --steps s0"
    return subprocess.run(cmd, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
variants = {
  "loop": f"sh -c 'i=0; while [ $i -lt {n} ]; do bash --noprofile --norc -eo pipefail -c true; i=$((i+1)); done'",
}
for b in bins:
    name = os.path.basename(b)
    variants[f"{name} unsandboxed"] = f"{b} run {work}/bare.yaml --workspace {ws} --out {work}/out --quiet --policy {work}/op.yaml --risk-tolerance high"
    for backend in ("landlock", "bwrap"):
        if works(b, backend):
            variants[f"{name} {backend}"] = f"{b} run {work}/chain.yaml --workspace {ws} --out {work}/out --quiet --sandbox-backend {backend}"
        else:
            print(f"skipped: the {backend} backend does not work here ({name})")
res = {k: [] for k in variants}
for r in range(reps):
    for k, c in variants.items():
        res[k].append(measure(c))
med = statistics.median
print(f"== {n}-step chain of `true`, {reps} rounds, {os.cpu_count()} cores; medians of per-round ratios")
for k, v in res.items():
    cpu = med(x[0] for x in v); wall = med(x[1] for x in v)
    line = f"{k:<28} cpu {cpu*1000/n:6.2f} ms/step  wall {wall*1000/n:6.2f} ms/step"
    line += f"  cpu {med(v[i][0]/res['loop'][i][0] for i in range(reps)):4.2f}x loop"
    line += f"  wall {med(v[i][1]/res['loop'][i][1] for i in range(reps)):4.2f}x loop"
    base = next((b for b in bins if k.startswith(os.path.basename(b) + " ")), None)
    if base is not None and not k.endswith("unsandboxed"):
        un = res[f"{os.path.basename(base)} unsandboxed"]
        line += f"  cpu {med(v[i][0]/un[i][0] for i in range(reps)):4.2f}x unsandboxed"
        line += f"  wall {med(v[i][1]/un[i][1] for i in range(reps)):4.2f}x unsandboxed"
    line += f"  rc={sorted(set(x[2] for x in v))}"
    print(line)
