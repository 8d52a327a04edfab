#!/usr/bin/env bash
# A management plane on loopback: etcd, kube-apiserver (front proxy configured),
# kube-controller-manager, and butler-apiserver aggregated into it through an APIService, with
# authentication and authorization delegated to kube-apiserver. It applies the manifests in
# artifacts/, waits until the APIService is Available and the butler API answers, and only then
# writes LOCAL_DIR/admin.kubeconfig. butler-localprovider (the local stand-in for a management
# cluster's control-plane and infrastructure providers) runs the tenants' control planes as
# processes, their state in LOCAL_DIR/tenants. Ctrl-C (SIGINT) or SIGTERM stops everything in
# order: butler-localprovider (with the tenants' processes), butler-apiserver,
# kube-controller-manager, kube-apiserver, then etcd. A start that fails stops what it started
# the same way and exits non-zero, naming the component and its log line; any process of this
# LOCAL_DIR still running after that (or left by a run that was killed) is stopped too.
#
# Environment (all optional):
#   LOCAL_DIR                     state, certificates, logs, kubeconfigs (default _output/local)
#   ETCD_PORT ETCD_PEER_PORT KUBE_APISERVER_PORT KUBE_CONTROLLER_MANAGER_PORT BUTLER_APISERVER_PORT
#                                 loopback ports (default: free ones outside the kernel's ephemeral
#                                 range, picked again if another process binds one first; a port
#                                 given here is not: its component fails, and the plane stops).
#                                 The ports chosen are in LOCAL_DIR/plane.env while the plane runs.
#   BIN                           where the binaries are (default _output/bin; built when missing)
#   BUTLER_APISERVER_ARGS         extra flags for butler-apiserver
#   BUTLER_LOCALPROVIDER_ARGS     extra flags for butler-localprovider
#   BUTLER_APISERVER_REPLICAS     how many butler-apiserver replicas (default 1). The APIService
#                                 reaches the first; the others (butler-apiserver-1, ...) serve on
#                                 ports of their own and stand by for the workers' Lease, as the
#                                 replicas of a Deployment do.
#   RESTART_GRACE                 seconds a process may be gone (restarted by hand or by a test)
#                                 before the plane stops (default 3)
#   TENANT_PORT_RANGE             loopback ports of the tenants' kube-apiservers (default 30000-32000)
#   KUBE_VERSIONS_DIR             where other Kubernetes versions are built (default _output/kube-versions)
#   NODE_IMAGES_DIR               the images real nodes import (hack/build-node-images.sh, and Flux's of
#                                 hack/build-flux-images.sh when built; default _output/node-images)
#   KUBE_CONTROLLER_MANAGER_QPS   requests/s of each of kube-controller-manager's controllers
#                                 (default 300, burst twice that); bench -lifecycle measures with more
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${BIN:-${ROOT}/_output/bin}"
LOCAL_DIR="${LOCAL_DIR:-${ROOT}/_output/local}"
mkdir -p "${LOCAL_DIR}"
LOCAL_DIR="$(cd "${LOCAL_DIR}" && pwd)"
PKI="${LOCAL_DIR}/pki"
LOGS="${LOCAL_DIR}/logs"
# <name>.pid for each process; one restarted since (by hand, or by a test) records its new pid
# there, and is stopped by that.
RUN="${LOCAL_DIR}/run"
ADMIN_KUBECONFIG="${LOCAL_DIR}/admin.kubeconfig"
# The script's own admin kubeconfig; renamed to admin.kubeconfig once the plane serves.
BOOT_KUBECONFIG="${LOCAL_DIR}/.admin.kubeconfig.starting"
KUBECTL="${KUBECTL:-kubectl}"
KUBE_VERSIONS_DIR="${KUBE_VERSIONS_DIR:-${ROOT}/_output/kube-versions}"

log() { echo "local-up: $*" >&2; }
die() { log "$*"; exit 1; }

# --- ports -----------------------------------------------------------------------------------
# Ports come from outside the kernel's ephemeral range (and the tenants' range): inside it, any
# outgoing connection may take a port between the moment it is found free and the moment its
# server binds it. A server that still finds its port taken is started again on another (up()
# below), unless the port was given in the environment.
read -r EPHEMERAL_MIN EPHEMERAL_MAX </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || { EPHEMERAL_MIN=32768; EPHEMERAL_MAX=60999; }
TENANT_PORT_RANGE="${TENANT_PORT_RANGE:-30000-32000}"
TENANT_PORT_MIN=${TENANT_PORT_RANGE%-*} TENANT_PORT_MAX=${TENANT_PORT_RANGE#*-}
# port_bound PORT: a socket (listening or connected) holds 127.0.0.1:PORT or *:PORT.
port_bound() {
  local hex
  hex=$(printf ':%04X ' "$1")
  grep -q -- "${hex}" /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
used_ports=" "
free_port() {
  local port
  for _ in $(seq 2000); do
    port=$((10000 + (RANDOM << 15 | RANDOM) % 55536))
    ((port >= EPHEMERAL_MIN && port <= EPHEMERAL_MAX)) && continue
    ((port >= TENANT_PORT_MIN && port <= TENANT_PORT_MAX)) && continue
    [[ "${used_ports}" == *" ${port} "* ]] && continue
    port_bound "${port}" && continue
    used_ports+="${port} "
    echo "${port}"
    return
  done
  die "found no free port on 127.0.0.1 outside the ephemeral range ${EPHEMERAL_MIN}-${EPHEMERAL_MAX}"
}
# The ports each component binds, and which of them the environment fixed.
declare -A component_ports=(
  [etcd]="ETCD_PORT ETCD_PEER_PORT"
  [kube-apiserver]="KUBE_APISERVER_PORT"
  [kube-controller-manager]="KUBE_CONTROLLER_MANAGER_PORT"
  [capi-manager]="CAPI_WEBHOOK_PORT CAPI_HEALTH_PORT CAPI_DIAGNOSTICS_PORT"
  [butler-apiserver]="BUTLER_APISERVER_PORT"
)
fixed_ports=" "
for var in ETCD_PORT ETCD_PEER_PORT KUBE_APISERVER_PORT KUBE_CONTROLLER_MANAGER_PORT BUTLER_APISERVER_PORT; do
  if [[ -n "${!var:-}" ]]; then
    fixed_ports+="${var} "
    used_ports+="${!var} "
  fi
done
# pick_ports NAME: new ports for NAME's port variables that the environment did not fix.
pick_ports() {
  local var
  for var in ${component_ports[$1]}; do
    [[ "${fixed_ports}" == *" ${var} "* ]] || printf -v "${var}" '%s' "$(free_port)"
    [[ -n "${!var}" ]] || exit 1
    used_ports+="${!var} "
  done
}

# --- binaries --------------------------------------------------------------------------------
if [[ ! -x "${BIN}/kube-apiserver" || ! -x "${BIN}/kube-controller-manager" || ! -x "${BIN}/kube-scheduler" || ! -x "${BIN}/etcd" ]]; then
  log "building kube-apiserver, kube-controller-manager, kube-scheduler and etcd (the first time takes minutes)"
  "${ROOT}/hack/build-kube.sh"
fi
if [[ ! -x "${BIN}/capi-manager" ]]; then
  log "building the Cluster API manager (the first time takes minutes)"
  "${ROOT}/hack/build-capi.sh"
fi
if [[ ! -x "${BIN}/butler-apiserver" ]]; then
  (cd "${ROOT}" && CGO_ENABLED=0 GOFLAGS=-trimpath go build -o "${BIN}/butler-apiserver" ./cmd/butler-apiserver)
fi
# Always built (seconds when cached): a stale one would test old code.
# Built as the Makefile builds this module (static, -trimpath), so the build cache serves it.
if ! (cd "${ROOT}" && CGO_ENABLED=0 GOFLAGS=-trimpath go build -o "${BIN}/butler-localprovider" ./cmd/butler-localprovider); then
  [[ -x "${BIN}/butler-localprovider" ]] || die "butler-localprovider does not build"
  log "butler-localprovider does not build now; running the one built before"
fi
command -v "${KUBECTL}" >/dev/null || die "kubectl is needed"
command -v openssl >/dev/null || die "openssl is needed"

# --- certificates (made once, kept in LOCAL_DIR/pki) ----------------------------------------
# shellcheck source=lib/pki.sh
source "${ROOT}/hack/lib/pki.sh"
mkdir -p "${PKI}" "${LOGS}" "${RUN}"
new_ca ca "butler-local-ca"
new_ca front-proxy-ca "butler-local-front-proxy-ca"
new_cert kube-apiserver ca "/CN=kube-apiserver" serverAuth \
  "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:127.0.0.1,IP:10.96.0.1"
new_cert admin ca "/CN=kubernetes-admin/O=system:masters" clientAuth
new_cert kube-controller-manager ca "/CN=system:kube-controller-manager" clientAuth
new_cert front-proxy-client front-proxy-ca "/CN=front-proxy-client" clientAuth
# butler-apiserver acts in the management cluster as the ServiceAccount that artifacts/deploy
# binds, so the RBAC a real cluster applies is the RBAC exercised here.
new_cert butler-apiserver-client ca \
  "/CN=system:serviceaccount:butler-system:butler-apiserver/O=system:serviceaccounts/O=system:serviceaccounts:butler-system" clientAuth
# The aggregator checks the name <service>.<namespace>.svc.
new_cert butler-apiserver-serving ca "/CN=butler-apiserver.butler-system.svc" serverAuth \
  "DNS:butler-apiserver.butler-system.svc,DNS:localhost,IP:127.0.0.1"
new_cert butler-localprovider-client ca "/CN=butler-local:localprovider" clientAuth
# The Cluster API manager: a client identity (bound to cluster-admin below) and its webhook
# server's certificate (no cert-manager here; nothing calls the webhooks, as no webhook
# configuration is installed, but the manager serves them).
new_cert capi-manager-client ca "/CN=butler-local:capi-manager" clientAuth
new_cert capi-webhook ca "/CN=capi-webhook-service.capi-system.svc" serverAuth \
  "DNS:capi-webhook-service.capi-system.svc,DNS:localhost,IP:127.0.0.1"
new_sa_key

rm -f "${ADMIN_KUBECONFIG}"
kc() { "${KUBECTL}" --kubeconfig "${BOOT_KUBECONFIG}" "$@"; }

# --- processes -------------------------------------------------------------------------------
# One local-up per LOCAL_DIR: the lock is held while this script runs (its children do not
# inherit it).
exec 9>"${RUN}/lock"
flock -n 9 || die "another local-up runs with LOCAL_DIR=${LOCAL_DIR}; stop it first"

# leftovers: the pids of this plane's processes (a binary of BIN or KUBE_VERSIONS_DIR whose
# command line names LOCAL_DIR: the plane's and the tenants' processes) other than ours.
leftovers() {
  local proc cmd
  for proc in /proc/[0-9]*; do
    cmd=$(tr '\0' ' ' 2>/dev/null <"${proc}/cmdline") || continue
    [[ "${cmd}" == "${BIN}/"* || "${cmd}" == "${KUBE_VERSIONS_DIR}/"* ]] || continue
    [[ "${cmd}" == *"${LOCAL_DIR}/"* ]] || continue
    echo "${proc#/proc/}"
  done
}
# sweep WHY: stops every leftover (SIGTERM, then SIGKILL after 15 s), saying which.
sweep() {
  local left pid
  left=$(leftovers)
  [[ -z "${left}" ]] && return 0
  for pid in ${left}; do
    log "$1: stopping $(tr '\0' ' ' 2>/dev/null <"/proc/${pid}/cmdline" | cut -c1-120)... (pid ${pid})"
    kill -TERM "${pid}" 2>/dev/null || true
  done
  for _ in $(seq 150); do
    [[ -z "$(leftovers)" ]] && return 0
    sleep 0.1
  done
  for pid in $(leftovers); do kill -KILL "${pid}" 2>/dev/null || true; done
}
# A plane that died without stopping (killed, or a machine that crashed) left these.
sweep "left by an earlier run"

# shellcheck source=lib/procs.sh
source "${ROOT}/hack/lib/procs.sh"
stopping=""
cleanup() {
  local rc=$?
  [[ -n "${stopping}" ]] && return 0
  stopping=1
  # Whatever fails here, the rest is still stopped. A second signal must not cut the stop short
  # (timeout signals make and its group, make passes it on: two SIGTERMs): only this stop reaches
  # the processes, each in its own session.
  set +e
  trap '' INT TERM
  rm -f "${ADMIN_KUBECONFIG}" "${BOOT_KUBECONFIG}" "${LOCAL_DIR}/plane.env"
  log "stopping"
  # kube-apiserver before etcd: with etcd gone first it hangs on shutdown. The local provider
  # first: it stops the tenants' kube-apiservers, then their datastore etcd.
  stop butler-localprovider
  for name in "${!pids[@]}"; do
    if [[ "${name}" == butler-apiserver* ]]; then stop "${name}"; fi
  done
  stop capi-manager
  stop kube-controller-manager
  stop kube-apiserver
  stop etcd
  # Whatever still runs was not stopped by its parent (a tenant process of a provider that was
  # killed, a process a test restarted by hand): nothing of this plane outlives it.
  sweep "not stopped with the plane"
  log "stopped"
  exit "${rc}"
}
trap cleanup EXIT
trap 'trap "" INT TERM; exit 130' INT
trap 'trap "" INT TERM; exit 143' TERM

# owns_port PID PORT: PID listens on PORT (one of its file descriptors is that listening socket),
# so an answer on PORT comes from it and not from another process that holds the port.
owns_port() {
  local inode
  # shellcheck disable=SC2013 # inode numbers: one word each
  for inode in $(awk -v port="$(printf '%04X' "$2")" \
    '$4 == "0A" { n = split($2, a, ":"); if (a[n] == port) print $10 }' /proc/net/tcp /proc/net/tcp6 2>/dev/null); do
    # shellcheck disable=SC2010 # /proc's fd names are numbers; ls -l shows the links' targets
    ls -l "/proc/$1/fd" 2>/dev/null | grep -q "socket:\[${inode}\]" && return 0
  done
  return 1
}
# launch NAME: starts NAME with its run_NAME function (replicas, NAME-1 ..., with NAME's), on the
# ports in its port variables.
launch() {
  local kind=${1%-[0-9]*}
  "run_${kind//-/_}" "$1"
}
# settle NAME: waits until NAME listens on each of its ports. One that exited because a port was
# taken gets new ports (those the environment did not fix) and is launched again, up to 5 times;
# any other exit stops the plane, naming NAME and its log's failing line.
settle() {
  local name=$1 kind=${1%-[0-9]*} attempt=1 var ready deadline
  deadline=$((SECONDS + 120))
  while true; do
    ready=1
    for var in ${component_ports[${name}]}; do
      owns_port "${pids[${name}]}" "${!var}" || { ready=""; break; }
    done
    [[ -n "${ready}" ]] && return 0
    if ! kill -0 "${pids[${name}]}" 2>/dev/null; then
      wait "${pids[${name}]}" 2>/dev/null || true
      if grep -aq 'address already in use' "${LOGS}/${name}.log" && ((attempt < 5)); then
        local before=" " after=" "
        for var in ${component_ports[${name}]}; do before+="${!var} "; done
        pick_ports "${name}"
        for var in ${component_ports[${name}]}; do after+="${!var} "; done
        [[ "${before}" != "${after}" ]] ||
          die "${kind} failed to start: $(failure "${name}") (its port was given in the environment; log: ${LOGS}/${name}.log)"
        log "${name}: a port was taken ($(failure "${name}")); starting it again on${after}"
        mv "${LOGS}/${name}.log" "${LOGS}/${name}.log.$((attempt++))"
        launch "${name}"
        continue
      fi
      die "${kind} failed to start: $(failure "${name}") (log: ${LOGS}/${name}.log)"
    fi
    ((SECONDS < deadline)) || die "${name} did not listen on its ports in 120s; log: ${LOGS}/${name}.log"
    sleep 0.1
  done
}
# up NAME: launch and settle.
up() { launch "$1" && settle "$1"; }

run_etcd() {
  start "$1" "${BIN}/etcd" --name local --data-dir "${LOCAL_DIR}/etcd" \
    --listen-client-urls "http://127.0.0.1:${ETCD_PORT}" --advertise-client-urls "http://127.0.0.1:${ETCD_PORT}" \
    --listen-peer-urls "http://127.0.0.1:${ETCD_PEER_PORT}" --initial-advertise-peer-urls "http://127.0.0.1:${ETCD_PEER_PORT}" \
    --initial-cluster "local=http://127.0.0.1:${ETCD_PEER_PORT}" --listen-metrics-urls "" --log-level warn
}
run_kube_apiserver() {
  start "$1" "${BIN}/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:${ETCD_PORT}" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "${KUBE_APISERVER_PORT}" \
    --endpoint-reconciler-type none \
    --tls-cert-file "${PKI}/kube-apiserver.crt" --tls-private-key-file "${PKI}/kube-apiserver.key" \
    --client-ca-file "${PKI}/ca.crt" \
    --authorization-mode RBAC \
    --service-cluster-ip-range 10.96.0.0/16 \
    --service-account-issuer https://kubernetes.default.svc \
    --service-account-key-file "${PKI}/sa.pub" --service-account-signing-key-file "${PKI}/sa.key" \
    --requestheader-client-ca-file "${PKI}/front-proxy-ca.crt" \
    --requestheader-allowed-names front-proxy-client \
    --requestheader-username-headers X-Remote-User \
    --requestheader-group-headers X-Remote-Group \
    --requestheader-extra-headers-prefix X-Remote-Extra- \
    --proxy-client-cert-file "${PKI}/front-proxy-client.crt" --proxy-client-key-file "${PKI}/front-proxy-client.key" \
    --cert-dir "${LOCAL_DIR}/kube-apiserver"
}
# The namespace controller empties a deleted namespace with a List and a DeleteCollection per
# namespaced kind served (artifacts/crds alone adds 44): at the default 20 requests/s and 10
# namespaces at a time, 200 deleted tenant namespaces took minutes. kube-apiserver shares itself
# by API Priority and Fairness (kube-system's controllers are workload-high there).
run_kube_controller_manager() {
  start "$1" "${BIN}/kube-controller-manager" \
    --kubeconfig "${LOCAL_DIR}/kube-controller-manager.kubeconfig" \
    --authentication-kubeconfig "${LOCAL_DIR}/kube-controller-manager.kubeconfig" \
    --authorization-kubeconfig "${LOCAL_DIR}/kube-controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "${KUBE_CONTROLLER_MANAGER_PORT}" \
    --leader-elect=false \
    --use-service-account-credentials \
    --service-account-private-key-file "${PKI}/sa.key" --root-ca-file "${PKI}/ca.crt" \
    --kube-api-qps "${KUBE_CONTROLLER_MANAGER_QPS:-300}" --kube-api-burst "$((2 * ${KUBE_CONTROLLER_MANAGER_QPS:-300}))" \
    --concurrent-namespace-syncs 20 \
    --controllers namespace-controller,garbage-collector-controller,serviceaccount-controller,serviceaccount-token-controller,clusterrole-aggregation-controller,root-ca-certificate-publisher-controller
}
run_capi_manager() {
  start "$1" "${BIN}/capi-manager" \
    --kubeconfig "${LOCAL_DIR}/capi-manager.kubeconfig" \
    --leader-elect=false \
    --webhook-port "${CAPI_WEBHOOK_PORT}" --webhook-cert-dir "${LOCAL_DIR}/capi-manager/webhook-certs" \
    --health-addr "127.0.0.1:${CAPI_HEALTH_PORT}" \
    --diagnostics-address "127.0.0.1:${CAPI_DIAGNOSTICS_PORT}" --insecure-diagnostics
}
# run_butler_apiserver NAME: a replica, on the port in its port variable.
run_butler_apiserver() {
  local var=${component_ports[$1]}
  # shellcheck disable=SC2086 # BUTLER_APISERVER_ARGS is a list of flags
  start "$1" "${BIN}/butler-apiserver" \
    --etcd-servers "http://127.0.0.1:${ETCD_PORT}" \
    --kubeconfig "${LOCAL_DIR}/butler-apiserver.kubeconfig" \
    --authentication-kubeconfig "${LOCAL_DIR}/butler-apiserver.kubeconfig" \
    --authorization-kubeconfig "${LOCAL_DIR}/butler-apiserver.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "${!var}" \
    --tls-cert-file "${PKI}/butler-apiserver-serving.crt" --tls-private-key-file "${PKI}/butler-apiserver-serving.key" \
    --data-dir "${LOCAL_DIR}/$1" --snapshot-dir "${LOCAL_DIR}/snapshots" \
    ${BUTLER_APISERVER_ARGS:-}
}
# The images every real node imports: pause, echo and CoreDNS (hack/build-node-images.sh), and
# Flux's two controllers when hack/build-flux-images.sh built them (a tenant's spec.addons.gitops).
node_images() {
  local dir="${NODE_IMAGES_DIR:-${ROOT}/_output/node-images}" list f
  list="${dir}/pause.oci.tar,${dir}/echo.oci.tar,${dir}/coredns.oci.tar"
  for f in "${dir}/flux-source-controller.oci.tar" "${dir}/flux-kustomize-controller.oci.tar"; do
    [[ ! -f "${f}" ]] || list+=",${f}"
  done
  echo "${list}"
}
run_butler_localprovider() {
  # shellcheck disable=SC2086 # BUTLER_LOCALPROVIDER_ARGS is a list of flags
  start "$1" "${BIN}/butler-localprovider" \
    --kubeconfig "${LOCAL_DIR}/butler-localprovider.kubeconfig" \
    --bin-dir "${BIN}" --state-dir "${LOCAL_DIR}/tenants" \
    --kube-versions-dir "${KUBE_VERSIONS_DIR}" --snapshot-dir "${LOCAL_DIR}/snapshots" \
    --port-range "${TENANT_PORT_RANGE}" \
    --node-bin-dir "${BIN}" --node-images "$(node_images)" \
    ${BUTLER_LOCALPROVIDER_ARGS:-}
}
# The replicas beyond the first: butler-apiserver-1, ... on ports of their own.
butler_replicas=(butler-apiserver)
for ((i = 1; i < ${BUTLER_APISERVER_REPLICAS:-1}; i++)); do
  component_ports[butler-apiserver-${i}]="BUTLER_APISERVER_${i}_PORT"
  butler_replicas+=("butler-apiserver-${i}")
done
for name in "${!component_ports[@]}"; do pick_ports "${name}"; done

up etcd
wait_for "etcd" 30 curl -sf "http://127.0.0.1:${ETCD_PORT}/health"
up kube-apiserver
# Kubeconfigs name kube-apiserver's port, final now.
server="https://127.0.0.1:${KUBE_APISERVER_PORT}"
write_kubeconfig "${BOOT_KUBECONFIG}" admin admin "${server}"
write_kubeconfig "${LOCAL_DIR}/kube-controller-manager.kubeconfig" kube-controller-manager kube-controller-manager "${server}"
write_kubeconfig "${LOCAL_DIR}/butler-apiserver.kubeconfig" butler-apiserver-client butler-apiserver "${server}"
write_kubeconfig "${LOCAL_DIR}/butler-localprovider.kubeconfig" butler-localprovider-client butler-localprovider "${server}"
write_kubeconfig "${LOCAL_DIR}/capi-manager.kubeconfig" capi-manager-client capi-manager "${server}"
wait_for "kube-apiserver" 120 kc get --raw /readyz

launch kube-controller-manager

# The external CRDs the lifecycle workers write and read (CAPI, Steward, the providers, ours:
# artifacts/crds/README.md), established before butler-apiserver starts its workers. Server-side,
# as the largest are over the client-side apply annotation limit.
kc apply --server-side --force-conflicts --field-manager local-up -f "${ROOT}/artifacts/crds" >/dev/null
kc wait --for condition=established --timeout 60s -f "${ROOT}/artifacts/crds" >/dev/null

# The local provider: tenant control planes (StewardControlPlane -> TenantControlPlane -> a
# kube-apiserver, kube-controller-manager and kube-scheduler process each, on the provider's own
# datastore etcd, never this one) and local machines. Bound to cluster-admin: it stands in for several providers' RBAC at once.
kc apply -f - >/dev/null <<'RBAC'
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: butler-local:localprovider
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "butler-local:localprovider"}
RBAC
launch butler-localprovider

# The Cluster API core manager (Cluster, MachineDeployment, MachineSet, Machine, ... controllers),
# as a management cluster runs it. Its identity is bound to cluster-admin here, where a real
# install binds the ClusterRole of CAPI's manifests: local-only, and simpler than copying it.
kc apply -f - >/dev/null <<'RBAC'
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: butler-local:capi-manager
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "butler-local:capi-manager"}
RBAC
mkdir -p "${LOCAL_DIR}/capi-manager/webhook-certs"
cp "${PKI}/capi-webhook.crt" "${LOCAL_DIR}/capi-manager/webhook-certs/tls.crt"
cp "${PKI}/capi-webhook.key" "${LOCAL_DIR}/capi-manager/webhook-certs/tls.key"
launch capi-manager

# The manifests a platform admin applies; only the Service differs (ExternalName to loopback),
# and the APIService gets the local CA and port.
kc apply -f "${ROOT}/artifacts/deploy/namespace.yaml" >/dev/null
kc apply -f "${ROOT}/artifacts/deploy/rbac.yaml" -f "${ROOT}/artifacts/deploy/clusterroles.yaml" \
  -f "${ROOT}/artifacts/local/service-externalname.yaml" -f "${ROOT}/artifacts/deploy/apiservice.yaml" >/dev/null
for name in "${butler_replicas[@]}"; do launch "${name}"; done

# Every process listens on its ports (or was moved to free ones) before anything is pointed at them.
for name in kube-controller-manager capi-manager "${butler_replicas[@]}"; do settle "${name}"; done
kc patch apiservice v1alpha1.butler.butlerlabs.dev --type merge -p \
  "{\"spec\":{\"caBundle\":\"$(base64 -w0 "${PKI}/ca.crt")\",\"service\":{\"port\":${BUTLER_APISERVER_PORT}}}}" >/dev/null

apiservice_available() {
  [[ "$(kc get apiservice v1alpha1.butler.butlerlabs.dev \
    -o jsonpath='{.status.conditions[?(@.type=="Available")].status}')" == "True" ]]
}
discovery_lists_butler() { kc api-resources --api-group butler.butlerlabs.dev -o name | grep -q '^tenantclusters\.'; }
wait_for "the APIService to be Available" 120 apiservice_available
wait_for "discovery to list the butler resources" 60 discovery_lists_butler
wait_for "a List of tenantclusters through kube-apiserver" 60 kc get tenantclusters -A
wait_for "the Cluster API manager" 120 curl -sf "http://127.0.0.1:${CAPI_HEALTH_PORT}/readyz"

# The ports chosen, for scripts and tests that drive the plane.
{
  for var in ETCD_PORT ETCD_PEER_PORT KUBE_APISERVER_PORT KUBE_CONTROLLER_MANAGER_PORT BUTLER_APISERVER_PORT \
    CAPI_WEBHOOK_PORT CAPI_HEALTH_PORT CAPI_DIAGNOSTICS_PORT; do
    echo "${var}=${!var}"
  done
  for ((i = 1; i < ${#butler_replicas[@]}; i++)); do
    var="BUTLER_APISERVER_${i}_PORT"
    echo "${var}=${!var}"
  done
} >"${LOCAL_DIR}/plane.env"
mv "${BOOT_KUBECONFIG}" "${ADMIN_KUBECONFIG}"
cat <<BANNER

Management plane is up (state and logs in ${LOCAL_DIR}; ports in ${LOCAL_DIR}/plane.env):
  kube-apiserver    https://127.0.0.1:${KUBE_APISERVER_PORT}
  butler-apiserver  https://127.0.0.1:${BUTLER_APISERVER_PORT}  (APIService v1alpha1.butler.butlerlabs.dev: Available; ${#butler_replicas[@]} replica(s))
  etcd              http://127.0.0.1:${ETCD_PORT}
  tenants           butler-localprovider, control planes on 127.0.0.1:${TENANT_PORT_RANGE} (state in ${LOCAL_DIR}/tenants)
  capi-manager      Cluster API core controllers (webhooks on 127.0.0.1:${CAPI_WEBHOOK_PORT})

  export KUBECONFIG=${ADMIN_KUBECONFIG}
  kubectl get tenantclusters -A

Ctrl-C stops everything.
BANNER

# Run until a signal, or until one of the processes dies. A process restarted by hand (or by a
# test) has a moment to record its new pid in RUN.
alive() { kill -0 "$(<"${RUN}/$1.pid")" 2>/dev/null; }
while true; do
  for name in "${!pids[@]}"; do
    alive "${name}" || { sleep "${RESTART_GRACE:-3}"; alive "${name}"; } || die "${name} exited: $(failure "${name}") (log: ${LOGS}/${name}.log)"
  done
  sleep 1 &
  wait $! || true
done
