#!/usr/bin/env python3
"""Where a bubblewrap step's CPU goes, before plangate does anything: `bash -c true` alone
(the anchor, in the same round), then bubblewrap around it with plangate's flags added one
group at a time (src/sandbox/layout.rs: system trees read-only, fresh /dev and /proc, every
namespace new, the seal's `--remount-ro /`), then with plangate's in-sandbox supervisor
(`__sandbox-exec --limits-only --supervise`). CPU is user+sys of the whole process tree
(getrusage of the children, orphans reaped), medians over the rounds; the ratios are taken within a round.
Shows what one bwrap per step costs whatever plangate does around it.
Usage: python3 bench/bwrap_parts.py N ROUNDS PLANGATE_BIN"""
import os, resource, shutil, statistics, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_of import reap  # noqa: E402  (also makes this script a subreaper)

n = int(sys.argv[1]); reps = int(sys.argv[2]); plangate = os.path.abspath(sys.argv[3])
if shutil.which("bwrap") is None:
    sys.exit("skipped: bwrap is not installed")
work = tempfile.mkdtemp()
ws, art, tmp = (os.path.join(work, d) for d in ("ws", "art", "tmp"))
for d in (ws, art, tmp):
    os.makedirs(d)
bash = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", "true"]
system = []
for p in ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/opt"):
    if os.path.islink(p):
        system += ["--symlink", os.readlink(p), p]
    elif os.path.isdir(p):
        system += ["--ro-bind", p, p]
ns = ["--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
devproc = ["--dev", "/dev", "--proc", "/proc"]
binds = ["--ro-bind", ws, ws, "--bind", art, art, "--bind", tmp, tmp,
         "--ro-bind", plangate, plangate, "--remount-ro", "/", "--chdir", ws]
supervisor = [plangate, "__sandbox-exec", "--limits-only", "--deny-sockets", "--supervise",
              os.path.join(tmp, "left"), "--kill-grace-ms", "5000", "--"]
variants = {
    "bash -c true": bash,
    "bwrap, system trees only": ["bwrap"] + system + ["--"] + bash,
    "+ new namespaces": ["bwrap"] + system + ns + ["--"] + bash,
    "+ /dev and /proc": ["bwrap"] + system + devproc + ns + ["--"] + bash,
    "+ step binds, seal": ["bwrap"] + system + devproc + ns + binds + ["--"] + bash,
    "+ supervisor (plangate's)": ["bwrap"] + system + devproc + ns + binds + ["--"] + supervisor + bash,
}
if subprocess.run(variants["+ step binds, seal"], stdout=subprocess.DEVNULL,
                  stderr=subprocess.DEVNULL).returncode != 0:
    sys.exit("skipped: bwrap does not work here")


def measure(argv):
    reap()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(n):
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        reap()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


res = {k: [] for k in variants}
for _ in range(reps):
    for k, argv in variants.items():
        res[k].append(measure(argv))
shutil.rmtree(work)
print(f"== {n} runs each, {reps} rounds; CPU per run, medians")
for k, v in res.items():
    ratio = statistics.median(v[i] / res["bash -c true"][i] for i in range(reps))
    print(f"{k:<28} {statistics.median(v) * 1000 / n:6.2f} ms  {ratio:5.2f}x bash")
