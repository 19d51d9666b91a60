#!/usr/bin/env bash
# Installs plangate for the GitHub Action (action.yml). Two subcommands:
#
#   install-action.sh install
#     Resolves the version (the `version` input, else the action's own ref when
#     it is a version tag such as v0.1.0), then uses, first match wins:
#       1. the runner's tool cache ($RUNNER_TOOL_CACHE/plangate/<version>/<arch>);
#       2. the release archive for the runner's OS and architecture, verified
#          against its published sha256, then put in the tool cache;
#       3. nothing: it prints build=true (a branch or fork ref, or no release
#          for this version or platform) and the action builds from source.
#     A checksum that does not match, or a missing checksum, is refused (exit 1).
#
#   install-action.sh build
#     cargo install --locked from the action's own source ($ACTION_PATH).
#
# Outputs (appended to $GITHUB_OUTPUT when set, always printed):
#   version=<x.y.z or empty>  source=cache|release|build  build=true|false  bin=<path>
#
# Environment: RUNNER_OS (Linux|macOS), RUNNER_ARCH (X64|ARM64), RUNNER_TOOL_CACHE,
# RUNNER_TEMP, INPUT_VERSION, ACTION_REF, ACTION_REPOSITORY, ACTION_PATH,
# GITHUB_SERVER_URL, and PLANGATE_RELEASE_BASE (the download base URL; the
# tests point it at a local server standing in for the release host).
set -euo pipefail

log() { printf 'plangate install: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

output() {
  printf '%s=%s\n' "$1" "$2"
  if [ -n "${GITHUB_OUTPUT:-}" ]; then
    printf '%s=%s\n' "$1" "$2" >>"$GITHUB_OUTPUT"
  fi
}

# The version to install: the input, else the action's ref when it is a
# version tag; empty when neither names a release.
resolve_version() {
  local v="${INPUT_VERSION:-}"
  if [ -z "$v" ]; then
    v="${ACTION_REF:-}"
  fi
  v="${v#v}"
  if [[ "$v" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
    printf '%s' "$v"
  elif [ -n "${INPUT_VERSION:-}" ]; then
    die "version input '${INPUT_VERSION}' is not a version (x.y.z)"
  fi
}

# The release target triple for this runner, empty when none is published.
resolve_target() {
  case "${RUNNER_OS:-$(uname -s)}/${RUNNER_ARCH:-$(uname -m)}" in
    Linux/X64 | Linux/x86_64) printf 'x86_64-unknown-linux-musl' ;;
    Linux/ARM64 | Linux/aarch64) printf 'aarch64-unknown-linux-musl' ;;
    macOS/X64 | Darwin/x86_64) printf 'x86_64-apple-darwin' ;;
    macOS/ARM64 | Darwin/arm64) printf 'aarch64-apple-darwin' ;;
    *) ;;
  esac
}

sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d' ' -f1
  else
    shasum -a 256 "$1" | cut -d' ' -f1
  fi
}

# fetch URL FILE: 0 when downloaded, 2 when the server has no such file, 1 otherwise.
fetch() {
  local code
  code=$(curl -sSL --retry 3 --retry-connrefused --connect-timeout 10 -o "$2" -w '%{http_code}' "$1") || return 1
  case "$code" in
    200) return 0 ;;
    404) return 2 ;;
    *) log "GET $1: HTTP $code"; return 1 ;;
  esac
}

install() {
  local version target cache_dir tmp base archive got want status
  version=$(resolve_version)
  target=$(resolve_target)
  output version "$version"
  if [ -z "$version" ]; then
    log "ref '${ACTION_REF:-}' is not a release tag and no version input was given: building from source"
    output build true
    output source build
    return 0
  fi
  if [ -z "$target" ]; then
    log "no release binary for ${RUNNER_OS:-?}/${RUNNER_ARCH:-?}: building from source"
    output build true
    output source build
    return 0
  fi
  cache_dir="${RUNNER_TOOL_CACHE:-${RUNNER_TEMP:-/tmp}/tool-cache}/plangate/$version/$target"
  if [ -x "$cache_dir/plangate" ] && [ -f "$cache_dir.complete" ]; then
    log "plangate $version ($target) from the tool cache"
    output build false
    output source cache
    output bin "$cache_dir/plangate"
    return 0
  fi
  base="${PLANGATE_RELEASE_BASE:-${GITHUB_SERVER_URL:-https://github.com}/${ACTION_REPOSITORY:?ACTION_REPOSITORY is not set}/releases/download}"
  archive="plangate-$target.tar.xz"
  tmp=$(mktemp -d "${RUNNER_TEMP:-/tmp}/plangate-install.XXXXXX")
  TMP_DIR=$tmp
  trap 'rm -rf "$TMP_DIR"' EXIT
  status=0
  fetch "$base/v$version/$archive" "$tmp/$archive" || status=$?
  if [ "$status" = 2 ]; then
    log "no release v$version for $target at $base: building from source"
    output build true
    output source build
    return 0
  elif [ "$status" != 0 ]; then
    die "cannot download $base/v$version/$archive"
  fi
  fetch "$base/v$version/$archive.sha256" "$tmp/$archive.sha256" \
    || die "no checksum published for $archive: refusing an unverified binary"
  want=$(cut -d' ' -f1 <"$tmp/$archive.sha256" | tr -d '\r\n' | tr 'A-F' 'a-f')
  got=$(sha256_of "$tmp/$archive")
  [ "$got" = "$want" ] || die "checksum mismatch for $archive: expected $want, got $got; refusing it"
  tar -xJf "$tmp/$archive" -C "$tmp"
  [ -f "$tmp/plangate-$target/plangate" ] || die "$archive holds no plangate-$target/plangate"
  mkdir -p "$cache_dir"
  cp "$tmp/plangate-$target/plangate" "$cache_dir/plangate"
  chmod 755 "$cache_dir/plangate"
  touch "$cache_dir.complete"
  log "plangate $version ($target) downloaded, sha256 $got"
  output build false
  output source release
  output bin "$cache_dir/plangate"
}

build() {
  local root="${RUNNER_TEMP:-/tmp}/plangate-build"
  [ -n "${ACTION_PATH:-}" ] || die "ACTION_PATH is not set"
  log "building plangate from $ACTION_PATH (cargo install --locked)"
  cargo install --locked --quiet --path "$ACTION_PATH" --root "$root"
  output bin "$root/bin/plangate"
}

case "${1:-}" in
  install) install ;;
  build) build ;;
  *) die "usage: $0 install|build" ;;
esac
