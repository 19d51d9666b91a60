#!/usr/bin/env python3
"""CPU time (user+sys of plangate, its lanes and steps) per step of an N-step chain of `true`,
unsandboxed and under Landlock, for each given binary, beside a `bash -c true` loop: steadier
than wall time on a loaded machine. Usage: python3 bench/step_cpu.py N REPS BIN [BIN...]"""
import os, resource, subprocess, sys, tempfile, time
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
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.time()
    r = subprocess.run(cmd, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.time() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, r.returncode
variants = {
  "loop": f"sh -c 'i=0; while [ $i -lt {n} ]; do bash --noprofile --norc -eo pipefail -c true; i=$((i+1)); done'",
}
for b in bins:
    variants[f"{os.path.basename(b)} unsandboxed"] = f"{b} run {work}/bare.yaml --workspace {ws} --out {work}/out --quiet --policy {work}/op.yaml --risk-tolerance high"
    variants[f"{os.path.basename(b)} landlock"] = f"{b} run {work}/chain.yaml --workspace {ws} --out {work}/out --quiet --sandbox-backend landlock"
res = {k: [] for k in variants}
for r in range(reps):
    for k, c in variants.items():
        cpu, wall, rc = measure(c)
        res[k].append((cpu, wall, rc))
loop = min(x[0] for x in res["loop"])
for k, v in res.items():
    cpu = min(x[0] for x in v); wall = min(x[1] for x in v)
    print(f"{k:<36} cpu {cpu*1000/n:6.2f} ms/step ({cpu/loop:4.2f}x loop cpu)  wall(min) {wall*1000/n:6.2f} ms/step  rc={[x[2] for x in v]}")
