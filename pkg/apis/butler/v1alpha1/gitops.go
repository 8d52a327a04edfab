package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// GitOpsSourcePinAnnotation on a TenantCluster records the spec.addons.gitops.repository that
// admission (GitOpsSource) decided, as GitOpsSourcePin of it: the TenantCluster controller hands a repository to
// Flux only when the pin matches, so one stored before the check existed (never decided: an
// unchanged repository is not asked again) is not used until someone who may use its Secret
// writes the cluster. Admission writes it, whatever a client sends.
const GitOpsSourcePinAnnotation = "butler.butlerlabs.dev/gitops-source-pin"

// GitOpsSourcePin is what GitOpsSourcePinAnnotation records of a repository: a digest of its
// url, branch, path and secretRef's name, so that any change of them unpins it.
func GitOpsSourcePin(url, branch, path, secretName string) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{url, branch, path, secretName}, "\x00")))
	return "sha256:" + hex.EncodeToString(sum[:])
}
