package controlplane

import (
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

// writeAdmissionConfig writes the admission configuration kube-apiserver reads at its start
// (external.PodSecurityAdmission: Pod Security "baseline" where a namespace sets no level).
func writeAdmissionConfig(paths tenantPaths) error {
	return pki.WriteFile(paths.admissionConfig(), []byte(external.PodSecurityAdmission), 0o644)
}
