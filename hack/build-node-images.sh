#!/usr/bin/env bash
# Builds the images a node this machine runs needs, from source, as OCI archives in
# NODE_IMAGES_DIR (default _output/node-images): pause.oci.tar, the Pod sandbox image
# registry.k8s.io/pause:3.10 (hack/dist/cmd/pause), which both the one-node cluster
# (cmd/butler-cluster) and the local provider's real nodes import into their containerd; and
# echo.oci.tar, the project's HTTP echo test image localhost/butler-echo:v1 (hack/dist/cmd/echo),
# which tests run on real nodes; and coredns.oci.tar, the tenants' cluster DNS
# localhost/butler-coredns:v1.15.0, CoreDNS built from its module on the module proxy with the
# plugins it uses (hack/coredns, a module of its own). Nothing is pulled. Prints the pause
# archive's path.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${BIN:-${ROOT}/_output/bin}"
NODE_IMAGES_DIR="${NODE_IMAGES_DIR:-${ROOT}/_output/node-images}"
PAUSE_IMAGE=registry.k8s.io/pause:3.10
ECHO_IMAGE=localhost/butler-echo:v1
COREDNS_IMAGE=localhost/butler-coredns:v1.15.0

mkdir -p "${NODE_IMAGES_DIR}/bin" "${BIN}"
(cd "${ROOT}/hack/dist" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w -buildid=' -o "${NODE_IMAGES_DIR}/bin/" ./cmd/pause ./cmd/echo \
  && go build -o "${BIN}/oci-image" ./cmd/oci-image)
(cd "${ROOT}/hack/coredns" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w -buildid=' -o "${NODE_IMAGES_DIR}/bin/coredns" .)
for image in "pause=${PAUSE_IMAGE}" "echo=${ECHO_IMAGE}" "coredns=${COREDNS_IMAGE}"; do
  name=${image%%=*} ref=${image#*=}
  "${BIN}/oci-image" --out "${NODE_IMAGES_DIR}/${name}" --archive "${NODE_IMAGES_DIR}/${name}.oci.tar" \
    --repository "${ref%:*}" --tag "${ref##*:}" --created 0 \
    --binary "linux/$(go env GOARCH)=${NODE_IMAGES_DIR}/bin/${name}" >/dev/null
done
echo "${NODE_IMAGES_DIR}/pause.oci.tar"
