#!/usr/bin/env bash
# The module dependency graph of plangate's workspace (src/ and every
# crates/X/src/), at top-level-module grain.
#
# For every top-level module X (src/X.rs or src/X/; crates/C/src/X.rs is
# C:X), prints the set of
# `crate::Y` it uses (Y != X), then the cycles: every strongly connected
# component with more than one module, and for each edge inside one, the files
# that make it. No cycles means module dependencies run one way.
#
#   bench/deps.sh                    # graph + cycles
#   bench/deps.sh --edges            # also "X -> Y: files" for every edge
#   bench/deps.sh --drop plan:tools  # as if that edge were gone (repeatable):
#                                    # which cycles would remain without it
#
# Counts every `crate::X` path in the source whose X is a module (src/X.rs or
# src/X/; `crate::run`, the library's entry function, is not), test modules
# included (a test module that reaches up is still a dependency of the
# module's file). Exits 1
# when there is a cycle, so CI can hold the line.
set -euo pipefail
cd "$(dirname "$0")/.."

edges_flag=0
drop=()
while [[ $# -gt 0 ]]; do
    case "$1" in
    --edges) edges_flag=1 ;;
    --drop)
        drop+=("${2/:/ }")
        shift
        ;;
    *)
        echo "usage: $0 [--edges] [--drop FROM:TO]..." >&2
        exit 2
        ;;
    esac
    shift
done

# "from to file" for every crate::to path in a file of module from, crate by
# crate: src/ (the binary crate: module names bare) and crates/X/src/ (its
# modules named X:module). In src/, `crate::model` etc. are the workspace
# crates re-exported under their old names (src/lib.rs): such an edge ends at
# the crate (`model`), which cargo keeps from depending back.
edges=$(
    for root in src crates/*/src; do
        [[ -d "$root" ]] || continue
        if [[ "$root" == src ]]; then label=""; else label=${root#crates/}; label=${label%/src}:; fi
        find "$root" -name '*.rs' | sort | while read -r f; do
            rel=${f#"$root"/}
            from=${rel%%/*}
            from=${from%.rs}
            { grep -o 'crate::[a-z_][a-z0-9_]*' "$f" || true; } | sed 's/^crate:://' | sort -u |
                while read -r to; do
                    # Only real modules: `crate::run` (the lib function) is not one.
                    if [[ "$to" != "$from" && ( -e "$root/$to.rs" || -d "$root/$to" ) ]]; then
                        echo "$label$from $label$to $f"
                    elif [[ -z "$label" && "$to" != "$from" && -d "crates/$to" ]]; then
                        echo "$from $to $f"
                    fi
                done
        done
    done
)
for d in ${drop[@]+"${drop[@]}"}; do
    echo "(dropped: ${d/ / -> })"
    edges=$(grep -v "^$d " <<<"$edges" || true)
done

awk -v show_edges="$edges_flag" '
{
    key = $1 SUBSEP $2
    if (!(key in files)) { out[$1] = out[$1] " " $2; n_out[$1]++ }
    files[key] = files[key] " " $3
    node[$1] = 1; node[$2] = 1
}
function strongconnect(v,    i, k, w, parts, n) {
    index_of[v] = idx; low[v] = idx; idx++
    stack[++sp] = v; on_stack[v] = 1
    n = split(out[v], parts, " ")
    for (i = 1; i <= n; i++) {
        w = parts[i]
        if (!(w in index_of)) {
            strongconnect(w)
            if (low[w] < low[v]) low[v] = low[w]
        } else if (on_stack[w] && index_of[w] < low[v]) {
            low[v] = index_of[w]
        }
    }
    if (low[v] == index_of[v]) {
        comp = ""; size = 0
        do {
            w = stack[sp--]; on_stack[w] = 0
            comp = comp " " w; size++
            scc_of[w] = n_scc
        } while (w != v)
        if (size > 1) { cycles[++n_cycles] = comp; cycle_id[n_cycles] = n_scc }
        n_scc++
    }
}
function sorted_words(s,    a, n, i, j, t, r) {
    n = split(s, a, " ")
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    r = ""; for (i = 1; i <= n; i++) r = r (i > 1 ? " " : "") a[i]
    return r
}
END {
    nn = 0
    for (v in node) names[++nn] = v
    list = ""; for (i = 1; i <= nn; i++) list = list " " names[i]
    split(sorted_words(list), ordered, " ")
    print "== module -> crate:: modules it uses"
    for (i = 1; i <= nn; i++) {
        v = ordered[i]
        printf "%-13s -> %s\n", v, sorted_words(out[v])
    }
    idx = 0; sp = 0; n_scc = 0; n_cycles = 0
    for (i = 1; i <= nn; i++) if (!(ordered[i] in index_of)) strongconnect(ordered[i])
    print ""
    if (n_cycles == 0) { print "== cycles: none"; }
    else {
        print "== cycles (strongly connected components): " n_cycles
        for (c = 1; c <= n_cycles; c++) {
            print "{" sorted_words(cycles[c]) "}"
            for (k in files) {
                split(k, ft, SUBSEP)
                if ((ft[1] in scc_of) && (ft[2] in scc_of) && scc_of[ft[1]] == cycle_id[c] && scc_of[ft[2]] == cycle_id[c])
                    inside[++n_inside] = "  " ft[1] " -> " ft[2] ":" files[k]
            }
        }
        list = ""
        for (i = 1; i <= n_inside; i++) print inside[i] | "sort"
        close("sort")
    }
    if (show_edges) {
        print ""
        print "== every edge, with the files that make it"
        for (k in files) { split(k, ft, SUBSEP); print ft[1] " -> " ft[2] ":" files[k] | "sort" }
        close("sort")
    }
    exit (n_cycles > 0)
}' <<<"$edges"
