package external

import (
	"slices"
	"strings"
)

// The local provider's stand-in for Steward says on a TenantControlPlane why it is not Ready
// (Steward's status has no conditions), e.g. that the Kubernetes version is being built.
const (
	LocalProviderReasonAnnotation  = "localprovider.butlerlabs.dev/reason"
	LocalProviderMessageAnnotation = "localprovider.butlerlabs.dev/message"
)

// LocalProviderCapabilitiesAnnotation lists, on a TenantControlPlane, what the provider running
// it does beyond the Steward/Kamaji contract (comma-separated Capability values). The local
// stand-in sets it; a real Steward or Kamaji does not, and has none of them.
const LocalProviderCapabilitiesAnnotation = "localprovider.butlerlabs.dev/capabilities"

// Capability is a feature butler asks of a hosted control plane provider that the Steward and
// Kamaji contracts have no field for.
type Capability string

const (
	// CapabilityWakeOnRequest: a sleeping control plane's endpoint kept, and a connection to it
	// wakes it (spec.hibernation.wakeOnRequest).
	CapabilityWakeOnRequest Capability = "wake-on-request"
	// CapabilityRestore: a control plane started from a snapshot (spec.restoreFrom).
	CapabilityRestore Capability = "restore"
	// CapabilitySnapshots: the tenant's prefix read from its datastore (TenantClusterSnapshots,
	// spec.snapshots).
	CapabilitySnapshots Capability = "snapshots"
	// CapabilityCredentialRotation: the two-phase rotation of the tenant CA and service-account
	// key (CredentialsRotationAnnotation answered by CredentialsRotatedAnnotation).
	CapabilityCredentialRotation Capability = "credential-rotation"
)

// ProviderOffers says whether a TenantControlPlane's annotations list c among what its provider
// does beyond the contract: only the local stand-in's do, a real Steward's or Kamaji's never.
func ProviderOffers(tcpAnnotations map[string]string, c Capability) bool {
	return slices.Contains(strings.Split(tcpAnnotations[LocalProviderCapabilitiesAnnotation], ","), string(c))
}

// LocalProviderCapabilities are the local stand-in's, in the annotation's order.
var LocalProviderCapabilities = []Capability{CapabilityWakeOnRequest, CapabilityRestore, CapabilitySnapshots, CapabilityCredentialRotation}
