#!/usr/bin/env bash
# Builds the bc-server image from Containerfile (make image). The binary is built here, static
# and stamped with the version; the context is .build/image. podman is used when installed,
# else buildah; with neither, or where the sandbox forbids containers, it stops with a message.
#
# Usage: scripts/image.sh [TAG]        TAG defaults to localhost/better-compute/bc-server:VERSION
# Environment: IMAGE_STORAGE_DRIVER (e.g. vfs where overlay is not available), VERSION, COMMIT.
set -euo pipefail
cd "$(dirname "$0")/.."
version="${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo devel)}"
commit="${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
tag="${1:-localhost/better-compute/bc-server:${version}}"
ctx=.build/image
rm -rf "${ctx}"
mkdir -p "${ctx}"
CGO_ENABLED=0 go build -trimpath \
  -ldflags "-s -w -X better-compute.dev/compute/observe.version=${version} -X better-compute.dev/compute/observe.commit=${commit}" \
  -o "${ctx}/bc-server" ./cmd/bc-server
ca=/etc/ssl/certs/ca-certificates.crt
[ -r "${ca}" ] || { echo "image.sh: ${ca} missing: apt-get install ca-certificates" >&2; exit 1; }
cp "${ca}" "${ctx}/ca-certificates.crt"
printf 'bc-server:x:65532:65532:bc-server:/nonexistent:/sbin/nologin\n' >"${ctx}/passwd"
# Metal's IPMI driver runs ipmitool (provider/bmc): the build host's, from Debian's ipmitool
# package, goes in with the shared libraries it links (ldd) at their own paths. Without it on the
# host the image is built without it, and IPMI BMCs answer "ipmitool is not installed".
mkdir -p "${ctx}/rootfs"
if ipmitool=$(command -v ipmitool); then
  for f in "${ipmitool}" $(ldd "${ipmitool}" | sed -n 's#.*=> \(/[^ ]*\) .*#\1#p; s#^[[:space:]]*\(/[^ ]*\) .*#\1#p'); do
    mkdir -p "${ctx}/rootfs$(dirname "${f}")"
    cp -L "${f}" "${ctx}/rootfs${f}"
  done
else
  echo "image.sh: ipmitool is not installed here: the image has no IPMI driver (apt-get install ipmitool)" >&2
fi
storage=()
[ -n "${IMAGE_STORAGE_DRIVER:-}" ] && storage=(--storage-driver "${IMAGE_STORAGE_DRIVER}")
if command -v podman >/dev/null; then
  podman "${storage[@]}" build --network=host -f Containerfile -t "${tag}" "${ctx}"
elif command -v buildah >/dev/null; then
  buildah "${storage[@]}" build --network=host --isolation=chroot -f Containerfile -t "${tag}" "${ctx}"
else
  echo "image.sh: neither podman nor buildah is installed (apt-get install podman or buildah)" >&2
  exit 3
fi
echo "${tag}"
