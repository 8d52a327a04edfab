#!/usr/bin/env bash
# Builds butler-apiserver's OCI image with no Docker, base image or registry: a static binary per
# platform (CGO_ENABLED=0, -trimpath, an empty build id, the version from `git describe` linked
# in), assembled by hack/dist/cmd/oci-image onto a base made from nothing (a CA bundle, the
# non-root user 65532, /tmp) into one multi-platform index, written as an OCI image layout in
# IMAGES_DIR/butler-apiserver and as a tar of it for `ctr images import`. Every timestamp is the
# commit's, so one commit gives one digest (hack/verify-images.sh checks that).
#
# The image carries the charts butler installs from a local path (the catalog's flux-management,
# artifacts/catalog/flux-management.yaml) under /usr/share/butler/charts: the management
# cluster's Flux needs no chart repository, and its chart is the version of this commit.
#
# butler-localprovider gets no image: it runs the tenants' control planes as processes on its
# host (docs/operations/install.md).
#
# Environment (all optional):
#   IMAGE_PLATFORMS   platforms in the index (default "linux/amd64 linux/arm64"; CI may build linux/amd64 only)
#   IMAGE_TAG         tag and version string (default: git describe --tags --always --dirty)
#   IMAGE_REPOSITORY  default ghcr.io/butlerdotdev/butler-apiserver
#   IMAGES_DIR        default _output/images
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
IMAGE_PLATFORMS="${IMAGE_PLATFORMS:-linux/amd64 linux/arm64}"
IMAGE_TAG="${IMAGE_TAG:-$(git describe --tags --always --dirty)}"
IMAGE_REPOSITORY="${IMAGE_REPOSITORY:-ghcr.io/butlerdotdev/butler-apiserver}"
IMAGES_DIR="${IMAGES_DIR:-${ROOT}/_output/images}"
mkdir -p "${IMAGES_DIR}"
IMAGES_DIR="$(cd "${IMAGES_DIR}" && pwd)"
revision="$(git rev-parse HEAD)"
created="$(git log -1 --format=%ct)"
start=${SECONDS}

(cd hack/dist && go build -o "${ROOT}/_output/bin/oci-image" ./cmd/oci-image)

binaries=()
for platform in ${IMAGE_PLATFORMS}; do
  os="${platform%%/*}"; arch="${platform#*/}"; arch="${arch%%/*}"
  out="${IMAGES_DIR}/bin/${os}_${arch}/butler-apiserver"
  CGO_ENABLED=0 GOOS="${os}" GOARCH="${arch}" go build -trimpath -buildvcs=false \
    -ldflags "-s -w -buildid= -X github.com/butlerdotdev/butler-apiserver/cmd/butler-apiserver/app.Version=${IMAGE_TAG}" \
    -o "${out}" ./cmd/butler-apiserver
  binaries+=(--binary "${platform}=${out}")
done

"${ROOT}/_output/bin/oci-image" --out "${IMAGES_DIR}/butler-apiserver" \
  --archive "${IMAGES_DIR}/butler-apiserver.oci.tar" \
  --repository "${IMAGE_REPOSITORY}" --tag "${IMAGE_TAG}" --created "${created}" \
  --revision "${revision}" --source https://github.com/butlerdotdev/butler-apiserver \
  --dir "${ROOT}/charts/butler-flux=/usr/share/butler/charts/butler-flux" \
  "${binaries[@]}"
echo "build-images: ${IMAGE_PLATFORMS} in $((SECONDS - start)) s"
