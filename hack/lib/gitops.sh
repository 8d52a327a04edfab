# shellcheck shell=bash
# Flux on the management cluster (hack/test-cluster.sh's GitOps stage): the platform admin's
# ManagementAddon flux installs the catalog's flux-management (charts/butler-flux, in butler's
# image) through butler's controller, as an impersonated account; then TestGitOpsManagement
# (test/gitops) has it apply a Team's TenantClusters from a Git server of this machine. Sourced
# with the cluster's KUBECONFIG exported and ROOT, LOGS, HOST_DIR and NODE_IP set, after the chart
# is installed with managementAddons.serviceAccounts naming flux-installer.
#
# Decisions, and why:
#   - The chart is in butler's image (/usr/share/butler/charts, hack/build-images.sh), named by
#     the catalog's AddonDefinition flux-management by that local path: a management cluster
#     installs Flux with nothing to fetch and the chart of the running butler's commit; a chart
#     served by the test would test the test's server, and a platform would need one too.
#   - The test's binary is built from the start of the run (gitops_build, beside the images and
#     the cluster's start): built at the lowest priority beside stages 4 and 5 it was the stage's
#     longest wait after Flux's install (one run).
#   - gitops_install only applies the objects and returns: Helm's install (CRDs, the two
#     controllers starting) runs while stage 4 waits on its clusters; gitops_stage waits for it.
#   - The Git server listens on the node's bridge address, where the Pods (source-controller)
#     reach this host, as the tenants' kube-apiservers do. No fetch policy is involved: the
#     management cluster's Flux is the platform's and fetches what its GitRepositories name;
#     butler's policy covers only the fetches butler makes or configures for a tenant.
#   - No cluster DNS runs here, and kustomize-controller fetches each artifact from
#     source-controller's Service by its name: the stage names the Service's ClusterIP in
#     kustomize-controller's hostAliases (as the Steward stage does for its Services). A
#     management cluster has CoreDNS.

GITOPS_ACCOUNT=flux-installer
GITOPS_ACCOUNT_NS=butler-management-addons
# The test's binary and its build's exit code and log, outside HOST_DIR (made after stage 1).
GITOPS_TEST="${ROOT}/_output/gitops/gitops.test"

# gitops_build: builds test/gitops's binary in the background (gitops_stage waits for it).
gitops_build() {
  mkdir -p "${GITOPS_TEST%/*}"
  rm -f "${GITOPS_TEST}" "${GITOPS_TEST}.rc"
  (cd "${ROOT}" && rc=0 && CGO_ENABLED=0 GOFLAGS=-trimpath nice -n 19 go test -c -o "${GITOPS_TEST}" ./test/gitops/ || rc=$?
    echo "${rc}" >"${GITOPS_TEST}.rc") >"${GITOPS_TEST}.log" 2>&1 &
}

# gitops_install: the catalog's flux-management, the installer account bound to cluster-admin
# (Flux installs CRDs and ClusterRoles that grant everything), and the ManagementAddon flux.
gitops_install() {
  GITOPS_T0=${SECONDS}
  kc apply -f "${ROOT}/artifacts/catalog/flux-management.yaml" >/dev/null
  kc apply -f - >/dev/null <<EOF
apiVersion: v1
kind: ServiceAccount
metadata: {name: ${GITOPS_ACCOUNT}, namespace: ${GITOPS_ACCOUNT_NS}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: butler-management-addons:${GITOPS_ACCOUNT}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: ${GITOPS_ACCOUNT}, namespace: ${GITOPS_ACCOUNT_NS}}]
---
apiVersion: butler.butlerlabs.dev/v1alpha1
kind: ManagementAddon
metadata: {name: flux}
spec:
  addon: flux-management
  serviceAccountRef: {namespace: ${GITOPS_ACCOUNT_NS}, name: ${GITOPS_ACCOUNT}}
EOF
  log "ManagementAddon flux applied (Helm's install runs beside the next stages)"
}

# gitops_measure: measure for a stage that may run in a subshell (gitops_beside): the line is
# kept in a file that gitops_join (or gitops_stage itself) adds to the summary.
gitops_measure() { log "$*"; echo "$*" >>"${HOST_DIR}/gitops.summary"; }

# gitops_summary: the stage's measures into the summary.
gitops_summary() {
  local line
  while IFS= read -r line; do summary+=("${line}"); done <"${HOST_DIR}/gitops.summary"
}

# gitops_beside: gitops_stage in the background, beside the stages that follow.
gitops_beside() {
  GITOPS_BESIDE_T0=${SECONDS}
  (GITOPS_BESIDE=1 BESIDE_FAIL="${HOST_DIR}/gitops.fail" gitops_stage) &
  GITOPS_PID=$!
}

# gitops_join: waits for gitops_beside's stage, fails when it failed.
gitops_join() {
  local rc=0 t=${SECONDS}
  wait "${GITOPS_PID}" || rc=$?
  GITOPS_PID=""
  gitops_summary
  ((rc == 0)) || die "the GitOps stage failed: $(cat "${HOST_DIR}/gitops.fail" 2>/dev/null || echo "exit ${rc} (above)")"
  measure "GitOps stage joined: $((SECONDS - t)) s waited for it after what ran beside it ($((SECONDS - GITOPS_BESIDE_T0)) s since it started)"
}

# gitops_installed: the ManagementAddon's phase is Installed.
gitops_installed() { [[ "$(kc get managementaddon flux -o jsonpath='{.status.phase}')" == Installed ]]; }

# gitops_stage: waits for Flux, names source-controller's address for kustomize-controller, runs
# TestGitOpsManagement, then deletes the ManagementAddon: Helm's uninstall as the same account
# removes the controllers (the CRDs, and what Flux applied, stay).
gitops_stage() {
  local t0=${SECONDS} addr
  : >"${HOST_DIR}/gitops.summary"
  wait_until "the ManagementAddon flux Installed" 300 gitops_installed
  gitops_measure "ManagementAddon flux Installed $((SECONDS - GITOPS_T0)) s after it was applied ($((SECONDS - t0)) s waited here)"
  local t3=${SECONDS}
  service_alias flux-system source-controller flux-system/kustomize-controller
  kc -n flux-system rollout status deploy/source-controller --timeout=3m >/dev/null
  local t4=${SECONDS}
  wait_until "test/gitops built" 600 test -f "${GITOPS_TEST}.rc"
  [[ "$(cat "${GITOPS_TEST}.rc")" == 0 ]] || { cat "${GITOPS_TEST}.log" >&2; die "test/gitops does not build"; }
  gitops_measure "kustomize-controller rolled with source-controller's address in $((t4 - t3)) s, then $((SECONDS - t4)) s waited for the test's binary"
  addr="${NODE_IP}:$(port)"
  local t1=${SECONDS}
  (cd "${ROOT}/test/gitops" && BUTLER_GITOPS_KUBECONFIG="${KUBECONFIG}" BUTLER_GITOPS_GIT_ADDR="${addr}" \
    "${GITOPS_TEST}" -test.count=1 -test.v -test.run '^TestGitOpsManagement$' -test.timeout 20m) \
    >"${LOGS}/gitops.log" 2>&1 || { cat "${LOGS}/gitops.log" >&2; die "TestGitOpsManagement failed"; }
  grep -F -- '--- PASS: TestGitOpsManagement' "${LOGS}/gitops.log" >/dev/null \
    || { cat "${LOGS}/gitops.log" >&2; die "TestGitOpsManagement did not run"; }
  grep -E '^\s+management_test.go:[0-9]+: (ManagementAddon|both|gf-|the invalid|the Kustomization says)' "${LOGS}/gitops.log" | sed 's/^ */  /' >&2 || true
  gitops_measure "TestGitOpsManagement passed in $((SECONDS - t1)) s"
  local t2=${SECONDS}
  kc delete managementaddon flux --timeout=3m >/dev/null
  [[ -z "$(kc -n flux-system get deploy -o name)" ]] || die "the ManagementAddon's uninstall left Flux's Deployments: $(kc -n flux-system get deploy -o name)"
  gitops_measure "GitOps stage: $((SECONDS - t0)) s (the uninstall of Flux $((SECONDS - t2)) s)"
  [[ -n "${GITOPS_BESIDE:-}" ]] || gitops_summary
}
