"""CPU of a benchmark's whole process tree, orphans included (imported by step_cpu.py and
bwrap_parts.py). A process that exits before its children (bwrap's outer process, before
its pid-1 child is reaped) leaves orphans: as a subreaper the benchmark inherits and waits
for them, so that their CPU is counted too."""
import ctypes, os, resource

ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def reap():
    """Wait for every child and inherited orphan."""
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def children_cpu():
    """User+sys seconds of every reaped descendant so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime
