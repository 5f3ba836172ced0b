#!/usr/bin/env bash
# Builds the TypeScript SDK and runs its tests (unit, Node, headless Chromium) against one freshly
# started `bc-server dev`. Exits non-zero on any failure. Called by `make test`; runnable from anywhere.
set -euo pipefail

start=$(date +%s)
sdk_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
repo_root="$(cd "$sdk_dir/../.." && pwd)"
cd "$sdk_dir"

# Debian's chromium drives the browser test; playwright-core never downloads a browser of its own.
chromium="${BC_TEST_CHROMIUM:-/usr/bin/chromium}"
if [[ ! -x "$chromium" ]]; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    echo "run.sh: installing chromium" >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "run.sh: $chromium is missing; install Debian's chromium (apt-get install -y chromium)" >&2
    exit 1
  fi
fi

# Install exactly the locked dependencies when node_modules is missing or older than the lock file.
if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  npm ci --no-audit --no-fund --loglevel=error
fi

# Build the server once for every test file (with-server.mjs starts it and passes its address on).
bin_dir="$(mktemp -d)"
trap 'rm -rf "$bin_dir"' EXIT
if [[ -z "${BC_SERVER_BIN:-}" ]]; then
  (cd "$repo_root" && go build -o "$bin_dir/bc-server" ./cmd/bc-server)
  export BC_SERVER_BIN="$bin_dir/bc-server"
fi

status=0
npm test --silent || status=$?
echo "sdk/ts: tests finished with status $status in $(( $(date +%s) - start ))s" >&2
exit "$status"
