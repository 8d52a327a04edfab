#!/usr/bin/env bash
# Fails when any Go file is not gofmt-formatted.
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
unformatted=$({ git ls-files -z '*.go' 2>/dev/null || find . -name '*.go' -not -path './_output/*' -print0; } | xargs -0 gofmt -l)
if [[ -n "${unformatted}" ]]; then
  echo "These files need gofmt -w:" >&2
  echo "${unformatted}" >&2
  exit 1
fi
