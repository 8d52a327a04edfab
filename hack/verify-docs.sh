#!/usr/bin/env bash
# Fails when a generated reference page in docs/reference is stale: regenerates them into a
# scratch directory (hack/update-docs.sh) and compares.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCRATCH=$(mktemp -d)
trap 'rm -rf "${SCRATCH}"' EXIT

OUT_DIR="${SCRATCH}" "${ROOT}/hack/update-docs.sh"
status=0
for page in api.md flags.md helm-values.md; do
  if ! diff -u "${ROOT}/docs/reference/${page}" "${SCRATCH}/${page}"; then
    status=1
  fi
done
if [[ ${status} -ne 0 ]]; then
  echo "Generated docs are out of date: run hack/update-docs.sh (make docs)" >&2
  exit 1
fi
echo "Generated docs are up to date."
