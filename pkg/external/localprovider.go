package external

// The local provider's stand-in for Steward says on a TenantControlPlane why it is not Ready
// (Steward's status has no conditions), e.g. that the Kubernetes version is being built.
const (
	LocalProviderReasonAnnotation  = "localprovider.butlerlabs.dev/reason"
	LocalProviderMessageAnnotation = "localprovider.butlerlabs.dev/message"
)
