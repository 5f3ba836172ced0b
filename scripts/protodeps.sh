#!/usr/bin/env bash
# Copies buf/validate/validate.proto out of the Go module cache into .build/protovalidate so buf can
# resolve the protovalidate imports without the BSR. The version is pinned here and in go.mod's
# generated-code dependency; bump both together.
set -euo pipefail
version=v1.2.2
dir=$(go mod download -json "github.com/bufbuild/protovalidate@${version}" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
[ -n "$dir" ] || { echo "protodeps: could not download github.com/bufbuild/protovalidate@${version}" >&2; exit 1; }
mkdir -p .build/protovalidate/buf/validate
install -m 0644 "$dir/proto/protovalidate/buf/validate/validate.proto" .build/protovalidate/buf/validate/validate.proto
