#!/usr/bin/env bash
# Makes sure protoc is on PATH, for the protobuf step of hack/update-codegen.sh.
# protoc comes from Debian's protobuf-compiler package (the only source besides the Go module
# proxy that these machines reach); the well-known .proto files it needs are taken from the
# gogo/protobuf module instead, so libprotobuf-dev is not required.
set -o errexit -o nounset -o pipefail

if command -v protoc >/dev/null 2>&1; then
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "protoc not found and apt-get is unavailable: install protoc (3.x or newer) and put it on PATH" >&2
  exit 1
fi

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
  else
    echo "protoc not found: run 'apt-get install -y protobuf-compiler' as root" >&2
    exit 1
  fi
fi

echo "protoc not found: installing Debian's protobuf-compiler" >&2
export DEBIAN_FRONTEND=noninteractive
if ! "${SUDO[@]}" apt-get install -y --no-install-recommends protobuf-compiler >/dev/null; then
  # A fresh machine may have no package lists yet.
  "${SUDO[@]}" apt-get update >/dev/null
  "${SUDO[@]}" apt-get install -y --no-install-recommends protobuf-compiler >/dev/null
fi
protoc --version >&2
