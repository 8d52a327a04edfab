#!/usr/bin/env bash
# Checks the chart with the real helm CLI, no cluster: every flag it passes is butler-apiserver's,
# `helm lint --strict` and `helm template` for each way to install it (no values: the trial's
# embedded etcd in one Pod; values-production.yaml; external etcd with generated certificates or
# cert-manager), that wrong values fail with the schema's message, and that artifacts/deploy
# is the chart's rendering (of values-production.yaml). The rendered manifests are checked
# against a real kube-apiserver's OpenAPI by test/e2e/plane (TestChartManifestsValidOnKubeAPIServer).
set -euo pipefail
# This module is built as the Makefile builds it (static, -trimpath): one compile of each package
# serves the tests, the binaries and the image.
export CGO_ENABLED=0 GOFLAGS=-trimpath

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CHART="${ROOT}/charts/butler-apiserver"
helm() { "${ROOT}/hack/helm.sh" "$@"; }
external=(--set etcd.mode=external --set 'etcd.external.endpoints={https://etcd.example:2379}')
production=(-f "${CHART}/values-production.yaml" --set 'etcd.external.endpoints={https://etcd.example:2379}')

ok() {
  local what=$1; shift
  helm lint --strict "${CHART}" --namespace butler-system "$@" >/dev/null || { echo "verify-chart: lint failed: ${what}" >&2; helm lint --strict "${CHART}" "$@" >&2; exit 1; }
  helm template butler-apiserver "${CHART}" --namespace butler-system "$@" >/dev/null
}
# fails WHAT MESSAGE VALUES...: helm template must fail and say MESSAGE.
fails() {
  local what=$1 message=$2 out; shift 2
  if out=$(helm template butler-apiserver "${CHART}" --namespace butler-system "$@" 2>&1); then
    echo "verify-chart: ${what} was accepted" >&2; exit 1
  fi
  if [[ "${out}" != *"${message}"* ]]; then
    echo "verify-chart: ${what} failed without saying '${message}':" >&2; echo "${out}" >&2; exit 1
  fi
}

# Every flag the chart passes is one butler-apiserver has (a server refusing an unknown flag
# would crash-loop in the cluster, and no schema sees that).
binary="$(mktemp)"
trap 'rm -f "${binary}"' EXIT
(cd "${ROOT}" && go build -o "${binary}" ./cmd/butler-apiserver)
known="$("${binary}" --help 2>&1)"
flags_known() {
  local flag
  for flag in $(helm template butler-apiserver "${CHART}" --namespace butler-system "$@" \
      --set 'extraArgs={--kubeconfig-max-expiration=1h}' | sed -n 's/^ *- \(--*[a-z0-9-]*\)=.*/\1/p' | sort -u); do
    grep -q -- "${flag}[ =]" <<<"${known}" || { echo "verify-chart: butler-apiserver has no flag ${flag}, which the chart passes" >&2; exit 1; }
  done
}
flags_known "${external[@]}" --set etcd.external.clientSecretName=etcd-client
flags_known

# No values at all is the trial: one Pod, its embedded etcd, no etcd flag.
ok "no values"
trial=$(helm template butler-apiserver "${CHART}" --namespace butler-system)
if ! grep -q '^  replicas: 1$' <<<"${trial}" || ! grep -q -- '- --data-dir=' <<<"${trial}" || grep -q -- '--etcd-servers' <<<"${trial}"; then
  echo "verify-chart: no values did not render one replica on the embedded etcd" >&2; exit 1
fi
ok "values-production.yaml" "${production[@]}"
ok "external etcd, generated certificates" "${external[@]}"
ok "external etcd with client TLS, cert-manager" "${external[@]}" --set etcd.external.clientSecretName=etcd-client \
  --set certManager.enabled=true --set certManager.issuerRef.name=ca --set certManager.issuerRef.kind=ClusterIssuer

# A short commit can be all digits: --set-string keeps it a tag (leading zero too), --set makes it
# a number, which the schema refuses by name rather than rendering a wrong image.
image=$(helm template butler-apiserver "${CHART}" --namespace butler-system "${external[@]}" \
  --set-string image.tag=0299462 | sed -n 's/^ *image: *"*\([^"]*\)"*$/\1/p' | sort -u)
[[ "${image}" == "ghcr.io/butlerdotdev/butler-apiserver:0299462" ]] \
  || { echo "verify-chart: an all-digit tag rendered as '${image}'" >&2; exit 1; }
fails "an all-digit tag passed with --set" "at '/image/tag': got number, want string" "${external[@]}" --set image.tag=3299462
fails 'replicas: "two"' "at '/replicas': got string, want integer" "${external[@]}" --set-json 'replicas="two"'
fails "embedded etcd, two replicas" "at '/replicas': maximum: got 2, want 1" --set etcd.mode=embedded --set replicas=2
fails "external etcd without endpoints" "at '/etcd/external/endpoints': minItems" --set etcd.mode=external
fails "values-production.yaml without endpoints" "at '/etcd/external/endpoints': minItems" -f "${CHART}/values-production.yaml"
fails "a misspelt value" "additional properties 'replica' not allowed" "${external[@]}" --set replica=3

# ManagementAddons: butler-apiserver may impersonate the listed accounts of one namespace, and
# nothing when none is listed (the default).
if helm template butler-apiserver "${CHART}" --namespace butler-system "${external[@]}" | grep -qF 'verbs: ["impersonate"]'; then
  echo "verify-chart: impersonation granted with no managementAddons.serviceAccounts" >&2; exit 1
fi
addons=$(helm template butler-apiserver "${CHART}" --namespace butler-system "${external[@]}" \
  --set 'managementAddons.serviceAccounts={flux-installer}' --show-only templates/managementaddons.yaml)
for want in 'name: butler-management-addons' 'verbs: ["impersonate"]' '- "flux-installer"' 'namespace: butler-system'; do
  grep -qF -- "${want}" <<<"${addons}" || { echo "verify-chart: managementaddons.yaml lacks '${want}':" >&2; echo "${addons}" >&2; exit 1; }
done
fails "a ManagementAddon account that is no name" "at '/managementAddons/serviceAccounts/0'" "${external[@]}" --set 'managementAddons.serviceAccounts={Flux Installer}'

"${ROOT}/hack/render-deploy.sh" --verify
echo "verify-chart: ok"
