#!/usr/bin/env bash
# Regenerates everything under pkg/generated and the zz_generated.* files in pkg/apis.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
THIS_PKG=github.com/butlerdotdev/butler-apiserver
CODEGEN_PKG=$(go list -m -f '{{.Dir}}' k8s.io/code-generator)

# The generators are built once into _output/bin, at the versions go.mod pins.
export GOBIN="${ROOT}/_output/bin"
mkdir -p "${GOBIN}"
# shellcheck disable=SC1091
source "${CODEGEN_PKG}/kube_codegen.sh"

kube::codegen::gen_helpers \
    --boilerplate "${ROOT}/hack/boilerplate.go.txt" \
    "${ROOT}/pkg/apis"

kube::codegen::gen_openapi \
    --output-dir "${ROOT}/pkg/generated/openapi" \
    --output-pkg "${THIS_PKG}/pkg/generated/openapi" \
    --report-filename "${ROOT}/hack/api-rule-violations.list" \
    --update-report \
    --extra-pkgs k8s.io/api/autoscaling/v1 \
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
