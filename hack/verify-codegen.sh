#!/usr/bin/env bash
# Fails when generated code is stale: regenerates into a scratch copy and compares. Covers
# everything hack/update-codegen.sh writes, the protobuf (and its struct tags in types.go) too;
# protoc is installed on demand (hack/install-protoc.sh).
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
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
echo "Generated code is up to date."
