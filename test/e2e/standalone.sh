#!/usr/bin/env bash
# End-to-end check of the standalone server with real kubectl, as a new user would try it:
# start `butler-apiserver --standalone`, apply the examples, read the columns, and get the
# headline 422. Usage: test/e2e/standalone.sh path/to/butler-apiserver
set -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BINARY=${1:?usage: $0 path/to/butler-apiserver}
command -v kubectl >/dev/null || { echo "kubectl is not installed (this machine kind ships /usr/bin/kubectl)" >&2; exit 1; }

WORK=$(mktemp -d)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"${BINARY}" --standalone --data-dir "${WORK}/data" --secure-port "${PORT}" >"${WORK}/server.log" 2>&1 &
SERVER=$!
cleanup() {
  kill "${SERVER}" 2>/dev/null && wait "${SERVER}" 2>/dev/null
  rm -rf "${WORK}"
}
trap cleanup EXIT

export KUBECONFIG="${WORK}/data/admin.kubeconfig"
for _ in $(seq 1 120); do
  [[ -f "${KUBECONFIG}" ]] && kubectl get --raw /readyz >/dev/null 2>&1 && break
  sleep 0.5
done

passed=0 failed=0
check() { # check "description" command...; passes when the command succeeds
  local description=$1; shift
  if output=$("$@" 2>&1); then
    passed=$((passed + 1)); echo "PASS: ${description}"
  else
    failed=$((failed + 1)); echo "FAIL: ${description}"; echo "${output}" | sed 's/^/    /'
  fi
}
contains() { # contains "needle" command...: the command's output (stdout+stderr) holds needle
  local needle=$1; shift
  local out; out=$("$@" 2>&1)
  grep -qF -- "${needle}" <<<"${out}" || { echo "output lacks '${needle}':"; echo "${out}"; return 1; }
}
refused_naming() { # refused_naming "field"... -- command...: the command fails and names every field
  local fields=()
  while [[ $1 != -- ]]; do fields+=("$1"); shift; done; shift
  local out
  if out=$("$@" 2>&1); then echo "unexpectedly accepted: ${out}"; return 1; fi
  for f in "${fields[@]}"; do grep -qF -- "${f}" <<<"${out}" || { echo "error lacks ${f}: ${out}"; return 1; }; done
}

check "server is ready" kubectl get --raw /readyz
check "kubectl get tenantclusters answers" contains "No resources found" kubectl get tenantclusters -A
check "apply creates one object of each kind" contains "tenantaddon.butler.butlerlabs.dev/prod-metrics-server created" \
  kubectl apply -f "${ROOT}/artifacts/examples"
check "kubectl get butler -A lists all eight" bash -c \
  "[[ \$(kubectl get butler -A -o name | wc -l) -eq 8 ]]"
check "kubectl get tc shows the columns" contains "NAME   PHASE   PROGRESS   VERSION   WORKERS   ENDPOINT   AGE" \
  kubectl get tc -n team-a
check "kubectl get tc shows the row" contains "v1.31.4   0/3" kubectl get tc -n team-a
check "-o wide adds OS, TEAM, PROVIDER" contains "OS      TEAM     PROVIDER" kubectl get tc -n team-a -o wide
check "short names and columns of every kind" bash -c \
  "kubectl get bc,tm,ad -o name && kubectl get np,ipa,pc,ta -n team-a -o name"
check "bad CIDR, Rocky on v1.31.0 and replicas -1: one 422 naming all three" refused_naming \
  "is invalid" "spec.networking.podCIDR" "spec.kubernetesVersion" "spec.workers.replicas" -- \
  kubectl apply -f "${ROOT}/test/testdata/invalid-tenantcluster.yaml"
check "the refused cluster was not stored" contains "NotFound" kubectl get tc broken -n team-a
check "server-side apply" contains "serverside-applied" \
  kubectl apply --server-side -f "${ROOT}/artifacts/examples/06-tenantcluster.yaml"
check "kubectl explain reads the OpenAPI" contains "WorkersSpec is the worker pool" \
  kubectl explain tenantcluster.spec.workers
check "field selector on spec.clusterRef.name" contains "prod-metrics-server" \
  kubectl get ta -n team-a --field-selector spec.clusterRef.name=prod
check "strict field validation names an unknown field" refused_naming 'unknown field "spec.wrokers"' -- \
  bash -c "kubectl get tc prod -n team-a -o json | sed 's/\"workers\"/\"wrokers\"/' | kubectl replace --validate=strict -f -"
check "kubectl patch bumps generation" bash -c \
  "kubectl patch tc prod -n team-a --type=merge -p '{\"spec\":{\"workers\":{\"replicas\":4}}}' >/dev/null &&
   [[ \$(kubectl get tc prod -n team-a -o jsonpath='{.metadata.generation}') == 2 ]]"
check "kubectl scale sets spec.workers.replicas" bash -c \
  "kubectl scale tenantcluster prod -n team-a --replicas=6 >/dev/null &&
   [[ \$(kubectl get tc prod -n team-a -o jsonpath='{.spec.workers.replicas}') == 6 ]]"
# Users before what they use: a Team with clusters and a pool with allocations refuse deletion.
check "a pool with live allocations is not deleted" bash -c \
  "kubectl delete -f '${ROOT}/artifacts/examples/03-networkpool.yaml' 2>&1 | grep -qF 'live allocation(s) hold addresses in it (prod-lb)' &&
   kubectl get np lab -n team-a -o name >/dev/null"
check "delete in reverse order removes everything" bash -c \
  "for f in \$(ls -r '${ROOT}'/artifacts/examples/*.yaml); do kubectl delete -f \"\$f\" >/dev/null || exit 1; done; [[ -z \$(kubectl get butler -A -o name) ]]"

echo "e2e: ${passed} passed, ${failed} failed"
[[ ${failed} -eq 0 ]] || { echo "--- server log (tail)"; tail -20 "${WORK}/server.log"; exit 1; }
