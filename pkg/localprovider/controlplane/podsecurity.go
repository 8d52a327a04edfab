package controlplane

import "github.com/butlerdotdev/butler-apiserver/pkg/pki"

// podSecurityAdmission is the tenant kube-apiserver's admission configuration: Pod Security
// "baseline" enforced in every namespace that sets no level of its own, so a Team operator's Pod
// (or a Team's chart's) cannot be privileged, share the node's namespaces or mount its paths,
// from where it would read every Pod's token on the node. Kubernetes' own namespaces are exempt
// (their components are the system's); a tenant admin gives a namespace another level with the
// pod-security.kubernetes.io/enforce label, and one labelled privileged is closed to operators
// (component/access). Warnings and audit annotations name what "restricted" would refuse.
const podSecurityAdmission = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults:
      enforce: baseline
      enforce-version: latest
      audit: restricted
      audit-version: latest
      warn: baseline
      warn-version: latest
    exemptions:
      namespaces: [kube-system]
`

// writeAdmissionConfig writes the admission configuration kube-apiserver reads at its start.
func writeAdmissionConfig(paths tenantPaths) error {
	return pki.WriteFile(paths.admissionConfig(), []byte(podSecurityAdmission), 0o644)
}
