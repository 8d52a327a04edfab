#!/usr/bin/env bash
# make test-cluster: the install path end to end on this machine. Builds the image (amd64), starts
# the one-node cluster (hack/cluster-up.sh), installs the chart with two replicas on the cluster's
# etcd, and checks through the cluster's kube-apiserver: the APIService Available, `kubectl get tc
# -A`, the lifecycle workers' Lease held by one of the Pods; then `helm uninstall` leaves no Pod,
# Service or APIService, and the cluster stops and cleans up after itself. Prints the timings.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CLUSTER_DIR="${CLUSTER_DIR:-${ROOT}/_output/cluster}"
KUBECTL="${KUBECTL:-kubectl}"
helm() { "${ROOT}/hack/helm.sh" "$@"; }
log() { echo "test-cluster: $*" >&2; }
die() { log "FAIL: $*"; exit 1; }

t0=${SECONDS}
IMAGE_PLATFORMS="${IMAGE_PLATFORMS:-linux/$(go env GOARCH)}" "${ROOT}/hack/build-images.sh"
tag="$(cd "${ROOT}" && git describe --tags --always --dirty)"
log "images in $((SECONDS - t0)) s"

t1=${SECONDS}
mkdir -p "${CLUSTER_DIR}"
CLUSTER_DIR="${CLUSTER_DIR}" "${ROOT}/hack/cluster-up.sh" >"${CLUSTER_DIR}/cluster-up.log" 2>&1 &
cluster_pid=$!
stop_cluster() {
  kill -TERM "${cluster_pid}" 2>/dev/null || true
  wait "${cluster_pid}" 2>/dev/null || true
}
trap stop_cluster EXIT
until [[ -f "${CLUSTER_DIR}/admin.kubeconfig" ]]; do
  kill -0 "${cluster_pid}" 2>/dev/null || { tail -20 "${CLUSTER_DIR}/cluster-up.log" >&2; die "cluster-up exited"; }
  ((SECONDS - t1 < 600)) || die "the cluster was not up in 600 s"
  sleep 1
done
log "cluster up (node Ready) in $((SECONDS - t1)) s"
export KUBECONFIG="${CLUSTER_DIR}/admin.kubeconfig"
# shellcheck disable=SC1091
source "${CLUSTER_DIR}/cluster.env"

# The external kinds the workers watch, as a management cluster has them.
"${KUBECTL}" apply --server-side -f "${ROOT}/artifacts/crds" >/dev/null

t2=${SECONDS}
helm install butler "${ROOT}/charts/butler-apiserver" -n butler-system --create-namespace \
  --set image.tag="${tag}" --set image.pullPolicy=Never \
  --set "etcd.external.endpoints={${ETCD_URL}}" >/dev/null
"${KUBECTL}" wait apiservice/v1alpha1.butler.butlerlabs.dev --for=condition=Available --timeout=5m >/dev/null \
  || { "${KUBECTL}" -n butler-system get pods -o wide >&2; "${KUBECTL}" -n butler-system logs deploy/butler-apiserver --tail 30 >&2 || true; die "the APIService is not Available"; }
log "helm install -> APIService Available in $((SECONDS - t2)) s"
"${KUBECTL}" -n butler-system rollout status deploy/butler-apiserver --timeout=3m >/dev/null
"${KUBECTL}" get tc -A
pods=$("${KUBECTL}" -n butler-system get pods -l app.kubernetes.io/name=butler-apiserver -o jsonpath='{.items[*].metadata.name}')
[[ $(wc -w <<<"${pods}") == 2 ]] || die "want 2 butler-apiserver Pods, got: ${pods}"
holder=""
for _ in $(seq 60); do
  holder=$("${KUBECTL}" -n butler-system get lease butler-apiserver-workers -o jsonpath='{.spec.holderIdentity}' 2>/dev/null || true)
  [[ -n "${holder}" ]] && break
  sleep 1
done
[[ " ${pods} " == *" ${holder%%_*} "* ]] || die "the workers' Lease is held by '${holder}', not one of the Pods ${pods}"
log "the workers run in ${holder%%_*} (Lease butler-apiserver-workers)"

helm uninstall butler -n butler-system --wait --timeout 3m >/dev/null
# The Pods go with their ReplicaSet (garbage collection), after their shutdown delay.
for _ in $(seq 120); do
  left=$("${KUBECTL}" get pods,services -n butler-system -o name; "${KUBECTL}" get apiservice v1alpha1.butler.butlerlabs.dev -o name 2>/dev/null || true)
  [[ -z "${left}" ]] && break
  sleep 1
done
[[ -z "${left}" ]] || die "helm uninstall left: ${left}"
log "helm uninstall left no Pod, Service or APIService"

stop_cluster
trap - EXIT
leftover=$(awk -v d="${CLUSTER_DIR}/" 'index($2, d) == 1' /proc/mounts; ip link show butler0 2>/dev/null || true)
[[ -z "${leftover}" ]] || die "the cluster left: ${leftover}"
log "PASS in $((SECONDS - t0)) s"
