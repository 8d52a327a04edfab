#!/usr/bin/env bash
# Runs the helm CLI pinned in hack/dist (helm.sh/helm/v3, the version of the main module's Helm
# SDK), built into _output/bin/helm on first use (seconds once Go's build cache is warm).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HELM="${ROOT}/_output/bin/helm"
if [[ ! -x "${HELM}" ]]; then
  version="$(cd "${ROOT}/hack/dist" && go list -m -f '{{.Version}}' helm.sh/helm/v3)"
  # As helm's Makefile: the Kubernetes version `helm template` and `helm lint` assume is the one
  # of the client-go it is built with (v0.37 -> 1.37); unset, it is 1.20.
  client_go="$(cd "${ROOT}/hack/dist" && go list -m -f '{{.Version}}' k8s.io/client-go)"
  minor="${client_go#v0.}"; minor="${minor%%.*}"
  ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=${version}"
  for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
    ldflags+=" -X ${pkg}.k8sVersionMajor=1 -X ${pkg}.k8sVersionMinor=${minor}"
  done
  (cd "${ROOT}/hack/dist" && go build -trimpath -ldflags "${ldflags}" -o "${HELM}" helm.sh/helm/v3/cmd/helm)
fi
exec "${HELM}" "$@"
