package tenantcluster

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
)

// ConditionProviderCapable says whether the hosted control plane's provider does everything the
// cluster asks that its contract has no field for (external.Capability). False names the
// provider and each missing capability with the field that asks for it: a real Steward or
// Kamaji ignores the annotations butler writes for them, and would leave the cluster waiting.
const ConditionProviderCapable = "ProviderCapable"

// wantedCapabilities are the capabilities tc asks of its control plane provider, each with the
// field that asks for it.
func wantedCapabilities(tc *v1alpha1.TenantCluster) map[external.Capability]string {
	want := map[external.Capability]string{}
	if h := tc.Spec.Hibernation; h != nil && h.WakeOnRequest {
		want[external.CapabilityWakeOnRequest] = "spec.hibernation.wakeOnRequest"
	}
	if tc.Spec.RestoreFrom != nil {
		want[external.CapabilityRestore] = "spec.restoreFrom"
	}
	if tc.Spec.Snapshots != nil && len(tc.Spec.Snapshots.Schedules) > 0 {
		want[external.CapabilitySnapshots] = "spec.snapshots.schedules"
	}
	if c := tc.Status.Credentials; c != nil && c.Rotation != nil && c.Rotation.LastInitiationTime != nil && c.Rotation.Phase != v1alpha1.RotationCompleted {
		want[external.CapabilityCredentialRotation] = "status.credentials.rotation"
	}
	return want
}

// capabilityCondition compares what tc asks with what the provider of its TenantControlPlane
// says it does (its annotations): none said is a real Steward or Kamaji.
func capabilityCondition(in component.Input, tcpAnnotations map[string]string) metav1.Condition {
	var missing []string
	for capability, field := range wantedCapabilities(in.Cluster) {
		if !external.ProviderOffers(tcpAnnotations, capability) {
			missing = append(missing, fmt.Sprintf("%s (%s)", capability, field))
		}
	}
	cond := metav1.Condition{Type: ConditionProviderCapable, Status: metav1.ConditionTrue, Reason: "Supported",
		Message: "the control plane provider does what the cluster asks", ObservedGeneration: in.Cluster.Generation}
	if len(missing) > 0 {
		slices.Sort(missing)
		cond.Status, cond.Reason = metav1.ConditionFalse, "Unsupported"
		cond.Message = fmt.Sprintf("control plane provider %s cannot: %s", component.ControlPlaneProvider(in.Config), strings.Join(missing, ", "))
	}
	return cond
}

// readCapabilities keeps what the provider of the cluster's TenantControlPlane says it does (its
// annotations): the ProviderCapable condition, and whether it takes snapshots (refuseSnapshots).
// Awake or asleep: the TenantControlPlane stays while its replicas are 0.
func (s *state) readCapabilities(tcpAnnotations map[string]string) {
	capable := capabilityCondition(s.in, tcpAnnotations)
	s.capable = &capable
	s.offersSnapshots = external.ProviderOffers(tcpAnnotations, external.CapabilitySnapshots)
}
