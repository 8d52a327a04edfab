#!/usr/bin/env bash
# make test-cluster: the install path end to end on this machine, checked through the one-node
# cluster's kube-apiserver:
#   1. two images of the same code, the second relinked with another version string; the
#      one-node cluster (cmd/butler-cluster) with both imported;
#   2. the Cluster API manager and butler-localprovider as host processes against the cluster's
#      kube-apiserver (the local provider runs tenant control planes as processes on this host;
#      its tenants' kube-apiservers listen on the cluster's bridge address, which the Pods reach);
#   3. the chart installed with two replicas on the cluster's etcd: the APIService Available,
#      `kubectl get tc -A`, the examples applied;
#   4. a local TenantCluster Ready, and its minted kubeconfig lists its nodes;
#   4b. GitOps (TEST_GITOPS, on by default; hack/lib/gitops.sh): Flux installed by the ManagementAddon
#      flux (applied after stage 3, installing while stage 4 waits), then TestGitOpsManagement
#      (test/gitops): Flux applies a Team's TenantClusters from Git, scales one, prunes one, and
#      reports a refused one; the ManagementAddon's delete uninstalls Flux. It runs beside stages
#      4, 5 and 6 and the Steward stage's set-up, and is joined before Steward starts;
#   5. a second TenantCluster provisioning while the Pod holding the controllers' Lease is deleted:
#      the other replica takes the Lease and the cluster becomes Ready once;
#   6. `helm upgrade` to the second image while a bounded client loop lists TenantClusters: both
#      replicas rolled, the requests that failed counted (the test fails unless 0); then, with
#      TEST_STEWARD, the Steward stage (hack/lib/steward.sh);
#   7. `helm uninstall` leaves no Pod, Service or APIService;
#   8. the README's own install block, run as written (no values: one Pod on its embedded etcd),
#      serves a list and a write, and is uninstalled; then everything stops, and no process,
#      mount or bridge of the cluster is left.
# Prints the timings and the request counts. Needs root and the Debian packages of
# hack/install-cluster-deps.sh (make test-cluster installs those missing). IMAGE_TAG overrides
# the first image's tag (`git describe`); an all-digit one checks the chart is given a string.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${BIN:-${ROOT}/_output/bin}"
CLUSTER_DIR="${CLUSTER_DIR:-${ROOT}/_output/cluster}"
KUBE_VERSIONS_DIR="${KUBE_VERSIONS_DIR:-${ROOT}/_output/kube-versions}"
KUBECTL="${KUBECTL:-kubectl}"
# The request loop's bound: it stops after the rollout, or after this many seconds.
LOOP_SECONDS_MAX="${LOOP_SECONDS_MAX:-600}"
# TEST_STEWARD=1 (make test-steward): the Steward stage too (hack/lib/steward.sh), with the images
# of hack/build-steward.sh; TEST_STEWARD=only: stages 1-3, the Steward stage and 7 (to debug it).
TEST_STEWARD="${TEST_STEWARD:-0}"
# TEST_GITOPS=0 skips the GitOps stage (hack/lib/gitops.sh); TEST_GITOPS=only: stages 1-3, the
# GitOps stage and 7 (to debug it).
TEST_GITOPS="${TEST_GITOPS:-1}"
[[ "${TEST_STEWARD}" != only ]] || TEST_GITOPS=0
[[ "${TEST_GITOPS}" != only ]] || TEST_STEWARD=0
# only: the stages a debugging run of one stage skips (4, 5, 6).
only=0
[[ "${TEST_STEWARD}" != only && "${TEST_GITOPS}" != only ]] || only=1
helm() { "${ROOT}/hack/helm.sh" "$@"; }
log() { echo "test-cluster: $(date +%T) $*" >&2; }
kc() { "${KUBECTL}" "$@"; }
# diagnose: what a failure needs to be read after the scratch directory is gone (CI keeps only
# the output): the disk, the node's taints and conditions, the chart's Pods and recent Events,
# and the tails of the host processes' logs.
diagnose() {
  df -h "${ROOT}" >&2 || true
  [[ -n "${KUBECONFIG:-}" && -f "${KUBECONFIG}" ]] || return 0
  kc get nodes -o 'custom-columns=NODE:.metadata.name,TAINTS:.spec.taints[*].key' >&2 || true
  kc get nodes -o jsonpath='{range .items[*].status.conditions[*]}{.type}={.status} {.reason}{"\n"}{end}' >&2 || true
  kc get pods -A -o wide >&2 || true
  kc get events -A --sort-by=.lastTimestamp 2>/dev/null | tail -25 >&2 || true
  local f
  [[ -z "${STEWARD_DUMP:-}" ]] || steward_dump
  for f in "${LOGS:-/nonexistent}"/*.log; do [[ -f "${f}" ]] && { echo "--- ${f##*/}" >&2; tail -15 "${f}" >&2; }; done
  return 0
}
# The failure is said again after the diagnosis: CI shows only the end of a long output. A stage
# run beside the others (BESIDE_FAIL set: gitops_beside) also leaves it in that file, for its join
# to say last. Errexit is off in it: a dump command that fails (a kind not installed yet) must
# not end the shell before the failure is said again.
die() {
  trap - ERR; set +e; log "FAIL: $*"; diagnose; log "FAIL: $*"
  [[ -z "${BESIDE_FAIL:-}" ]] || echo "$*" >"${BESIDE_FAIL}"
  exit 1
}
summary=()
measure() { summary+=("$*"); log "$*"; }

# wait_until WHAT SECONDS COMMAND...: polls COMMAND every second.
wait_until() {
  local what=$1 seconds=$2; shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || die "timed out after ${seconds} s waiting for ${what}"
    sleep 1
  done
}

# service_alias NS NAME DEPLOYMENT...: NAME.NS.svc (and .svc.cluster.local) resolves to the
# Service's ClusterIP in the Pods of each Deployment (given as namespace/name), which roll: the
# one-node cluster has no cluster DNS (a management cluster has CoreDNS), so a controller that
# reaches a Service by name gets a hostAlias instead.
service_alias() {
  local ns=$1 name=$2 ip patch d; shift 2
  ip=$(kc -n "${ns}" get service "${name}" -o jsonpath='{.spec.clusterIP}')
  patch="{\"spec\":{\"template\":{\"spec\":{\"hostAliases\":[{\"ip\":\"${ip}\",\"hostnames\":[\"${name}.${ns}.svc\",\"${name}.${ns}.svc.cluster.local\"]}]}}}}"
  for d in "$@"; do kc -n "${d%%/*}" patch deploy "${d#*/}" --type strategic -p "${patch}" >/dev/null; done
  for d in "$@"; do kc -n "${d%%/*}" rollout status "deploy/${d#*/}" --timeout=3m >/dev/null; done
}

t0=${SECONDS}
# The test binaries of the GitOps and Steward stages are built in the background from here, at
# the lowest priority: their stages wait for them.
if [[ "${TEST_GITOPS}" != 0 ]]; then
  # shellcheck source=lib/gitops.sh
  source "${ROOT}/hack/lib/gitops.sh"
  gitops_build
fi
if [[ "${TEST_STEWARD}" != 0 ]]; then
  # shellcheck source=lib/steward.sh
  source "${ROOT}/hack/lib/steward.sh"
  steward_build
fi
# --- 1. images and the cluster ---------------------------------------------------------------
tag="${IMAGE_TAG:-$(cd "${ROOT}" && git describe --tags --always --dirty)}"
tag2="${tag}-relinked"
IMAGE_PLATFORMS="linux/$(go env GOARCH)" IMAGE_TAG="${tag}" "${ROOT}/hack/build-images.sh" >/dev/null
images="${ROOT}/_output/images/butler-apiserver.oci.tar"
# The second image is for stage 6, which TEST_STEWARD=only and TEST_GITOPS=only skip.
if [[ "${only}" == 0 ]]; then
  IMAGE_PLATFORMS="linux/$(go env GOARCH)" IMAGE_TAG="${tag2}" IMAGES_DIR="${ROOT}/_output/images-relinked" \
    "${ROOT}/hack/build-images.sh" >/dev/null
  images+=" ${ROOT}/_output/images-relinked/butler-apiserver.oci.tar"
fi
measure "images ${tag} and ${tag2} built in $((SECONDS - t0)) s"

t1=${SECONDS}
mkdir -p "${CLUSTER_DIR}"
CLUSTER_DIR="$(cd "${CLUSTER_DIR}" && pwd)"
LOGS="${CLUSTER_DIR}/logs"
HOST_DIR="${CLUSTER_DIR}/host"
rm -rf "${HOST_DIR}"
mkdir -p "${LOGS}" "${HOST_DIR}"
if [[ "${TEST_STEWARD}" != 0 ]]; then
  # shellcheck disable=SC2012 # ls fails (and the script with it) when the images are missing
  images+=" $(ls "${ROOT}"/_output/images/steward/*.oci.tar | tr '\n' ' ')"
fi
if [[ "${TEST_GITOPS}" != 0 ]]; then
  # Flux's two controllers for the GitOps stage: CI's real-node stage has built them in this
  # run (make test-realnode-faults), and the script keeps an archive whose inputs are unchanged.
  t_flux=${SECONDS}
  "${ROOT}/hack/build-flux-images.sh" >/dev/null
  images+=" ${ROOT}/_output/node-images/flux-source-controller.oci.tar ${ROOT}/_output/node-images/flux-kustomize-controller.oci.tar"
  measure "Flux's images built or found up to date in $((SECONDS - t_flux)) s"
fi
(cd "${ROOT}" && CGO_ENABLED=0 GOFLAGS=-trimpath go build -o "${BIN}/butler-cluster" ./cmd/butler-cluster)
(cd "${ROOT}" && IMAGES="${images}" CLUSTER_DIR="${CLUSTER_DIR}" exec setsid "${BIN}/butler-cluster") >"${LOGS}/cluster.log" 2>&1 &
cluster_pid=$!

declare -A pids=()
loop_pid=""
watch_pid=""
# host_processes: pids of processes (other than the cluster's own) started from BIN or
# KUBE_VERSIONS_DIR whose command line names HOST_DIR: the local provider, the Cluster API
# manager and the tenants' processes; and the GitOps stage's test binary.
host_processes() {
  local proc cmd
  for proc in /proc/[0-9]*; do
    cmd=$(tr '\0' ' ' 2>/dev/null <"${proc}/cmdline") || continue
    [[ "${cmd}" == "${GITOPS_TEST:-/nonexistent} "* ]] && { echo "${proc#/proc/}"; continue; }
    [[ "${cmd}" == "${BIN}/"* || "${cmd}" == "${KUBE_VERSIONS_DIR}/"* ]] || continue
    [[ "${cmd}" == *"${HOST_DIR}/"* ]] && echo "${proc#/proc/}"
  done
  return 0
}
# teardown: stops the request loop, the host processes, then the cluster (which cleans up after
# itself), and waits for each.
teardown() {
  local name pid
  [[ -n "${loop_pid}" ]] && kill "${loop_pid}" 2>/dev/null
  [[ -n "${GITOPS_PID:-}" ]] && kill "${GITOPS_PID}" 2>/dev/null
  [[ -n "${STEWARD_ISOLATION_PID:-}" ]] && kill "${STEWARD_ISOLATION_PID}" 2>/dev/null
  touch "${HOST_DIR}/stop-lb"
  if [[ -n "${watch_pid}" ]]; then touch "${HOST_DIR}/stop-watch"; pkill -P "${watch_pid}" 2>/dev/null; fi
  # The local provider stops its tenants' processes itself; then whatever is left is swept.
  for name in butler-localprovider capi-manager; do
    pid=${pids[${name}]:-}
    [[ -z "${pid}" ]] && continue
    kill -TERM "${pid}" 2>/dev/null
    for _ in $(seq 300); do kill -0 "${pid}" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "${pid}" 2>/dev/null
    wait "${pid}" 2>/dev/null
  done
  for pid in $(host_processes); do kill -KILL "${pid}" 2>/dev/null; done
  kill -TERM "${cluster_pid}" 2>/dev/null
  wait "${cluster_pid}" 2>/dev/null
  rm -rf "${HOST_DIR}"
}
stop_all() {
  local rc=$?
  set +e
  # A second INT or TERM must not cut the teardown short (timeout signals make and its group).
  trap - EXIT ERR
  trap '' INT TERM
  teardown
  exit "${rc}"
}
trap stop_all EXIT
# A command that fails outside a condition says where, before the teardown.
set -E
trap 'die "exit $? at ${BASH_SOURCE[0]##*/}:${LINENO}: ${BASH_COMMAND}"' ERR
trap 'trap "" INT TERM; exit 130' INT
trap 'trap "" INT TERM; exit 143' TERM

until [[ -f "${CLUSTER_DIR}/admin.kubeconfig" ]]; do
  kill -0 "${cluster_pid}" 2>/dev/null || { tail -20 "${LOGS}/cluster.log" >&2; die "butler-cluster exited"; }
  ((SECONDS - t1 < 900)) || die "the cluster was not up in 900 s"
  sleep 1
done
measure "cluster up (node Ready) in $((SECONDS - t1)) s"
export KUBECONFIG="${CLUSTER_DIR}/admin.kubeconfig"
# shellcheck disable=SC1091
source "${CLUSTER_DIR}/cluster.env"

# --- 2. the Cluster API manager and the local provider, on the host -------------------------
# The external kinds the controllers write and read, as a management cluster has them.
kc apply --server-side -f "${ROOT}/artifacts/crds" >/dev/null
kc wait --for condition=established --timeout 60s -f "${ROOT}/artifacts/crds" >/dev/null
PKI="${CLUSTER_DIR}/pki"
# shellcheck source=lib/pki.sh
source "${ROOT}/hack/lib/pki.sh"
for who in capi-manager butler-localprovider; do
  # Bound to cluster-admin, as the local plane does: local stand-ins for several providers' RBAC.
  new_cert "${who}-client" ca "/CN=butler-cluster:${who}" clientAuth
  write_kubeconfig "${HOST_DIR}/${who}.kubeconfig" "${who}-client" "butler-cluster:${who}" "${KUBE_APISERVER_URL}"
  kc create clusterrolebinding "butler-cluster:${who}" --clusterrole cluster-admin --user "butler-cluster:${who}" \
    --dry-run=client -o yaml | kc apply -f - >/dev/null
done
new_cert capi-webhook ca "/CN=capi-webhook-service.capi-system.svc" serverAuth \
  "DNS:capi-webhook-service.capi-system.svc,DNS:localhost,IP:127.0.0.1"
mkdir -p "${HOST_DIR}/capi-webhook-certs"
cp "${PKI}/capi-webhook.crt" "${HOST_DIR}/capi-webhook-certs/tls.crt"
cp "${PKI}/capi-webhook.key" "${HOST_DIR}/capi-webhook-certs/tls.key"
# Ports on loopback below the tenants' range (30000-32000) and the ephemeral one.
port() { echo $((25000 + RANDOM % 4000)); }
CAPI_HEALTH_PORT=$(port)
CAPI_WEBHOOK_PORT=$(port)
setsid "${BIN}/capi-manager" --kubeconfig "${HOST_DIR}/capi-manager.kubeconfig" --leader-elect=false \
  --webhook-port "${CAPI_WEBHOOK_PORT}" --webhook-cert-dir "${HOST_DIR}/capi-webhook-certs" \
  --health-addr "127.0.0.1:${CAPI_HEALTH_PORT}" --diagnostics-address "127.0.0.1:$(port)" --insecure-diagnostics \
  >"${LOGS}/capi-manager.log" 2>&1 &
pids[capi-manager]=$!
(cd "${ROOT}" && CGO_ENABLED=0 GOFLAGS=-trimpath go build -o "${BIN}/butler-localprovider" ./cmd/butler-localprovider)
# --address: the tenants' kube-apiservers listen on the bridge's address, where the Pods (the
# lifecycle controllers) reach them; the host's loopback is not theirs.
setsid "${BIN}/butler-localprovider" --kubeconfig "${HOST_DIR}/butler-localprovider.kubeconfig" \
  --bin-dir "${BIN}" --state-dir "${HOST_DIR}/tenants" --kube-versions-dir "${KUBE_VERSIONS_DIR}" \
  --port-range 30000-32000 --address "${NODE_IP}" --external-control-plane-namespaces steward-demo \
  >"${LOGS}/butler-localprovider.log" 2>&1 &
pids[butler-localprovider]=$!
wait_until "the Cluster API manager" 120 curl -sf "http://127.0.0.1:${CAPI_HEALTH_PORT}/readyz"

# --- 3. the chart ----------------------------------------------------------------------------
t2=${SECONDS}
# The GitOps stage's ManagementAddon installs as flux-installer, which butler may then impersonate.
gitops_values=()
[[ "${TEST_GITOPS}" == 0 ]] || gitops_values=(--set "managementAddons.serviceAccounts={flux-installer}")
helm install butler "${ROOT}/charts/butler-apiserver" -n butler-system --create-namespace \
  --set-string image.tag="${tag}" --set image.pullPolicy=Never "${gitops_values[@]}" \
  --set etcd.mode=external --set replicas=2 --set "etcd.external.endpoints={${ETCD_URL}}" >/dev/null
kc wait apiservice/v1alpha1.butler.butlerlabs.dev --for=condition=Available --timeout=5m >/dev/null \
  || { kc -n butler-system get pods -o wide >&2; kc -n butler-system logs deploy/butler-apiserver --tail 30 >&2 || true; die "the APIService is not Available"; }
measure "helm install -> APIService Available in $((SECONDS - t2)) s"
kc -n butler-system rollout status deploy/butler-apiserver --timeout=3m >/dev/null
kc get tc -A
pods=$(kc -n butler-system get pods -l app.kubernetes.io/name=butler-apiserver -o jsonpath='{.items[*].metadata.name}')
[[ $(wc -w <<<"${pods}") == 2 ]] || die "want 2 butler-apiserver Pods, got: ${pods}"
lease_holder() { kc -n butler-system get lease butler-apiserver-workers -o jsonpath='{.spec.holderIdentity}' 2>/dev/null | sed 's/_.*//'; }
holder_is_one_of() { local h; h=$(lease_holder); [[ -n "${h}" && " $1 " == *" ${h} "* ]]; }
wait_until "the controllers' Lease held by one of ${pods}" 60 holder_is_one_of "${pods}"
log "the controllers run in $(lease_holder) (Lease butler-apiserver-workers)"
kc apply -f "${ROOT}/artifacts/examples/" >/dev/null
kc get butler -A --no-headers | wc -l | { read -r n; log "examples applied: ${n} objects in the butler category"; }
[[ "${TEST_GITOPS}" == 0 ]] || gitops_install

# mint_kubeconfig NAME FILE [NAMESPACE]: the kubeconfig subresource, for the admin.
mint_kubeconfig() {
  kc create --raw "/apis/butler.butlerlabs.dev/v1alpha1/namespaces/${3:-local-demo}/tenantclusters/$1/kubeconfig" \
    -f - <<<'{"apiVersion":"butler.butlerlabs.dev/v1alpha1","kind":"KubeconfigRequest"}' \
    | grep -o '"kubeconfig":"[^"]*"' | head -n 1 | cut -d'"' -f4 | base64 -d >"$2"
}
# ready_nodes FILE: the tenant's Nodes that are Ready.
ready_nodes() {
  kc --kubeconfig "$1" get nodes --no-headers 2>/dev/null | awk '$2 == "Ready"' | wc -l
}

# Stages 4 to 6 are functions: TEST_STEWARD=only and TEST_GITOPS=only (debugging runs) skip them.
# --- 4. a local TenantCluster Ready, its nodes listed ----------------------------------------
stage_local_clusters() {
t3=${SECONDS}
kc apply -f "${ROOT}/artifacts/examples/local/" >/dev/null
kc wait tc/demo -n local-demo --for=condition=Ready --timeout=10m >/dev/null \
  || { kc get tc -A -o wide >&2; die "TenantCluster local-demo/demo is not Ready"; }
measure "TenantCluster local-demo/demo (3 workers) Ready in $((SECONDS - t3)) s"
mint_kubeconfig demo "${HOST_DIR}/demo.kubeconfig"
kc --kubeconfig "${HOST_DIR}/demo.kubeconfig" get nodes
[[ $(ready_nodes "${HOST_DIR}/demo.kubeconfig") == 3 ]] || die "demo's kubeconfig lists $(ready_nodes "${HOST_DIR}/demo.kubeconfig") Ready nodes, want 3"

# --- 5. the Lease holder's Pod deleted while a second cluster provisions ---------------------
t4=${SECONDS}
kc create -f - >/dev/null <<'EOF'
apiVersion: butler.butlerlabs.dev/v1alpha1
kind: TenantCluster
metadata: {name: demo2, namespace: local-demo}
spec:
  kubernetesVersion: v1.36.3
  providerConfigRef: {name: local}
  workers: {replicas: 2, machineTemplate: {os: {type: talos}}}
EOF
# Every phase demo2 is stored with, as a watch sees it; the watch is started again when it ends
# (it goes through the APIService to one Pod, which may be the one deleted below), and a new one
# begins with the current phase.
(
  while [[ ! -f "${HOST_DIR}/stop-watch" ]]; do
    kc get tc demo2 -n local-demo -w -o jsonpath='{.status.phase}{"\n"}' 2>/dev/null || sleep 0.5
  done
) >"${HOST_DIR}/demo2.phases" &
watch_pid=$!
# The Pod is deleted as soon as the controllers took demo2 up (phase Provisioning): the rest of its
# provisioning (about 20 s here) is the other replica's.
provisioning() { [[ "$(kc get tc demo2 -n local-demo -o jsonpath='{.status.phase}')" == Provisioning ]]; }
wait_until "demo2 to be Provisioning" 60 provisioning
old_holder=$(lease_holder)
other=$(tr ' ' '\n' <<<"${pods}" | grep -vx "${old_holder}")
# The node is cordoned first, so the Deployment's replacement Pod waits to be scheduled: the one
# replica that may take the Lease is the other one (else the two race for it, 2 s apart).
kc cordon butler-node >/dev/null
t5=${SECONDS}
kc -n butler-system delete pod "${old_holder}" --wait=false >/dev/null
log "deleted ${old_holder} (the Lease holder) while demo2 is Provisioning"
holder_is_other() { [[ "$(lease_holder)" == "${other}" ]]; }
wait_until "the other replica ${other} to take the Lease" 120 holder_is_other
kc uncordon butler-node >/dev/null
phase=$(kc get tc demo2 -n local-demo -o jsonpath='{.status.phase}')
measure "Lease taken by the other replica ${other} $((SECONDS - t5)) s after its holder's Pod was deleted; demo2 then ${phase}"
[[ "${phase}" != Ready ]] || die "demo2 was Ready before the other replica took the Lease: the failover happened after its provisioning"
kc wait tc/demo2 -n local-demo --for=condition=Ready --timeout=10m >/dev/null \
  || { kc get tc -A -o wide >&2; die "TenantCluster local-demo/demo2 is not Ready after the failover"; }
sleep 5
touch "${HOST_DIR}/stop-watch"
pkill -P "${watch_pid}" 2>/dev/null || true
wait "${watch_pid}" 2>/dev/null || true
watch_pid=""
phases=$(grep -v '^$' "${HOST_DIR}/demo2.phases" | uniq | paste -sd' ' -)
readies=$(grep -v '^$' "${HOST_DIR}/demo2.phases" | uniq | grep -cx Ready || true)
[[ "${readies}" == 1 ]] || die "demo2 became Ready ${readies} times: ${phases}"
# The controllers' Events of its phase changes ("phase A -> B", a repeat folded into a series of N),
# for the record: the stored phase above is what counts.
phase_events=$(kc get events -n local-demo --field-selector involvedObject.name=demo2 --sort-by=.metadata.creationTimestamp \
  -o jsonpath='{range .items[*]}{.message}{" x"}{.series.count}{"\n"}{end}' | grep '^phase ' | sed 's/ x$//' | paste -sd, - || true)
log "demo2's phase Events: ${phase_events}"
machines=$(kc get machines.cluster.x-k8s.io -A -l cluster.x-k8s.io/cluster-name=demo2 --no-headers | wc -l)
[[ "${machines}" == 2 ]] || die "demo2 has ${machines} Machines, want 2"
mint_kubeconfig demo2 "${HOST_DIR}/demo2.kubeconfig"
[[ $(ready_nodes "${HOST_DIR}/demo2.kubeconfig") == 2 ]] || die "demo2's kubeconfig lists $(ready_nodes "${HOST_DIR}/demo2.kubeconfig") Ready nodes, want 2"
measure "demo2 Ready once (stored phases: ${phases}), 2 Machines, 2 Ready nodes, $((SECONDS - t4)) s after its create"
kc -n butler-system rollout status deploy/butler-apiserver --timeout=3m >/dev/null
}

# --- 6. helm upgrade to the relinked image under a client loop -------------------------------
stage_upgrade() {
# The loop: one List of TenantClusters through kube-apiserver (the APIService) at a time, each
# on a new connection, to the cluster's address on this machine; stops when told or at the
# bound. A line per request: the HTTP code (000: no answer) and curl's error.
loop_out="${HOST_DIR}/requests"
: >"${loop_out}"
(
  deadline=$((SECONDS + LOOP_SECONDS_MAX))
  while [[ ! -f "${HOST_DIR}/stop-loop" ]] && ((SECONDS < deadline)); do
    code=$(curl -sS -o "${HOST_DIR}/last-body" -w '%{http_code}' --max-time 30 \
      --cacert "${PKI}/ca.crt" --cert "${PKI}/admin.crt" --key "${PKI}/admin.key" \
      "${KUBE_APISERVER_URL}/apis/butler.butlerlabs.dev/v1alpha1/tenantclusters" 2>"${HOST_DIR}/last-err") || true
    if [[ "${code}" == 200 ]]; then echo "$(date +%T.%N) 200" >>"${loop_out}"
    else echo "$(date +%T.%N) ${code} $(head -c 300 "${HOST_DIR}/last-err" "${HOST_DIR}/last-body" | tr '\n' ' ')" >>"${loop_out}"; fi
  done
) &
loop_pid=$!
sleep 3
t6=${SECONDS}
helm upgrade butler "${ROOT}/charts/butler-apiserver" -n butler-system --reuse-values \
  --set-string image.tag="${tag2}" --wait --timeout 5m >/dev/null
kc -n butler-system rollout status deploy/butler-apiserver --timeout=5m >/dev/null
# The old Pods serve until their shutdown delay ends and drain after it: the loop runs on until
# they are gone.
only_new_pods() {
  local images
  images=$(kc -n butler-system get pods -l app.kubernetes.io/name=butler-apiserver -o jsonpath='{range .items[*]}{.spec.containers[0].image}{"\n"}{end}')
  [[ $(wc -l <<<"${images}") == 2 ]] && ! grep -qv ":${tag2}\$" <<<"${images}"
}
wait_until "only the 2 new Pods" 180 only_new_pods
measure "helm upgrade -> both replicas on ${tag2} in $((SECONDS - t6)) s"
sleep 3
touch "${HOST_DIR}/stop-loop"
wait "${loop_pid}" || true
loop_pid=""
total=$(wc -l <"${loop_out}")
failed=$(grep -vc ' 200$' "${loop_out}" || true)
measure "client loop during the upgrade: ${total} Lists of TenantClusters, ${failed} failed"
grep -v ' 200$' "${loop_out}" | head -20 >&2 || true
for pod in $(kc -n butler-system get pods -l app.kubernetes.io/name=butler-apiserver -o jsonpath='{.items[*].metadata.name}'); do
  # (The log read whole first: grep -q would stop reading it, failing kubectl under pipefail.)
  pod_log=$(kc -n butler-system logs "${pod}")
  grep -q "Starting butler-apiserver.*version=\"${tag2}\"" <<<"${pod_log}" || die "${pod} does not say it is version ${tag2}"
done
((total > 0)) || die "the client loop made no request"
[[ "${failed}" == 0 ]] || die "${failed} of ${total} requests failed during the upgrade"
}

if [[ "${only}" == 1 ]]; then
  [[ "${TEST_GITOPS}" == 0 ]] || gitops_stage
else
  # The GitOps stage runs beside stages 4, 5 and 6 (they wait on their clusters and rollouts for
  # most of their time) and the Steward stage's set-up; it is joined before Steward starts, which
  # would take up the stage's local clusters, and whose figures are benchmarks.
  [[ "${TEST_GITOPS}" == 0 ]] || gitops_beside
  # Each stage's seconds, for CI's reading of where the time goes.
  ts=${SECONDS}
  stage_local_clusters
  measure "stages 4 and 5 (local clusters, the Lease holder's Pod deleted) took $((SECONDS - ts)) s"
  ts=${SECONDS}
  stage_upgrade
  measure "stage 6 (helm upgrade under the client loop) took $((SECONDS - ts)) s"
fi
# --- 5b. the real Steward (TEST_STEWARD=1, make test-steward) --------------------------------
[[ "${TEST_STEWARD}" == 0 ]] || steward_prepare
[[ "${TEST_GITOPS}" == 0 || "${only}" == 1 ]] || gitops_join
[[ "${TEST_STEWARD}" == 0 ]] || steward_stage

# --- 7. helm uninstall -----------------------------------------------------------------------
helm uninstall butler -n butler-system --wait --timeout 3m >/dev/null
# The Pods go with their ReplicaSet (garbage collection), after their shutdown delay.
left=""
for _ in $(seq 120); do
  left=$(kc get pods,services -n butler-system -o name; kc get apiservice v1alpha1.butler.butlerlabs.dev -o name 2>/dev/null || true)
  [[ -z "${left}" ]] && break
  sleep 1
done
[[ -z "${left}" ]] || die "helm uninstall left: ${left}"
log "helm uninstall left no Pod, Service or APIService"

# --- 8. the README's install, as written: no values, the trial's embedded etcd --------------
# The README's block from `helm install` to `kubectl wait`, run in the clone; only the image tag
# is this run's (IMAGE_TAG may differ from `git describe`).
stage_readme_install() {
  local block t8=${SECONDS}
  block=$(awk '/^helm install butler charts\/butler-apiserver/ {on=1} on {print} on && /^kubectl wait/ {exit}' "${ROOT}/README.md")
  [[ "${block}" == *"kubectl wait"* ]] || die "no helm install block found in README.md"
  # shellcheck disable=SC2016 # the README's text, not an expansion
  block=${block//'$(git describe --tags --always --dirty)'/${tag}}
  (cd "${ROOT}" && eval "${block}") >/dev/null \
    || { kc -n butler-system get pods -o wide >&2; kc -n butler-system logs deploy/butler-apiserver --tail 30 >&2 || true; die "the README's install did not become Available"; }
  measure "the README's helm install (no values, embedded etcd) -> APIService Available in $((SECONDS - t8)) s"
  kc get tenantclusters -A >/dev/null
  kc apply -f "${ROOT}/artifacts/examples/01-team.yaml" >/dev/null
  kc delete -f "${ROOT}/artifacts/examples/01-team.yaml" --timeout=90s >/dev/null
  helm uninstall butler -n butler-system --wait --timeout 3m >/dev/null
  log "the README's install served a list and a Team write, then uninstalled"
}
stage_readme_install

trap - EXIT ERR
trap '' INT TERM
set +e
teardown
set -e
leftover=$(awk -v d="${CLUSTER_DIR}/" 'index($2, d) == 1' /proc/mounts; ip link show butler0 2>/dev/null || true
  for table in filter nat mangle; do iptables -t "${table}" -S 2>/dev/null | grep -- '^-N KUBE-' || true; done
  for proc in /proc/[0-9]*; do tr '\0' ' ' 2>/dev/null <"${proc}/cmdline" | grep -F -- "${CLUSTER_DIR}/" | grep -v grep || true; done)
[[ -z "${leftover}" ]] || die "the cluster left: ${leftover}"
log "stopped: no process, mount, iptables chain or bridge of the cluster left"
log "PASS in $((SECONDS - t0)) s"
printf '  %s\n' "${summary[@]}" >&2
