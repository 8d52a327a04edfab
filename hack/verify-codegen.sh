#!/usr/bin/env bash
# Fails when generated code is stale: regenerates into a scratch copy and compares. Covers
# everything hack/update-codegen.sh writes, the protobuf (and its struct tags in types.go) too;
# protoc is installed on demand (hack/install-protoc.sh).
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# A regeneration takes about a minute, and gives the same answer for the same inputs, as `go test`
# does for the same package: the digest of what the generators read and write (the API types and
# the packages they import, the generated code, these scripts, go.mod and go.sum, the Go and protoc
# versions) is kept in the user's cache once it verified, and the same digest is not verified again.
# VERIFY_CODEGEN_CACHE=0 verifies regardless.
inputs() {
  (cd "${ROOT}" && git ls-files -co --exclude-standard -- pkg/apis pkg/external pkg/generated pkg/hibernation \
    pkg/maintenance hack/update-codegen.sh hack/verify-codegen.sh hack/install-protoc.sh hack/boilerplate.go.txt \
    hack/api-rule-violations.list hack/tools.go go.mod go.sum | LC_ALL=C sort | xargs sha256sum
    go version; protoc --version 2>/dev/null || echo "no protoc") | sha256sum | cut -d' ' -f1
}
CACHE="${XDG_CACHE_HOME:-${HOME}/.cache}/butler-apiserver/verify-codegen"
digest=$(inputs)
if [[ "${VERIFY_CODEGEN_CACHE:-1}" != 0 && -f "${CACHE}/${digest}" ]]; then
  echo "Generated code is up to date (these inputs, ${digest:0:12}, verified before: ${CACHE})."
  exit 0
fi
SCRATCH=$(mktemp -d)
trap 'rm -rf "${SCRATCH}"' EXIT

# Copy the sources (not .git or build output) and regenerate there.
tar -C "${ROOT}" --exclude=./.git --exclude=./_output --exclude=./.butler -cf - . | tar -C "${SCRATCH}" -xf -
mkdir -p "${SCRATCH}/_output" "${ROOT}/_output/bin"
ln -s "${ROOT}/_output/bin" "${SCRATCH}/_output/bin" 2>/dev/null || true
"${SCRATCH}/hack/update-codegen.sh" >/dev/null

status=0
for dir in pkg hack/api-rule-violations.list; do
  if ! diff -Nru "${ROOT}/${dir}" "${SCRATCH}/${dir}"; then
    status=1
  fi
done
if [[ ${status} -ne 0 ]]; then
  echo "Generated code is out of date: run hack/update-codegen.sh" >&2
  exit 1
fi
mkdir -p "${CACHE}" && date -u >"${CACHE}/${digest}"
echo "Generated code is up to date."
