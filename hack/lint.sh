#!/usr/bin/env bash
# make lint: golangci-lint (.golangci.yml; the version pinned in hack/golangci-lint/go.mod) on the
# module and on hack/dist, then shellcheck (.shellcheckrc; Debian's package, installed when
# missing) on the scripts.
set -o errexit -o nounset -o pipefail
# Built as the Makefile builds (static, -trimpath): the linter's build is cached once, and go
# build skips the link while _output/bin/golangci-lint is up to date.
export CGO_ENABLED=0 GOFLAGS=-trimpath

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
LINT="${ROOT}/_output/bin/golangci-lint"
mkdir -p "${ROOT}/_output/bin"
(cd hack/golangci-lint && go build -o "${LINT}" github.com/golangci/golangci-lint/v2/cmd/golangci-lint)

"${LINT}" run --config "${ROOT}/.golangci.yml" ./...
(cd hack/dist && "${LINT}" run --config "${ROOT}/.golangci.yml" ./...)

if ! command -v shellcheck >/dev/null 2>&1; then
  if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
    echo "lint: shellcheck not found: install Debian's shellcheck package" >&2
    exit 1
  fi
  echo "lint: installing Debian's shellcheck" >&2
  export DEBIAN_FRONTEND=noninteractive
  # A fresh machine may have no package lists yet.
  apt-get install -y -qq shellcheck >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq shellcheck >/dev/null; }
fi
shellcheck hack/*.sh hack/lib/*.sh .ci/run
echo "lint: no findings"
