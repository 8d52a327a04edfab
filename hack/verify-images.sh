#!/usr/bin/env bash
# Checks that `make images` is reproducible: builds the images twice from this commit into two
# scratch directories and fails unless both OCI layouts (their index.json, which holds the index
# digest) and both archives are byte for byte the same. The second build compiles from Go's build
# cache but links, stamps and assembles everything again. IMAGE_PLATFORMS as for build-images.sh.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "${scratch}"' EXIT
for run in first second; do
  IMAGES_DIR="${scratch}/${run}" "${ROOT}/hack/build-images.sh"
done
for f in butler-apiserver/index.json butler-apiserver.oci.tar; do
  cmp "${scratch}/first/${f}" "${scratch}/second/${f}" || { echo "verify-images: ${f} differs between two builds" >&2; exit 1; }
done
echo "verify-images: two builds gave the same digests"
