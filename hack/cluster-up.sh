#!/usr/bin/env bash
# A one-node Kubernetes cluster on this machine, for installing the chart as a platform team
# would: etcd, kube-apiserver, kube-controller-manager and kube-scheduler (hack/build-kube.sh),
# a kubelet and kube-proxy built the same way, Debian's containerd (1.6) and runc, Debian's CNI
# plugins (bridge, host-local, loopback, portmap), and a pause image built from source
# (hack/dist/cmd/pause). Nothing is pulled: images come from `make images` and are imported into
# containerd. Pods and Services live only on this machine: the Pods' bridge butler0 holds
# POD_CIDR (the node's address is its first address), Services take SERVICE_CIDR, nothing is
# masqueraded out. Once the node is Ready it writes CLUSTER_DIR/admin.kubeconfig and runs until
# SIGINT/SIGTERM, then stops everything and removes what it made: Pods' containers, containerd's
# state, the kubelet's mounts and cgroups, kube-proxy's iptables rules, the bridge.
#
# Needs root (containerd, kubelet, iptables, the bridge), cgroup v1 or v2, and:
#   apt-get install containerd runc containernetworking-plugins iptables conntrack
#
# Environment (all optional):
#   CLUSTER_DIR    state, certificates, logs (default _output/cluster)
#   POD_CIDR       default 10.244.0.0/24
#   SERVICE_CIDR   default 10.97.0.0/24 (its first address is the kubernetes Service)
#   IMAGES         image archives to import (default: _output/images/*.oci.tar)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${BIN:-${ROOT}/_output/bin}"
CLUSTER_DIR="${CLUSTER_DIR:-${ROOT}/_output/cluster}"
POD_CIDR="${POD_CIDR:-10.244.0.0/24}"
SERVICE_CIDR="${SERVICE_CIDR:-10.97.0.0/24}"
BRIDGE=butler0
NODE=butler-node
PAUSE_IMAGE=registry.k8s.io/pause:3.10
KUBECTL="${KUBECTL:-kubectl}"

log() { echo "cluster-up: $*" >&2; }
die() { log "$*"; exit 1; }

[[ $(id -u) == 0 ]] || die "needs root (containerd, kubelet, iptables, the bridge)"
for tool in containerd ctr runc iptables conntrack openssl curl "${KUBECTL}"; do
  command -v "${tool}" >/dev/null || die "${tool} is needed: apt-get install containerd runc containernetworking-plugins iptables conntrack"
done
CNI_BIN=/usr/lib/cni
[[ -x "${CNI_BIN}/bridge" ]] || die "the CNI plugins are needed in ${CNI_BIN}: apt-get install containernetworking-plugins"

mkdir -p "${CLUSTER_DIR}"
CLUSTER_DIR="$(cd "${CLUSTER_DIR}" && pwd)"
PKI="${CLUSTER_DIR}/pki"; LOGS="${CLUSTER_DIR}/logs"
ADMIN_KUBECONFIG="${CLUSTER_DIR}/admin.kubeconfig"
BOOT_KUBECONFIG="${CLUSTER_DIR}/.admin.kubeconfig.starting"
CONTAINERD_SOCK="${CLUSTER_DIR}/containerd/containerd.sock"
KUBELET_DIR="${CLUSTER_DIR}/kubelet"

# The node's address: the first of POD_CIDR, on the bridge. kube-apiserver serves there (and on
# loopback), which the kubernetes Service points Pods at.
prefix="${POD_CIDR%/*}"; NODE_IP="${prefix%.*}.$(( ${prefix##*.} + 1 ))"
sprefix="${SERVICE_CIDR%/*}"; KUBERNETES_SERVICE_IP="${sprefix%.*}.$(( ${sprefix##*.} + 1 ))"

# --- binaries --------------------------------------------------------------------------------
start_build=${SECONDS}
if [[ ! -x "${BIN}/kube-apiserver" || ! -x "${BIN}/kube-controller-manager" || ! -x "${BIN}/kube-scheduler" || ! -x "${BIN}/etcd" ]]; then
  "${ROOT}/hack/build-kube.sh"
fi
if [[ ! -x "${BIN}/kubelet" || ! -x "${BIN}/kube-proxy" ]]; then
  log "building the kubelet and kube-proxy (the first time takes minutes)"
  "${ROOT}/hack/build-kube.sh" kubelet kube-proxy
fi
# The pause image, built as the local provider's real nodes get it.
PAUSE_ARCHIVE=$(NODE_IMAGES_DIR="${CLUSTER_DIR}/images" BIN="${BIN}" "${ROOT}/hack/build-node-images.sh")
log "binaries ready in $((SECONDS - start_build)) s"

# --- certificates ----------------------------------------------------------------------------
# shellcheck source=lib/pki.sh
source "${ROOT}/hack/lib/pki.sh"
mkdir -p "${PKI}" "${LOGS}"
new_ca ca "butler-cluster-ca"
new_ca front-proxy-ca "butler-cluster-front-proxy-ca"
new_cert kube-apiserver ca "/CN=kube-apiserver" serverAuth \
  "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:${NODE_IP},IP:${KUBERNETES_SERVICE_IP}"
new_cert kube-apiserver-kubelet-client ca "/CN=kube-apiserver-kubelet-client/O=system:masters" clientAuth
new_cert admin ca "/CN=kubernetes-admin/O=system:masters" clientAuth
new_cert kube-controller-manager ca "/CN=system:kube-controller-manager" clientAuth
new_cert kube-scheduler ca "/CN=system:kube-scheduler" clientAuth
new_cert kube-proxy ca "/CN=system:kube-proxy" clientAuth
new_cert kubelet-client ca "/CN=system:node:${NODE}/O=system:nodes" clientAuth
new_cert kubelet-serving ca "/CN=${NODE}" serverAuth "DNS:${NODE},IP:${NODE_IP},IP:127.0.0.1"
new_cert front-proxy-client front-proxy-ca "/CN=front-proxy-client" clientAuth
new_sa_key

# --- ports -----------------------------------------------------------------------------------
used_ports=" "
free_port() {
  local port
  for _ in $(seq 200); do
    # Below make test-cluster's host processes (25000-29000) and the tenants' range (30000-32000).
    port=$((20000 + RANDOM % 5000))
    [[ "${used_ports}" == *" ${port} "* ]] && continue
    if ! (exec 3<>"/dev/tcp/127.0.0.1/${port}") 2>/dev/null; then used_ports+="${port} "; echo "${port}"; return; fi
  done
  die "found no free port"
}
ETCD_PORT=$(free_port); used_ports+="${ETCD_PORT} "
ETCD_PEER_PORT=$(free_port); used_ports+="${ETCD_PEER_PORT} "
KUBE_APISERVER_PORT=$(free_port); used_ports+="${KUBE_APISERVER_PORT} "
KCM_PORT=$(free_port); used_ports+="${KCM_PORT} "
SCHEDULER_PORT=$(free_port); used_ports+="${SCHEDULER_PORT} "
KUBELET_PORT=$(free_port); used_ports+="${KUBELET_PORT} "
KUBELET_HEALTHZ_PORT=$(free_port); used_ports+="${KUBELET_HEALTHZ_PORT} "
PROXY_HEALTHZ_PORT=$(free_port); used_ports+="${PROXY_HEALTHZ_PORT} "
PROXY_METRICS_PORT=$(free_port); used_ports+="${PROXY_METRICS_PORT} "

rm -f "${ADMIN_KUBECONFIG}"
server="https://${NODE_IP}:${KUBE_APISERVER_PORT}"
write_kubeconfig "${BOOT_KUBECONFIG}" admin admin "${server}"
for c in kube-controller-manager kube-scheduler kube-proxy; do write_kubeconfig "${CLUSTER_DIR}/${c}.kubeconfig" "${c}" "${c}" "${server}"; done
write_kubeconfig "${CLUSTER_DIR}/kubelet.kubeconfig" kubelet-client "system:node:${NODE}" "${server}"
kc() { "${KUBECTL}" --kubeconfig "${BOOT_KUBECONFIG}" "$@"; }

# --- processes and cleanup -------------------------------------------------------------------
# shellcheck source=lib/procs.sh
source "${ROOT}/hack/lib/procs.sh"
stopping=""
# Everything the node made outside its processes: containers (and their shims), the kubelet's
# mounts and cgroups, kube-proxy's rules, the bridge and CNI's address leases.
clean_node() {
  local netns=""
  if [[ -S "${CONTAINERD_SOCK}" ]]; then
    local ids id
    ids=$(ctr --address "${CONTAINERD_SOCK}" -n k8s.io containers ls -q 2>/dev/null || true)
    for id in ${ids}; do
      # The Pods' network namespaces (CRI names them /var/run/netns/cni-<uuid>).
      netns+=" $(ctr --address "${CONTAINERD_SOCK}" -n k8s.io containers info "${id}" 2>/dev/null | grep -o '/var/run/netns/cni-[0-9a-f-]*' || true)"
      ctr --address "${CONTAINERD_SOCK}" -n k8s.io tasks kill -s KILL "${id}" >/dev/null 2>&1 || true
    done
  fi
  stop containerd
  # Shims outlive containerd: ours are the ones started with -address of our socket.
  local proc
  for proc in /proc/[0-9]*; do
    # (stderr first: a process may be gone before its cmdline is read)
    if tr '\0' ' ' 2>/dev/null <"${proc}/cmdline" | grep -q -- "containerd-shim[^ ]* .*-address ${CONTAINERD_SOCK} "; then
      kill -KILL "${proc#/proc/}" 2>/dev/null || true
    fi
  done
  # Their sockets (containerd keeps them in /run/containerd/s, named by a hash).
  find /run/containerd/s -maxdepth 1 -type s -newer "${CLUSTER_DIR}/containerd/config.toml" -delete 2>/dev/null || true
  # Mounts under the state directories, deepest first.
  awk -v d="${CLUSTER_DIR}/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
    umount -l "${m}" 2>/dev/null || true
  done
  local ns
  for ns in ${netns}; do umount "${ns}" 2>/dev/null || true; rm -f "${ns}"; done
  # The kubelet's cgroups (kubepods), deepest first, in every hierarchy.
  find /sys/fs/cgroup -depth -type d -path '*kubepods*' -exec rmdir {} + 2>/dev/null || true
  if [[ -x "${BIN}/kube-proxy" ]]; then "${BIN}/kube-proxy" --cleanup >/dev/null 2>&1 || true; fi
  # The kubelet's own chains (kube-proxy --cleanup leaves them).
  local table chain rule
  for table in filter nat mangle; do
    for chain in KUBE-FIREWALL KUBE-KUBELET-CANARY KUBE-IPTABLES-HINT; do
      iptables -t "${table}" -S 2>/dev/null | grep -- "-j ${chain}\$" | sed 's/^-A/-D/' | while read -r rule; do
        # shellcheck disable=SC2086 # a rule is a list of arguments
        iptables -t "${table}" ${rule} 2>/dev/null || true
      done || true
      { iptables -t "${table}" -F "${chain}" && iptables -t "${table}" -X "${chain}"; } 2>/dev/null || true
    done
  done
  for cni in $(ip -o link show type veth 2>/dev/null | awk -F'[ @:]+' '/master '"${BRIDGE}"'/ {print $2}'); do ip link del "${cni}" 2>/dev/null || true; done
  # The kubelet's links to the containers' logs (always in /var/log/containers).
  find /var/log/containers -maxdepth 1 -type l -lname "${CLUSTER_DIR}/pod-logs/*" -delete 2>/dev/null || true
  rm -rf "${CLUSTER_DIR}/containerd" "${KUBELET_DIR}" "${CLUSTER_DIR}/cni" "${CLUSTER_DIR}/etcd" /var/lib/cni/networks/butler-cluster
}
cleanup() {
  local rc=$?
  [[ -n "${stopping}" ]] && return
  stopping=1
  # Clean up as much as can be, whatever fails. A second signal must not cut the stop short
  # (timeout signals make and its group: two SIGTERMs), as the local plane (pkg/localplane) does.
  set +e
  trap '' INT TERM
  rm -f "${ADMIN_KUBECONFIG}" "${BOOT_KUBECONFIG}" "${CLUSTER_DIR}/cluster.env"
  log "stopping"
  stop kube-proxy
  stop kubelet
  clean_node
  stop kube-scheduler
  stop kube-controller-manager
  stop kube-apiserver
  stop etcd
  # Last: kube-apiserver serves on the bridge's address.
  ip link del "${BRIDGE}" 2>/dev/null || true
  log "stopped and cleaned up"
  exit "${rc}"
}
trap cleanup EXIT
trap 'trap "" INT TERM; exit 130' INT
trap 'trap "" INT TERM; exit 143' TERM

# A previous run that was killed (SIGKILL) left its node behind: clean before starting.
clean_node

# --- network: the Pods' bridge ---------------------------------------------------------------
ip link del "${BRIDGE}" 2>/dev/null || true
ip link add "${BRIDGE}" type bridge
ip addr add "${NODE_IP}/${POD_CIDR#*/}" dev "${BRIDGE}"
ip link set "${BRIDGE}" up
mkdir -p "${CLUSTER_DIR}/cni"
cat >"${CLUSTER_DIR}/cni/10-butler.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "butler-cluster",
  "plugins": [
    {"type": "bridge", "bridge": "${BRIDGE}", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "${POD_CIDR}", "gateway": "${NODE_IP}"}]],
              "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
EOF

# --- control plane ---------------------------------------------------------------------------
start_cp=${SECONDS}
# etcd serves on the node's address too: butler-apiserver's Pods store there, under their own
# prefix (/registry/butler.butlerlabs.dev), as the management cluster's etcd may hold them.
start etcd "${BIN}/etcd" --name cluster --data-dir "${CLUSTER_DIR}/etcd" \
  --listen-client-urls "http://127.0.0.1:${ETCD_PORT},http://${NODE_IP}:${ETCD_PORT}" \
  --advertise-client-urls "http://${NODE_IP}:${ETCD_PORT}" \
  --listen-peer-urls "http://127.0.0.1:${ETCD_PEER_PORT}" --initial-advertise-peer-urls "http://127.0.0.1:${ETCD_PEER_PORT}" \
  --initial-cluster "cluster=http://127.0.0.1:${ETCD_PEER_PORT}" --listen-metrics-urls "" --log-level warn
wait_for etcd 30 curl -sf "http://127.0.0.1:${ETCD_PORT}/health"

start kube-apiserver "${BIN}/kube-apiserver" \
  --etcd-servers "http://127.0.0.1:${ETCD_PORT}" \
  --bind-address "${NODE_IP}" --advertise-address "${NODE_IP}" --secure-port "${KUBE_APISERVER_PORT}" \
  --tls-cert-file "${PKI}/kube-apiserver.crt" --tls-private-key-file "${PKI}/kube-apiserver.key" \
  --client-ca-file "${PKI}/ca.crt" \
  --kubelet-client-certificate "${PKI}/kube-apiserver-kubelet-client.crt" --kubelet-client-key "${PKI}/kube-apiserver-kubelet-client.key" \
  --kubelet-certificate-authority "${PKI}/ca.crt" --kubelet-preferred-address-types InternalIP \
  --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
  --service-cluster-ip-range "${SERVICE_CIDR}" \
  --service-account-issuer https://kubernetes.default.svc \
  --service-account-key-file "${PKI}/sa.pub" --service-account-signing-key-file "${PKI}/sa.key" \
  --requestheader-client-ca-file "${PKI}/front-proxy-ca.crt" \
  --requestheader-allowed-names front-proxy-client \
  --requestheader-username-headers X-Remote-User \
  --requestheader-group-headers X-Remote-Group \
  --requestheader-extra-headers-prefix X-Remote-Extra- \
  --proxy-client-cert-file "${PKI}/front-proxy-client.crt" --proxy-client-key-file "${PKI}/front-proxy-client.key" \
  --enable-aggregator-routing=true \
  --cert-dir "${CLUSTER_DIR}/kube-apiserver"
wait_for kube-apiserver 120 kc get --raw /readyz

start kube-controller-manager "${BIN}/kube-controller-manager" \
  --kubeconfig "${CLUSTER_DIR}/kube-controller-manager.kubeconfig" \
  --authentication-kubeconfig "${CLUSTER_DIR}/kube-controller-manager.kubeconfig" \
  --authorization-kubeconfig "${CLUSTER_DIR}/kube-controller-manager.kubeconfig" \
  --bind-address 127.0.0.1 --secure-port "${KCM_PORT}" --leader-elect=false \
  --use-service-account-credentials \
  --service-account-private-key-file "${PKI}/sa.key" --root-ca-file "${PKI}/ca.crt" \
  --cluster-signing-cert-file "${PKI}/ca.crt" --cluster-signing-key-file "${PKI}/ca.key"
start kube-scheduler "${BIN}/kube-scheduler" \
  --kubeconfig "${CLUSTER_DIR}/kube-scheduler.kubeconfig" \
  --authentication-kubeconfig "${CLUSTER_DIR}/kube-scheduler.kubeconfig" \
  --authorization-kubeconfig "${CLUSTER_DIR}/kube-scheduler.kubeconfig" \
  --bind-address 127.0.0.1 --secure-port "${SCHEDULER_PORT}" --leader-elect=false
log "control plane serving in $((SECONDS - start_cp)) s"

# --- node: containerd, kubelet, kube-proxy ---------------------------------------------------
start_node=${SECONDS}
mkdir -p "${CLUSTER_DIR}/containerd"
RESTRICT_OOM_SCORE_ADJ=false
(echo -1 >/proc/self/oom_score_adj) 2>/dev/null || RESTRICT_OOM_SCORE_ADJ=true
cat >"${CLUSTER_DIR}/containerd/config.toml" <<EOF
version = 2
root = "${CLUSTER_DIR}/containerd/root"
state = "${CLUSTER_DIR}/containerd/state"
[grpc]
  address = "${CONTAINERD_SOCK}"
[ttrpc]
  address = "${CONTAINERD_SOCK}.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  # Without CAP_SYS_RESOURCE (as on this machine) no process may lower its oom_score_adj, which
  # the kubelet asks for Pod sandboxes (-998): keep them at containerd's own.
  restrict_oom_score_adj = ${RESTRICT_OOM_SCORE_ADJ}
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "${CNI_BIN}"
    conf_dir = "${CLUSTER_DIR}/cni"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "${RUNC:-runc}"
EOF
start containerd containerd --config "${CLUSTER_DIR}/containerd/config.toml"
wait_for containerd 30 ctr --address "${CONTAINERD_SOCK}" version
import_start=${SECONDS}
for archive in "${PAUSE_ARCHIVE}" ${IMAGES:-"${ROOT}"/_output/images/*.oci.tar}; do
  [[ -f "${archive}" ]] || die "no image archive ${archive}: run make images"
  ctr --address "${CONTAINERD_SOCK}" -n k8s.io images import "${archive}" >/dev/null
done
log "images imported in $((SECONDS - import_start)) s: $(ctr --address "${CONTAINERD_SOCK}" -n k8s.io images ls -q | grep -v '^sha256:' | tr '\n' ' ')"

mkdir -p "${KUBELET_DIR}"
cat >"${CLUSTER_DIR}/kubelet-config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This machine runs cgroup v1: kubelets from 1.35 refuse it unless told.
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://${CONTAINERD_SOCK}
address: ${NODE_IP}
port: ${KUBELET_PORT}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: ${KUBELET_HEALTHZ_PORT}
tlsCertFile: ${PKI}/kubelet-serving.crt
tlsPrivateKeyFile: ${PKI}/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: ${PKI}/ca.crt}
authorization:
  mode: Webhook
failSwapOn: false
# A shared development machine: no evictions or image garbage collection for disk use. "0%"
# turns a signal off. A 1% threshold still tainted the node (disk-pressure) on a 250 GB disk
# with under 2.5 GB free, which a fresh machine's empty Go caches can reach, and left the
# chart's Pods Pending with no node.
evictionHard: {memory.available: "100Mi", nodefs.available: "0%", imagefs.available: "0%", nodefs.inodesFree: "0%", imagefs.inodesFree: "0%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
resolvConf: /etc/resolv.conf
podLogsDir: ${CLUSTER_DIR}/pod-logs
maxPods: 30
EOF
start kubelet "${BIN}/kubelet" --config "${CLUSTER_DIR}/kubelet-config.yaml" \
  --kubeconfig "${CLUSTER_DIR}/kubelet.kubeconfig" --root-dir "${KUBELET_DIR}" \
  --hostname-override "${NODE}" --node-ip "${NODE_IP}"
start kube-proxy "${BIN}/kube-proxy" --kubeconfig "${CLUSTER_DIR}/kube-proxy.kubeconfig" \
  --hostname-override "${NODE}" --cluster-cidr "${POD_CIDR}" --proxy-mode iptables --iptables-localhost-nodeports=false \
  --healthz-bind-address "127.0.0.1:${PROXY_HEALTHZ_PORT}" --metrics-bind-address "127.0.0.1:${PROXY_METRICS_PORT}" \
  --conntrack-max-per-core 0
node_ready() { [[ "$(kc get node "${NODE}" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" == True ]]; }
wait_for "the node to be Ready" 180 node_ready
log "node Ready in $((SECONDS - start_node)) s"

# For scripts (hack/test-cluster.sh): where things are.
cat >"${CLUSTER_DIR}/cluster.env" <<EOF
NODE_IP=${NODE_IP}
ETCD_URL=http://${NODE_IP}:${ETCD_PORT}
KUBE_APISERVER_URL=https://${NODE_IP}:${KUBE_APISERVER_PORT}
EOF
mv "${BOOT_KUBECONFIG}" "${ADMIN_KUBECONFIG}"
cat <<BANNER

One-node cluster is up (state and logs in ${CLUSTER_DIR}):
  kube-apiserver  https://${NODE_IP}:${KUBE_APISERVER_PORT}
  node            ${NODE} (${NODE_IP}), Pods in ${POD_CIDR} on ${BRIDGE}, Services in ${SERVICE_CIDR}

  export KUBECONFIG=${ADMIN_KUBECONFIG}
  helm install butler charts/butler-apiserver -n butler-system --create-namespace \\
    --set-string image.tag=$(cd "${ROOT}" && git describe --tags --always --dirty) --set image.pullPolicy=Never

Ctrl-C stops everything and cleans up.
BANNER

while true; do
  for name in "${!pids[@]}"; do
    kill -0 "${pids[${name}]}" 2>/dev/null || die "${name} exited; see ${LOGS}/${name}.log"
  done
  sleep 1 &
  wait $! || true
done
