# shellcheck shell=bash
# The real hosted control plane engine on the one-node cluster (hack/test-cluster.sh's Steward
# stage): Steward and the Cluster API Steward provider from hack/build-steward.sh's images and
# their own install files in _output/third_party, a TLS etcd for Steward's DataStore, and a
# load-balancer stand-in. Sourced at the run's start (steward_build); steward_prepare and
# steward_stage run after hack/lib/pki.sh is sourced, with the cluster's KUBECONFIG exported and
# ROOT, BIN, PKI, HOST_DIR, LOGS, NODE_IP and ETCD_URL set (cluster.env).
#
# Decisions, and why:
#   - Webhook certificates come from the cluster's CA (pki.sh), not cert-manager: Steward's
#     chart asks cert-manager for a Certificate and for caBundle injection; building and running
#     cert-manager would add images and a controller to reach what two files and a patch do.
#     The chart is rendered without its two cert-manager templates; the Secret it mounts
#     (steward-webhook-server-cert: tls.crt, tls.key, ca.crt) is written here, and caBundle is
#     set on its webhook configurations.
#   - The DataStore is an etcd host process with TLS and client-certificate authentication on
#     the node's address (Pods reach it over the bridge); its CA key and root client certificate
#     are the Secrets the DataStore names, as Steward needs both (it signs each tenant's client
#     certificate with the CA and creates the tenant's etcd user and role as root).
#   - That etcd is the one the local provider runs as its datastores (butler-localprovider etcd,
#     v3.7; BIN/etcd is the same server since, it was v3.6.8): before v3.6.9 (and v3.5.28, v3.4.42)
#     etcd let any authenticated user Compact (server/etcdserver/api/v3rpc/key.go asks for the
#     root role since etcd's a07ecd124), so every tenant could compact the history all tenants'
#     watches resume from. Tenants never compact (Steward runs their kube-apiservers with
#     --etcd-compaction-interval=0); the DataStore's owner does, here etcd's own periodic
#     compaction (1 min of history, short for the stage to see one; kube-apiserver keeps 5).
#   - No load balancer runs here: a TenantControlPlane Service of type LoadBalancer (butler's
#     default exposure) would never get an address, and Steward waits for one. The stand-in
#     gives each such Service an address from LB_CIDR in its status, as MetalLB would;
#     kube-proxy routes it on this node.
#   - No cluster DNS runs here, and Steward (its kubeadm phases and the controllers it runs
#     against each tenant) and butler's controllers (the admin.svc kubeconfig) reach a tenant at
#     <tcp>.<namespace>.svc: the stage names that Service's ClusterIP in both Deployments'
#     hostAliases (steward_dns_alias), once per tenant. A management cluster has CoreDNS.
#   - Cluster API v1.14 stores Cluster as v1beta2; the provider (CAPI v1.10) reads v1beta1. The
#     Cluster CRD gets upstream's v1beta1 version back, converted by the Cluster API manager's
#     own conversion webhook (a host process: kube-apiserver reaches it on loopback).

STEWARD_NS=steward-system
LB_CIDR_PREFIX="${LB_CIDR_PREFIX:-10.98.0}"
# The tenant's Kubernetes: Steward d49041f runs up to v1.35 (its webhook refuses newer); an image
# of it is built by hack/build-steward.sh (STEWARD_KUBE_VERSIONS).
STEWARD_TENANT_VERSION="${STEWARD_TENANT_VERSION:-v1.35.4}"
# STEWARD_UPGRADE_FROM (default v1.35.0; empty: no upgrade): demo is created at this version and
# upgraded to STEWARD_TENANT_VERSION (steward_upgrade). Steward runs nothing past v1.35, so the
# pinned v1.36.3 cannot be the target, and the upgrade needs a second v1.35, whose images
# hack/build-steward.sh builds with the same default: one more Kubernetes build, cold about 6 min
# here, warm a link of its three binaries.
STEWARD_UPGRADE_FROM="${STEWARD_UPGRADE_FROM-v1.35.0}"

# STEWARD_IMAGES_DIR: where hack/build-steward.sh put the archives.
STEWARD_IMAGES_DIR="${STEWARD_IMAGES_DIR:-${ROOT}/_output/images/steward}"
STEWARD_SRC="${ROOT}/_output/third_party"

# steward_image NAME: the image reference in NAME's OCI layout (repository:tag).
steward_image() {
  grep -o '"io.containerd.image.name": *"[^"]*"' "${STEWARD_IMAGES_DIR}/$1/index.json" | head -n 1 | sed 's/.*: *"\(.*\)"$/\1/'
}

# steward_datastore PORT: the TLS etcd, its Secrets and the DataStore steward-etcd.
steward_datastore() {
  local port=$1 peer=$(( $1 + 1 ))
  new_ca steward-etcd-ca "steward-etcd-ca"
  new_cert steward-etcd-server steward-etcd-ca "/CN=steward-etcd" serverAuth,clientAuth "IP:${NODE_IP},IP:127.0.0.1,DNS:localhost"
  # CN root: the etcd user Steward creates tenants' users and roles as.
  new_cert steward-etcd-root steward-etcd-ca "/CN=root" clientAuth
  # No CN: with authentication on, etcd's HTTP gateway refuses a client certificate that names
  # a user ("CommonName of client sending a request against gateway will be ignored").
  new_cert steward-etcd-gateway steward-etcd-ca "/O=butler-test-cluster" clientAuth
  # Steward reads EC keys only in their SEC1 form ("EC PRIVATE KEY").
  openssl ec -in "${PKI}/steward-etcd-ca.key" -out "${PKI}/steward-etcd-ca.sec1.key" 2>/dev/null
  openssl ec -in "${PKI}/steward-etcd-root.key" -out "${PKI}/steward-etcd-root.sec1.key" 2>/dev/null
  setsid "${BIN}/butler-localprovider" etcd --name steward-etcd --data-dir "${HOST_DIR}/steward-etcd" \
    --listen-client-urls "https://${NODE_IP}:${port}" --advertise-client-urls "https://${NODE_IP}:${port}" \
    --listen-peer-urls "http://127.0.0.1:${peer}" --initial-advertise-peer-urls "http://127.0.0.1:${peer}" \
    --initial-cluster "steward-etcd=http://127.0.0.1:${peer}" --listen-metrics-urls "" --log-level warn \
    --client-cert-auth --trusted-ca-file "${PKI}/steward-etcd-ca.crt" \
    --cert-file "${PKI}/steward-etcd-server.crt" --key-file "${PKI}/steward-etcd-server.key" \
    --auto-compaction-mode periodic --auto-compaction-retention "${STEWARD_ETCD_RETENTION:-1m}" \
    >"${LOGS}/steward-etcd.log" 2>&1 &
  # shellcheck disable=SC2034 # pids is the caller's table of the processes it stops
  pids["steward-etcd"]=$!
  wait_until "Steward's etcd" 30 curl -sf --cacert "${PKI}/steward-etcd-ca.crt" \
    --cert "${PKI}/steward-etcd-root.crt" --key "${PKI}/steward-etcd-root.key" "https://${NODE_IP}:${port}/health"
  STEWARD_ETCD_ENDPOINT="${NODE_IP}:${port}"
  steward_etcd_auth
  kc create namespace "${STEWARD_NS}" --dry-run=client -o yaml | kc apply -f - >/dev/null
  kc -n "${STEWARD_NS}" create secret generic steward-etcd-ca --from-file=ca.crt="${PKI}/steward-etcd-ca.crt" \
    --from-file=ca.key="${PKI}/steward-etcd-ca.sec1.key" --dry-run=client -o yaml | kc apply -f - >/dev/null
  kc -n "${STEWARD_NS}" create secret generic steward-etcd-root --from-file=tls.crt="${PKI}/steward-etcd-root.crt" \
    --from-file=tls.key="${PKI}/steward-etcd-root.sec1.key" --dry-run=client -o yaml | kc apply -f - >/dev/null
}

# steward_etcd_auth: etcd's authentication on, with the root user Steward connects as (CN root):
# only then do the per-tenant user and prefix role Steward creates bind anything, and a tenant's
# kube-apiserver still running after Steward deleted its user (it deletes the prefix, user and
# role before the Deployment stops) can write no key back. Root also gets a password, because
# etcd's HTTP gateway, which the stage reads keys through, does not authenticate by certificate
# (the stage uses a certificate without a CN there, and root's token).
steward_etcd_auth() {
  STEWARD_ETCD_ROOT_PASSWORD=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
  steward_etcd_post /v3/auth/user/add "{\"name\":\"root\",\"password\":\"${STEWARD_ETCD_ROOT_PASSWORD}\"}" >/dev/null
  steward_etcd_post /v3/auth/user/grant "{\"user\":\"root\",\"role\":\"root\"}" >/dev/null
  steward_etcd_post /v3/auth/enable '{}' >/dev/null
}

# steward_etcd_post PATH BODY: a request to Steward's etcd's HTTP gateway, as root once
# authentication is on (a token from root's password).
steward_etcd_post() {
  local auth=()
  if [[ -n "${STEWARD_ETCD_TOKEN:-}" ]] || { [[ "$1" != /v3/auth/* ]] && steward_etcd_login; }; then
    auth=(-H "Authorization: ${STEWARD_ETCD_TOKEN}")
  fi
  curl -sf --cacert "${PKI}/steward-etcd-ca.crt" --cert "${PKI}/steward-etcd-gateway.crt" --key "${PKI}/steward-etcd-gateway.key" \
    "${auth[@]}" "https://${STEWARD_ETCD_ENDPOINT}$1" -d "$2"
}

# steward_etcd_login: STEWARD_ETCD_TOKEN for root.
steward_etcd_login() {
  STEWARD_ETCD_TOKEN=$(curl -sf --cacert "${PKI}/steward-etcd-ca.crt" --cert "${PKI}/steward-etcd-gateway.crt" \
    --key "${PKI}/steward-etcd-gateway.key" "https://${STEWARD_ETCD_ENDPOINT}/v3/auth/authenticate" \
    -d "{\"name\":\"root\",\"password\":\"${STEWARD_ETCD_ROOT_PASSWORD:-}\"}" | grep -o '"token":"[^"]*"' | cut -d'"' -f4)
  [[ -n "${STEWARD_ETCD_TOKEN}" ]]
}

# steward_datastore_object: the DataStore naming that etcd. Steward's manager exits at start
# when its default DataStore does not exist ("the default Datastore steward-etcd doesn't
# exist"), and its webhooks (served by that manager) validate DataStores: so the DataStore is
# made before Steward's webhook configurations, unvalidated, as its chart's bundled etcd does.
steward_datastore_object() {
  kc apply -f - >/dev/null <<EOF
apiVersion: steward.butlerlabs.dev/v1alpha1
kind: DataStore
metadata: {name: steward-etcd}
spec:
  driver: etcd
  endpoints: ["${STEWARD_ETCD_ENDPOINT}"]
  tlsConfig:
    certificateAuthority:
      certificate: {secretReference: {name: steward-etcd-ca, namespace: ${STEWARD_NS}, keyPath: ca.crt}}
      privateKey: {secretReference: {name: steward-etcd-ca, namespace: ${STEWARD_NS}, keyPath: ca.key}}
    clientCertificate:
      certificate: {secretReference: {name: steward-etcd-root, namespace: ${STEWARD_NS}, keyPath: tls.crt}}
      privateKey: {secretReference: {name: steward-etcd-root, namespace: ${STEWARD_NS}, keyPath: tls.key}}
EOF
}

# steward_render: Steward's manifests from its own chart (rendered: no cert-manager, no bundled
# etcd, no CRDs: artifacts/crds has them) and its webhook Secret from the cluster's CA, for
# steward_install. Nothing here runs Steward (steward_prepare).
steward_render() {
  local image repo tag svc="steward-webhook-service.${STEWARD_NS}.svc" t
  image=$(steward_image steward); repo=${image%:*}; tag=${image##*:}
  new_cert steward-webhook ca "/CN=${svc}" serverAuth "DNS:${svc},DNS:${svc}.cluster.local"
  kc -n "${STEWARD_NS}" create secret generic steward-webhook-server-cert --from-file=tls.crt="${PKI}/steward-webhook.crt" \
    --from-file=tls.key="${PKI}/steward-webhook.key" --from-file=ca.crt="${PKI}/ca.crt" --dry-run=client -o yaml | kc apply -f - >/dev/null
  local templates=()
  for t in controller rbac service_webhook mutatingwebhookconfiguration validatingwebhookconfiguration; do
    templates+=(--show-only "templates/${t}.yaml")
  done
  helm template steward "${STEWARD_SRC}/steward/charts/steward" -n "${STEWARD_NS}" --skip-crds "${templates[@]}" \
    --set fullnameOverride=steward --set image.repository="${repo}" --set-string image.tag="${tag}" \
    --set image.pullPolicy=Never --set steward-etcd.deploy=false --set defaultDatastoreName=steward-etcd \
    --set replicaCount=1 >"${HOST_DIR}/steward.yaml"
}

# steward_install: steward_render's manifests applied, and caBundle set on Steward's webhook
# configurations. The chart's entrypoint is /manager; the image's is /usr/local/bin/steward (its
# args start with the subcommand "manager", as the chart's do).
steward_install() {
  local ca kind n i
  kc apply -f "${HOST_DIR}/steward.yaml" >/dev/null
  ca=$(base64 -w0 <"${PKI}/ca.crt")
  for kind in mutatingwebhookconfiguration/steward-mutating-webhook-configuration validatingwebhookconfiguration/steward-validating-webhook-configuration; do
    n=$(kc get "${kind}" -o jsonpath='{range .webhooks[*]}x{end}' | wc -c)
    local ops=""
    for ((i = 0; i < n; i++)); do ops+="${ops:+,}{\"op\":\"add\",\"path\":\"/webhooks/${i}/clientConfig/caBundle\",\"value\":\"${ca}\"}"; done
    kc patch "${kind}" --type json -p "[${ops}]" >/dev/null
  done
}

# steward_local_images: Pods that run registry.k8s.io images (a Steward tenant's control plane)
# use the ones imported here. Steward sets imagePullPolicy Always on the kube-apiserver container
# (steward/internal/builders/controlplane/deployment.go:613), and nothing is pulled here: a
# MutatingAdmissionPolicy makes it IfNotPresent on each Pod (Steward owns the Deployment and
# would undo a change there). A management cluster with a registry mirror needs none of this.
steward_local_images() {
  kc api-resources --api-group admissionregistration.k8s.io -o name | grep -x mutatingadmissionpolicies.admissionregistration.k8s.io >/dev/null \
    || die "the cluster serves no MutatingAdmissionPolicy (admissionregistration.k8s.io/v1), which the Steward stage needs"
  kc apply -f - >/dev/null <<'EOF2'
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: steward-local-images}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  matchConditions:
  - name: runs-registry-k8s-io-images
    expression: "object.spec.containers.exists(c, c.image.startsWith('registry.k8s.io/'))"
  failurePolicy: Fail
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{spec: Object.spec{containers: object.spec.containers.map(c,
          Object.spec.containers{name: c.name, imagePullPolicy: "IfNotPresent"})}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: steward-local-images}
spec: {policyName: steward-local-images}
EOF2
}

# steward_provider_render: the Cluster API Steward provider's release manifest
# (control-plane-components.yaml: its RBAC and Deployment; its CRDs are older than its
# config/crd/bases, which artifacts/crds holds), with LocalCluster as an infrastructure cluster
# it patches (DynamicInfrastructureClusterPatch; butler's local provider is not in its list), for
# steward_provider_install.
steward_provider_render() {
  local image
  image=$(steward_image capi-steward)
  # shellcheck disable=SC2016 # the ${...} are the manifest's literal placeholders
  awk 'BEGIN { RS = "\n---\n" } !/\nkind: CustomResourceDefinition\n/ { printf "---\n%s\n", $0 }' \
    "${STEWARD_SRC}/cluster-api-control-plane-provider-steward/control-plane-components.yaml" \
    | sed -e 's|${CACPPK_DYNAMIC_INFRASTRUCTURE_CLUSTER_PATCH:=false}|true|' \
      -e 's|${CACPPK_INFRASTRUCTURE_CLUSTERS:= }|LocalCluster|' -e 's|${[A-Z_]*:=\([^}]*\)}|\1|g' \
      -e "s|image: ghcr.io/butlerdotdev/capi-steward:.*|image: ${image}\n        imagePullPolicy: Never|" \
      -e 's|- /manager$|- /usr/local/bin/capi-steward|' >"${HOST_DIR}/capi-steward.yaml"
}

# steward_provider_install: steward_provider_render's manifest applied, and what the patch of a
# LocalCluster needs beyond the provider's own role.
steward_provider_install() {
  kc apply -f "${HOST_DIR}/capi-steward.yaml" >/dev/null
  kc apply -f - >/dev/null <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: capi-steward-localclusters}
rules:
- apiGroups: [infrastructure.butlerlabs.dev]
  resources: [localclusters]
  verbs: [get, list, watch, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: capi-steward-localclusters}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: capi-steward-localclusters}
subjects:
- {kind: ServiceAccount, name: capi-steward-controller-manager, namespace: ${STEWARD_NS}}
EOF
}

# steward_cluster_v1beta1 WEBHOOK_PORT: the Cluster CRD as upstream ships it (v1beta1 served,
# v1beta2 stored), converted by the Cluster API manager's webhook on loopback.
steward_cluster_v1beta1() {
  local port=$1 crd
  crd="$(cd "${ROOT}/hack/capi" && go list -m -f '{{.Dir}}' sigs.k8s.io/cluster-api)/core/config/crd/bases/cluster.x-k8s.io_clusters.yaml"
  kc apply --server-side --force-conflicts -f "${crd}" >/dev/null
  kc patch crd clusters.cluster.x-k8s.io --type merge -p "{\"spec\":{\"conversion\":{\"strategy\":\"Webhook\",\"webhook\":{\"conversionReviewVersions\":[\"v1\",\"v1beta1\"],\"clientConfig\":{\"url\":\"https://127.0.0.1:${port}/convert\",\"caBundle\":\"$(base64 -w0 <"${PKI}/ca.crt")\"}}}}}" >/dev/null
}

# steward_lb_standin: gives every Service of type LoadBalancer without an address one from
# LB_CIDR_PREFIX.0/24 (a loop in the background, until HOST_DIR/stop-lb exists).
steward_lb_standin() {
  (
    local next=10 ns name
    while [[ ! -f "${HOST_DIR}/stop-lb" ]]; do
      while read -r ns name; do
        [[ -z "${name}" ]] && continue
        kc -n "${ns}" patch service "${name}" --subresource status --type merge \
          -p "{\"status\":{\"loadBalancer\":{\"ingress\":[{\"ip\":\"${LB_CIDR_PREFIX}.${next}\",\"ipMode\":\"VIP\"}]}}}" >/dev/null 2>&1 \
          && next=$((next + 1))
      done < <(kc get services -A -o jsonpath='{range .items[?(@.spec.type=="LoadBalancer")]}{.metadata.namespace}{" "}{.metadata.name}{" "}{.status.loadBalancer.ingress[0].ip}{"\n"}{end}' 2>/dev/null | awk 'NF == 2')
      sleep 1
    done
  ) >>"${LOGS}/lb-standin.log" 2>&1 &
}

# steward_dns_alias NS NAME: <NAME>.<NS>.svc resolves in Steward's and butler-apiserver's Pods
# (service_alias; both Deployments roll); the roll's seconds go to STEWARD_ALIAS_SECONDS.
steward_dns_alias() {
  local t=${SECONDS}
  service_alias "$1" "$2" "${STEWARD_NS}/steward" butler-system/butler-apiserver
  STEWARD_ALIAS_SECONDS=$((SECONDS - t))
}

# steward_build: test/steward's binary, built in the background from the run's start at the
# lowest priority (hack/test-cluster.sh calls it beside gitops_build); steward_isolation_and_faults
# waits for it. Built from the stage's start at normal priority, it took CPU from the stage's
# first steps on this 2-core machine.
STEWARD_TEST="${ROOT}/_output/steward/steward.test"
steward_build() {
  mkdir -p "${STEWARD_TEST%/*}"
  rm -f "${STEWARD_TEST}"
  (cd "${ROOT}" && CGO_ENABLED=0 GOFLAGS=-trimpath exec nice -n 19 go test -c -o "${STEWARD_TEST}" ./test/steward/) \
    >"${STEWARD_TEST}.log" 2>&1 &
  STEWARD_TEST_BUILD=$!
}

# steward_step NAME COMMAND...: runs COMMAND and logs its seconds; the stage's last line lists
# every step's (CI reads where the stage's time goes from it).
STEWARD_STEPS=()
steward_step() {
  local name=$1 t=${SECONDS}; shift
  "$@"
  STEWARD_STEPS+=("${name} $((SECONDS - t)) s")
  log "Steward stage step: ${name} took $((SECONDS - t)) s"
}

# steward_prepare: the part of the stage that runs nothing reading a TenantControlPlane or a
# StewardControlPlane (the DataStore's etcd and Secrets, the Cluster CRD's v1beta1, the image
# policy, the DataStore, Steward's and its provider's manifests and webhook Secret):
# hack/test-cluster.sh runs it before joining the GitOps stage, beside that stage's end. Steward
# and its provider themselves start after the join: they would take up the GitOps stage's local
# clusters (steward_clear_standin).
steward_prepare() {
  local t=${SECONDS}
  # shellcheck disable=SC2034 # read by hack/test-cluster.sh's diagnose
  STEWARD_DUMP=1
  [[ -z "${STEWARD_UPGRADE_FROM}" || -f "${STEWARD_IMAGES_DIR}/kube-apiserver-${STEWARD_UPGRADE_FROM}.oci.tar" ]] \
    || die "no kube images of ${STEWARD_UPGRADE_FROM} (STEWARD_UPGRADE_FROM) in ${STEWARD_IMAGES_DIR}: make build-steward with the same STEWARD_UPGRADE_FROM"
  STEWARD_ETCD_PORT=$(port)
  steward_step "the DataStore's etcd" steward_datastore "${STEWARD_ETCD_PORT}"
  steward_step "the Cluster CRD's v1beta1" steward_cluster_v1beta1 "${CAPI_WEBHOOK_PORT}"
  # kube-apiserver takes up a CRD's new conversion settings a moment after the patch: a read at
  # once can still go to the webhook the upstream CRD names (a Service this cluster lacks).
  wait_until "Cluster API's v1beta1 Clusters served (the conversion webhook)" 60 \
    kc get clusters.v1beta1.cluster.x-k8s.io -A
  steward_local_images
  steward_datastore_object
  steward_step "the manifests" steward_manifests
  STEWARD_PREPARED=$((SECONDS - t))
  measure "Steward's set-up (its DataStore, the Cluster CRD's v1beta1, its and its provider's manifests) in ${STEWARD_PREPARED} s, beside the GitOps stage's end"
}

# steward_stage: hack/test-cluster.sh's Steward stage (TEST_STEWARD=1), after steward_prepare
# and the chart's own checks: Steward and its provider installed, then a TenantCluster in
# steward-demo (ButlerConfig choosing the steward provider and naming STEWARD_NS as its
# controllers' namespace, local workers) whose control plane is Steward's Deployment.
steward_stage() {
  local t0=${SECONDS} t1
  steward_step "the stand-in's clusters sampled and gone" steward_clear
  steward_step "Steward and its provider running" steward_start
  measure "Steward $(steward_image steward) and its provider $(steward_image capi-steward) installed and running in $((SECONDS - t0)) s after the GitOps join (their set-up before it, ${STEWARD_PREPARED:-?} s)"

  t1=${SECONDS}
  # Steward and its provider run in STEWARD_NS: butler reads their leader-election Leases there
  # only (steward_controllers_down's ProviderNotRunning), and none without the field.
  kc patch butlerconfig butler --type merge \
    -p "{\"spec\":{\"controlPlaneProvider\":\"steward\",\"controlPlaneProviderNamespaces\":[\"${STEWARD_NS}\"]}}" >/dev/null
  if ((STEWARD_PAIRS > 0)); then
    steward_pairs
    measure "the Steward stage (${STEWARD_PAIRS} pairs, STEWARD_PAIRS: no checks) took $((SECONDS - t0)) s"
    return
  fi
  steward_step "demo Ready" steward_demo "${t1}"
  steward_step "the sample" steward_sample
  steward_step "Pod Security" steward_pod_security
  steward_step "the one-off snapshot" steward_snapshot_refused
  [[ -z "${STEWARD_UPGRADE_FROM}" ]] || steward_step "the upgrade" steward_upgrade
  steward_step "faults" steward_isolation_and_faults
  steward_isolation_beside
  steward_step "hibernation (the isolation check beside it)" steward_hibernation
  steward_step "the isolation check joined" steward_isolation_join
  steward_step "compaction" steward_compaction
  steward_step "the delete" steward_delete
  measure "the Steward stage took $((SECONDS - t0)) s after the GitOps join (its set-up ${STEWARD_PREPARED:-?} s before it): $(printf '%s, ' "${STEWARD_STEPS[@]}" | sed 's/, $//')"
}

steward_manifests() { steward_render; steward_provider_render; }
steward_clear() { steward_clear_standin; steward_standin_cleared; }

# steward_start: Steward and its provider applied together, and both rollouts waited for at once
# (the provider takes only StewardControlPlanes, of which there are none yet).
steward_start() {
  local steward_wait provider_wait
  steward_install
  steward_provider_install
  # No ERR trap in these: a failed rollout is said below, with the Pods' logs.
  { kc -n "${STEWARD_NS}" rollout status deploy/steward --timeout=5m >/dev/null || exit 1; } &
  steward_wait=$!
  { kc -n "${STEWARD_NS}" rollout status deploy/capi-steward-controller-manager --timeout=5m >/dev/null || exit 1; } &
  provider_wait=$!
  wait "${steward_wait}" || { kc -n "${STEWARD_NS}" logs deploy/steward --tail 30 >&2 || true; die "Steward is not running"; }
  wait "${provider_wait}" \
    || { kc -n "${STEWARD_NS}" logs deploy/capi-steward-controller-manager --tail 30 >&2 || true; die "the Cluster API Steward provider is not running"; }
  steward_lb_standin
}

# steward_demo T1: steward-demo/demo (created at STEWARD_UPGRADE_FROM when set), Steward's
# Deployment running, the cluster Ready with 2 local workers listed by its minted kubeconfig.
steward_demo() {
  local t1=$1
  [[ -z "${STEWARD_UPGRADE_FROM}" ]] || steward_offer_version "${STEWARD_UPGRADE_FROM}"
  kc apply -f - >/dev/null <<EOT
apiVersion: v1
kind: Namespace
metadata: {name: steward-demo}
---
apiVersion: butler.butlerlabs.dev/v1alpha1
kind: ProviderConfig
metadata: {name: local, namespace: steward-demo}
spec: {provider: local}
---
apiVersion: butler.butlerlabs.dev/v1alpha1
kind: TenantCluster
metadata: {name: demo, namespace: steward-demo}
spec:
  kubernetesVersion: ${STEWARD_UPGRADE_FROM:-${STEWARD_TENANT_VERSION}}
  providerConfigRef: {name: local}
  controlPlane: {replicas: 1}
  workers: {replicas: 2, machineTemplate: {os: {type: talos}}}
EOT
  # butler makes the cluster's objects in its tenant namespace, <name>-<uid8>.
  wait_until "steward-demo/demo's tenant namespace" 60 tc_tenant_namespace
  STEWARD_TNS=$(kc -n steward-demo get tc demo -o jsonpath='{.status.tenantNamespace}')
  wait_until "Steward's Service ${STEWARD_TNS}/demo" 300 kc -n "${STEWARD_TNS}" get service demo
  steward_dns_alias "${STEWARD_TNS}" demo
  wait_until "Steward's Deployment ${STEWARD_TNS}/demo with its 3 containers Running" 600 steward_deployment_running "${STEWARD_TNS}" demo
  measure "TenantCluster steward-demo/demo: Steward's Deployment with 3 containers Running $((SECONDS - t1)) s after its create"
  kc wait tc/demo -n steward-demo --for=condition=Ready --timeout=10m >/dev/null \
    || { kc get tc -n steward-demo -o wide >&2; die "TenantCluster steward-demo/demo is not Ready"; }
  measure "TenantCluster steward-demo/demo (Steward, 2 local workers) Ready in $((SECONDS - t1)) s"
  mint_kubeconfig demo "${HOST_DIR}/steward-demo.kubeconfig" steward-demo
  kc --kubeconfig "${HOST_DIR}/steward-demo.kubeconfig" get nodes
  [[ $(ready_nodes "${HOST_DIR}/steward-demo.kubeconfig") == 2 ]] \
    || die "steward-demo/demo's kubeconfig lists $(ready_nodes "${HOST_DIR}/steward-demo.kubeconfig") Ready nodes, want 2"
}

# steward_pod_security: in steward-demo/demo, a non-admin with butler's operator role in a
# namespace that sets no Pod Security level (a ServiceAccount, impersonated with the minted
# admin kubeconfig) is refused a privileged Pod with hostPath / (docs/security.md): the tenant's
# kube-apiserver enforces Pod Security baseline there, as a local tenant's does.
steward_pod_security() {
  local k="${HOST_DIR}/steward-demo.kubeconfig" out
  # butler's access step makes the role in the tenant once the control plane serves.
  wait_until "ClusterRole butler:operator in steward-demo/demo" 120 kc --kubeconfig "${k}" get clusterrole butler:operator
  kc --kubeconfig "${k}" create namespace attack >/dev/null
  kc --kubeconfig "${k}" -n attack create serviceaccount operator >/dev/null
  kc --kubeconfig "${k}" -n attack create rolebinding operator --clusterrole=butler:operator --serviceaccount=attack:operator >/dev/null
  if out=$(kc --kubeconfig "${k}" --as=system:serviceaccount:attack:operator -n attack create -f - 2>&1 <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: root}
spec:
  containers:
  - name: root
    image: registry.k8s.io/pause:3.10
    securityContext: {privileged: true}
    volumeMounts: [{name: host, mountPath: /host}]
  volumes: [{name: host, hostPath: {path: /}}]
EOF
  ); then
    die "steward-demo/demo admitted an operator's privileged Pod with hostPath / in a namespace without a Pod Security level: ${out}"
  fi
  [[ "${out}" == *'violates PodSecurity "baseline:latest"'* ]] || die "steward-demo/demo refused the privileged Pod, but not by Pod Security: ${out}"
  kc --kubeconfig "${k}" delete namespace attack --wait=false >/dev/null
  measure "steward-demo/demo: an operator's privileged Pod with hostPath / refused by Pod Security baseline"
}

# steward_tc NAME VERSION [CONTROL_PLANE_EXTRA]: a TenantCluster in steward-demo without
# workers (what the checks below need is its control plane, or the refusal of one).
steward_tc() {
  kc apply -f - >/dev/null <<EOT
apiVersion: butler.butlerlabs.dev/v1alpha1
kind: TenantCluster
metadata: {name: $1, namespace: steward-demo}
spec:
  kubernetesVersion: $2
  providerConfigRef: {name: local}
  controlPlane: {replicas: 1${3:+, $3}}
  workers: {replicas: 0, machineTemplate: {os: {type: talos}}}
EOT
}

# steward_controllers_down: a TenantCluster (other) created while the Cluster API Steward
# provider and Steward are scaled to 0 (their Pods gone) must name the one not running at once,
# not wait: ControlPlaneReady ProviderNotRunning naming the provider (its leader-election Lease
# lapses 15 s after its last renewal; butler allows 5 s more for clocks); with the provider back
# and Steward still at 0 (its webhook refuses the provider's TenantControlPlane: nobody serves
# it), naming Steward. Then both run again and other goes on (steward_isolation_and_faults reads
# its DataStore schema). What the cluster said meanwhile is printed, with its second.
steward_controllers_down() {
  local t
  steward_scale capi-steward-controller-manager 0
  steward_scale steward 0
  t=${SECONDS}
  steward_tc other "${STEWARD_TENANT_VERSION}"
  steward_reasons other "control plane provider steward: the Cluster API Steward provider is not running" 60
  measure "steward-demo/other created with Steward and its provider at 0 replicas: ControlPlaneReady ProviderNotRunning naming the provider $((SECONDS - t)) s after its create (said: ${STEWARD_SAID})"
  t=${SECONDS}
  steward_scale capi-steward-controller-manager 1
  steward_reasons other "control plane provider steward: Steward is not running" 90
  measure "steward-demo/other with the provider back, Steward at 0: ProviderNotRunning naming Steward $((SECONDS - t)) s after the provider's scale to 1 (said: ${STEWARD_SAID})"
  steward_scale steward 1
}

# steward_scale NAME REPLICAS: the Deployment STEWARD_NS/NAME at REPLICAS: at 0 once it has no
# Pod, else once its rollout is complete.
steward_scale() {
  kc -n "${STEWARD_NS}" scale deploy "$1" --replicas "$2" >/dev/null
  if [[ "$2" == 0 ]]; then
    wait_until "no Pod of ${STEWARD_NS}/$1" 120 steward_deployment_stopped "${STEWARD_NS}" "$1"
    return
  fi
  kc -n "${STEWARD_NS}" rollout status "deploy/$1" --timeout=3m >/dev/null || die "${STEWARD_NS}/$1 not back at $2 replicas"
}

# steward_reasons NAME TEXT SECONDS: waits for steward-demo/NAME's ControlPlaneReady to be
# ProviderNotRunning with TEXT in its message; STEWARD_SAID is each reason it gave meanwhile,
# with the second it was first seen (1 s polls).
steward_reasons() {
  local t=${SECONDS} last="" now
  STEWARD_SAID=""
  until tc_condition_says steward-demo "$1" ControlPlaneReady ProviderNotRunning "$2" 2>/dev/null; do
    now=$(kc -n steward-demo get tc "$1" -o jsonpath='{.status.conditions[?(@.type=="ControlPlaneReady")].reason}' 2>/dev/null || true)
    [[ "${now}" == "${last}" ]] || { STEWARD_SAID+="t=$((SECONDS - t)) ${now:-none}; "; last=${now}; }
    if ((SECONDS >= t + $3)); then
      kc -n steward-demo get tc "$1" -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}' >&2 || true
      die "steward-demo/$1 did not say \"$2\" in $3 s (said: ${STEWARD_SAID})"
    fi
    sleep 1
  done
  STEWARD_SAID+="t=$((SECONDS - t)) ProviderNotRunning"
}

# steward_isolation_and_faults: with steward-demo/demo Ready,
#   - the faults say why at once, naming the provider and what it cannot do: a version Steward
#     cannot run (badversion, v1.36.3), a DataStore that does not exist (nostore), and a
#     snapshot schedule on demo (Steward has no snapshot contract: ProviderCapable False);
#   - a second tenant, other, on the same DataStore (steward_isolation, beside demo's
#     hibernation: its start is mostly Pods starting, as the hibernation's is a Pod stopping):
#     with the etcd client certificate Steward gives demo's kube-apiserver, test/steward reads
#     demo's prefix and is refused other's prefix, the root and the access control (it would not
#     be with etcd's authentication off: TestTrespassesNeedAuthentication).
# other is made while Steward and its provider are down (steward_controllers_down), the other two
# once they are back; Steward takes one TenantControlPlane at a time.
steward_isolation_and_faults() {
  local t
  steward_controllers_down
  t=${SECONDS}
  steward_tc badversion v1.36.3
  steward_tc nostore "${STEWARD_TENANT_VERSION}" "dataStoreRef: {name: no-such-datastore}"
  wait_condition "steward-demo/badversion: the provider names the version it cannot run" 120 badversion ControlPlaneReady VersionUnsupported "control plane provider steward cannot run Kubernetes v1.36.3 (spec.kubernetesVersion)"
  measure "steward-demo/badversion (v1.36.3): ControlPlaneReady VersionUnsupported $((SECONDS - t)) s after its create"
  wait_condition "steward-demo/nostore: the provider names the DataStore that does not exist" 120 nostore ControlPlaneReady DataStoreNotFound "control plane provider steward cannot keep the cluster's data in DataStore no-such-datastore (spec.controlPlane.dataStoreRef)"
  measure "steward-demo/nostore: ControlPlaneReady DataStoreNotFound $((SECONDS - t)) s after its create"
  kc -n steward-demo delete tc badversion nostore --wait=false >/dev/null

  local s=${SECONDS}
  kc -n steward-demo patch tc demo --type merge -p '{"spec":{"snapshots":{"schedules":[{"name":"nightly","schedule":"0 3 * * *","keep":1}]}}}' >/dev/null
  wait_condition "steward-demo/demo: Steward cannot take snapshots" 60 demo ProviderCapable Unsupported "control plane provider steward cannot: snapshots (spec.snapshots.schedules)"
  measure "steward-demo/demo with a snapshot schedule: ProviderCapable Unsupported in $((SECONDS - s)) s"
  kc -n steward-demo patch tc demo --type json -p '[{"op":"remove","path":"/spec/snapshots"}]' >/dev/null
  wait_condition "steward-demo/demo capable again without its schedule" 60 demo ProviderCapable Supported ""
  STEWARD_OTHER_T=${t}
}

# steward_isolation_beside: steward_isolation in the background (joined by
# steward_isolation_join); its measures and its failure go through files in HOST_DIR.
steward_isolation_beside() {
  local rc=0
  # The build's process is this shell's child, not the background stage's.
  wait "${STEWARD_TEST_BUILD}" || rc=$?
  ((rc == 0)) || { cat "${STEWARD_TEST}.log" >&2; die "test/steward does not build (wait: exit ${rc})"; }
  : >"${HOST_DIR}/steward-isolation.summary"
  (BESIDE_FAIL="${HOST_DIR}/steward-isolation.fail" steward_isolation) &
  STEWARD_ISOLATION_PID=$!
}

# steward_isolation_join: waits for steward_isolation, fails when it failed, and takes its
# measures and STEWARD_OTHER.
steward_isolation_join() {
  local rc=0 line
  wait "${STEWARD_ISOLATION_PID}" || rc=$?
  STEWARD_ISOLATION_PID=""
  while IFS= read -r line; do summary+=("${line}"); done <"${HOST_DIR}/steward-isolation.summary"
  ((rc == 0)) || die "$(cat "${HOST_DIR}/steward-isolation.fail" 2>/dev/null || echo "the isolation check failed: exit ${rc} (above)")"
  STEWARD_OTHER=$(cat "${HOST_DIR}/steward-isolation.other")
}

# steward_isolation: other's start, then test/steward with demo's etcd credentials; other deleted.
steward_isolation() {
  local tns schema t=${STEWARD_OTHER_T}
  wait_until "steward-demo/other's tenant namespace" 60 tc_tenant_namespace other
  tns=$(kc -n steward-demo get tc other -o jsonpath='{.status.tenantNamespace}')
  wait_until "TenantControlPlane ${tns}/other with its DataStore schema" 300 tcp_schema "${tns}" other
  schema=$(tcp_schema "${tns}" other)
  # other's kube-apiserver has written its keys: a read of them would have something to find.
  wait_until "other's keys under /${schema}/" 300 steward_etcd_has_keys "/${schema}/"
  STEWARD_ISOLATION="${STEWARD_TNS}/demo ${tns}/other" "${STEWARD_TEST}" -test.count=1 -test.v -test.run '^TestStewardDataStoreIsolation$' \
    >"${LOGS}/steward-isolation.log" 2>&1 || { cat "${LOGS}/steward-isolation.log" >&2; die "demo's etcd credentials reach beyond its prefix"; }
  grep -F -- '--- PASS: TestStewardDataStoreIsolation' "${LOGS}/steward-isolation.log" >/dev/null \
    || { cat "${LOGS}/steward-isolation.log" >&2; die "TestStewardDataStoreIsolation did not run"; }
  local m="demo's etcd credentials: its own prefix read, other's /${schema}/, the root, Compact and the access control refused ($((SECONDS - t)) s with other's start, beside demo's hibernation)"
  log "${m}"
  echo "${m}" >>"${HOST_DIR}/steward-isolation.summary"
  kc -n steward-demo delete tc other --wait=false >/dev/null
  echo "${tns} ${schema}" >"${HOST_DIR}/steward-isolation.other"
}

# steward_snapshot_refused [NAME]: a one-off TenantClusterSnapshot NAME (once) of demo is Failed
# at once, naming
# Steward and the capability, as a schedule makes ProviderCapable False (Steward's contract
# cannot read one tenant's data; nothing would take it); deleting it is not held (no data).
steward_snapshot_refused() {
  local t=${SECONDS} got name=${1:-once}
  kc apply -f - >/dev/null <<EOT
apiVersion: butler.butlerlabs.dev/v1alpha1
kind: TenantClusterSnapshot
metadata: {name: ${name}, namespace: steward-demo}
spec: {clusterRef: {name: demo}}
EOT
  until got=$(kc -n steward-demo get tcs "${name}" -o jsonpath='{.status.phase}: {.status.message}') \
    && [[ "${got}" == "Failed: control plane provider steward cannot: snapshots"* ]]; do
    ((SECONDS < t + 60)) || die "steward-demo/${name}, a snapshot of demo ($(tc_phase_is steward-demo demo Hibernated && echo hibernated || echo awake)), is not refused 60 s after its create: ${got}"
    sleep 1
  done
  measure "a one-off snapshot (${name}) of steward-demo/demo, $(kc -n steward-demo get tc demo -o jsonpath='{.status.phase}'), refused in $((SECONDS - t)) s (${got})"
  kc -n steward-demo delete tcs "${name}" --timeout=30s >/dev/null || die "the refused snapshot steward-demo/${name} is not deleted in 30 s"
}

# steward_upgrade (STEWARD_UPGRADE_FROM set): demo, Ready at STEWARD_UPGRADE_FROM, patched to
# STEWARD_TENANT_VERSION as a user would. Steward rolls its Deployment (blue/green: the old Pod
# serves until the new one is Ready) and says Upgrading meanwhile; the cluster goes Ready ->
# Updating -> Ready only, says Upgrading on ControlPlaneReady, and ends with the Deployment's
# three containers and the running Pod at the new version, the tenant's /version and both
# Nodes' kubelets at it. Every change seen (1 s polls) is printed.
steward_upgrade() {
  local t=${SECONDS} from=${STEWARD_UPGRADE_FROM} to=${STEWARD_TENANT_VERSION} kubeconfig="${HOST_DIR}/steward-demo.kubeconfig"
  local seen="" last="" now phase reason observed workers gen ogen state
  [[ "$(tenant_version "${kubeconfig}")" == "${from}" ]] || die "steward-demo/demo serves $(tenant_version "${kubeconfig}") before its upgrade, want ${from}"
  kc -n steward-demo patch tc demo --type merge -p "{\"spec\":{\"kubernetesVersion\":\"${to}\"}}" >/dev/null
  while :; do
    # '|' between the fields: an empty one (workers.ready 0 is left out) must not shift the rest.
    IFS='|' read -r phase reason observed workers gen ogen < <(kc -n steward-demo get tc demo -o jsonpath='{.status.phase}|{.status.conditions[?(@.type=="ControlPlaneReady")].reason}|{.status.observedState.kubernetesVersion}|{.status.observedState.workers.ready}|{.metadata.generation}|{.status.observedGeneration}{"\n"}')
    state=$(kc -n "${STEWARD_TNS}" get tenantcontrolplanes demo -o jsonpath='{.status.kubernetesResources.version.status}/{.status.kubernetesResources.version.version}' 2>/dev/null || true)
    now="${phase} ${reason} TCP=${state}"
    [[ "${now}" == "${last}" ]] || { seen+="t=$((SECONDS - t)) ${now}; "; last=${now}; log "upgrade: t=$((SECONDS - t)) ${now}"; }
    [[ "${phase}" == Ready && "${observed}" == "${to}" && "${workers}" == 2 && "${gen}" == "${ogen}" ]] && break
    [[ "${phase}" == Ready || "${phase}" == Updating ]] || die "steward-demo/demo ${phase} during its upgrade (${seen})"
    ((SECONDS < t + 600)) || die "steward-demo/demo not Ready at ${to} 600 s after its upgrade: ${seen}"
    sleep 1
  done
  [[ "${seen}" == *"Updating Upgrading TCP=Upgrading/${from}"* ]] \
    || die "steward-demo/demo never said Upgrading while Steward rolled its Deployment: ${seen}"
  wait_until "Steward's Deployment ${STEWARD_TNS}/demo at ${to}, no Pod of ${from} left" 120 steward_deployment_at "${STEWARD_TNS}" demo "${to}"
  [[ "$(tenant_version "${kubeconfig}")" == "${to}" ]] || die "steward-demo/demo serves $(tenant_version "${kubeconfig}") after its upgrade, want ${to}"
  # The old Machines' Nodes go once the new ones are Ready (Cluster API's rolling update).
  wait_until "steward-demo/demo's Nodes: 2, Ready, kubelet ${to}" 180 tenant_nodes_at "${kubeconfig}" "${to}" 2
  # butler's Events tell the upgrade as they do on the stand-in (a phase change each).
  local events
  events=$(kc get events -n steward-demo --field-selector involvedObject.kind=TenantCluster,involvedObject.name=demo -o jsonpath='{range .items[*]}{.message}{"\n"}{end}')
  { grep -qx 'phase Ready -> Updating' <<<"${events}" && grep -qx 'phase Updating -> Ready' <<<"${events}"; } \
    || die "steward-demo/demo's Events do not tell its upgrade (phase Ready -> Updating, Updating -> Ready): $(paste -sd, - <<<"${events}")"
  measure "steward-demo/demo upgraded ${from} -> ${to} (Steward rolled its Deployment) and Ready in $((SECONDS - t)) s: ${seen}"
}

# steward_offer_version VERSION: the platform's version catalog (ButlerConfig
# spec.kubernetesVersions) offers VERSION too; admission refuses a TenantCluster at a version it
# does not offer. No catalog offers every version.
steward_offer_version() {
  local offered
  offered=$(kc get butlerconfig butler -o jsonpath='{.spec.kubernetesVersions[*].version}')
  [[ -z "${offered}" || " ${offered} " == *" $1 "* ]] && return 0
  kc patch butlerconfig butler --type json \
    -p "[{\"op\":\"add\",\"path\":\"/spec/kubernetesVersions/-\",\"value\":{\"version\":\"$1\"}}]" >/dev/null
}

# tenant_nodes_at KUBECONFIG VERSION N: the tenant has N Nodes, all Ready, all kubelets at VERSION.
tenant_nodes_at() {
  [[ "$(kc --kubeconfig "$1" get nodes -o jsonpath='{range .items[*]}{.status.nodeInfo.kubeletVersion}{"\n"}{end}' | sort | uniq -c | awk '{print $1, $2}')" == "$3 $2" ]] \
    && [[ $(ready_nodes "$1") == "$3" ]]
}

# tenant_version KUBECONFIG: the gitVersion the tenant's kube-apiserver answers on /version.
tenant_version() {
  kc --kubeconfig "$1" get --raw /version 2>/dev/null | grep -o '"gitVersion": *"[^"]*"' | cut -d'"' -f4
}

# steward_deployment_at NS NAME VERSION: the Deployment's three containers run VERSION's images
# and every Pod of it (none of an older ReplicaSet left) runs them.
steward_deployment_at() {
  local selector images
  images=$(kc -n "$1" get deploy "$2" -o jsonpath='{range .spec.template.spec.containers[*]}{.image}{"\n"}{end}' | grep -c ":$3\$")
  [[ "${images}" == 3 ]] || return 1
  # shellcheck disable=SC2016 # a Go template, not shell
  selector=$(kc -n "$1" get deploy "$2" -o go-template='{{range $k, $v := .spec.selector.matchLabels}}{{$k}}={{$v}},{{end}}') || return 1
  images=$(kc -n "$1" get pods -l "${selector%,}" -o jsonpath='{range .items[*]}{range .spec.containers[*]}{.image}{"\n"}{end}{end}' | sort -u)
  [[ -n "${images}" ]] && ! grep -v ":$3\$" <<<"${images}" >/dev/null
}

# wait_condition WHAT SECONDS NAME TYPE REASON TEXT: waits for tc_condition_says steward-demo
# NAME ...; on a timeout the cluster's conditions are shown (what it said instead).
wait_condition() {
  local what=$1 deadline=$(($2 + SECONDS)); shift 2
  until tc_condition_says steward-demo "$@" 2>/dev/null; do
    if ((SECONDS >= deadline)); then
      kc -n steward-demo get tc "$1" -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}' >&2 || true
      die "timed out waiting for ${what}"
    fi
    sleep 1
  done
}

# tc_condition_says NS NAME TYPE REASON TEXT: the condition has that reason and its message
# contains TEXT.
tc_condition_says() {
  local got
  got=$(kc -n "$1" get tc "$2" -o jsonpath="{.status.conditions[?(@.type==\"$3\")].reason}|{.status.conditions[?(@.type==\"$3\")].message}")
  [[ "${got%%|*}" == "$4" && "${got#*|}" == *"$5"* ]]
}

# tcp_schema NS NAME: the DataStore schema (prefix) Steward set up for the TenantControlPlane.
tcp_schema() {
  local schema
  schema=$(kc -n "$1" get tenantcontrolplanes "$2" -o jsonpath='{.status.storage.setup.schema}')
  [[ -n "${schema}" ]] && echo "${schema}"
}

steward_etcd_has_keys() { local n; n=$(steward_etcd_keys "$1"); [[ "${n}" =~ ^[0-9]+$ && "${n}" -gt 0 ]]; }

# steward_hibernation: hibernated takes Steward's Deployment to 0 replicas (no Pod left), a
# one-off snapshot of it asleep is refused at once (as awake), and awake again to a running Pod
# and a Ready cluster.
steward_hibernation() {
  local t=${SECONDS}
  kc -n steward-demo patch tc demo --type merge -p '{"spec":{"hibernation":{"hibernated":true}}}' >/dev/null
  wait_until "steward-demo/demo Hibernated" 300 tc_phase_is steward-demo demo Hibernated
  wait_until "Steward's Deployment ${STEWARD_TNS}/demo at 0 replicas, no Pod" 120 steward_deployment_stopped "${STEWARD_TNS}" demo
  measure "steward-demo/demo Hibernated, Steward's Deployment at 0 replicas, in $((SECONDS - t)) s"
  steward_snapshot_refused asleep
  t=${SECONDS}
  kc -n steward-demo patch tc demo --type merge -p '{"spec":{"hibernation":{"hibernated":false}}}' >/dev/null
  wait_until "Steward's Deployment ${STEWARD_TNS}/demo running again" 300 steward_deployment_running "${STEWARD_TNS}" demo
  wait_until "steward-demo/demo Ready after its wake" 600 tc_phase_is steward-demo demo Ready
  measure "steward-demo/demo awake and Ready again in $((SECONDS - t)) s"
}

# steward_clear_standin: Steward reconciles every TenantControlPlane in the cluster, the stand-in's
# too (no namespace or label filter; one worker by default, --max-concurrent-tcp-reconciles): it
# tried to set up the stand-in's tenants on their DataStore, which its Pod cannot reach, each
# attempt holding its one worker until the 30 s reconcile timeout, and steward-demo's Deployment
# took 110 s instead of 19. The local clusters of stages 4 and 5 have been checked by then, so
# they are deleted first; a management cluster runs one engine. steward_standin_cleared waits for
# it before Steward is installed. (The DataStore and the CRDs are set up before, beside the
# GitOps stage: the local sample is taken after that stage's clusters are gone, as it was.)
steward_clear_standin() {
  STEWARD_CLEAR_T=""
  [[ -n "$(kc get tc -n local-demo -o name)" ]] || return 0
  steward_local_sample
  kc delete tc --all -n local-demo --wait=false >/dev/null
  STEWARD_CLEAR_T=${SECONDS}
}
steward_standin_cleared() {
  [[ -n "${STEWARD_CLEAR_T}" ]] || return 0
  local t=${SECONDS}
  wait_until "the stand-in's TenantControlPlanes gone" 180 no_tenant_control_planes
  measure "the stand-in's clusters gone $((SECONDS - STEWARD_CLEAR_T)) s after their delete, $((SECONDS - t)) s of it waited for"
}
no_tenant_control_planes() { [[ -z "$(kc get tenantcontrolplanes -A -o name)" ]]; }

# tc_tenant_namespace [NAME]: steward-demo/NAME's (demo's) status names its tenant namespace.
tc_tenant_namespace() { [[ -n "$(kc -n steward-demo get tc "${1:-demo}" -o jsonpath='{.status.tenantNamespace}')" ]]; }

# tc_phase_is NS NAME PHASE
tc_phase_is() { [[ "$(kc -n "$1" get tc "$2" -o jsonpath='{.status.phase}')" == "$3" ]]; }

# steward_deployment_stopped NS NAME: the Deployment asks for 0 replicas and has no Pod.
steward_deployment_stopped() {
  local selector
  [[ "$(kc -n "$1" get deploy "$2" -o jsonpath='{.spec.replicas}')" == 0 ]] || return 1
  # shellcheck disable=SC2016 # a Go template, not shell
  selector=$(kc -n "$1" get deploy "$2" -o go-template='{{range $k, $v := .spec.selector.matchLabels}}{{$k}}={{$v}},{{end}}') || return 1
  [[ -z "$(kc -n "$1" get pods -l "${selector%,}" -o name)" ]]
}

# steward_compaction: the DataStore's owner compacts it and the tenants do not: demo's
# kube-apiserver runs with --etcd-compaction-interval=0, and the DataStore's revision 2 is
# compacted away (etcd's periodic compaction, STEWARD_ETCD_RETENTION).
steward_compaction() {
  local t=${SECONDS} args
  args=$(kc -n "${STEWARD_TNS}" get deploy demo -o jsonpath='{.spec.template.spec.containers[?(@.name=="kube-apiserver")].args}')
  [[ "${args}" == *'"--etcd-compaction-interval=0"'* ]] || die "demo's kube-apiserver compacts the shared DataStore itself: ${args}"
  wait_until "Steward's DataStore compacted by its owner" 180 steward_etcd_compacted
  measure "Steward's DataStore compacted by its own etcd, not by the tenants (--etcd-compaction-interval=0), $((SECONDS - t)) s after the check began"
}

# steward_etcd_compacted: a read at revision 2 of Steward's etcd says the revision was compacted.
steward_etcd_compacted() {
  STEWARD_ETCD_TOKEN=""
  steward_etcd_login || return 1
  curl -s --cacert "${PKI}/steward-etcd-ca.crt" --cert "${PKI}/steward-etcd-gateway.crt" --key "${PKI}/steward-etcd-gateway.key" \
    -H "Authorization: ${STEWARD_ETCD_TOKEN}" "https://${STEWARD_ETCD_ENDPOINT}/v3/kv/range" \
    -d "{\"key\":\"$(printf / | base64 -w0)\",\"revision\":\"2\"}" | grep -q 'required revision has been compacted'
}

# steward_delete: deleting the TenantCluster leaves no TenantControlPlane, Deployment or Secret
# of the tenant, and no key under its prefix in Steward's DataStore.
steward_delete() {
  local t=${SECONDS} schema left keys
  schema=$(kc -n "${STEWARD_TNS}" get tenantcontrolplanes demo -o jsonpath='{.status.storage.setup.schema}')
  [[ -n "${schema}" ]] || die "TenantControlPlane ${STEWARD_TNS}/demo names no schema (status.storage.setup.schema)"
  keys=$(steward_etcd_keys "/${schema}/")
  [[ "${keys}" =~ ^[0-9]+$ && "${keys}" -gt 0 ]] || die "${keys} keys under /${schema}/ in Steward's etcd while the tenant runs"
  kc -n steward-demo delete tc demo --wait=false >/dev/null
  gone() {
    left=$(kc -n "${STEWARD_TNS}" get tenantcontrolplanes,deploy,secrets -o name 2>/dev/null || true)
    keys=$(steward_etcd_keys "/${schema}/")
    [[ -z "${left}" && "${keys}" == 0 ]]
  }
  local deadline=$((SECONDS + 300))
  until gone; do
    ((SECONDS < deadline)) || die "300 s after deleting steward-demo/demo: left ${left:-nothing} and ${keys} keys under /${schema}/"
    sleep 1
  done
  measure "steward-demo/demo deleted in $((SECONDS - t)) s: no TenantControlPlane, Deployment or Secret, 0 keys under /${schema}/"
  # The other clusters of the stage, deleted earlier, are gone too: other's keys with it, and
  # the refused ones (never a TenantControlPlane) not held by a finalizer.
  [[ -n "${STEWARD_OTHER:-}" ]] || return 0
  local tns=${STEWARD_OTHER% *} other=${STEWARD_OTHER#* }
  rest() {
    left=$(kc -n steward-demo get tc -o name; kc -n "${tns}" get tenantcontrolplanes -o name 2>/dev/null || true)
    keys=$(steward_etcd_keys "/${other}/")
    [[ -z "${left}" && "${keys}" == 0 ]]
  }
  deadline=$((SECONDS + 180))
  until rest; do
    ((SECONDS < deadline)) || die "after the stage's deletes: left ${left:-nothing} and ${keys} keys under /${other}/"
    sleep 1
  done
}

# steward_etcd_keys PREFIX: how many keys Steward's etcd holds under PREFIX (as root).
steward_etcd_keys() {
  local key end
  key=$(printf '%s' "$1" | base64 -w0)
  # The range end: the prefix with its last byte + 1 ('/' -> '0').
  end=$(printf '%s' "${1%/}0" | base64 -w0)
  local out
  # A token expires (etcd's simple tokens after 5 min idle): one login per count.
  STEWARD_ETCD_TOKEN=""
  out=$(steward_etcd_post /v3/kv/range "{\"key\":\"${key}\",\"range_end\":\"${end}\",\"count_only\":true}") \
    || { echo "unknown (etcd did not answer)"; return; }
  # etcd's JSON leaves out a count of 0.
  grep -o '"count":"[0-9]*"' <<<"${out}" | grep -o '[0-9]*' || echo 0
}

# steward_dump: what a failed Steward stage needs read, into LOGS (kept after the run): the
# objects of steward-demo and the logs of Steward, its provider and the tenant's Pods.
steward_dump() {
  local pod
  local ns=${STEWARD_TNS:-steward-demo}
  kc get tc -n steward-demo -o yaml >"${LOGS}/steward-objects.yaml" 2>&1
  # shellcheck disable=SC2129 # one command a line reads better in a dump
  kc get cluster,stewardcontrolplanes,tenantcontrolplanes,localclusters,machines,localmachines,pods,services,deploy -n "${ns}" -o yaml >>"${LOGS}/steward-objects.yaml" 2>&1
  kc get secrets -n "${ns}" >>"${LOGS}/steward-objects.yaml" 2>&1
  kc get datastores -o yaml >>"${LOGS}/steward-objects.yaml" 2>&1
  kc get events -A --sort-by=.lastTimestamp >"${LOGS}/steward-events.txt" 2>&1
  kc -n "${STEWARD_NS}" logs deploy/steward --tail 300 >"${LOGS}/steward-manager.log" 2>&1
  kc -n "${STEWARD_NS}" logs deploy/capi-steward-controller-manager --tail 300 >"${LOGS}/capi-steward.log" 2>&1
  for pod in $(kc -n "${ns}" get pods -o name 2>/dev/null); do
    kc -n "${ns}" logs "${pod}" --all-containers --tail 100 >"${LOGS}/steward-demo-${pod##*/}.log" 2>&1
  done
  return 0
}

# steward_deployment_running NS NAME: Steward's Deployment NAME has a Pod whose three
# containers (kube-apiserver, kube-controller-manager, kube-scheduler) all run.
steward_deployment_running() {
  local selector running
  # shellcheck disable=SC2016 # a Go template, not shell
  selector=$(kc -n "$1" get deploy "$2" -o go-template='{{range $k, $v := .spec.selector.matchLabels}}{{$k}}={{$v}},{{end}}') || return 1
  running=$(kc -n "$1" get pods -l "${selector%,}" -o jsonpath='{range .items[*]}{range .status.containerStatuses[*]}{.state.running.startedAt}{" "}{end}{"\n"}{end}' | awk 'NF == 3' | wc -l)
  ((running >= 1))
}

# --- Steward beside the local provider: create -> control plane Ready, and memory -------------
# One pair, not alternating pairs: the stand-in and the real pair cannot run tenants at once
# (Steward and capi-steward take every TenantControlPlane and StewardControlPlane, the
# stand-in's too), so the local side is stage 4's local-demo/demo, read before the Steward stage
# deletes it, and the Steward side steward-demo/demo; both are the first cluster of their engine
# in the run (3 and 2 workers; the control plane is Ready before any worker joins). The clock
# of each is the API server's: the TenantCluster's creationTimestamp to its ControlPlaneReady's
# lastTransitionTime to True (1 s resolution). Steward's includes the stage's steward_dns_alias
# (Steward and butler-apiserver rolled for a hostAlias: no cluster DNS here), said in the record.
# This one pair is CI's record (steward-vs-local.md); the figures P12 and P12m come from
# alternating pairs (STEWARD_PAIRS, below).
# Memory, like for like: the sum of the three control plane processes' RSS (and PSS) from
# /proc (kube-apiserver, kube-controller-manager, kube-scheduler; the datastore is apart on both
# sides); for Steward's Pod also its memory cgroup's usage and working set (usage less inactive
# file, as the kubelet counts it), which includes the pause container and the page cache.
# Written to _output/bench/steward-vs-local.md (every figure read).
STEWARD_BENCH_DIR="${ROOT}/_output/bench"

# steward_cp_seconds NS NAME: seconds from the TenantCluster's create to ControlPlaneReady True.
steward_cp_seconds() {
  local created ready
  created=$(kc -n "$1" get tc "$2" -o jsonpath='{.metadata.creationTimestamp}')
  ready=$(kc -n "$1" get tc "$2" -o jsonpath='{.status.conditions[?(@.type=="ControlPlaneReady")].lastTransitionTime}')
  echo $(($(date -d "${ready}" +%s) - $(date -d "${created}" +%s)))
}

# steward_since NS NAME TIME: seconds from the TenantCluster's create to TIME (RFC 3339).
steward_since() {
  echo $(($(date -d "$3" +%s) - $(date -d "$(kc -n "$1" get tc "$2" -o jsonpath='{.metadata.creationTimestamp}')" +%s)))
}

# steward_procs_memory PID...: "<PSS KiB> <RSS KiB> <n>" summed over the control plane's
# processes among PID... (kube-apiserver, kube-controller-manager, kube-scheduler).
steward_procs_memory() {
  local pid pss=0 rss=0 n=0 comm v r
  for pid in "$@"; do
    comm=$(cat "/proc/${pid}/comm" 2>/dev/null) || continue
    [[ "${comm}" == kube-apiserver || "${comm}" == kube-controller || "${comm}" == kube-scheduler ]] || continue
    v=$(awk '/^Pss:/ {print $2}' "/proc/${pid}/smaps_rollup" 2>/dev/null) || continue
    r=$(awk '/^VmRSS:/ {print $2}' "/proc/${pid}/status" 2>/dev/null) || continue
    [[ "${v}" =~ ^[0-9]+$ && "${r}" =~ ^[0-9]+$ ]] || continue
    pss=$((pss + v)) rss=$((rss + r)) n=$((n + 1))
  done
  echo "${pss} ${rss} ${n}"
}

# steward_local_sample: local-demo/demo's create -> control plane Ready and its three processes'
# memory (found by the TenantControlPlane's UID in their command lines: the stand-in's state
# directory), for the pair; nothing when it is not Ready (TEST_STEWARD=only has no stage 4).
steward_local_sample() {
  local tns uid pids=() p pss rss n cp
  STEWARD_LOCAL=""
  kc -n local-demo wait tc/demo --for=condition=ControlPlaneReady --timeout=1s >/dev/null 2>&1 || return 0
  tns=$(kc -n local-demo get tc demo -o jsonpath='{.status.tenantNamespace}')
  uid=$(kc -n "${tns}" get tenantcontrolplanes demo -o jsonpath='{.metadata.uid}')
  for p in /proc/[0-9]*; do
    # No pipe: with pipefail, grep -q leaving early could fail the writer, and the match.
    if grep -qzF -- "/${uid}/" "${p}/cmdline" 2>/dev/null; then pids+=("${p#/proc/}"); fi
  done
  read -r pss rss n < <(steward_procs_memory "${pids[@]}")
  [[ "${n}" == 3 ]] || { log "local-demo/demo: ${n} control plane processes found by /${uid}/, not 3: no memory sample"; return 0; }
  cp=$(steward_cp_seconds local-demo demo)
  STEWARD_LOCAL="${cp} ${pss} ${rss}"
  measure "local-demo/demo (the stand-in): control plane Ready ${cp} s after its create; its 3 processes PSS $((pss / 1024)) MiB, RSS $((rss / 1024)) MiB"
}

# steward_sample: steward-demo/demo's create -> control plane Ready with where its time went,
# and its Pod's memory; written with the local sample as one pair.
steward_sample() {
  local selector pod uid dir usage inactive pids cp where pss rss n tcp deploy running lcp lpss lrss
  # shellcheck disable=SC2016 # a Go template, not shell
  selector=$(kc -n "${STEWARD_TNS}" get deploy demo -o go-template='{{range $k, $v := .spec.selector.matchLabels}}{{$k}}={{$v}},{{end}}')
  pod=$(kc -n "${STEWARD_TNS}" get pods -l "${selector%,}" --field-selector=status.phase=Running -o jsonpath='{.items[0].metadata.name}')
  uid=$(kc -n "${STEWARD_TNS}" get pod "${pod}" -o jsonpath='{.metadata.uid}')
  # The Pod's memory cgroup (cgroup v1 here; v2 too): pod<uid>, with - or _ (systemd) in it.
  dir=$(find /sys/fs/cgroup/memory /sys/fs/cgroup -maxdepth 6 -type d \( -name "pod${uid}" -o -name "*pod${uid//-/_}*" \) -print -quit 2>/dev/null || true)
  [[ -n "${dir}" ]] || die "no memory cgroup of Pod ${STEWARD_TNS}/${pod} (pod${uid})"
  if [[ -f "${dir}/memory.usage_in_bytes" ]]; then
    usage=$(cat "${dir}/memory.usage_in_bytes"); inactive=$(awk '$1 == "total_inactive_file" {print $2}' "${dir}/memory.stat")
  else
    usage=$(cat "${dir}/memory.current"); inactive=$(awk '$1 == "inactive_file" {print $2}' "${dir}/memory.stat")
  fi
  pids=$(find "${dir}" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -un || true)
  # shellcheck disable=SC2086 # one pid a word
  read -r pss rss n < <(steward_procs_memory ${pids})
  [[ "${n}" == 3 ]] || die "Pod ${STEWARD_TNS}/${pod}: ${n} control plane processes in its cgroup, not 3"
  cp=$(steward_cp_seconds steward-demo demo)
  tcp=$(steward_since steward-demo demo "$(kc -n "${STEWARD_TNS}" get tenantcontrolplanes demo -o jsonpath='{.metadata.creationTimestamp}')")
  deploy=$(steward_since steward-demo demo "$(kc -n "${STEWARD_TNS}" get deploy demo -o jsonpath='{.metadata.creationTimestamp}')")
  running=$(kc -n "${STEWARD_TNS}" get pod "${pod}" -o jsonpath='{range .status.containerStatuses[*]}{.state.running.startedAt}{"\n"}{end}' | sort | tail -n 1)
  running=$(steward_since steward-demo demo "${running}")
  where="TenantControlPlane by the provider at +${tcp} s, Deployment by Steward at +${deploy} s, its Pod's last container started at +${running} s (Pod ${pod}, after the stage's DNS alias roll of ${STEWARD_ALIAS_SECONDS:-?} s), ControlPlaneReady at +${cp} s"
  measure "steward-demo/demo (Steward): control plane Ready ${cp} s after its create: ${where}; its Pod's 3 processes PSS $((pss / 1024)) MiB, RSS $((rss / 1024)) MiB; its memory cgroup usage $((usage / 1048576)) MiB, working set $(((usage - inactive) / 1048576)) MiB"
  mkdir -p "${STEWARD_BENCH_DIR}"
  {
    echo "# Steward beside the local provider ($(date -u +%FT%TZ), one run of make test-steward, one pair)"
    echo
    echo "- Steward, steward-demo/demo: create -> ControlPlaneReady ${cp} s: ${where}."
    echo "- Steward's Pod: PSS of kube-apiserver, kube-controller-manager and kube-scheduler summed $((pss / 1024)) MiB (RSS $((rss / 1024)) MiB); memory cgroup ${dir#/sys/fs/cgroup}: usage $((usage / 1048576)) MiB, working set (usage - inactive file) $(((usage - inactive) / 1048576)) MiB."
    if [[ -n "${STEWARD_LOCAL:-}" ]]; then
      read -r lcp lpss lrss <<<"${STEWARD_LOCAL}"
      echo "- local (the stand-in), local-demo/demo: create -> ControlPlaneReady ${lcp} s; its 3 processes' PSS summed $((lpss / 1024)) MiB (RSS $((lrss / 1024)) MiB). No cgroup of its own: host processes."
    else
      echo "- local: no sample in this run (TEST_STEWARD=only skips stage 4)."
    fi
  } >"${STEWARD_BENCH_DIR}/steward-vs-local.md"
}

# --- STEWARD_PAIRS=N (make bench-report ONLY=P12): alternating pairs -------------------------
# N pairs, each a Steward cluster and a local (stand-in) cluster created one after the other, the
# order alternating (Steward first in odd pairs), both at STEWARD_TENANT_VERSION without workers:
# create -> ControlPlaneReady (P12) and, 15 s after it, the control plane's three processes' RSS
# (P12m). The two engines cannot run tenants at once (Steward and its provider take every
# TenantControlPlane and StewardControlPlane), so Steward and its provider run (and lead) only in
# Steward's turn and are at 0 replicas in the local one, where ButlerConfig names no namespace for
# their Leases. Each cluster is deleted, and gone, before the next starts. The stage's checks do
# not run (CI keeps its one pair and checks); the seconds of each Steward turn include its DNS
# alias roll, as CI's.
STEWARD_PAIRS="${STEWARD_PAIRS:-0}"

# steward_pairs: the pairs into STEWARD_BENCH_DIR (p12-pairs.tsv, p12m-pairs.tsv) and where each
# Steward turn's time went into steward-pairs.md.
steward_pairs() {
  local k sfirst
  mkdir -p "${STEWARD_BENCH_DIR}"
  : >"${STEWARD_BENCH_DIR}/p12-pairs.tsv"
  : >"${STEWARD_BENCH_DIR}/p12m-pairs.tsv"
  echo "# Steward against the local provider, ${STEWARD_PAIRS} alternating pairs ($(date -u +%FT%TZ), STEWARD_PAIRS=${STEWARD_PAIRS}, ${STEWARD_TENANT_VERSION}, no workers)" \
    >"${STEWARD_BENCH_DIR}/steward-pairs.md"
  local ns
  for ns in pairs-local steward-demo; do
    kc create namespace "${ns}" --dry-run=client -o yaml | kc apply -f - >/dev/null
    kc apply -f - >/dev/null <<EOT
apiVersion: butler.butlerlabs.dev/v1alpha1
kind: ProviderConfig
metadata: {name: local, namespace: ${ns}}
spec: {provider: local}
EOT
  done
  for ((k = 1; k <= STEWARD_PAIRS; k++)); do
    # No subshells: die must end the run.
    if ((k % 2 == 1)); then
      sfirst=true; steward_pair_steward "p${k}"; steward_pair_local "p${k}"
    else
      sfirst=false; steward_pair_local "p${k}"; steward_pair_steward "p${k}"
    fi
    printf '%s\t%s\t%s\n' "${STEWARD_PAIR_STEWARD% *}" "${STEWARD_PAIR_LOCAL% *}" "${sfirst}" >>"${STEWARD_BENCH_DIR}/p12-pairs.tsv"
    printf '%s\t%s\t%s\n' "${STEWARD_PAIR_STEWARD#* }" "${STEWARD_PAIR_LOCAL#* }" "${sfirst}" >>"${STEWARD_BENCH_DIR}/p12m-pairs.tsv"
    measure "pair ${k} (Steward first: ${sfirst}): Steward ${STEWARD_PAIR_STEWARD% *} s, RSS ${STEWARD_PAIR_STEWARD#* } MiB; local ${STEWARD_PAIR_LOCAL% *} s, RSS ${STEWARD_PAIR_LOCAL#* } MiB"
  done
  cat "${STEWARD_BENCH_DIR}/p12-pairs.tsv" "${STEWARD_BENCH_DIR}/p12m-pairs.tsv" >&2
}

# steward_engines_up: Steward and its provider at 1 replica, each leading (its Lease held by its
# Pod), and ButlerConfig reading their Leases in STEWARD_NS.
steward_engines_up() {
  steward_webhook_policies restore
  steward_scale capi-steward-controller-manager 1
  steward_scale steward 1
  wait_until "the Cluster API Steward provider leading" 120 steward_leading capi-steward-controller-manager steward.controlplane.cluster.x-k8s.io
  wait_until "Steward leading" 120 steward_leading steward steward.butlerlabs.dev
  kc patch butlerconfig butler --type merge -p "{\"spec\":{\"controlPlaneProviderNamespaces\":[\"${STEWARD_NS}\"]}}" >/dev/null
}

# steward_engines_down: both at 0 (no Pod), no Lease read, and Steward's webhooks ignored while
# nothing serves them (their failure policy Fail would refuse the stand-in's TenantControlPlanes).
steward_engines_down() {
  kc patch butlerconfig butler --type json -p '[{"op":"remove","path":"/spec/controlPlaneProviderNamespaces"}]' >/dev/null 2>&1 || true
  steward_webhook_policies Ignore
  steward_scale capi-steward-controller-manager 0
  steward_scale steward 0
}

# steward_webhook_policies Ignore|restore: every webhook of Steward's two configurations to
# Ignore (their own policies kept in HOST_DIR the first time), or back to their own.
STEWARD_WEBHOOK_CONFIGS=(mutatingwebhookconfiguration/steward-mutating-webhook-configuration
  validatingwebhookconfiguration/steward-validating-webhook-configuration)
steward_webhook_policies() {
  local config saved patch
  for config in "${STEWARD_WEBHOOK_CONFIGS[@]}"; do
    saved="${HOST_DIR}/${config##*/}.policies"
    [[ -f "${saved}" ]] || kc get "${config}" -o jsonpath='{.webhooks[*].failurePolicy}' >"${saved}"
    if [[ "$1" == Ignore ]]; then
      patch=$(kc get "${config}" -o json | jq -c '[range(.webhooks | length) | {op: "replace", path: "/webhooks/\(.)/failurePolicy", value: "Ignore"}]')
    else
      patch=$(jq -c -R 'split(" ") | to_entries | map({op: "replace", path: "/webhooks/\(.key)/failurePolicy", value: .value})' <"${saved}")
    fi
    kc patch "${config}" --type json -p "${patch}" >/dev/null
  done
}

# steward_leading DEPLOY LEASE: LEASE in STEWARD_NS is held by a Running Pod of DEPLOY
# (controller-runtime's identity is <pod name>_<uuid>).
steward_leading() {
  local holder pod
  holder=$(kc -n "${STEWARD_NS}" get lease "$2" -o jsonpath='{.spec.holderIdentity}') || return 1
  for pod in $(kc -n "${STEWARD_NS}" get pods --field-selector=status.phase=Running -o name); do
    [[ "${pod#pod/}" == "$1"-* && "${holder}" == "${pod#pod/}"_* ]] && return 0
  done
  return 1
}

# steward_pair_steward NAME: STEWARD_PAIR_STEWARD is "<seconds> <RSS MiB>" of steward-demo/NAME.
steward_pair_steward() {
  local tns cp rss where
  steward_engines_up
  steward_tc "$1" "${STEWARD_TENANT_VERSION}"
  wait_until "steward-demo/$1's tenant namespace" 60 tc_tenant_namespace "$1"
  tns=$(kc -n steward-demo get tc "$1" -o jsonpath='{.status.tenantNamespace}')
  wait_until "Steward's Service ${tns}/$1" 300 kc -n "${tns}" get service "$1"
  steward_dns_alias "${tns}" "$1"
  kc wait "tc/$1" -n steward-demo --for=condition=ControlPlaneReady --timeout=5m >/dev/null || die "steward-demo/$1's control plane is not Ready"
  sleep 15
  cp=$(steward_cp_seconds steward-demo "$1")
  steward_pod_rss "${tns}" "$1"
  rss=${STEWARD_POD_RSS}
  where="TenantControlPlane +$(steward_since steward-demo "$1" "$(kc -n "${tns}" get tenantcontrolplanes "$1" -o jsonpath='{.metadata.creationTimestamp}')") s, Deployment +$(steward_since steward-demo "$1" "$(kc -n "${tns}" get deploy "$1" -o jsonpath='{.metadata.creationTimestamp}')") s, DNS alias roll ${STEWARD_ALIAS_SECONDS} s, ControlPlaneReady +${cp} s"
  echo "- Steward steward-demo/$1: ${where}; RSS ${rss} MiB" >>"${STEWARD_BENCH_DIR}/steward-pairs.md"
  kc -n steward-demo delete tc "$1" --wait=false >/dev/null
  wait_until "steward-demo/$1 gone" 300 steward_tc_gone steward-demo "$1"
  steward_engines_down
  STEWARD_PAIR_STEWARD="${cp} ${rss}"
}

# steward_pair_local NAME: STEWARD_PAIR_LOCAL is "<seconds> <RSS MiB>" of pairs-local/NAME on the stand-in.
steward_pair_local() {
  local tns uid p pids=() pss rss n cp
  steward_engines_down
  kc apply -f - >/dev/null <<EOT
apiVersion: butler.butlerlabs.dev/v1alpha1
kind: TenantCluster
metadata: {name: $1, namespace: pairs-local}
spec:
  kubernetesVersion: ${STEWARD_TENANT_VERSION}
  providerConfigRef: {name: local}
  controlPlane: {replicas: 1}
  workers: {replicas: 0, machineTemplate: {os: {type: talos}}}
EOT
  kc wait "tc/$1" -n pairs-local --for=condition=ControlPlaneReady --timeout=5m >/dev/null || die "pairs-local/$1's control plane is not Ready"
  sleep 15
  cp=$(steward_cp_seconds pairs-local "$1")
  tns=$(kc -n pairs-local get tc "$1" -o jsonpath='{.status.tenantNamespace}')
  uid=$(kc -n "${tns}" get tenantcontrolplanes "$1" -o jsonpath='{.metadata.uid}')
  for p in /proc/[0-9]*; do
    if grep -qzF -- "/${uid}/" "${p}/cmdline" 2>/dev/null; then pids+=("${p#/proc/}"); fi
  done
  read -r pss rss n < <(steward_procs_memory "${pids[@]}")
  [[ "${n}" == 3 ]] || die "pairs-local/$1: ${n} control plane processes found by /${uid}/, not 3"
  echo "- local pairs-local/$1: ControlPlaneReady +${cp} s; RSS $((rss / 1024)) MiB (PSS $((pss / 1024)) MiB)" >>"${STEWARD_BENCH_DIR}/steward-pairs.md"
  kc -n pairs-local delete tc "$1" --wait=false >/dev/null
  wait_until "pairs-local/$1 gone" 300 steward_tc_gone pairs-local "$1"
  wait_until "the stand-in's TenantControlPlanes gone" 180 no_tenant_control_planes
  STEWARD_PAIR_LOCAL="${cp} $((rss / 1024))"
}

# steward_tc_gone NS NAME: the TenantCluster is gone.
steward_tc_gone() { ! kc -n "$1" get tc "$2" >/dev/null 2>&1; }

# steward_pod_rss NS DEPLOY: STEWARD_POD_RSS is the RSS (MiB) of the three control plane
# processes in the memory cgroup of the Deployment's Running Pod.
steward_pod_rss() {
  local selector pod uid dir pids pss rss n
  # shellcheck disable=SC2016 # a Go template, not shell
  selector=$(kc -n "$1" get deploy "$2" -o go-template='{{range $k, $v := .spec.selector.matchLabels}}{{$k}}={{$v}},{{end}}')
  pod=$(kc -n "$1" get pods -l "${selector%,}" --field-selector=status.phase=Running -o jsonpath='{.items[0].metadata.name}')
  uid=$(kc -n "$1" get pod "${pod}" -o jsonpath='{.metadata.uid}')
  dir=$(find /sys/fs/cgroup/memory /sys/fs/cgroup -maxdepth 6 -type d \( -name "pod${uid}" -o -name "*pod${uid//-/_}*" \) -print -quit 2>/dev/null || true)
  [[ -n "${dir}" ]] || die "no memory cgroup of Pod $1/${pod} (pod${uid})"
  pids=$(find "${dir}" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -un || true)
  # shellcheck disable=SC2086 # one pid a word
  read -r pss rss n < <(steward_procs_memory ${pids})
  [[ "${n}" == 3 ]] || die "Pod $1/${pod}: ${n} control plane processes in its cgroup, not 3"
  STEWARD_POD_RSS=$((rss / 1024))
}
