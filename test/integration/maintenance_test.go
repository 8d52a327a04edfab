package integration

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// Through the server: a maintenance window too short or too long, and a bad auto-repair bound,
// are 422s naming the field; a good window and auto-repair are stored as sent.
func TestMaintenanceWindowAndAutoRepairThroughTheServer(t *testing.T) {
	ctx := context.Background()
	clusters := shared.Client.ButlerV1alpha1().TenantClusters("maintenance")
	window := func(d time.Duration) *v1alpha1.MaintenanceSpec {
		return &v1alpha1.MaintenanceSpec{Window: &v1alpha1.MaintenanceWindow{Days: []string{"Saturday"}, Start: "22:00",
			Duration: metav1.Duration{Duration: d}, Location: "Europe/Berlin"}}
	}
	for _, d := range []time.Duration{10 * time.Minute, 7 * time.Hour} {
		tc := exampleCluster(t, "maintenance", "bad")
		tc.Spec.Maintenance = window(d)
		_, err := clusters.Create(ctx, tc, metav1.CreateOptions{})
		expectInvalidFields(t, err, "spec.maintenance.window.duration")
	}
	tc := exampleCluster(t, "maintenance", "bad")
	tc.Spec.Workers.AutoRepair = &v1alpha1.AutoRepair{Enabled: true, MaxUnhealthy: ptr.To(intstr.FromString("120%"))}
	_, err := clusters.Create(ctx, tc, metav1.CreateOptions{})
	expectInvalidFields(t, err, "spec.workers.autoRepair.maxUnhealthy")

	tc = exampleCluster(t, "maintenance", "good")
	tc.Spec.Maintenance = window(4 * time.Hour)
	tc.Spec.Maintenance.AutoUpdate = &v1alpha1.MaintenanceAutoUpdate{KubernetesVersion: true}
	tc.Spec.Workers.AutoRepair = &v1alpha1.AutoRepair{Enabled: true}
	got, err := clusters.Create(ctx, tc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m := got.Spec.Maintenance; m == nil || m.Window.Duration.Duration != 4*time.Hour || !m.AutoUpdate.KubernetesVersion ||
		got.Spec.Workers.AutoRepair == nil || !got.Spec.Workers.AutoRepair.Enabled {
		t.Errorf("stored %+v, %+v", got.Spec.Maintenance, got.Spec.Workers.AutoRepair)
	}
}
