#!/usr/bin/env bash
# Runs .ci/run as a new machine would: in a fresh clone of HEAD, with empty Go module and build
# caches (GOMODCACHE, GOCACHE) and an empty user cache (XDG_CACHE_HOME: the verified codegen
# inputs, the linked tenant Kubernetes versions, Steward's images, the charts' and the linters'
# caches), so a step that only works on a warm machine fails
# here too.
# Prints the wall time. Slow: it downloads every module and builds everything, kube-apiserver too.
#   KEEP=1 keeps the scratch directory; WORK=<dir> puts it there (default: a new temp directory).
#   THIRD_PARTY_DIR: Steward's source archives (hack/build-steward.sh), which the empty user cache
#   does not hold: required here.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=${WORK:-$(mktemp -d)}
[[ -n "${KEEP:-}" ]] || trap 'chmod -R u+w "${WORK}" 2>/dev/null; rm -rf "${WORK}"' EXIT

[[ -n "${THIRD_PARTY_DIR:-}" ]] || { echo "ci-fresh: set THIRD_PARTY_DIR (Steward's source archives; see hack/build-steward.sh)" >&2; exit 2; }
git clone --quiet --no-hardlinks "${ROOT}" "${WORK}/repo"
mkdir -p "${WORK}/gomodcache" "${WORK}/gocache" "${WORK}/cache"

start=$(date +%s)
status=0
( cd "${WORK}/repo" && GOMODCACHE="${WORK}/gomodcache" GOCACHE="${WORK}/gocache" XDG_CACHE_HOME="${WORK}/cache" CI=true bash .ci/run ) || status=$?
echo "ci-fresh: .ci/run exited ${status} after $(( $(date +%s) - start ))s in ${WORK}/repo"
exit "${status}"
