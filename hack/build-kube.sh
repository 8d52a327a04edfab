#!/usr/bin/env bash
# Builds the kube-apiserver, kube-controller-manager, kube-scheduler and etcd that the local
# management plane and the local provider's tenant control planes run into _output/bin: the kube
# commands from the pinned module in hack/kube, etcd from this module (the v3.7 server
# butler-localprovider runs as tenant datastores, so the management plane's etcd is not an older
# one without their fixes, and its packages are compiled once for both). Everything comes from the Go module proxy; the Go build cache
# makes every build after the first one take seconds.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${ROOT}/_output/bin"
KUBE_VERSION="v1.36.3"

major="${KUBE_VERSION#v}"; major="${major%%.*}"
minor="${KUBE_VERSION#v*.}"; minor="${minor%%.*}"
# Without a version kubectl cannot parse the server's /version answer.
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${KUBE_VERSION}"
ldflags+=" -X k8s.io/component-base/version.gitMajor=${major} -X k8s.io/component-base/version.gitMinor=${minor}"
ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"

# Arguments name other commands of k8s.io/kubernetes/cmd to build instead (cmd/butler-cluster:
# kubelet kube-proxy).
packages=(k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
  k8s.io/kubernetes/cmd/kube-scheduler)
with_etcd=1
if (($#)); then
  with_etcd=0
  packages=()
  for command in "$@"; do packages+=("k8s.io/kubernetes/cmd/${command}"); done
fi

mkdir -p "${BIN}"
cd "${ROOT}/hack/kube"
# One go build for all: they share most packages, and one process schedules them best. Static
# (CGO_ENABLED=0, as upstream builds them and as the tenant versions are built): the caller's
# environment would otherwise choose, and a build with cgo shares no cache entry with one without.
CGO_ENABLED=0 GOBIN="${BIN}" go install -trimpath -ldflags "${ldflags}" "${packages[@]}"
if ((with_etcd)); then
  cd "${ROOT}"
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${BIN}/etcd" go.etcd.io/etcd/server/v3
fi
