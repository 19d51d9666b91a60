#!/usr/bin/env bash
# Make the demo repository this example runs in: `main` with a small shell
# library, and a pull-request branch `feature/divide` (checked out) that adds
# a function.
#   bash examples/jobs/pr-review/setup.sh DIR [clean]
# With `clean`, the branch has no change against main (nothing to review).
set -euo pipefail
dir=${1:?usage: setup.sh DIR [clean]}
mkdir -p "$dir/lib"
cd "$dir"
git init -q -b main
git config user.name "Demo Dev"
git config user.email "dev@example.com"
cat > lib/math.sh <<'LIB'
# Arithmetic helpers.
add() { echo $(( $1 + $2 )); }
sub() { echo $(( $1 - $2 )); }
LIB
git add -A
git commit -qm "Add math helpers"
git switch -q -c feature/divide
if [ "${2:-}" != clean ]; then
  cat >> lib/math.sh <<'LIB'
div() { echo $(( $1 / $2 )); }
LIB
  git commit -qam "Add div"
fi
