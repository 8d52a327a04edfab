package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/componenttest"
)

// workersWrites are the objects butler's TenantCluster controller writes in the management cluster
// for an AWS cluster with workers, by kind (namespace step, control plane and infrastructure
// steps, then the workers step): what the floor must write too, no more and no less.
var workersWrites = map[string]int{"Namespace": 1, "RoleBinding": 1, "Cluster": 1, "StewardControlPlane": 1,
	"AWSCluster": 1, "AWSMachineTemplate": 1, "BootstrapConfigTemplate": 1, "MachineDeployment": 1}

// tenantWrites are what the access step writes in a new tenant for a cluster with no Team, by
// verb and kind: the API endpoint's policy and its binding, butler's three ClusterRoles, the
// viewers', node viewers' and platform admins' ClusterRoleBindings applied, the admins' (no
// subject) deleted, and the operators' RoleBinding in default (no subject) deleted. Ten writes,
// as many as the bench counted butler sending a tenant per cluster.
var tenantWrites = map[string]int{"apply:ValidatingAdmissionPolicy": 1, "apply:ValidatingAdmissionPolicyBinding": 1,
	"apply:ClusterRole": 3, "apply:ClusterRoleBinding": 3, "delete:clusterrolebindings": 1, "delete:rolebindings": 1}

// fakePlane is a fake management cluster for the floor: kube-apiserver's core kinds in kube,
// every external kind in dyn, where an apply creates or replaces, and a log of the writes.
type fakePlane struct {
	kube *kubefake.Clientset
	dyn  *dynamicfake.FakeDynamicClient

	mu      sync.Mutex
	writes  []string // "Kind namespace/name", in order
	tenants int      // tenant clients opened
}

func newFakePlane(t *testing.T) *fakePlane {
	t.Helper()
	listKinds := map[schema.GroupVersionResource]string{
		{Version: "v1", Resource: "namespaces"}:                                       "NamespaceList",
		{Version: "v1", Resource: "secrets"}:                                          "SecretList",
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}: "RoleBindingList",
	}
	for _, k := range external.Kinds {
		listKinds[k.GVR()] = k.GVK.Kind + "List"
	}
	f := &fakePlane{kube: kubefake.NewClientset(), dyn: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds)}
	f.kube.PrependReactor("*", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetVerb() == "create" || action.GetVerb() == "patch" {
			kind := map[string]string{"namespaces": "Namespace", "rolebindings": "RoleBinding"}[action.GetResource().Resource]
			name := ""
			if c, ok := action.(clienttesting.CreateAction); ok {
				name = c.GetObject().(metav1.Object).GetName()
			} else {
				name = action.(clienttesting.PatchAction).GetName()
			}
			ns := action.GetNamespace()
			if kind == "Namespace" {
				ns = name // logged as in itself, to be counted with its cluster
			}
			f.log(kind, ns, name)
		}
		return false, nil, nil
	})
	f.dyn.PrependReactor("patch", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		patch := action.(clienttesting.PatchAction)
		if patch.GetPatchType() != types.ApplyPatchType {
			return false, nil, nil
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(patch.GetPatch()); err != nil {
			return true, nil, err
		}
		f.log(obj.GetKind(), patch.GetNamespace(), patch.GetName())
		tracker := f.dyn.Tracker()
		if _, err := tracker.Get(patch.GetResource(), patch.GetNamespace(), patch.GetName()); apierrors.IsNotFound(err) {
			return true, obj, tracker.Create(patch.GetResource(), obj, patch.GetNamespace())
		}
		return true, obj, tracker.Update(patch.GetResource(), obj, patch.GetNamespace())
	})
	return f
}

// tenantOf opens a fake tenant for a cluster, as fresh as a new tenant (its four namespaces),
// whose writes go to the plane's log as "tenant:<verb>:<Kind> <cluster namespace>/<name>".
func (f *fakePlane) tenantOf(_ context.Context, in component.Input) (dynamic.Interface, error) {
	f.mu.Lock()
	f.tenants++
	f.mu.Unlock()
	var objs []runtime.Object
	for _, name := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		objs = append(objs, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}})
	}
	tenant := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		tenantNamespaces: "NamespaceList", tenantServices: "ServiceList"}, objs...)
	tenant.PrependReactor("*", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		switch a := action.(type) {
		case clienttesting.PatchAction:
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(a.GetPatch()); err != nil {
				return true, nil, err
			}
			f.log("tenant:apply:"+obj.GetKind(), in.Namespace, a.GetName())
			return true, obj, nil
		case clienttesting.DeleteAction:
			f.log("tenant:delete:"+a.GetResource().Resource, in.Namespace, a.GetName())
			return true, nil, apierrors.NewNotFound(a.GetResource().GroupResource(), a.GetName())
		case clienttesting.GetAction:
			return true, nil, apierrors.NewNotFound(a.GetResource().GroupResource(), a.GetName())
		}
		return false, nil, nil
	})
	return tenant, nil
}

func (f *fakePlane) log(kind, ns, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes = append(f.writes, fmt.Sprintf("%s %s/%s", kind, ns, name))
}

func (f *fakePlane) written() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.writes)
}

// readyControlPlane is the TenantControlPlane the Steward stand-in makes Ready for in.
func (f *fakePlane) readyControlPlane(t *testing.T, in component.Input) {
	t.Helper()
	f.log("TenantControlPlane(Ready)", in.Namespace, in.Cluster.Name)
	tcp := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "steward.butlerlabs.dev/v1alpha1", "kind": "TenantControlPlane",
		"metadata": map[string]any{"name": in.Cluster.Name, "namespace": in.Namespace},
		"status":   map[string]any{"kubernetesResources": map[string]any{"version": map[string]any{"status": "Ready"}}}}}
	if _, err := f.dyn.Resource(tenantControlPlanes).Namespace(in.Namespace).Create(context.Background(), tcp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func floorTestInputs(n int) []component.Input {
	var inputs []component.Input
	for i := range n {
		in := componenttest.Input(v1alpha1.ProviderAWS)
		in.Cluster.Name = fmt.Sprintf("floor-%04d", i+1)
		in.Cluster.Namespace = lifecycleNamespace
		in.Namespace = in.Cluster.Name + "-f100r000"
		inputs = append(inputs, in)
	}
	return inputs
}

// TestFloorWritesTheWorkersObjectsInTheirOrder: the floor writes, for each cluster, the objects
// butler's controller writes (counted by kind), and its MachineDeployment only once that cluster's
// control plane is Ready, as the workers step comes after the control plane step. The floor
// before this wrote everything at once, so Cluster API's work on every MachineDeployment fell
// inside its clock and not inside butler's.
func TestFloorWritesTheWorkersObjectsInTheirOrder(t *testing.T) {
	f := newFakePlane(t)
	inputs := floorTestInputs(3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := writeFloor(ctx, f.kube, f.dyn, f.tenantOf, inputs, 2); done <- err }()

	perCluster := func() map[string]map[string]int {
		out := map[string]map[string]int{}
		for _, w := range f.written() {
			var kind, ns string
			if _, err := fmt.Sscanf(w, "%s %s", &kind, &ns); err != nil {
				t.Fatalf("written %q: %v", w, err)
			}
			ns, _, _ = strings.Cut(ns, "/")
			if out[ns] == nil {
				out[ns] = map[string]int{}
			}
			out[ns][kind]++
		}
		return out
	}
	// Every control plane's objects, and no workers' object while no control plane is Ready.
	deadline := time.Now().Add(10 * time.Second)
	for {
		counts := perCluster()
		complete := len(counts) == len(inputs)
		for _, c := range counts {
			complete = complete && c["AWSMachineTemplate"] == 1
		}
		if complete {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the control planes' objects were not all written: %v", f.written())
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	for ns, c := range perCluster() {
		if c["MachineDeployment"]+c["BootstrapConfigTemplate"] > 0 {
			t.Fatalf("%s: workers' objects written before its control plane was Ready: %v", ns, f.written())
		}
	}
	for _, in := range inputs {
		f.readyControlPlane(t, in)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if f.tenants != len(inputs) {
		t.Errorf("%d tenant clients opened for %d clusters, one each as butler's access step does", f.tenants, len(inputs))
	}
	for _, in := range inputs {
		got := perCluster()[in.Namespace]
		delete(got, "TenantControlPlane(Ready)")
		inTenant := map[string]int{}
		for kind, n := range got {
			if k, ok := strings.CutPrefix(kind, "tenant:"); ok {
				inTenant[k] = n
				delete(got, kind)
			}
		}
		if !maps.Equal(got, workersWrites) {
			t.Errorf("%s: the floor wrote %v, the workers write %v", in.Namespace, got, workersWrites)
		}
		if !maps.Equal(inTenant, tenantWrites) {
			t.Errorf("%s: the floor wrote %v in the tenant, the access step writes %v", in.Namespace, inTenant, tenantWrites)
		}
		// Its MachineDeployment after its control plane was Ready.
		ready := slices.Index(f.written(), fmt.Sprintf("TenantControlPlane(Ready) %s/%s", in.Namespace, in.Cluster.Name))
		md := slices.Index(f.written(), fmt.Sprintf("MachineDeployment %s/%s", in.Namespace, component.WorkersName(in)))
		if md < ready {
			t.Errorf("%s: MachineDeployment written at %d, its control plane Ready at %d", in.Namespace, md, ready)
		}
	}
}

// TestFloorStopsWhenAControlPlaneNeverComes: no Ready control plane, no workers' objects and
// an error at the deadline, not a hang.
func TestFloorStopsWhenAControlPlaneNeverComes(t *testing.T) {
	f := newFakePlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := writeFloor(ctx, f.kube, f.dyn, f.tenantOf, floorTestInputs(2), 2); err == nil {
		t.Fatal("the floor said it was done without its control planes")
	}
}

// TestCountWorkCountsOnlyTheSidesNamespaces: the count that proves both sides made the same
// objects takes only the namespaces labelled as the side's.
func TestCountWorkCountsOnlyTheSidesNamespaces(t *testing.T) {
	f := newFakePlane(t)
	ctx := context.Background()
	selector := floorLabel + "=" + lifecycleNamespace
	namespaces := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	for _, ns := range []struct {
		name   string
		labels map[string]any
	}{{"ours", map[string]any{floorLabel: lifecycleNamespace}}, {"theirs", map[string]any{external.TenantClusterNamespaceLabel: lifecycleNamespace}}} {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns.name, "labels": ns.labels}}}
		if _, err := f.dyn.Resource(namespaces).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		md := &unstructured.Unstructured{Object: map[string]any{"apiVersion": external.MachineDeploymentGVK.GroupVersion().String(),
			"kind": "MachineDeployment", "metadata": map[string]any{"name": "w", "namespace": ns.name}}}
		if _, err := f.dyn.Resource(external.MustGVR(external.MachineDeploymentGVK)).Namespace(ns.name).Create(ctx, md, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := countWork(ctx, f.dyn, selector)
	if err != nil {
		t.Fatal(err)
	}
	if got["Namespace"] != 1 || got["MachineDeployment"] != 1 || got["Cluster"] != 0 {
		t.Errorf("counted %v", got)
	}
}

func TestSameWorkNamesEveryDifference(t *testing.T) {
	work := map[string]map[string]int{
		"butler":    {"Cluster": 200, "MachineDeployment": 200},
		"the floor": {"Cluster": 200, "MachineDeployment": 200},
	}
	if d := sameWork(work); len(d) != 0 {
		t.Errorf("the same counts differ: %v", d)
	}
	f := &figure{}
	f.addWork("the floor", map[string]int{"Cluster": 200, "MachineDeployment": 200})
	f.addWork("butler", map[string]int{"Cluster": 200, "MachineDeployment": 200})
	f.addWork("butler", map[string]int{"Cluster": 200, "MachineDeployment": 199}) // a later run, one short
	d := sameWork(f.Work)
	if len(d) != 1 || d[0] != "MachineDeployment: 199 (butler, run 2) against 200 (butler, the floor)" {
		t.Errorf("differences: %q", d)
	}
}
