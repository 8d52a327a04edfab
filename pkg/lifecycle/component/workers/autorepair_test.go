package workers_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/componenttest"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/workers"
)

// Auto-repair off renders nothing; on, a MachineHealthCheck over exactly the MachineDeployment's
// machines, with the defaults (Ready False/Unknown 5m, startup 10m, at most 40% unhealthy) or
// what the cluster sets.
func TestAutoRepairMachineHealthCheck(t *testing.T) {
	in := componenttest.Input(v1alpha1.ProviderLocal)
	if u, err := workers.MachineHealthCheck(in); u != nil || err != nil {
		t.Fatalf("auto-repair off: %v, %v", u, err)
	}
	in.Cluster.Spec.Workers.AutoRepair = &v1alpha1.AutoRepair{Enabled: false, MaxUnhealthy: ptr.To(intstr.FromInt32(1))}
	if u, _ := workers.MachineHealthCheck(in); u != nil {
		t.Fatalf("enabled: false rendered %v", u.Object)
	}

	in.Cluster.Spec.Workers.AutoRepair.Enabled = true
	mhc, md := render(t, in)
	if mhc.Name != "prod-workers" || mhc.Namespace != componenttest.Namespace || mhc.Spec.ClusterName != "prod" {
		t.Errorf("name %s/%s, cluster %s", mhc.Namespace, mhc.Name, mhc.Spec.ClusterName)
	}
	sel, err := metav1.LabelSelectorAsSelector(&mhc.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(md.Spec.Template.Labels)) || sel.String() != mustSelector(t, &md.Spec.Selector) {
		t.Errorf("selector %v is not the MachineDeployment's %v", mhc.Spec.Selector, md.Spec.Selector)
	}
	want := []clusterv1.UnhealthyNodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionFalse, TimeoutSeconds: ptr.To[int32](300)},
		{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, TimeoutSeconds: ptr.To[int32](300)},
	}
	checkConditions(t, mhc.Spec.Checks.UnhealthyNodeConditions, want)
	if got := ptr.Deref(mhc.Spec.Checks.NodeStartupTimeoutSeconds, 0); got != 600 {
		t.Errorf("node startup timeout %ds, want 600", got)
	}
	if got := mhc.Spec.Remediation.TriggerIf.UnhealthyLessThanOrEqualTo; got == nil || *got != intstr.FromInt32(1) {
		t.Errorf("maxUnhealthy %v, want 1", got)
	}

	in.Cluster.Spec.Workers.AutoRepair = &v1alpha1.AutoRepair{Enabled: true,
		NodeStartupTimeout:  &metav1.Duration{Duration: 20 * time.Minute},
		UnhealthyConditions: []v1alpha1.UnhealthyNodeCondition{{Type: "DiskPressure", Status: "True", Timeout: metav1.Duration{Duration: time.Minute}}}}
	mhc, _ = render(t, in)
	checkConditions(t, mhc.Spec.Checks.UnhealthyNodeConditions,
		[]clusterv1.UnhealthyNodeCondition{{Type: corev1.NodeDiskPressure, Status: corev1.ConditionTrue, TimeoutSeconds: ptr.To[int32](60)}})
	if got := ptr.Deref(mhc.Spec.Checks.NodeStartupTimeoutSeconds, 0); got != 1200 {
		t.Errorf("node startup timeout %ds, want 1200", got)
	}
	if got := mhc.Spec.Remediation.TriggerIf.UnhealthyLessThanOrEqualTo; got == nil || got.String() != "40%" {
		t.Errorf("default maxUnhealthy %v, want 40%%", got)
	}
}

func render(t *testing.T, in component.Input) (*clusterv1.MachineHealthCheck, *clusterv1.MachineDeployment) {
	t.Helper()
	u, err := workers.MachineHealthCheck(in)
	if err != nil || u == nil {
		t.Fatalf("MachineHealthCheck: %v, %v", u, err)
	}
	if u.GetAPIVersion() != "cluster.x-k8s.io/v1beta2" || u.GetKind() != "MachineHealthCheck" {
		t.Errorf("%s %s", u.GetAPIVersion(), u.GetKind())
	}
	mhc := &clusterv1.MachineHealthCheck{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, mhc); err != nil {
		t.Fatal(err)
	}
	mdu, err := workers.MachineDeployment(in)
	if err != nil {
		t.Fatal(err)
	}
	md := &clusterv1.MachineDeployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(mdu.Object, md); err != nil {
		t.Fatal(err)
	}
	return mhc, md
}

func mustSelector(t *testing.T, s *metav1.LabelSelector) string {
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel.String()
}

func checkConditions(t *testing.T, got, want []clusterv1.UnhealthyNodeCondition) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("unhealthy conditions %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Type != want[i].Type || got[i].Status != want[i].Status || ptr.Deref(got[i].TimeoutSeconds, 0) != ptr.Deref(want[i].TimeoutSeconds, 0) {
			t.Errorf("condition %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
