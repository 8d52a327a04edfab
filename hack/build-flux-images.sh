#!/usr/bin/env bash
# Builds the images of Flux's source-controller and kustomize-controller that a tenant's GitOps
# step installs (pkg/lifecycle/component/gitops/flux.yaml), from their modules on the module
# proxy; nothing is pulled from a registry:
#   - both through one wrapper module, hack/flux/controllers (go.mod repeats the controllers'
#     own replaces, which do not apply to a module that requires them, and pins what the proxy
#     here lacks; docs/concepts/gitops.md says which and why), in one go build: one set of
#     versions, so what the two have in common is compiled once;
#   - static binaries (CGO_ENABLED=0), -trimpath, stripped, no build id;
#   - images by hack/dist/cmd/oci-image, as hack/build-node-images.sh makes its own: the binary
#     in /usr/local/bin (the entrypoint), user 65532, the CA bundle, /tmp; named as flux.yaml
#     names them, localhost/butler-flux-<controller>:<version>, and the wrapper's go.mod must
#     require that very version (checked).
# Archives in NODE_IMAGES_DIR (default _output/node-images, where real nodes import theirs
# from): flux-source-controller.oci.tar, flux-kustomize-controller.oci.tar.
#
# An archive whose inputs are unchanged is kept (flux-<controller>.inputs beside it: a digest of
# the wrapper's go.mod and go.sum, this script, flux.yaml, oci-image's module and sources, the Go
# version and GOARCH): the one-node cluster's GitOps stage and the real-node stage both ask for
# the images, and a warm rebuild was 22-46 s of links and gzip for the same bytes.
#
# Usage: hack/build-flux-images.sh [source-controller] [kustomize-controller]  (default: both).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${BIN:-${ROOT}/_output/bin}"
NODE_IMAGES_DIR="${NODE_IMAGES_DIR:-${ROOT}/_output/node-images}"
MANIFESTS="${ROOT}/pkg/lifecycle/component/gitops/flux.yaml"
arch="$(go env GOARCH)"
log() { echo "build-flux-images: $*" >&2; }

controllers=("$@")
[[ ${#controllers[@]} -gt 0 ]] || controllers=(source-controller kustomize-controller)
inputs=$( { cat "${BASH_SOURCE[0]}" "${ROOT}/hack/flux/controllers/go.mod" "${ROOT}/hack/flux/controllers/go.sum" "${MANIFESTS}" \
  "${ROOT}/hack/dist/go.mod" "${ROOT}/hack/dist/go.sum" "${ROOT}"/hack/dist/cmd/oci-image/*.go; go version; echo "${arch}"; } | sha256sum | cut -d' ' -f1)
stale=()
for controller in "${controllers[@]}"; do
  if [[ -f "${NODE_IMAGES_DIR}/flux-${controller}.oci.tar" && "$(cat "${NODE_IMAGES_DIR}/flux-${controller}.inputs" 2>/dev/null)" == "${inputs}" ]]; then
    log "flux-${controller}.oci.tar is up to date (its inputs are unchanged)"
  else
    stale+=("${controller}")
  fi
done
[[ ${#stale[@]} -gt 0 ]] || exit 0
controllers=("${stale[@]}")
# Only a finished archive gets its inputs' digest back.
for controller in "${controllers[@]}"; do rm -f "${NODE_IMAGES_DIR}/flux-${controller}.inputs"; done
mkdir -p "${NODE_IMAGES_DIR}/bin/flux" "${BIN}"
(cd "${ROOT}/hack/dist" && go build -o "${BIN}/oci-image" ./cmd/oci-image)

wrapper="${ROOT}/hack/flux/controllers"
t=${SECONDS}
packages=()
for controller in "${controllers[@]}"; do
  [[ ${controller} == source-controller || ${controller} == kustomize-controller ]] ||
    { log "no controller ${controller} (source-controller or kustomize-controller)"; exit 1; }
  packages+=("github.com/fluxcd/${controller}")
done
# One build for both: the go command then compiles each shared package once and keeps both cores busy.
(cd "${wrapper}" && CGO_ENABLED=0 GOOS=linux GOARCH="${arch}" go build -trimpath -buildvcs=false \
  -ldflags '-s -w -buildid=' -o "${NODE_IMAGES_DIR}/bin/flux/" "${packages[@]}")
log "${controllers[*]} built in $((SECONDS - t)) s"

for controller in "${controllers[@]}"; do
  ref=$(grep -o "localhost/butler-flux-${controller}:v[0-9.]*" "${MANIFESTS}" | head -n 1)
  [[ -n "${ref}" ]] || { log "${MANIFESTS} names no image of ${controller}"; exit 1; }
  version=${ref##*:}
  required=$(cd "${wrapper}" && go list -m -f '{{.Version}}' "github.com/fluxcd/${controller}")
  if [[ "${required}" != "${version}" ]]; then
    log "flux.yaml runs ${controller} ${version}, ${wrapper}/go.mod requires ${required}: make them agree"
    exit 1
  fi
  out="${NODE_IMAGES_DIR}/bin/flux/${controller}"
  created=$(cd "${wrapper}" && date -d "$(go list -m -f '{{.Time.Format "2006-01-02T15:04:05Z"}}' "github.com/fluxcd/${controller}")" +%s)
  "${BIN}/oci-image" --out "${NODE_IMAGES_DIR}/flux-${controller}" --archive "${NODE_IMAGES_DIR}/flux-${controller}.oci.tar" \
    --repository "${ref%:*}" --tag "${version}" --created "${created}" --revision "${version}" \
    --source "https://github.com/fluxcd/${controller}" --binary "linux/${arch}=${out}" >/dev/null
  echo "${inputs}" >"${NODE_IMAGES_DIR}/flux-${controller}.inputs"
  log "${ref}: binary $(du -m "${out}" | cut -f1) MB, archive $(du -m "${NODE_IMAGES_DIR}/flux-${controller}.oci.tar" | cut -f1) MB"
done
