#!/usr/bin/env bash
# Builds the Cluster API core manager that the local management plane runs into
# _output/bin/capi-manager, from the pinned module in hack/capi (sigs.k8s.io/cluster-api v1.14.2,
# all from the Go module proxy). The first build takes minutes; the Go build cache makes every
# later one take seconds.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${ROOT}/_output/bin"

mkdir -p "${BIN}"
cd "${ROOT}/hack/capi"
version="$(go list -m -f '{{.Version}}' sigs.k8s.io/cluster-api)"
# CAPI's own version package reports this in its log and /version.
ldflags="-s -w -X sigs.k8s.io/cluster-api/version.gitVersion=${version}"
ldflags+=" -X sigs.k8s.io/cluster-api/version.gitTreeState=clean"
# Static, whatever the caller's environment says (see build-kube.sh).
CGO_ENABLED=0 go build -trimpath -ldflags "${ldflags}" -o "${BIN}/capi-manager" sigs.k8s.io/cluster-api/core
