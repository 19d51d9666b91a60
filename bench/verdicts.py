#!/usr/bin/env python3
"""Compare two builds of the bash classifier on a large generated corpus.

    cargo build -p plangate-policy --example verdicts   (once per build)
    python3 bench/verdicts.py OLD_VERDICTS_BIN NEW_VERDICTS_BIN [--show N]

The corpus is every command of the classifier fixtures
(tests/fixtures/classifier/*.tsv) and of the rule files' examples, each also
with its path-like words respelled (absolute, home, parent, git dir, quoted
variable, glob, ...) and behind common prefixes (wrappers, `cd`, subshells,
pipes). Prints how many verdicts differ, grouped by old -> new label, and the
first differing lines; exit 1 when any differs. Reasons are not compared.
"""
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PATHS = ["/tmp/x", "~/x", "../x", "./x", "x", "$HOME/x", "/work/ws/x",
         "/etc/x", '"$X"', ".git/config", "/work/ws/.git/hooks/x", "-",
         "/dev/null", "*", "{a,b}", "$(pwd)/x", "/"]
PREFIXES = ["sudo ", "env A=1 ", "time ", "cd sub && ", "true; ", "nice -n 5 "]
WRAPS = ["( {} )", "echo a | {}", "{} | cat", "bash -c '{}'"]


def fixture_commands():
    out = []
    for f in sorted((ROOT / "tests/fixtures/classifier").glob("*.tsv")):
        for line in f.read_text().splitlines():
            if not line or line.startswith("#") or "\t" not in line:
                continue
            out.append(line.split("\t", 1)[1])
    for f in sorted((ROOT / "crates/policy/src/rules").glob("*.toml")):
        for m in re.finditer(r'"(?:safe|moderate|dangerous|blocked|unclassifiable): ([^"\\]*(?:\\.[^"\\]*)*)"',
                             f.read_text()):
            cmd = m.group(1).encode().decode("unicode_escape")
            out.append(cmd if f.stem == "bash" else "git " + cmd)
    return out


def corpus():
    seen, out = set(), []

    def add(c):
        c = c.replace("\n", "\\n")
        if c not in seen:
            seen.add(c)
            out.append(c)

    for c in fixture_commands():
        add(c)
        words = c.split(" ")
        for i, w in enumerate(words):
            if i == 0 or not re.search(r"[/.~]", w) or w.startswith("-"):
                continue
            for p in PATHS:
                add(" ".join(words[:i] + [p] + words[i + 1:]))
        for p in PREFIXES:
            add(p + c)
        if "'" not in c:
            for w in WRAPS:
                add(w.format(c))
    return out


def run(binary, cmds):
    r = subprocess.run([binary], input="\n".join(cmds) + "\n", capture_output=True,
                       text=True, check=True)
    lines = r.stdout.splitlines()
    assert len(lines) == len(cmds), (binary, len(lines), len(cmds))
    return [l.split("\t", 1)[0] for l in lines]


def main():
    args = sys.argv[1:]
    show = 40
    if "--show" in args:
        i = args.index("--show")
        show = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    cmds = corpus()
    old, new = run(args[0], cmds), run(args[1], cmds)
    diffs = [(o, n, c) for o, n, c in zip(old, new, cmds) if o != n]
    print(f"{len(cmds)} commands, {len(diffs)} verdicts differ")
    for (o, n), k in Counter((o, n) for o, n, _ in diffs).most_common():
        print(f"  {o} -> {n}: {k}")
    for o, n, c in diffs[:show]:
        print(f"{o} -> {n}\t{c}")
    sys.exit(1 if diffs else 0)


if __name__ == "__main__":
    main()
