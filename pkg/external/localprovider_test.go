package external

import "testing"

// TestProviderOffers: only a capability the annotation lists is offered; a real Steward's
// TenantControlPlane (no annotation) offers none, and a capability's name inside another's is
// not it.
func TestProviderOffers(t *testing.T) {
	local := map[string]string{LocalProviderCapabilitiesAnnotation: "wake-on-request,restore,snapshots,credential-rotation"}
	if !ProviderOffers(local, CapabilitySnapshots) || !ProviderOffers(local, CapabilityRestore) {
		t.Error("the stand-in's annotation: snapshots or restore not offered")
	}
	for _, a := range []map[string]string{nil, {}, {LocalProviderCapabilitiesAnnotation: ""}, {LocalProviderCapabilitiesAnnotation: "snapshots-v2,restore"}} {
		if ProviderOffers(a, CapabilitySnapshots) {
			t.Errorf("%v offers snapshots", a)
		}
	}
}
