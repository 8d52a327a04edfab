#!/usr/bin/env bash
# Renders artifacts/deploy from the chart (charts/butler-apiserver), the one source of truth:
# one file per template, for the platform admin who applies manifests without Helm and for
# the local plane of make run (namespace, RBAC, team ClusterRoles, APIService). The values are a production
# install's (values-production.yaml): namespace butler-system, an external etcd at
# butler-etcd.butler-system.svc with its client TLS Secret butler-etcd-client, two replicas, the
# serving certificate from cert-manager (no generated key in git).
#   --verify   fail if artifacts/deploy differs from a fresh rendering (make verify)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEPLOY="${ROOT}/artifacts/deploy"
scratch="$(mktemp -d)"
trap 'rm -rf "${scratch}"' EXIT

"${ROOT}/hack/helm.sh" template butler-apiserver "${ROOT}/charts/butler-apiserver" --namespace butler-system \
  -f "${ROOT}/charts/butler-apiserver/values-production.yaml" \
  --set createNamespace=true \
  --set 'etcd.external.endpoints={https://butler-etcd.butler-system.svc:2379}' \
  >"${scratch}/all.yaml"

# helm template starts each document with "---" and "# Source: <chart>/templates/<file>".
mkdir -p "${scratch}/deploy"
awk -v out="${scratch}/deploy" '
  /^---$/ { pending = 1; next }
  pending && /^# Source: / {
    pending = 0
    n = split($3, parts, "/"); file = out "/" parts[n]
    if (file in seen) { print "---" >> file }
    else { seen[file] = 1; print "# Rendered from charts/butler-apiserver by hack/render-deploy.sh: edit the chart, not this file." > file }
    next
  }
  { pending = 0; print >> file }
' "${scratch}/all.yaml"

if [[ "${1:-}" == "--verify" ]]; then
  if ! diff -r -u "${DEPLOY}" "${scratch}/deploy"; then
    echo "artifacts/deploy is not the chart's rendering: run hack/render-deploy.sh" >&2
    exit 1
  fi
  exit 0
fi
rm -rf "${DEPLOY}"
cp -r "${scratch}/deploy" "${DEPLOY}"
