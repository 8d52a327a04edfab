package external

import (
	"strings"
	"time"
)

// The contract between the lifecycle controller and a hosted control plane provider for a rotation
// of a tenant's CA and service-account key (Steward's and Kamaji's kinds have no field for it).
//
// The controller writes CredentialsRotationAnnotation on the cluster's control plane object
// (StewardControlPlane or KamajiControlPlane), and the provider copies it to the
// TenantControlPlane, as capi-steward copies annotations: "<phase>/<id>", phase Preparing or
// Completing, id the rotation's start (RFC 3339, the TenantCluster's
// status.credentials.rotation.lastInitiationTime), which tells one rotation from the next.
//
//   - Preparing: make a new CA and service-account key; kube-apiserver trusts client
//     certificates of both CAs and tokens of both keys, signs tokens with the new key and keeps
//     serving with a certificate of the old CA (clients that trust only the old CA still verify
//     it); the <tcp>-ca Secret holds the new CA, and every client certificate the provider makes
//     (components, <tcp>-admin-kubeconfig) is the new CA's, with both CAs as trust; kube-
//     controller-manager signs with the new CA and publishes both as the root CA. The endpoint
//     does not change.
//   - Completing: trust only the new CA and key, and serve with a certificate of the new CA.
//
// The provider answers with CredentialsRotatedAnnotation on the TenantControlPlane, "Prepared/
// <id>" or "Completed/<id>", once its control plane serves so.
const (
	CredentialsRotationAnnotation = "butler.butlerlabs.dev/credentials-rotation"
	CredentialsRotatedAnnotation  = "butler.butlerlabs.dev/credentials-rotated"
)

// RotationID is the id of the rotation that started at started.
func RotationID(started time.Time) string { return started.UTC().Format(time.RFC3339) }

// RotationValue is the value "<phase>/<id>" of either annotation.
func RotationValue(phase string, started time.Time) string { return phase + "/" + RotationID(started) }

// ParseRotationValue splits an annotation's value into its phase and id ("" for a malformed one).
func ParseRotationValue(v string) (phase, id string) {
	phase, id, ok := strings.Cut(v, "/")
	if !ok || phase == "" || id == "" {
		return "", ""
	}
	return phase, id
}
