#!/usr/bin/env bash
# Checks that pkg/lifecycle/component/gitops/flux.yaml is what hack/update-flux-manifests.sh writes.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp="$(mktemp)"
trap 'rm -f "${tmp}"' EXIT
OUT="${tmp}" "${ROOT}/hack/update-flux-manifests.sh"
if ! diff -q "${tmp}" "${ROOT}/pkg/lifecycle/component/gitops/flux.yaml" >/dev/null; then
  echo "pkg/lifecycle/component/gitops/flux.yaml is stale: run hack/update-flux-manifests.sh" >&2
  exit 1
fi
