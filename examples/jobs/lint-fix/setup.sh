#!/usr/bin/env bash
# Make the demo repository this example runs in: a small project whose docs
# have lint warnings (trailing whitespace), its linter, one commit.
#   bash examples/jobs/lint-fix/setup.sh DIR [clean]
# With `clean`, the docs have no warnings (the agent is never called).
set -euo pipefail
dir=${1:?usage: setup.sh DIR [clean]}
mkdir -p "$dir/docs" "$dir/scripts"
cd "$dir"
cat > scripts/lint.sh <<'LINT'
#!/usr/bin/env bash
# The project's linter: every line of docs/*.md that ends in spaces or tabs.
# Prints FILE:LINE: trailing whitespace, exits 1 when it found any.
awk '/[ \t]+$/ { printf "%s:%d: trailing whitespace\n", FILENAME, FNR; n++ } END { exit n > 0 }' docs/*.md
LINT
if [ "${2:-}" = clean ]; then
  printf '# Guide\n\nRun make to build.\nRun make test to test.\n' > docs/guide.md
else
  printf '# Guide \n\nRun make to build.\t\nRun make test to test.\n' > docs/guide.md
fi
printf '# Demo\n\nA project with a linter.\n' > docs/index.md
git init -q -b main
git config user.name "Demo Bot"
git config user.email "bot@example.com"
git add -A
git commit -qm "Initial commit"
