#!/usr/bin/env bash
# Builds the console (web/dist), runs its headless-Chromium test against one freshly built and
# started `bc-server dev` that embeds that build, then checks that the checked-in web/dist is what
# the sources build to. Exits non-zero on any failure. Called by `make test-web`; runnable from anywhere.
set -euo pipefail

start=$(date +%s)
web_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
repo_root="$(cd "$web_dir/.." && pwd)"
sdk_dir="$repo_root/sdk/ts"

# Debian's chromium drives the test; playwright-core never downloads a browser of its own.
chromium="${BC_TEST_CHROMIUM:-/usr/bin/chromium}"
if [[ ! -x "$chromium" ]]; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    echo "web/test/run.sh: installing chromium" >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "web/test/run.sh: $chromium is missing; install Debian's chromium (apt-get install -y chromium)" >&2
    exit 1
  fi
fi

# Exactly the locked dependencies, when node_modules is missing or older than the lock file. The
# console bundles the SDK's sources, whose packages live in sdk/ts/node_modules.
for dir in "$sdk_dir" "$web_dir"; do
  if [[ ! -f "$dir/node_modules/.package-lock.json" || "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]]; then
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  fi
done

# The test's fixtures call the server through the SDK's build.
(cd "$sdk_dir" && npm run --silent build)
(cd "$web_dir" && npm run --silent build)

bin_dir="$(mktemp -d)"
trap 'rm -rf "$bin_dir"' EXIT
if [[ -z "${BC_SERVER_BIN:-}" ]]; then
  (cd "$repo_root" && go build -o "$bin_dir/bc-server" ./cmd/bc-server)
  export BC_SERVER_BIN="$bin_dir/bc-server"
fi

status=0
(cd "$web_dir" && npm test --silent) || status=$?

# The build bc-server embeds is checked in (go build needs no Node); it must be the sources' build.
if [[ -d "$repo_root/.git" || -f "$repo_root/.git" ]]; then
  if ! git -C "$repo_root" diff --quiet -- web/dist || [[ -n "$(git -C "$repo_root" status --porcelain -- web/dist)" ]]; then
    git -C "$repo_root" status --short -- web/dist >&2
    echo "web/dist is stale: run make web and commit web/dist" >&2
    status=1
  fi
fi
echo "web: tests finished with status $status in $(( $(date +%s) - start ))s" >&2
exit "$status"
