#!/usr/bin/env bash
# Regenerates everything under pkg/generated, the zz_generated.* files in pkg/apis and the
# protobuf of the versioned API (generated.proto, generated.pb.go and the protobuf struct tags).
set -o errexit -o nounset -o pipefail
# This module is built as the Makefile builds it (static, -trimpath): one compile of each package
# serves the tests, the binaries and the image.
export CGO_ENABLED=0 GOFLAGS=-trimpath

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
THIS_PKG=github.com/butlerdotdev/butler-apiserver

# moddir prints a required module's directory in the module cache. `go list -m` prints an empty
# Dir for a module not downloaded yet (every module, on a new machine): download it first.
moddir() {
    go mod download "$1"
    go list -m -f '{{.Dir}}' "$1"
}
CODEGEN_PKG=$(moddir k8s.io/code-generator)

# The generators are built once into _output/bin, at the versions go.mod pins.
export GOBIN="${ROOT}/_output/bin"
mkdir -p "${GOBIN}"
# shellcheck disable=SC1091
source "${CODEGEN_PKG}/kube_codegen.sh"

# Protobuf first: go-to-protobuf adds `protobuf:"..."` tags to the versioned types, which the
# other generators then read. It keeps the tags already there, so a new field gets the next free
# number; never renumber or reuse one. It runs protoc (Debian's protobuf-compiler, installed on
# demand by hack/install-protoc.sh) with the protoc-gen-gogo plugin and goimports from GOBIN.
# Packages whose doc.go says `+k8s:protobuf-gen=package` get protobuf.
gen_protobuf() {
    local pkgs=() dir
    while IFS= read -r dir; do
        pkgs+=("${THIS_PKG}/${dir#./}")
    done < <(grep -rl --include=doc.go '^// +k8s:protobuf-gen=package' ./pkg | xargs -r -n1 dirname | sort -u)
    echo "Generating protobuf for ${#pkgs[@]} targets"
    [[ ${#pkgs[@]} -gt 0 ]] || return 0

    "${ROOT}/hack/install-protoc.sh"
    go install \
        k8s.io/code-generator/cmd/go-to-protobuf \
        k8s.io/code-generator/cmd/go-to-protobuf/protoc-gen-gogo \
        golang.org/x/tools/cmd/goimports

    # go-to-protobuf and protoc address packages and .proto files by Go import path below one
    # directory, as in a GOPATH: link this repository and the modules whose .proto files are
    # imported (gogo/protobuf also brings google/protobuf/descriptor.proto) into a scratch one.
    PROTO_ROOT=$(mktemp -d)
    trap 'rm -rf "${PROTO_ROOT}"' EXIT
    mkdir -p "${PROTO_ROOT}/${THIS_PKG%/*}"
    ln -s "${ROOT}" "${PROTO_ROOT}/${THIS_PKG}"
    local mod
    for mod in k8s.io/apimachinery k8s.io/api github.com/gogo/protobuf; do
        mkdir -p "${PROTO_ROOT}/${mod%/*}"
        ln -s "$(moddir "${mod}")" "${PROTO_ROOT}/${mod}"
    done

    # A stale generated.pb.go could keep the package from type-checking: start without it.
    local pkg
    for pkg in "${pkgs[@]}"; do
        rm -f "${ROOT}/${pkg#"${THIS_PKG}"/}"/generated.{proto,pb.go}
    done

    # Packages our types use, loaded for their types only: the leading "-" generates nothing for
    # them (they ship their own generated.proto, in the read-only module cache).
    local deps=(
        -k8s.io/apimachinery/pkg/util/intstr
        -k8s.io/apimachinery/pkg/api/resource
        -k8s.io/apimachinery/pkg/runtime/schema
        -k8s.io/apimachinery/pkg/runtime
        -k8s.io/apimachinery/pkg/apis/meta/v1
        -k8s.io/api/core/v1
    )
    PATH="${GOBIN}:${PATH}" "${GOBIN}/go-to-protobuf" \
        --go-header-file "${ROOT}/hack/boilerplate.go.txt" \
        --output-dir "${PROTO_ROOT}" \
        --proto-import "${PROTO_ROOT}" \
        --proto-import "${PROTO_ROOT}/github.com/gogo/protobuf/protobuf" \
        --apimachinery-packages "$(IFS=,; echo "${deps[*]}")" \
        --packages "$(IFS=,; echo "${pkgs[*]}")"
}
gen_protobuf

kube::codegen::gen_helpers \
    --boilerplate "${ROOT}/hack/boilerplate.go.txt" \
    "${ROOT}/pkg/apis"

# The kinds served by CRDs (DeepCopy only: they are not in the API): the external contract's,
# butler's own providers' included.
kube::codegen::gen_helpers \
    --boilerplate "${ROOT}/hack/boilerplate.go.txt" \
    "${ROOT}/pkg/external"

kube::codegen::gen_openapi \
    --output-dir "${ROOT}/pkg/generated/openapi" \
    --output-pkg "${THIS_PKG}/pkg/generated/openapi" \
    --report-filename "${ROOT}/hack/api-rule-violations.list" \
    --update-report \
    --extra-pkgs k8s.io/api/autoscaling/v1 \
    --extra-pkgs k8s.io/apimachinery/pkg/util/intstr \
    --output-model-name-file "zz_generated.model_name.go" \
    --boilerplate "${ROOT}/hack/boilerplate.go.txt" \
    "${ROOT}/pkg/apis"

kube::codegen::gen_client \
    --with-watch \
    --with-applyconfig \
    --applyconfig-openapi-schema <(go run ./hack/models-schema) \
    --output-dir "${ROOT}/pkg/generated" \
    --output-pkg "${THIS_PKG}/pkg/generated" \
    --boilerplate "${ROOT}/hack/boilerplate.go.txt" \
    "${ROOT}/pkg/apis"
