#!/usr/bin/env bash
# Checks that pkg/lifecycle/component/gitops/flux.yaml and charts/butler-flux are what
# hack/update-flux-manifests.sh writes.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT
OUT="${tmp}/flux.yaml" CHART_OUT="${tmp}/butler-flux" "${ROOT}/hack/update-flux-manifests.sh"
if ! diff -q "${tmp}/flux.yaml" "${ROOT}/pkg/lifecycle/component/gitops/flux.yaml" >/dev/null; then
  echo "pkg/lifecycle/component/gitops/flux.yaml is stale: run hack/update-flux-manifests.sh" >&2
  exit 1
fi
if ! diff -r -q "${tmp}/butler-flux" "${ROOT}/charts/butler-flux" >/dev/null; then
  echo "charts/butler-flux is stale: run hack/update-flux-manifests.sh" >&2
  exit 1
fi
