#!/usr/bin/env python3
"""Dependency cycles between sibling files of every crate of plangate's
workspace: src/ (the binary crate) and crates/*/src/ (model, guard, secrets).

Each crate is looked at on its own (a `crate::` path stays inside its crate;
cargo itself refuses a cycle between crates). Every Rust file is a module
(src/a/b.rs and src/a/b/mod.rs are `a::b`; lib.rs, main.rs are the root). A
file depends on a sibling (a module with the same parent) when it names a
path into that sibling's subtree: `crate::a::b::...`, `super::b::...`,
`self::...`, inline or in a `use` (brace groups expanded). References to an
ancestor (`super::Thing` defined in mod.rs) and to a module's own children
are not sibling edges. Prints every strongly connected component of more than
one sibling, with the files and the first line of each edge inside it, and
exits 1 when there is one.

    python3 bench/file_deps.py            # cycles (exit 1 when any)
    python3 bench/file_deps.py --edges    # also every sibling edge
    python3 bench/file_deps.py --known tools   # a cycle inside src/tools is
                                               # known (still printed), not a failure
                                               # (or --known crates/guard/src/json)
"""

import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The source folder of every crate: the binary crate's, then the others'.
SRCS = [ROOT / "src"] + sorted((ROOT / "crates").glob("*/src"))
IDENT = r"[a-z_][a-z0-9_]*"


def module_of(path: Path, src: Path) -> tuple:
    rel = path.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "mod" or (len(parts) == 1 and parts[0] in ("lib", "main")):
        parts = parts[:-1]
    return tuple(parts)


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    # Line comments (also doc comments), but not `//` inside a string on the same line: good enough.
    return re.sub(r"//[^\n]*", "", text)


def expand_use(tree: str) -> list:
    """`a::{b, c::{d, e}}` -> ["a::b", "a::c::d", "a::c::e"]."""
    tree = re.sub(r"\s+", "", tree)
    i = tree.find("{")
    if i < 0:
        return [tree]
    prefix, depth, parts, cur = tree[:i], 0, [], ""
    for ch in tree[i + 1 : tree.rfind("}")]:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    parts.append(cur)
    out = []
    for p in parts:
        if p:
            out.extend(prefix + q for q in expand_use(p))
    return out


def paths_in(text: str) -> list:
    """(path segments, line) of every crate/super/self path."""
    found = []
    for m in re.finditer(r"\buse\s+([^;]*);", text):
        line = text.count("\n", 0, m.start()) + 1
        for p in expand_use(m.group(1)):
            found.append((p.split("::"), line))
    for m in re.finditer(rf"\b(?:crate|super|self)(?:::{IDENT})+", text):
        line = text.count("\n", 0, m.start()) + 1
        found.append((m.group(0).split("::"), line))
    return found


def resolve(segs: list, here: tuple, modules: set):
    """The absolute module path a path starts in (longest module prefix)."""
    if not segs:
        return None
    if segs[0] == "crate":
        base, rest = (), segs[1:]
    elif segs[0] in ("super", "self"):
        base = here
        rest = segs
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                base = base[:-1]
            rest = rest[1:]
    else:
        return None
    best = base
    cur = base
    for s in rest:
        cur = cur + (s,)
        if cur in modules:
            best = cur
        else:
            break
    return best


def main() -> int:
    args = sys.argv[1:]
    show_edges = "--edges" in args
    known = {args[i + 1] for i, a in enumerate(args[:-1]) if a == "--known"}
    edges = defaultdict(dict)  # (crate folder, parent) -> {(a, b): (file, line)}
    for src in SRCS:
        crate_edges(src, edges)
    cycles = 0
    tolerated = 0
    for key in sorted(edges):
        src, parent = key
        graph = defaultdict(set)
        for a, b in edges[key]:
            graph[a].add(b)
        where = "/".join((src,) + parent)
        for comp in sccs(graph):
            if len(comp) < 2:
                continue
            if "/".join(parent) in known or where in known:
                tolerated += 1
            else:
                cycles += 1
            names = sorted("/".join(c) for c in comp)
            print(f"cycle in {where}: {' <-> '.join(names)}")
            for (a, b), (f, line) in sorted(edges[key].items()):
                if a in comp and b in comp:
                    print(f"    {'/'.join(a)} -> {'/'.join(b)}  ({f}:{line})")
        if show_edges:
            for (a, b), (f, line) in sorted(edges[key].items()):
                print(f"{where}: {'/'.join(a)} -> {'/'.join(b)}  ({f}:{line})")
    print(f"== file cycles: {cycles or 'none'}" + (f" (and {tolerated} known)" if tolerated else ""))
    return 1 if cycles else 0


def crate_edges(src: Path, edges) -> None:
    """Adds the sibling edges of the crate whose source folder is `src`."""
    files = {module_of(p, src): p for p in sorted(src.rglob("*.rs"))}
    modules = set(files)
    label = str(src.relative_to(ROOT))
    for mod, path in files.items():
        if not mod:
            continue
        text = strip_comments(path.read_text(encoding="utf-8"))
        for segs, line in paths_in(text):
            target = resolve(segs, mod, modules)
            if target is None:
                continue
            # The sibling of `mod` (same parent) that `target` lies in, if any.
            parent = mod[:-1]
            if len(target) <= len(parent) or target[: len(parent)] != parent:
                continue
            sib = target[: len(parent) + 1]
            if sib == mod:
                continue
            edges[(label, parent)].setdefault((mod, sib), (path.relative_to(ROOT), line))


def sccs(graph):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    nodes = set(graph) | {w for vs in graph.values() for w in vs}

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            out.append(comp)

    for v in sorted(nodes):
        if v not in index:
            strong(v)
    return out


if __name__ == "__main__":
    sys.exit(main())
