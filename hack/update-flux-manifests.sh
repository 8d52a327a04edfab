#!/usr/bin/env bash
# Writes pkg/lifecycle/component/gitops/flux.yaml, the manifests of Flux's source-controller and
# kustomize-controller a tenant gets, from Flux's modules on the module proxy
# (hack/flux/manifests; FLUX_VERSION, default v2.9.5, pins the controllers' versions), and from it
# charts/butler-flux, the same controllers for the management cluster (hack/flux/chart; CHART_OUT).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
version="${FLUX_VERSION:-v2.9.5}"
go run ./hack/flux/manifests --flux-version "${version}" --out "${OUT:-pkg/lifecycle/component/gitops/flux.yaml}"
go run ./hack/flux/chart --flux-version "${version}" --in "${OUT:-pkg/lifecycle/component/gitops/flux.yaml}" --out "${CHART_OUT:-charts/butler-flux}"
