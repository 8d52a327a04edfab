package tenantcluster

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
)

// TestCapabilityCondition: a cluster asking for what only the local stand-in does says at once,
// on a real Steward's TenantControlPlane (no capabilities annotation), which provider cannot do
// what and which field asks for it; on the stand-in's, and when nothing is asked, it is True.
func TestCapabilityCondition(t *testing.T) {
	asking := &v1alpha1.TenantCluster{Spec: v1alpha1.TenantClusterSpec{
		Hibernation: &v1alpha1.HibernationSpec{WakeOnRequest: true},
		RestoreFrom: &v1alpha1.RestoreSource{Name: "snap"},
		Snapshots:   &v1alpha1.SnapshotPolicy{Schedules: []v1alpha1.SnapshotSchedule{{Name: "daily", Schedule: "@daily", Keep: 1}}},
	}, Status: v1alpha1.TenantClusterStatus{Credentials: &v1alpha1.TenantCredentialsStatus{
		Rotation: &v1alpha1.CredentialsRotation{Phase: v1alpha1.RotationPreparing, LastInitiationTime: &metav1.Time{}},
	}}}
	local := map[string]string{external.LocalProviderCapabilitiesAnnotation: "wake-on-request,restore,snapshots,credential-rotation"}
	for _, tc := range []struct {
		name        string
		cluster     *v1alpha1.TenantCluster
		config      *v1alpha1.ButlerConfig
		annotations map[string]string
		status      metav1.ConditionStatus
		contains    []string
	}{
		{"Steward asked for all", asking, nil, nil, metav1.ConditionFalse, []string{
			"control plane provider steward cannot:", "wake-on-request (spec.hibernation.wakeOnRequest)",
			"restore (spec.restoreFrom)", "snapshots (spec.snapshots.schedules)", "credential-rotation (status.credentials.rotation)"}},
		{"Kamaji named", &v1alpha1.TenantCluster{Spec: v1alpha1.TenantClusterSpec{Hibernation: &v1alpha1.HibernationSpec{WakeOnRequest: true}}},
			&v1alpha1.ButlerConfig{Spec: v1alpha1.ButlerConfigSpec{ControlPlaneProvider: v1alpha1.ControlPlaneProviderKamaji}}, nil,
			metav1.ConditionFalse, []string{"control plane provider kamaji cannot: wake-on-request"}},
		{"the local stand-in", asking, nil, local, metav1.ConditionTrue, nil},
		{"Steward asked for nothing", &v1alpha1.TenantCluster{}, nil, nil, metav1.ConditionTrue, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := capabilityCondition(component.Input{Cluster: tc.cluster, Config: tc.config}, tc.annotations)
			if got.Status != tc.status {
				t.Fatalf("status %s, want %s: %s", got.Status, tc.status, got.Message)
			}
			for _, want := range tc.contains {
				if !strings.Contains(got.Message, want) {
					t.Errorf("message %q lacks %q", got.Message, want)
				}
			}
		})
	}
}

// TestNotCreatedBecause: the provider's refusal of the TenantControlPlane (here Steward's
// webhook refusing a version it cannot run) is what the cluster says, not an endless wait.
func TestNotCreatedBecause(t *testing.T) {
	refused := "cannot create or update TenantControlPlane: admission webhook \"vtenantcontrolplane.kb.io\" denied the request: unable to create a TenantControlPlane with a Kubernetes version greater than the supported one, actually v1.35"
	cp := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "StewardControlPlaneIsReady", "status": "False", "message": "other"},
		map[string]any{"type": "TenantControlPlaneCreated", "status": "False", "reason": "Pending", "message": refused},
	}}}}
	if got := notCreatedBecause(cp); got != refused {
		t.Errorf("got %q, want the provider's message", got)
	}
	if got := notCreatedBecause(&unstructured.Unstructured{Object: map[string]any{}}); got != "" {
		t.Errorf("no status: got %q, want \"\"", got)
	}
}
