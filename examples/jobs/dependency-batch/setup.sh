#!/usr/bin/env bash
# Make the demo repository this example runs in: three packages, each with a
# pinned dependency list and a test, and an offline "registry" of the latest
# versions. The web package's test fails with router 3 (an incompatible
# major version), so its update is reverted while the others are kept.
#   bash examples/jobs/dependency-batch/setup.sh DIR
set -euo pipefail
dir=${1:?usage: setup.sh DIR}
mkdir -p "$dir/scripts" "$dir/registry" "$dir/packages/core" "$dir/packages/cli" "$dir/packages/web"
cd "$dir"
printf 'argparse 1.4.0\njson-lite 2.1.0\nlogger 1.2.0\nrouter 3.0.0\n' > registry/latest.txt
printf 'json-lite 2.0.0\nlogger 1.2.0\n' > packages/core/deps.txt
printf 'argparse 1.3.0\nlogger 1.1.0\n' > packages/cli/deps.txt
printf 'logger 1.2.0\nrouter 2.5.0\n' > packages/web/deps.txt
for p in core cli; do
  cat > "packages/$p/test.sh" <<'TEST'
#!/usr/bin/env bash
# Every dependency is pinned to a version.
awk 'NF != 2 { print "bad line: " $0; bad = 1 } END { exit bad }' "$(dirname "$0")/deps.txt"
TEST
done
cat > packages/web/test.sh <<'TEST'
#!/usr/bin/env bash
# The web package calls router's route(), which router 3 removed.
if grep -q '^router 3\.' "$(dirname "$0")/deps.txt"; then
  echo "web: router 3 removed route(); the package needs porting first" >&2
  exit 1
fi
TEST
cat > scripts/test-package.sh <<'TEST'
#!/usr/bin/env bash
# The repository's test entry point: scripts/test-package.sh PACKAGE
set -euo pipefail
case "${1:?usage: test-package.sh PACKAGE}" in
  */* | .*) echo "not a package: $1" >&2; exit 2 ;;
esac
exec bash "packages/$1/test.sh"
TEST
git init -q -b main
git config user.name "Demo Bot"
git config user.email "bot@example.com"
git add -A
git commit -qm "Three packages"
