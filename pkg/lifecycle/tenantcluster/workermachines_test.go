package tenantcluster

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	testingclock "k8s.io/utils/clock/testing"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

// A Machine whose LocalMachine and BootstrapConfig Cluster API deleted after a create it took
// for failed (a client deadline on a slow API server) is deleted, so its MachineSet makes
// another; one whose objects exist, one younger than strandedAfter and one that became a node
// are left alone. Seen in the fault test R4: the cluster waited 10 minutes for its
// MachineHealthCheck.
func TestReplaceStrandedMachines(t *testing.T) {
	objs, client := fakeObjects(t)
	now := time.Date(2026, 11, 28, 23, 40, 0, 0, time.UTC)
	recorder := events.NewFakeRecorder(10)
	c := &Controller{objects: objs, clock: testingclock.NewFakePassiveClock(now), events: recorder}
	s := stepState(v1alpha1.ProviderLocal)
	ctx := context.Background()

	machine := func(name string, age time.Duration, providerID string) {
		t.Helper()
		m := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": external.MachineGVK.GroupVersion().String(), "kind": "Machine",
			"metadata": map[string]any{"name": name, "namespace": s.namespace, "uid": name,
				"creationTimestamp": now.Add(-age).Format(time.RFC3339),
				"labels":            map[string]any{clusterv1.MachineDeploymentNameLabel: "prod-workers"}},
			"spec": map[string]any{"clusterName": "prod", "providerID": providerID,
				"infrastructureRef": map[string]any{"apiGroup": external.LocalMachineGVK.Group, "kind": "LocalMachine", "name": name},
				"bootstrap": map[string]any{"configRef": map[string]any{
					"apiGroup": external.BootstrapConfigGVK.Group, "kind": "BootstrapConfig", "name": name}}},
		}}
		if err := client.Tracker().Create(external.MachineGVR, m, s.namespace); err != nil {
			t.Fatal(err)
		}
	}
	object := func(gvk schema.GroupVersionKind, name string) {
		t.Helper()
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		u.SetName(name)
		u.SetNamespace(s.namespace)
		if err := client.Tracker().Create(external.MustGVR(gvk), u, s.namespace); err != nil {
			t.Fatal(err)
		}
	}
	machine("stranded", time.Minute, "")
	machine("whole", time.Minute, "")
	object(external.LocalMachineGVK, "whole")
	object(external.BootstrapConfigGVK, "whole")
	machine("young", 5*time.Second, "")
	machine("no-bootstrap", time.Minute, "")
	object(external.LocalMachineGVK, "no-bootstrap")
	machine("node", time.Hour, "local://x/node") // auto-repair's business, not this

	replaced, err := c.lookAtMachines(ctx, s, "prod-workers")
	if err != nil || replaced != 2 {
		t.Fatalf("replaced %d, %v; want the two stranded ones", replaced, err)
	}
	for name, want := range map[string]bool{"stranded": false, "no-bootstrap": false, "whole": true, "young": true, "node": true} {
		_, err := client.Tracker().Get(external.MachineGVR, s.namespace, name)
		if kept := err == nil; kept != want {
			t.Errorf("Machine %s kept %v, want %v (%v)", name, kept, want, err)
		}
		if err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	}
	if s.recheckAfter <= 0 || s.recheckAfter > strandedAfter-5*time.Second+time.Millisecond {
		t.Errorf("recheck after %s, want when the young one is %s old", s.recheckAfter, strandedAfter)
	}
	var seen []string
	for len(recorder.Events) > 0 {
		seen = append(seen, <-recorder.Events)
	}
	if len(seen) != 2 || !strings.Contains(strings.Join(seen, "\n"), "StrandedMachineReplaced") {
		t.Errorf("events %q, want one StrandedMachineReplaced per deleted Machine", seen)
	}
}

// A worker auto-repair found unhealthy is told to the Team on its TenantCluster, once while it
// stays unhealthy; Cluster API's own Events are on the Machine in the tenant namespace.
func TestTellRepairs(t *testing.T) {
	recorder := events.NewFakeRecorder(10)
	c := &Controller{events: recorder}
	s := stepState(v1alpha1.ProviderLocal)
	m := &clusterv1.Machine{}
	m.Name, m.UID = "prod-workers-abc", "m1"
	m.Status.NodeRef = clusterv1.MachineNodeReference{Name: "prod-workers-abc"}
	m.Status.Conditions = []metav1.Condition{{Type: clusterv1.MachineHealthCheckSucceededCondition,
		Status: metav1.ConditionFalse, Reason: "UnhealthyNode", Message: "Health check failed: Condition Ready on Node is reported as Unknown for more than 30s"}}
	count := func() int {
		n := 0
		for len(recorder.Events) > 0 {
			e := <-recorder.Events
			if !strings.Contains(e, "WorkerUnhealthy") || !strings.Contains(e, "node prod-workers-abc") || !strings.Contains(e, "Unknown for more than 30s") {
				t.Errorf("event %q", e)
			}
			n++
		}
		return n
	}
	c.tellRepairs(s, []*clusterv1.Machine{m})
	c.tellRepairs(s, []*clusterv1.Machine{m})
	if n := count(); n != 1 {
		t.Errorf("%d Events for one unhealthy Machine seen twice, want 1", n)
	}
	c.tellRepairs(s, nil) // replaced
	c.tellRepairs(s, []*clusterv1.Machine{m})
	if n := count(); n != 1 {
		t.Errorf("%d Events for a Machine unhealthy again, want 1", n)
	}
}
