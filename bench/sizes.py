#!/usr/bin/env python3
"""Largest files and functions under src/ (rustfmt-formatted code).

A function runs from its `fn` line to the first line after it that is a lone
`}` at the same indentation. Prints the N largest files and functions, and every
function over the limit. Usage: python3 bench/sizes.py [SRC_DIR] [N] [LIMIT]
"""
import os
import re
import sys

src = sys.argv[1] if len(sys.argv) > 1 else "src"
top = int(sys.argv[2]) if len(sys.argv) > 2 else 8
limit = int(sys.argv[3]) if len(sys.argv) > 3 else 120
FN = re.compile(r"^(\s*)(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)")

files, funcs = [], []
for root, _, names in os.walk(src):
    for n in names:
        if not n.endswith(".rs"):
            continue
        path = os.path.join(root, n)
        lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
        files.append((len(lines) - 1, path))
        for i, line in enumerate(lines):
            m = FN.match(line)
            if not m or line.rstrip().endswith(";"):
                continue
            indent = m.group(1)
            for j in range(i + 1, len(lines)):
                if lines[j] == indent + "}":
                    funcs.append((j - i + 1, f"{path}:{i + 1} {m.group(7)}"))
                    break

files.sort(reverse=True)
funcs.sort(reverse=True)
print(f"largest files ({len(files)} files, {sum(n for n, _ in files)} lines):")
for n, p in files[:top]:
    print(f"  {n:6} {p}")
print(f"largest functions ({len(funcs)} functions):")
for n, p in funcs[:top]:
    print(f"  {n:6} {p}")
over = [f for f in funcs if f[0] > limit]
print(f"functions over {limit} lines: {len(over)}")
for n, p in over:
    print(f"  {n:6} {p}")
