#!/usr/bin/env bash
# Builds (once) a kube-apiserver and etcd for the real-API-server test tier and prints the
# directory that holds both binaries. The build is cached under $HOME/.cache/better-compute,
# so only the first run pays for it (minutes on two cores).
#
# kube-apiserver comes from the k8s.io/kubernetes module source: its go.mod replaces the
# k8s.io staging modules with local paths and ships a go.work and vendor/, so the script points
# those modules at their published v0.X.Y versions (same minor and patch as the v1.X.Y tag)
# and builds in module mode. etcd comes from Debian's etcd-server package.
#
# Usage: scripts/kube-apiserver.sh            build or reuse, print the bin dir
#        KUBE_VERSION=v1.37.2 scripts/kube-apiserver.sh
set -euo pipefail
version="${KUBE_VERSION:-v1.37.2}"
cache="${HOME}/.cache/better-compute/kube-apiserver-${version}"
bin="${cache}/bin"
if [ -x "${bin}/kube-apiserver" ] && [ -x "${bin}/etcd" ]; then
  echo "${bin}"
  exit 0
fi
mkdir -p "${bin}"

# etcd: Debian's package, linked into the cache dir so the test finds both in one place.
if ! command -v etcd >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null 2>&1 ||
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null; }
  else
    echo "kube-apiserver.sh: etcd is not installed (apt-get install -y etcd-server)" >&2
    exit 1
  fi
fi
ln -sf "$(command -v etcd)" "${bin}/etcd"

if [ ! -x "${bin}/kube-apiserver" ]; then
  export GOFLAGS=-mod=mod GOWORK=off
  src_dir=$(go mod download -json "k8s.io/kubernetes@${version}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -n "${src_dir}" ] || { echo "kube-apiserver.sh: cannot download k8s.io/kubernetes@${version}" >&2; exit 1; }
  work="${cache}/src"
  rm -rf "${work}"
  cp -r "${src_dir}" "${work}"
  chmod -R u+w "${work}"
  cd "${work}"
  rm -rf vendor go.work go.work.sum
  staging_version="v0${version#v1}"
  # Every replace onto ./staging/... becomes a require of the published module.
  edits=()
  while read -r mod; do
    edits+=("-dropreplace=${mod}" "-require=${mod}@${staging_version}")
  done < <(sed -n 's#^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/.*#\1#p' go.mod)
  [ "${#edits[@]}" -gt 0 ] || { echo "kube-apiserver.sh: no staging replaces found in go.mod" >&2; exit 1; }
  go mod edit "${edits[@]}"
  go build -trimpath -o "${bin}/kube-apiserver.tmp" ./cmd/kube-apiserver
  mv "${bin}/kube-apiserver.tmp" "${bin}/kube-apiserver"
  cd / && rm -rf "${work}"
fi
echo "${bin}"
