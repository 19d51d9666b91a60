#!/usr/bin/env bash
# Nightly cron batch: one plangate run at a time, reports kept per date, old ones pruned.
#   0 3 * * *  /path/to/repo/examples/ci/nightly.sh /path/to/repo plans/nightly.yaml
set -uo pipefail
repo=${1:?usage: nightly.sh REPO PLAN [KEEP]}
plan=${2:?usage: nightly.sh REPO PLAN [KEEP]}
keep=${3:-14}
reports="$repo/.plangate/nightly"
mkdir -p "$reports"
# Keep the reports and the lock out of git, like plangate's own run folders.
[ -e "$reports/.gitignore" ] || printf '*\n' >"$reports/.gitignore"
# A lock, so two runs never overlap (flock is in util-linux).
exec 9>"$reports/.lock"
if ! flock -n 9; then
  echo "nightly: another run holds $reports/.lock; skipping" >&2
  exit 0
fi
day=$(date -u +%Y-%m-%d)
out="$reports/$day"
[ -e "$out" ] && out="$reports/$day-$(date -u +%H%M%S)"
cd "$repo" || exit 2
# --quiet: silent on a clean success; otherwise one line on stderr with the
# outcome and why (the blocked, denied or failed steps and their reasons),
# so the cron mail says what to fix without opening the report.
plangate run "$plan" --out "$out" --quiet
code=$?
echo "nightly: $plan ended with exit $code; report in $out/report.json"
# Retention: keep the newest $keep runs.
find "$reports" -mindepth 1 -maxdepth 1 -name '20*' 2>/dev/null | sort | head -n -"$keep" | while read -r old; do rm -rf -- "$old"; done
exit $code
