#!/usr/bin/env bash
# Builds SeaweedFS's weed (an S3-compatible object store) into _output/bin/weed from the pinned
# module in hack/weed, all from the Go module proxy. make test-s3 runs it on loopback as the real
# S3 server of the S3 snapshot store's end-to-end test. The first build takes minutes (see the
# docs/concepts/snapshots.md); the Go build cache makes later ones take seconds.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${ROOT}/_output/bin"

mkdir -p "${BIN}"
cd "${ROOT}/hack/weed"
go build -trimpath -ldflags "-s -w" -o "${BIN}/weed" github.com/seaweedfs/seaweedfs/weed
