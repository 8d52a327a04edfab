#!/usr/bin/env bash
# Builds the real hosted control plane engine from the source archives in THIRD_PARTY_DIR:
# Steward's manager and the Cluster API Steward control-plane provider, and the images a
# Steward-hosted tenant control plane runs (kube-apiserver, kube-controller-manager and
# kube-scheduler of each STEWARD_KUBE_VERSIONS version). Nothing is pulled from a registry and
# nothing of theirs enters this repository:
#   - each source archive is unpacked into _output/third_party (again when the archive changes);
#     the provider's go.mod gets `replace github.com/butlerdotdev/steward => ../steward` there,
#     in that build-only copy (the proxy serves neither project); their own modules come from
#     the Go module proxy;
#   - static binaries (CGO_ENABLED=0: the images have no libc), -trimpath, no build id;
#   - images by hack/dist/cmd/oci-image, as hack/build-images.sh makes butler-apiserver's: the
#     binary in /usr/local/bin (the entrypoint), user 65532, every time the archive's commit
#     date, so one input gives one digest;
#   - the kube images wrap the binaries butler-localprovider build-kube makes of the version for
#     local tenants (_output/kube-versions/<v>/bin, static; built first when missing): one build
#     per version for both, named as Steward's TenantControlPlane defaults name them:
#     registry.k8s.io/kube-apiserver:<v>, ...
# Archives in IMAGES_DIR (default _output/images/steward): steward.oci.tar,
# capi-steward.oci.tar, kube-{apiserver,controller-manager,scheduler}-<v>.oci.tar. They are kept
# when their inputs are unchanged (IMAGES_DIR/inputs: a digest of this script, the two source
# archives, oci-image's module and sources, the tenant versions and their binaries, the Go version
# and GOARCH): CI builds them beside its real-node stage and make test-steward asks again; a warm
# rebuild was about a minute of links and gzip for the same bytes. Each build's archives are also
# kept in the user's cache (XDG_CACHE_HOME/butler-apiserver/steward-images/<digest>), which a clean
# clone copies from: CI's clean clone packed them again, 379 s beside its real-node stage.
#
# Environment:
#   THIRD_PARTY_DIR        the directory holding steward-<commit>.tar.gz and
#                          cluster-api-control-plane-provider-steward-<commit>.tar.gz. The
#                          archives given are kept in the user's cache
#                          (XDG_CACHE_HOME/butler-apiserver/third_party), as Go keeps a module it
#                          fetched; without the variable, the build (CI's clean clone) reads them
#                          there. The first build on a machine needs it.
#   STEWARD_KUBE_VERSIONS  tenant versions to make images of (default v1.35.4, the e2e tests' extra version)
#   STEWARD_UPGRADE_FROM   one more version to make images of (default v1.35.0; empty: none): the
#                          Steward stage's upgrade starts there (hack/lib/steward.sh); a Kubernetes
#                          build more, cold (about 6 min here), a link of 3 binaries warm
#   IMAGES_DIR             default _output/images/steward
#   STEWARD_IMAGES_CACHE   off: neither read nor fill the user's cache
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
THIRD_PARTY_DIR="${THIRD_PARTY_DIR:-}"
STEWARD_UPGRADE_FROM="${STEWARD_UPGRADE_FROM-v1.35.0}"
STEWARD_KUBE_VERSIONS="${STEWARD_KUBE_VERSIONS:-v1.35.4}${STEWARD_UPGRADE_FROM:+ ${STEWARD_UPGRADE_FROM}}"
IMAGES_DIR="${IMAGES_DIR:-${ROOT}/_output/images/steward}"
KUBE_VERSIONS_DIR="${KUBE_VERSIONS_DIR:-${ROOT}/_output/kube-versions}"
SRC="${ROOT}/_output/third_party"
BIN="${ROOT}/_output/bin"
arch="$(go env GOARCH)"
log() { echo "build-steward: $*" >&2; }
# missing WHAT: what the build needs, where it comes from and how to name it; exits.
missing() {
  log "$1. Set THIRD_PARTY_DIR to a directory holding the source archives (each unpacking into a folder named after its project) of:
  steward-d49041f.tar.gz: https://github.com/butlerdotdev/steward at d49041f76d50d549e9de8f34545ceb28b54d88e2
  cluster-api-control-plane-provider-steward-78fc830.tar.gz: https://github.com/butlerdotdev/cluster-api-control-plane-provider-steward at 78fc830530d1af4200efbe9ff6e14f649adfaed6
(the Go module proxy serves neither; both are Apache-2.0)"
  exit 1
}
PROJECTS="steward cluster-api-control-plane-provider-steward"
ARCHIVES="${XDG_CACHE_HOME:-${HOME}/.cache}/butler-apiserver/third_party"
if [[ -n "${THIRD_PARTY_DIR}" ]]; then
  for project in ${PROJECTS}; do
    given=$(compgen -G "${THIRD_PARTY_DIR}/${project}-*.tar.gz" | head -n 1) || missing "no ${THIRD_PARTY_DIR}/${project}-*.tar.gz"
    mkdir -p "${ARCHIVES}"
    cmp -s "${given}" "${ARCHIVES}/${given##*/}" && continue
    rm -f "${ARCHIVES}/${project}"-[0-9a-f]*.tar.gz
    cp "${given}" "${ARCHIVES}/${given##*/}.new" && mv "${ARCHIVES}/${given##*/}.new" "${ARCHIVES}/${given##*/}"
  done
fi
THIRD_PARTY_DIR="${ARCHIVES}"
for project in ${PROJECTS}; do
  compgen -G "${THIRD_PARTY_DIR}/${project}-*.tar.gz" >/dev/null || missing "THIRD_PARTY_DIR is not set and the user's cache (${ARCHIVES}) has no ${project}-*.tar.gz"
done
mkdir -p "${SRC}" "${IMAGES_DIR}/bin" "${BIN}"
start=${SECONDS}

# inputs: the digest of everything the archives are made of, or nothing when a tenant version's
# binaries are not built yet (then the build below makes them, and the next call can tell).
inputs() {
  local version component files=("${BASH_SOURCE[0]}" "${ROOT}/hack/dist/go.mod" "${ROOT}/hack/dist/go.sum" "${ROOT}"/hack/dist/cmd/oci-image/*.go)
  files+=("$(compgen -G "${THIRD_PARTY_DIR}/steward-*.tar.gz" | head -n 1)")
  files+=("$(compgen -G "${THIRD_PARTY_DIR}/cluster-api-control-plane-provider-steward-*.tar.gz" | head -n 1)")
  for version in ${STEWARD_KUBE_VERSIONS}; do
    for component in kube-apiserver kube-controller-manager kube-scheduler; do
      [[ -x "${KUBE_VERSIONS_DIR}/${version}/bin/${component}" ]] || return 0
      files+=("${KUBE_VERSIONS_DIR}/${version}/bin/${component}")
    done
  done
  { sha256sum "${files[@]}" | cut -d' ' -f1; go version; echo "${arch} ${STEWARD_KUBE_VERSIONS}"; } | sha256sum | cut -d' ' -f1
}
# built: every archive this build makes is there.
built() {
  local version component f
  for f in steward capi-steward; do [[ -f "${IMAGES_DIR}/${f}.oci.tar" ]] || return 1; done
  for version in ${STEWARD_KUBE_VERSIONS}; do
    for component in kube-apiserver kube-controller-manager kube-scheduler; do
      [[ -f "${IMAGES_DIR}/${component}-${version}.oci.tar" ]] || return 1
    done
  done
}
# kube_binaries: the binaries the local provider runs for each tenant version (static: it builds
# them with CGO_ENABLED=0), built first when missing or when an older provider built them with cgo
# (a copy from the user's cache when the same link was made before: kubebuild's cache).
kube_binaries() {
  local version bin missing=()
  for version in ${STEWARD_KUBE_VERSIONS}; do
    bin="${KUBE_VERSIONS_DIR}/${version}/bin"
    if [[ -x "${bin}/kube-apiserver" ]] && od -An -c -N 1024 "${bin}/kube-apiserver" | tr -d ' \n' | grep -q 'ld-linux'; then
      log "${bin} holds binaries linked with cgo (an older butler-localprovider built them): building ${version} again"
      rm -rf "${bin}"
    fi
    if [[ ! -x "${bin}/kube-apiserver" || ! -x "${bin}/kube-controller-manager" || ! -x "${bin}/kube-scheduler" ]]; then
      missing+=("${version}")
    fi
  done
  if ((${#missing[@]})); then
    go build -o "${BIN}/butler-localprovider" ./cmd/butler-localprovider
    "${BIN}/butler-localprovider" build-kube --kube-versions-dir "${KUBE_VERSIONS_DIR}" "${missing[@]}"
  fi
}
# unpack ARCHIVE_GLOB DIR: the archive into _output/third_party/DIR, unless that copy came from
# this very archive (its checksum is kept beside it).
unpack() {
  local archive sum
  archive=$(compgen -G "${THIRD_PARTY_DIR}/$1" | head -n 1)
  sum=$(sha256sum "${archive}" | cut -d' ' -f1)
  if [[ "$(cat "${SRC}/$2.sha256" 2>/dev/null)" != "${sum}" ]]; then
    rm -rf "${SRC:?}/$2"
    tar -xzf "${archive}" -C "${SRC}"
    echo "${sum}" >"${SRC}/$2.sha256"
  fi
  # The commit is in the archive's name (<project>-<short commit>.tar.gz).
  commit="${archive##*-}"; commit="${commit%.tar.gz}"
}
# The sources are unpacked whether or not the archives are built: the Steward stage
# (hack/lib/steward.sh) renders Steward's chart and the provider's manifest from them.
unpack 'steward-*.tar.gz' steward
steward_commit=${commit}
unpack 'cluster-api-control-plane-provider-steward-*.tar.gz' cluster-api-control-plane-provider-steward
provider_commit=${commit}
kube_binaries
digest=$(inputs)
if [[ -n "${digest}" && "$(cat "${IMAGES_DIR}/inputs" 2>/dev/null)" == "${digest}" ]] && built; then
  log "the archives in ${IMAGES_DIR} are up to date (their inputs are unchanged)"
  exit 0
fi
rm -f "${IMAGES_DIR}/inputs" # only a finished build writes it back

# The user's cache keeps each build's archives and layouts by their inputs' digest, as Go's build
# cache keeps compiled packages: a clean clone (every CI run) otherwise packed the same bytes
# again, about 6 minutes beside the real-node stage. STEWARD_IMAGES_CACHE=off builds every time.
CACHE="${XDG_CACHE_HOME:-${HOME}/.cache}/butler-apiserver/steward-images"
[[ "${STEWARD_IMAGES_CACHE:-}" != off ]] || CACHE=""
if [[ -n "${CACHE}" && -n "${digest}" && -f "${CACHE}/${digest}/inputs" ]]; then
  cp -a "${CACHE}/${digest}/." "${IMAGES_DIR}/"
  touch "${CACHE}/${digest}"
  if built; then
    log "the archives of these inputs copied from ${CACHE}/${digest} in $((SECONDS - start)) s"
    exit 0
  fi
  rm -f "${IMAGES_DIR}/inputs"
fi

# created DIR: the newest modification time in the unpacked tree (the commit's date in a git
# archive), for the image timestamps; go.mod left out, as the provider's is edited here (its
# time was the edit's, so the provider's image changed digest at every build).
created() { find "$1" -type f ! -name go.mod -printf '%T@\n' | sort -n | tail -n 1 | cut -d. -f1; }

# go_static DIR OUT PACKAGE [LDFLAGS]: a static, reproducible build.
go_static() {
  (cd "$1" && CGO_ENABLED=0 GOOS=linux GOARCH="${arch}" go build -trimpath -buildvcs=false \
    -ldflags "-s -w -buildid= ${4:-}" -o "$2" "$3")
}

# image NAME REPOSITORY TAG BINARY CREATED REVISION SOURCE
image() {
  "${BIN}/oci-image" --out "${IMAGES_DIR}/$1" --archive "${IMAGES_DIR}/$1.oci.tar" \
    --repository "$2" --tag "$3" --created "$5" --revision "$6" --source "$7" \
    --binary "linux/${arch}=$4" >/dev/null
}

(cd hack/dist && go build -o "${BIN}/oci-image" ./cmd/oci-image)

# --- Steward ---------------------------------------------------------------------------------
t=${SECONDS}
mkdir -p "${IMAGES_DIR}/bin/steward"
go_static "${SRC}/steward" "${IMAGES_DIR}/bin/steward/steward" . \
  "-X github.com/butlerdotdev/steward/internal.GitTag=${steward_commit} -X github.com/butlerdotdev/steward/internal.GitCommit=${steward_commit} -X github.com/butlerdotdev/steward/internal.GitDirty= -X github.com/butlerdotdev/steward/internal.GitRepo=https://github.com/butlerdotdev/steward"
image steward docker.io/butlerlabs/steward "${steward_commit}" "${IMAGES_DIR}/bin/steward/steward" \
  "$(created "${SRC}/steward")" "${steward_commit}" https://github.com/butlerdotdev/steward
log "Steward ${steward_commit} in $((SECONDS - t)) s"

# --- the Cluster API provider ----------------------------------------------------------------
t=${SECONDS}
provider="${SRC}/cluster-api-control-plane-provider-steward"
(cd "${provider}" && go mod edit -replace github.com/butlerdotdev/steward=../steward)
mkdir -p "${IMAGES_DIR}/bin/capi-steward"
go_static "${provider}" "${IMAGES_DIR}/bin/capi-steward/capi-steward" .
image capi-steward docker.io/butlerlabs/cluster-api-control-plane-provider-steward "${provider_commit}" \
  "${IMAGES_DIR}/bin/capi-steward/capi-steward" "$(created "${provider}")" "${provider_commit}" \
  https://github.com/butlerdotdev/cluster-api-control-plane-provider-steward
log "the Cluster API Steward provider ${provider_commit} in $((SECONDS - t)) s"

# --- the tenant's Kubernetes -----------------------------------------------------------------
for version in ${STEWARD_KUBE_VERSIONS}; do
  t=${SECONDS}
  bin="${KUBE_VERSIONS_DIR}/${version}/bin"
  for component in kube-apiserver kube-controller-manager kube-scheduler; do
    image "${component}-${version}" "registry.k8s.io/${component}" "${version}" "${bin}/${component}" 0 "${version}" \
      https://github.com/kubernetes/kubernetes
  done
  log "kube-apiserver, kube-controller-manager and kube-scheduler ${version} in $((SECONDS - t)) s"
done
inputs >"${IMAGES_DIR}/inputs"
# Into the cache (whole or not at all); entries unused for 30 days go.
if [[ -n "${CACHE}" ]]; then
  mkdir -p "${CACHE}"
  find "${CACHE}" -mindepth 1 -maxdepth 1 -mtime +30 -exec rm -rf {} +
  entry="$(inputs)"; tmp="$(mktemp -d "${CACHE}/.new-XXXXXX")"
  keep=(inputs)
  for f in "${IMAGES_DIR}"/*.oci.tar; do keep+=("${f##*/}" "$(basename "${f}" .oci.tar)"); done
  (cd "${IMAGES_DIR}" && cp -a "${keep[@]}" "${tmp}/")
  rm -rf "${CACHE:?}/${entry}"; mv "${tmp}" "${CACHE}/${entry}"
fi
log "done in $((SECONDS - start)) s: $(cd "${IMAGES_DIR}" && echo ./*.oci.tar)"
