package tenantcluster

import (
	"context"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	clienttesting "k8s.io/client-go/testing"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/external/steward"
	butlerfake "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned/fake"
	listers "github.com/butlerdotdev/butler-apiserver/pkg/generated/listers/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/componenttest"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/infra"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// fakeObjects is the controller's view of the management cluster on a fake dynamic client that
// serves every external kind; server-side apply creates or merges, as the fake tracker's own
// apply needs the object to exist.
func fakeObjects(t *testing.T) (*objects, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	kinds := map[schema.GroupVersionKind]meta.RESTScope{}
	for _, k := range external.Kinds {
		kinds[k.GVK] = meta.RESTScopeNamespace
	}
	return fakeObjectsOf(kinds)
}

// fakeObjectsOf is fakeObjects serving the given kinds.
func fakeObjectsOf(kinds map[schema.GroupVersionKind]meta.RESTScope) (*objects, *dynamicfake.FakeDynamicClient) {
	var versions []schema.GroupVersion // a reference without a version (Cluster API's) is mapped through them
	for gvk := range kinds {
		versions = append(versions, gvk.GroupVersion())
	}
	mapper := meta.NewDefaultRESTMapper(versions)
	listKinds := map[schema.GroupVersionResource]string{}
	for gvk, scope := range kinds {
		mapper.Add(gvk, scope)
		m, _ := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		listKinds[m.Resource] = gvk.Kind + "List"
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds)
	client.PrependReactor("patch", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		patch := action.(clienttesting.PatchAction)
		if patch.GetPatchType() != types.ApplyPatchType {
			return false, nil, nil
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(patch.GetPatch()); err != nil {
			return true, nil, err
		}
		tracker := client.Tracker()
		old, err := tracker.Get(patch.GetResource(), patch.GetNamespace(), patch.GetName())
		if apierrors.IsNotFound(err) {
			return true, obj, tracker.Create(patch.GetResource(), obj, patch.GetNamespace())
		}
		if err != nil {
			return true, nil, err
		}
		merged := old.(*unstructured.Unstructured).DeepCopy()
		delete(obj.Object, "status")
		merge(merged.Object, obj.Object)
		return true, merged, tracker.Update(patch.GetResource(), merged, patch.GetNamespace())
	})
	return &objects{dyn: client, mapper: staticMapper{mapper}}, client
}

// merge sets what applied sets, keeping the fields it leaves out (another manager's, as a
// provider's spec.controlPlaneEndpoint).
func merge(into, applied map[string]any) {
	for k, v := range applied {
		if m, ok := v.(map[string]any); ok {
			if old, ok := into[k].(map[string]any); ok {
				merge(old, m)
				continue
			}
		}
		into[k] = v
	}
}

// staticMapper is a RESTMapper whose kinds never change.
type staticMapper struct{ meta.RESTMapper }

func (staticMapper) Reset() {}

func stepState(p v1alpha1.ProviderType) *state {
	tc := componenttest.Cluster()
	s := (&Controller{}).newState(tc)
	s.in.Provider = componenttest.Provider(p)
	return s
}

func setStatus(t *testing.T, client *dynamicfake.FakeDynamicClient, gvk schema.GroupVersionKind, ns, name string, status map[string]any) {
	t.Helper()
	gvr := external.MustGVR(gvk)
	obj, err := client.Tracker().Get(gvr, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	u := obj.(*unstructured.Unstructured).DeepCopy()
	u.Object["status"] = status
	if err := client.Tracker().Update(gvr, u, ns); err != nil {
		t.Fatal(err)
	}
}

func wantResult(t *testing.T, what string, r steps.Result, err error, done bool, reason string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if r.Done != done || r.Reason != reason {
		t.Errorf("%s: %+v, want done=%v reason %s", what, r, done, reason)
	}
}

// The control plane step writes the Cluster and the StewardControlPlane, then waits for Steward's
// TenantControlPlane, its version and its admin kubeconfig Secret, in that order.
func TestEnsureControlPlaneWaitsForStewardInOrder(t *testing.T) {
	objs, client := fakeObjects(t)
	kube := kubefake.NewSimpleClientset()
	c := &Controller{objects: objs, kube: kube}
	s := stepState(v1alpha1.ProviderAWS)
	ctx := context.Background()

	// What the access step applied is forgotten while the control plane is not ready and when
	// it becomes ready: a control plane that (re)starts may serve other data (a restore,
	// another datastore).
	uid := string(s.tc.UID)
	c.access = accessApplied{digest: map[string]string{uid: "d"}, granted: map[string]grant{uid: {digest: "d"}}, clients: map[string]tenantClient{}}
	r, err := c.ensureControlPlane(ctx, s)
	wantResult(t, "no TenantControlPlane", r, err, false, "WaitingForTenantControlPlane")
	if _, ok := c.access.granted[uid]; ok {
		t.Error("a control plane not ready keeps the Team's bindings as applied")
	}
	for _, gvk := range []schema.GroupVersionKind{external.ClusterGVK, external.StewardControlPlaneGVK} {
		if _, err := client.Tracker().Get(external.MustGVR(gvk), s.namespace, "prod"); err != nil {
			t.Errorf("%s not written: %v", gvk.Kind, err)
		}
	}

	tcp := &unstructured.Unstructured{}
	tcp.SetGroupVersionKind(external.TenantControlPlaneGVK)
	tcp.SetName("prod")
	tcp.SetNamespace(s.namespace)
	if err := client.Tracker().Create(external.TenantControlPlaneGVR, tcp, s.namespace); err != nil {
		t.Fatal(err)
	}
	r, err = c.ensureControlPlane(ctx, s)
	wantResult(t, "TenantControlPlane not ready", r, err, false, "TenantControlPlaneNotReady")

	// What the local provider says on it (a version being built) is in the message.
	tcp.SetAnnotations(map[string]string{external.LocalProviderMessageAnnotation: "building v1.30.2 from the module proxy"})
	tcp.SetResourceVersion("")
	if err := client.Tracker().Update(external.TenantControlPlaneGVR, tcp, s.namespace); err != nil {
		t.Fatal(err)
	}
	r, err = c.ensureControlPlane(ctx, s)
	wantResult(t, "TenantControlPlane building", r, err, false, "TenantControlPlaneNotReady")
	if !strings.HasSuffix(r.Message, "is not ready yet: building v1.30.2 from the module proxy") {
		t.Errorf("message %q does not say why", r.Message)
	}

	setStatus(t, client, external.TenantControlPlaneGVK, s.namespace, "prod", map[string]any{
		"controlPlaneEndpoint": "10.0.0.10:6443",
		"kubernetesResources":  map[string]any{"version": map[string]any{"version": "v1.35.0", "status": "Ready"}},
	})
	r, err = c.ensureControlPlane(ctx, s)
	wantResult(t, "an older version", r, err, false, "Upgrading")

	setStatus(t, client, external.TenantControlPlaneGVK, s.namespace, "prod", map[string]any{
		"controlPlaneEndpoint": "10.0.0.10:6443",
		"kubernetesResources":  map[string]any{"version": map[string]any{"version": "v1.36.3", "status": "Ready"}},
		"storage":              map[string]any{"driver": "etcd", "dataStoreName": "etcd-a"},
	})
	r, err = c.ensureControlPlane(ctx, s)
	wantResult(t, "no kubeconfig Secret", r, err, false, "WaitingForKubeconfig")

	if _, err := kube.CoreV1().Secrets(s.namespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Name: "prod-admin-kubeconfig", Namespace: s.namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.access.granted[uid] = grant{digest: "d"}
	r, err = c.ensureControlPlane(ctx, s)
	wantResult(t, "ready", r, err, true, "TenantControlPlaneReady")
	if _, ok := c.access.granted[uid]; ok {
		t.Error("a control plane newly ready keeps the Team's bindings as applied")
	}
	if s.endpoint != "10.0.0.10:6443" || s.kubeconfigSecret != "prod-admin-kubeconfig" || s.version != "v1.36.3" || s.dataStore != "etcd-a" {
		t.Errorf("state after a ready control plane: endpoint %q, secret %q, version %q, datastore %q", s.endpoint, s.kubeconfigSecret, s.version, s.dataStore)
	}
	// Newly ready: stored before the steps after it run. Once the status says so, no longer.
	if !r.StoreFirst {
		t.Errorf("a control plane newly ready is not stored first: %+v", r)
	}
	meta.SetStatusCondition(&s.tc.Status.Conditions, metav1.Condition{Type: ConditionControlPlaneReady, Status: metav1.ConditionTrue, Reason: "TenantControlPlaneReady"})
	r, err = c.ensureControlPlane(ctx, s)
	wantResult(t, "ready, as stored", r, err, true, "TenantControlPlaneReady")
	if r.StoreFirst {
		t.Errorf("a control plane the status already calls ready holds the steps after it back: %+v", r)
	}
	c.access.granted[uid] = grant{digest: "d"}
	if r, err = c.ensureControlPlane(ctx, s); err != nil || c.access.granted[uid].digest != "d" {
		t.Errorf("a control plane ready as stored forgets the Team's bindings (%v)", err)
	}
}

// The infrastructure step writes the provider's cluster and worker template; it waits for the
// hosted control plane's endpoint, then for the provider to provision.
func TestEnsureInfrastructure(t *testing.T) {
	for _, p := range componenttest.Providers {
		t.Run(string(p), func(t *testing.T) {
			objs, client := fakeObjects(t)
			c := &Controller{objects: objs}
			s := stepState(p)
			if p == v1alpha1.ProviderProxmox {
				// Static addresses: the nodes' allocation from the network step.
				s.in.Allocations = []v1alpha1.IPAllocation{{
					ObjectMeta: metav1.ObjectMeta{Name: "prod-nodes", Namespace: "team-a"},
					Spec:       v1alpha1.IPAllocationSpec{Type: v1alpha1.IPAllocationNodes, Count: ptrTo(int32(3))},
					Status: v1alpha1.IPAllocationStatus{Phase: v1alpha1.IPAllocationAllocated,
						StartAddress: "10.0.0.20", EndAddress: "10.0.0.22", AllocatedCount: 3}}}
			}
			ctx := context.Background()
			r, err := c.ensureInfrastructure(ctx, s)
			wantResult(t, "new", r, err, false, "WaitingForControlPlaneEndpoint")
			clusterKind, templateKind := infra.Kinds(p)
			if _, err := client.Tracker().Get(external.MustGVR(templateKind), s.namespace, "prod-workers"); err != nil {
				t.Errorf("worker template not written: %v", err)
			}
			infra, err := client.Tracker().Get(external.MustGVR(clusterKind), s.namespace, "prod")
			if err != nil {
				t.Fatal(err)
			}
			u := infra.(*unstructured.Unstructured).DeepCopy()
			_ = unstructured.SetNestedField(u.Object, "10.0.0.10", "spec", "controlPlaneEndpoint", "host")
			if err := client.Tracker().Update(external.MustGVR(clusterKind), u, s.namespace); err != nil {
				t.Fatal(err)
			}
			r, err = c.ensureInfrastructure(ctx, s)
			wantResult(t, "endpoint set", r, err, false, "Provisioning")
			setStatus(t, client, clusterKind, s.namespace, "prod", map[string]any{"initialization": map[string]any{"provisioned": true}})
			r, err = c.ensureInfrastructure(ctx, s)
			wantResult(t, "provisioned", r, err, true, "Provisioned")
		})
	}
}

// The workers step writes the bootstrap template and MachineDeployment <tc>-workers with the
// desired replicas, and is done when every replica is ready and up to date.
func TestEnsureWorkers(t *testing.T) {
	objs, client := fakeObjects(t)
	c := &Controller{objects: objs}
	s := stepState(v1alpha1.ProviderLocal)
	ctx := context.Background()
	r, err := c.ensureWorkers(ctx, s)
	wantResult(t, "new", r, err, false, "WorkersNotReady")
	md, err := client.Tracker().Get(external.MachineDeploymentGVR, s.namespace, "prod-workers")
	if err != nil {
		t.Fatal(err)
	}
	if replicas, _, _ := unstructured.NestedInt64(md.(*unstructured.Unstructured).Object, "spec", "replicas"); replicas != 3 {
		t.Errorf("MachineDeployment replicas %d, want 3", replicas)
	}
	if _, err := client.Tracker().Get(external.BootstrapConfigTemplateGVR, s.namespace, "prod-workers"); err != nil {
		t.Errorf("bootstrap template not written: %v", err)
	}
	setStatus(t, client, external.MachineDeploymentGVK, s.namespace, "prod-workers",
		map[string]any{"replicas": int64(3), "readyReplicas": int64(2), "upToDateReplicas": int64(3)})
	r, err = c.ensureWorkers(ctx, s)
	wantResult(t, "2 of 3 ready", r, err, false, "WorkersNotReady")
	if s.readyWorkers != 2 {
		t.Errorf("ready workers %d", s.readyWorkers)
	}
	setStatus(t, client, external.MachineDeploymentGVK, s.namespace, "prod-workers",
		map[string]any{"replicas": int64(3), "readyReplicas": int64(3), "upToDateReplicas": int64(3)})
	r, err = c.ensureWorkers(ctx, s)
	wantResult(t, "all ready", r, err, true, "WorkersReady")

	// A new generation (the version moved): the counts of the last one do not make it ready
	// until Cluster API has observed it.
	obj, err := client.Tracker().Get(external.MachineDeploymentGVR, s.namespace, "prod-workers")
	if err != nil {
		t.Fatal(err)
	}
	u := obj.(*unstructured.Unstructured).DeepCopy()
	u.SetGeneration(2)
	if err := client.Tracker().Update(external.MachineDeploymentGVR, u, s.namespace); err != nil {
		t.Fatal(err)
	}
	setStatus(t, client, external.MachineDeploymentGVK, s.namespace, "prod-workers", map[string]any{"observedGeneration": int64(1),
		"replicas": int64(3), "readyReplicas": int64(3), "upToDateReplicas": int64(3)})
	r, err = c.ensureWorkers(ctx, s)
	wantResult(t, "a generation not observed yet", r, err, false, "WorkersNotReady")
	// Observed, but the MachineSets' counts are not current yet: the machines' versions say
	// the old ones still run.
	oldVersion := map[string]any{"version": "v1.35.0", "replicas": int64(3)}
	newVersion := func(n int64) map[string]any {
		return map[string]any{"version": s.tc.Spec.KubernetesVersion, "replicas": n}
	}
	setStatus(t, client, external.MachineDeploymentGVK, s.namespace, "prod-workers", map[string]any{"observedGeneration": int64(2),
		"replicas": int64(3), "readyReplicas": int64(3), "upToDateReplicas": int64(3), "versions": []any{oldVersion}})
	r, err = c.ensureWorkers(ctx, s)
	wantResult(t, "old machines counted up to date", r, err, false, "WorkersNotReady")
	if !strings.Contains(r.Message, "v1.35.0: 3") {
		t.Errorf("message %q does not say which versions run", r.Message)
	}
	setStatus(t, client, external.MachineDeploymentGVK, s.namespace, "prod-workers", map[string]any{"observedGeneration": int64(2),
		"replicas": int64(3), "readyReplicas": int64(3), "upToDateReplicas": int64(3), "versions": []any{newVersion(2)}})
	r, err = c.ensureWorkers(ctx, s)
	wantResult(t, "two of three at the version", r, err, false, "WorkersNotReady")
	setStatus(t, client, external.MachineDeploymentGVK, s.namespace, "prod-workers", map[string]any{"observedGeneration": int64(2),
		"replicas": int64(3), "readyReplicas": int64(3), "upToDateReplicas": int64(3), "versions": []any{newVersion(3)}})
	r, err = c.ensureWorkers(ctx, s)
	wantResult(t, "the new generation rolled out", r, err, true, "WorkersReady")

	// Cleanup deletes the MachineDeployment, and once it is gone, the template.
	gone, err := c.cleanupWorkers(ctx, s)
	if err != nil || gone {
		t.Errorf("first cleanup pass: gone %v, %v", gone, err)
	}
	if _, err := client.Tracker().Get(external.MachineDeploymentGVR, s.namespace, "prod-workers"); !apierrors.IsNotFound(err) {
		t.Errorf("MachineDeployment left: %v", err)
	}
	if _, err := client.Tracker().Get(external.BootstrapConfigTemplateGVR, s.namespace, "prod-workers"); err != nil {
		t.Errorf("the template went before the MachineDeployment: %v", err)
	}
	if gone, err = c.cleanupWorkers(ctx, s); err != nil || !gone {
		t.Errorf("second cleanup pass: gone %v, %v", gone, err)
	}
	if _, err := client.Tracker().Get(external.BootstrapConfigTemplateGVR, s.namespace, "prod-workers"); !apierrors.IsNotFound(err) {
		t.Errorf("bootstrap template left: %v", err)
	}
}

// The namespace step makes <tc>-<uid8> with the cluster's labels, refuses one that belongs to
// something else, and its cleanup deletes only its own.
func TestEnsureNamespace(t *testing.T) {
	ctx := context.Background()
	s := stepState(v1alpha1.ProviderLocal)
	kube := kubefake.NewSimpleClientset()
	c := &Controller{kube: kube, namespaces: corelisters.NewNamespaceLister(indexer())}
	r, err := c.ensureNamespace(ctx, s)
	wantResult(t, "new", r, err, true, "NamespaceReady")
	ns, err := kube.CoreV1().Namespaces().Get(ctx, s.namespace, metav1.GetOptions{})
	if err != nil || ns.Labels[external.TenantClusterLabel] != "prod" || ns.Labels[external.TenantClusterNamespaceLabel] != "team-a" {
		t.Fatalf("namespace %+v, %v", ns, err)
	}

	other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.namespace, Labels: map[string]string{"owner": "someone"}}}
	c = &Controller{kube: kubefake.NewSimpleClientset(other), namespaces: corelisters.NewNamespaceLister(indexer(other))}
	r, err = c.ensureNamespace(ctx, s)
	if err != nil || !r.Failed || r.Reason != "NamespaceTaken" {
		t.Errorf("someone else's namespace: %+v, %v", r, err)
	}
	if gone, err := c.cleanupNamespace(ctx, s); err != nil || !gone {
		t.Errorf("cleanup of someone else's namespace: gone %v, %v", gone, err)
	}
	if _, err := c.kube.CoreV1().Namespaces().Get(ctx, s.namespace, metav1.GetOptions{}); err != nil {
		t.Errorf("someone else's namespace was deleted: %v", err)
	}
}

// The addons step creates a TenantAddon per spec.addons entry and is ready only when every
// addon of the cluster, a user's too, is Installed; a failed one fails it with its message.
func TestEnsureAddons(t *testing.T) {
	ctx := context.Background()
	s := stepState(v1alpha1.ProviderLocal)
	client := butlerfake.NewSimpleClientset()
	c := &Controller{butler: client, addons: listers.NewTenantAddonLister(indexer())}
	r, err := c.ensureAddons(ctx, s)
	wantResult(t, "new", r, err, false, "Installing")
	made, err := client.ButlerV1alpha1().TenantAddons("team-a").List(ctx, metav1.ListOptions{})
	if err != nil || len(made.Items) != 3 { // cilium, metallb, traefik
		t.Fatalf("TenantAddons made: %d (%v)", len(made.Items), err)
	}

	var objs []runtime.Object
	for i := range made.Items {
		a := made.Items[i].DeepCopy()
		a.Status.Phase = v1alpha1.TenantAddonInstalled
		objs = append(objs, a)
	}
	users := &v1alpha1.TenantAddon{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "team-a"},
		Spec:   v1alpha1.TenantAddonSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "prod"}},
		Status: v1alpha1.TenantAddonStatus{Phase: v1alpha1.TenantAddonFailed, Message: "chart not found"}}
	c.addons = listers.NewTenantAddonLister(indexer(append(objs, users)...))
	r, err = c.ensureAddons(ctx, s)
	if err != nil || !r.Failed || r.Reason != "AddonFailed" || !strings.Contains(r.Message, "mine: chart not found") {
		t.Errorf("with a failed user addon: %+v, %v", r, err)
	}
	users.Status.Phase = v1alpha1.TenantAddonInstalled
	c.addons = listers.NewTenantAddonLister(indexer(append(objs, users)...))
	r, err = c.ensureAddons(ctx, s)
	wantResult(t, "all installed", r, err, true, "AddonsInstalled")
	if len(s.addons) != 4 {
		t.Errorf("observed addons %v", s.addons)
	}
}

// The control plane object carries the Cluster's ownerReference from the first pass, as Cluster
// API's Cluster controller would set it, so the control plane provider need not wait for that
// controller.
func TestEnsureControlPlaneSetsClusterOwner(t *testing.T) {
	objs, client := fakeObjects(t)
	c := &Controller{objects: objs, kube: kubefake.NewSimpleClientset()}
	s := stepState(v1alpha1.ProviderAWS)
	ctx := context.Background()
	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(external.ClusterGVK)
	stored.SetName("prod")
	stored.SetNamespace(s.namespace)
	stored.SetUID("cluster-uid")
	if err := client.Tracker().Create(external.MustGVR(external.ClusterGVK), stored, s.namespace); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ensureControlPlane(ctx, s); err != nil {
		t.Fatal(err)
	}
	got, err := client.Tracker().Get(external.MustGVR(external.StewardControlPlaneGVK), s.namespace, "prod")
	if err != nil {
		t.Fatal(err)
	}
	refs := got.(*unstructured.Unstructured).GetOwnerReferences()
	want := metav1.OwnerReference{APIVersion: "cluster.x-k8s.io/v1beta2", Kind: "Cluster", Name: "prod", UID: "cluster-uid"}
	if len(refs) != 1 || !reflect.DeepEqual(refs[0], want) {
		t.Errorf("StewardControlPlane ownerReferences %+v, want [%+v]", refs, want)
	}
}

// Auto-repair on: the workers step applies the MachineHealthCheck and says when it holds
// repairs back; off, it removes it; asleep, the check is gone (a hibernated cluster's machines
// are never remediated) and comes back on waking.
func TestEnsureWorkersAutoRepair(t *testing.T) {
	objs, client := fakeObjects(t)
	c := &Controller{objects: objs}
	s := stepState(v1alpha1.ProviderLocal)
	ctx := context.Background()
	mhcGVR := external.MustGVR(external.MachineHealthCheckGVK)
	exists := func() bool {
		_, err := client.Tracker().Get(mhcGVR, s.namespace, "prod-workers")
		return err == nil
	}
	if _, err := c.ensureWorkers(ctx, s); err != nil || exists() {
		t.Fatalf("auto-repair off: err %v, MachineHealthCheck made %v", err, exists())
	}
	s.tc.Spec.Workers.AutoRepair = &v1alpha1.AutoRepair{Enabled: true}
	if _, err := c.ensureWorkers(ctx, s); err != nil || !exists() {
		t.Fatalf("auto-repair on: err %v, MachineHealthCheck made %v", err, exists())
	}
	setStatus(t, client, external.MachineHealthCheckGVK, s.namespace, "prod-workers", map[string]any{
		"expectedMachines": int64(3), "currentHealthy": int64(1),
		"conditions": []any{map[string]any{"type": "RemediationAllowed", "status": "False", "reason": "TooManyUnhealthy",
			"message":            "Remediation is not allowed, the number of not started or unhealthy machines exceeds maxUnhealthy",
			"lastTransitionTime": "2026-11-25T12:00:00Z"}}})
	r, err := c.ensureWorkers(ctx, s)
	if err != nil || !strings.Contains(r.Message, "auto-repair holds off: 2 of 3 workers unhealthy") {
		t.Errorf("too many unhealthy: %q, %v", r.Message, err)
	}
	if r, err := c.ensureWorkersAsleep(ctx, s); err != nil || exists() {
		t.Errorf("asleep: %+v, %v; MachineHealthCheck still there: %v", r, err, exists())
	}
	// The next run (the deletion's event) finds it gone and goes on to the workers.
	r, err = c.ensureWorkersAsleep(ctx, s)
	wantResult(t, "asleep, the check gone", r, err, true, "WorkersAtZero")
	if _, err := c.ensureWorkers(ctx, s); err != nil || !exists() {
		t.Errorf("awake again: err %v, MachineHealthCheck made %v", err, exists())
	}
	s.tc.Spec.Workers.AutoRepair.Enabled = false
	if _, err := c.ensureWorkers(ctx, s); err != nil || exists() {
		t.Errorf("auto-repair turned off: err %v, MachineHealthCheck left %v", err, exists())
	}
}

// A provider's failure (status.failureReason of the control plane object) about the version the
// cluster asks for fails the step (the phase is Failed), not a wait for ever; a failure about
// the version asked before is not believed.
func TestProviderFailureAboutTheVersionAsked(t *testing.T) {
	cp := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{
		"failureReason": "KubernetesVersionUnavailable", "failureMessage": "k8s.io/kubernetes v1.99.0: unknown revision"}}}
	tcp := &steward.TenantControlPlane{}
	tcp.Spec.Kubernetes.Version = "v1.99.0"
	if reason, msg := providerFailure(cp, tcp, "v1.99.0"); reason != "KubernetesVersionUnavailable" || !strings.Contains(msg, "unknown revision") {
		t.Errorf("the version asked: %q %q", reason, msg)
	}
	if reason, _ := providerFailure(cp, tcp, "v1.30.2"); reason != "" {
		t.Errorf("a failure of the version asked before was believed: %q", reason)
	}
}
