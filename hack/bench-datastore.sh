#!/usr/bin/env bash
# P6 with datastores: create -> control plane Ready of local TenantClusters (no workers), before
# and after the tenants moved from the management etcd to the local provider's own datastore
# (TLS, an etcd user per tenant). Runs `bench -local N` in a worktree of BASE (2794759^: the
# commit before tenants moved, with the datastore package already in but unused) and then in this tree, one after the other on the same machine, and prints both
# medians and their ratio. Heavy: two planes, one after the other; run it on an idle machine.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BASE="${BASE:-2794759^}"
N="${N:-8}"
OUT="${OUT:-${ROOT}/_output/bench/datastore}"
mkdir -p "${OUT}"

base_tree="$(mktemp -d)"
trap 'git -C "${ROOT}" worktree remove --force "${base_tree}" >/dev/null 2>&1 || true' EXIT
git -C "${ROOT}" worktree add --detach "${base_tree}" "${BASE}" >/dev/null

# run TREE NAME: bench -local N in TREE, with this tree's kube binaries and its own butler build.
run() {
  local tree=$1 name=$2
  mkdir -p "${tree}/_output/bin"
  for b in kube-apiserver kube-controller-manager kube-scheduler etcd capi-manager; do
    [[ -e "${tree}/_output/bin/${b}" ]] || ln -s "${ROOT}/_output/bin/${b}" "${tree}/_output/bin/${b}"
  done
  (cd "${tree}" && go build -o _output/bin/butler-apiserver ./cmd/butler-apiserver && go build -o _output/bin/bench ./test/bench)
  (cd "${tree}" && _output/bin/bench -root "${tree}" -local "${N}" -local-workers 0 -capacity 0 -out "${OUT}/${name}") \
    > "${OUT}/${name}.log" 2>&1
  grep -h 'create -> control plane Ready' "${OUT}/${name}"/local-*.md | head -1
}

before="$(run "${base_tree}" before)"
after="$(run "${ROOT}" after)"
median() { awk -F'|' '{gsub(/[ s]/, "", $3); print $3}' <<<"$1"; }
b="$(median "${before}")"; a="$(median "${after}")"
echo "before (${BASE}, management etcd): ${before}"
echo "after  (datastore, TLS, a user per tenant): ${after}"
awk -v a="${a}" -v b="${b}" 'BEGIN { printf "median create -> control plane Ready: %.2f s -> %.2f s, ratio %.3f\n", b, a, a / b }'
