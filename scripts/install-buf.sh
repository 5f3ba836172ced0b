#!/usr/bin/env bash
# Installs buf VERSION into BIN. buf's release binary comes from the npm registry (@bufbuild/buf
# ships one per platform), which saves a fresh machine from compiling buf and its dependencies
# with the Go toolchain; where npm or that package is not at hand, go install builds it.
#
# Usage: scripts/install-buf.sh v1.75.0 "$(go env GOPATH)/bin"
set -euo pipefail
version="${1:?version}"
bin="${2:?bin dir}"
mkdir -p "${bin}"
from_npm() {
  command -v npm >/dev/null || return 1
  local dir
  dir=$(mktemp -d)
  npm install --silent --no-audit --no-fund --prefix "${dir}" "@bufbuild/buf@${version#v}" >/dev/null 2>&1 || { rm -rf "${dir}"; return 1; }
  # The platform package holds the executable itself; the top package's bin/buf is a Node shim.
  local exe
  exe=$(find "${dir}/node_modules/@bufbuild" -path '*/buf-*/bin/buf' -type f | head -n1)
  [ -n "${exe}" ] && "${exe}" --version | grep -q "${version#v}" || { rm -rf "${dir}"; return 1; }
  install -m 0755 "${exe}" "${bin}/buf"
  rm -rf "${dir}"
}
from_npm || go install "github.com/bufbuild/buf/cmd/buf@${version}"
"${bin}/buf" --version
