#!/usr/bin/env bash
# The real-API-server test tier: builds (once) kube-apiserver and helm, links etcd, and starts or
# stops etcd and kube-apiserver on 127.0.0.1 for a test run.
#
# kube-apiserver and helm are compiled by one `go build` of a small module this script writes
# (the tools module): it requires k8s.io/kubernetes and helm.sh/helm/v4 and points the k8s.io
# staging modules, which k8s.io/kubernetes's go.mod replaces with local paths, at their published
# v0.X.Y versions (same minor and patch as the v1.X.Y tag). helm is built against the same
# client-go, apimachinery, apiserver and api packages, so one build compiles them once for both
# binaries (helm of the same Kubernetes minor pins the same versions). etcd comes from Debian's
# etcd-server package. The build is cached under $HOME/.cache/better-compute, so only the first
# run pays for it (minutes on two cores).
#
# Usage:
#   scripts/kube-apiserver.sh [build]   build or reuse; print the bin dir
#   scripts/kube-apiserver.sh bin       print the bin dir if the binaries are there, else exit 3
#   scripts/kube-apiserver.sh helm      print the path of the built helm; while a build runs, wait
#                                       for it (KUBE_BUILD_WAIT); exit 3 when it is not built
#   scripts/kube-apiserver.sh start DIR start etcd + kube-apiserver with state, certificates and
#                                       logs in DIR; print DIR/kubeconfig (cluster-admin by a
#                                       client certificate) once /readyz answers ok. While a build
#                                       runs (.ci/run starts one beside the tests) it waits for it,
#                                       up to KUBE_BUILD_WAIT seconds (default 1800). Exit 3 when
#                                       the binaries are not built. Ports: ETCD_PORT, ETCD_PEER_PORT,
#                                       APISERVER_PORT (defaults 23790, 23800, 26443); with
#                                       WATCH_PID set, both stop when that process exits.
#   scripts/kube-apiserver.sh stop DIR  stop what start DIR started
# KUBE_VERSION (default v1.37.2) and HELM_VERSION (default v4.3.2) pick the tags.
set -euo pipefail
version="${KUBE_VERSION:-v1.37.2}"
helm_version="${HELM_VERSION:-v4.3.2}"
cache="${HOME}/.cache/better-compute/kube-${version}-helm-${helm_version}"
bin="${cache}/bin"
mode="${1:-build}"
# A build holds this lock (flock) from start to end: a second build waits instead of compiling
# again, and start waits for the binaries instead of reporting them missing.
lock="${cache}.lock"

built() { [ -x "${bin}/kube-apiserver" ] && [ -x "${bin}/helm" ] && [ -x "${bin}/etcd" ]; }

# building: true while another process holds the build lock.
building() {
  [ -f "${lock}" ] || return 1
  ! flock -n "${lock}" true
}

# wait_for_build: while another process builds, wait for it (up to KUBE_BUILD_WAIT seconds).
wait_for_build() {
  if ! built && building; then
    echo "kube-apiserver.sh: waiting for the build in progress (${lock})" >&2
    flock -w "${KUBE_BUILD_WAIT:-1800}" "${lock}" true || true
  fi
}

build() {
  if built; then
    return 0
  fi
  mkdir -p "${bin}"
  exec 9>"${lock}"
  flock 9
  if built; then
    return 0
  fi
  if [ ! -x "${bin}/kube-apiserver" ] || [ ! -x "${bin}/helm" ]; then
    (
      export GOFLAGS=-mod=mod GOWORK=off
      kube_mod=$(go mod download -json "k8s.io/kubernetes@${version}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
      [ -n "${kube_mod}" ] || { echo "kube-apiserver.sh: cannot download k8s.io/kubernetes@${version}" >&2; exit 1; }
      work="${cache}/tools"
      rm -rf "${work}"
      mkdir -p "${work}"
      cd "${work}"
      staging_version="v0${version#v1}"
      # Every replace onto ./staging/... becomes a replace by the published module: as a
      # dependency, k8s.io/kubernetes requires those modules at v0.0.0.
      replaces=$(sed -n 's#^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/.*#replace \1 => \1 '"${staging_version}"'#p' "${kube_mod}")
      [ -n "${replaces}" ] || { echo "kube-apiserver.sh: no staging replaces found in k8s.io/kubernetes's go.mod" >&2; exit 1; }
      printf 'module better-compute.dev/test-tools\n\ngo %s\n\nrequire (\n\tk8s.io/kubernetes %s\n\thelm.sh/helm/v4 %s\n)\n\n%s\n' \
        "$(go env GOVERSION | sed 's/^go//')" "${version}" "${helm_version}" "${replaces}" >go.mod
      # The tests drive these binaries lightly, so they are built for build time, not speed: no
      # optimisation or inlining (-N -l) and no symbol table or DWARF (-s -w): those passes are a
      # large share of compiling and linking the server's packages.
      go build -trimpath -gcflags=all='-N -l' \
        -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=${version} -X helm.sh/helm/v4/internal/version.version=${helm_version}" \
        -o "${work}/bin/" k8s.io/kubernetes/cmd/kube-apiserver helm.sh/helm/v4/cmd/helm
      # CPU seconds the build took (this subshell's children), for .ci/run's summary.
      # (fields 16 and 17 of /proc/PID/stat: the user and system time of its waited-for children, in
      # clock ticks; `times` would run in a pipeline's subshell and see none).
      awk -v hz="$(getconf CLK_TCK)" '{printf "%d\n", ($16 + $17) / hz}' "/proc/${BASHPID}/stat" >"${cache}/build-cpu-seconds"
      mv "${work}/bin/helm" "${bin}/helm"
      mv "${work}/bin/kube-apiserver" "${bin}/kube-apiserver"
      cd / && rm -rf "${work}"
    )
  fi
  # etcd: Debian's package, linked into the cache dir so the test finds both in one place. It is
  # looked for after the compile: .ci/run starts this build first and installs etcd-server with its
  # other packages meanwhile.
  if ! command -v etcd >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
      # Another apt-get (.ci/run's) may hold dpkg's lock: wait for it rather than fail.
      DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq etcd-server >/dev/null 2>&1 ||
        { apt-get -o DPkg::Lock::Timeout=600 update -qq &&
          DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq etcd-server >/dev/null; }
    else
      echo "kube-apiserver.sh: etcd is not installed (apt-get install -y etcd-server)" >&2
      exit 1
    fi
  fi
  ln -sf "$(command -v etcd)" "${bin}/etcd"
}

# certs DIR: a CA, the API server's serving certificate for 127.0.0.1, a cluster-admin client
# certificate (group system:masters) and the service account signing key pair.
certs() {
  local d="$1/pki"
  mkdir -p "${d}"
  (
    cd "${d}"
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=bc-test-ca" \
      -keyout ca.key -out ca.crt 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" -keyout apiserver.key -out apiserver.csr 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >apiserver.ext
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
      -extfile apiserver.ext -out apiserver.crt 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/O=system:masters/CN=bc-test-admin" -keyout admin.key -out admin.csr 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' >admin.ext
    openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
      -extfile admin.ext -out admin.crt 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  )
}

start() {
  local dir="$1"
  wait_for_build
  if ! built; then
    echo "kube-apiserver.sh: ${bin} has no kube-apiserver, helm and etcd: run scripts/kube-apiserver.sh build" >&2
    exit 3
  fi
  local etcd_port="${ETCD_PORT:-23790}" peer_port="${ETCD_PEER_PORT:-23800}" api_port="${APISERVER_PORT:-26443}"
  mkdir -p "${dir}"
  dir=$(cd "${dir}" && pwd)
  certs "${dir}"
  local pki="${dir}/pki"
  setsid "${bin}/etcd" --name bc-test --data-dir "${dir}/etcd" \
    --listen-client-urls "http://127.0.0.1:${etcd_port}" --advertise-client-urls "http://127.0.0.1:${etcd_port}" \
    --listen-peer-urls "http://127.0.0.1:${peer_port}" --initial-advertise-peer-urls "http://127.0.0.1:${peer_port}" \
    --initial-cluster "bc-test=http://127.0.0.1:${peer_port}" \
    --quota-backend-bytes 1073741824 >"${dir}/etcd.log" 2>&1 </dev/null &
  echo $! >"${dir}/etcd.pid"
  # No controller manager or scheduler runs: the API server alone is what the tests drive.
  setsid "${bin}/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:${etcd_port}" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "${api_port}" \
    --endpoint-reconciler-type=none \
    --tls-cert-file "${pki}/apiserver.crt" --tls-private-key-file "${pki}/apiserver.key" \
    --client-ca-file "${pki}/ca.crt" \
    --service-account-issuer "https://127.0.0.1:${api_port}" \
    --service-account-key-file "${pki}/sa.pub" --service-account-signing-key-file "${pki}/sa.key" \
    --service-cluster-ip-range 10.96.0.0/16 \
    --authorization-mode RBAC \
    --cert-dir "${dir}/certs" --profiling=false --enable-priority-and-fairness=false \
    >"${dir}/kube-apiserver.log" 2>&1 </dev/null &
  echo $! >"${dir}/kube-apiserver.pid"
  # WATCH_PID (the test process): when it exits without calling stop (killed by a timeout),
  # the pair is stopped anyway.
  if [ -n "${WATCH_PID:-}" ]; then
    setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; "$2" stop "$3"' _ \
      "${WATCH_PID}" "$(cd "$(dirname "$0")" && pwd)/$(basename "$0")" "${dir}" >/dev/null 2>&1 </dev/null &
  fi

  local ca crt key
  ca=$(base64 -w0 <"${pki}/ca.crt")
  crt=$(base64 -w0 <"${pki}/admin.crt")
  key=$(base64 -w0 <"${pki}/admin.key")
  cat >"${dir}/kubeconfig" <<EOF
apiVersion: v1
kind: Config
current-context: bc-test
clusters:
- name: bc-test
  cluster:
    server: https://127.0.0.1:${api_port}
    certificate-authority-data: ${ca}
users:
- name: bc-test-admin
  user:
    client-certificate-data: ${crt}
    client-key-data: ${key}
contexts:
- name: bc-test
  context:
    cluster: bc-test
    user: bc-test-admin
EOF
  # Ready when /readyz says ok (the RBAC bootstrap roles are in by then); a dead process ends it.
  local deadline=$((SECONDS + ${KUBE_START_TIMEOUT:-180}))
  while [ "${SECONDS}" -lt "${deadline}" ]; do
    if curl -fsS --cacert "${pki}/ca.crt" --cert "${pki}/admin.crt" --key "${pki}/admin.key" \
      "https://127.0.0.1:${api_port}/readyz" >/dev/null 2>&1; then
      echo "${dir}/kubeconfig"
      return 0
    fi
    for p in etcd kube-apiserver; do
      if ! kill -0 "$(cat "${dir}/${p}.pid")" 2>/dev/null; then
        echo "kube-apiserver.sh: ${p} exited; last lines of ${dir}/${p}.log:" >&2
        tail -n 20 "${dir}/${p}.log" >&2
        stop "${dir}"
        exit 1
      fi
    done
    sleep 0.5
  done
  echo "kube-apiserver.sh: not ready within ${KUBE_START_TIMEOUT:-180} s; last lines of ${dir}/kube-apiserver.log:" >&2
  tail -n 20 "${dir}/kube-apiserver.log" >&2
  stop "${dir}"
  exit 1
}

# stop DIR: the API server first, then etcd; each by the pid start recorded.
stop() {
  local dir="$1" pid
  for p in kube-apiserver etcd; do
    [ -f "${dir}/${p}.pid" ] || continue
    pid=$(cat "${dir}/${p}.pid")
    kill "${pid}" 2>/dev/null || true
    for _ in $(seq 50); do
      kill -0 "${pid}" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "${pid}" 2>/dev/null || true
    rm -f "${dir}/${p}.pid"
  done
}

case "${mode}" in
build)
  build
  echo "${bin}"
  ;;
bin)
  built || exit 3
  echo "${bin}"
  ;;
helm)
  wait_for_build
  [ -x "${bin}/helm" ] || exit 3
  echo "${bin}/helm"
  ;;
start)
  [ $# -ge 2 ] || { echo "usage: $0 start DIR" >&2; exit 2; }
  start "$2"
  ;;
stop)
  [ $# -ge 2 ] || { echo "usage: $0 stop DIR" >&2; exit 2; }
  stop "$2"
  ;;
*)
  echo "usage: $0 [build | bin | helm | start DIR | stop DIR]" >&2
  exit 2
  ;;
esac
