package integration

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// object is a v1alpha1 butler object as the clientset returns it.
type object interface {
	runtime.Object
	metav1.Object
}

// typedClient is what every generated per-kind client offers.
type typedClient[T object, L runtime.Object] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// crudCase exercises one kind from its example manifest.
type crudCase[T object, L runtime.Object] struct {
	manifest   string
	client     func(namespace string) typedClient[T, L]
	namespaced bool
	newObj     func() T
	// changeSpec changes the spec, which must bump metadata.generation, or, for a kind whose
	// spec is immutable, be refused with 422.
	changeSpec    func(T)
	specImmutable bool
	items         func(L) []T
	// setup creates what the object refers to in its namespace.
	setup func(t *testing.T, namespace string)
	// moved points the object's references to its own namespace at the test's namespace.
	moved func(T)
	// settled, if set, says a controller has written the new object's status; the steps wait for
	// it, so that write is not taken for theirs.
	settled func(T) bool
}

func (c crudCase[T, L]) run(t *testing.T) {
	ctx := context.Background()
	obj := c.newObj()
	readManifest(t, c.manifest, obj)
	ns := ""
	if c.namespaced {
		ns = "crud-" + obj.GetName()
		obj.SetNamespace(ns)
		if c.moved != nil {
			c.moved(obj)
		}
	}
	client := c.client(ns)
	if c.setup != nil {
		c.setup(t, ns)
	}

	created, err := client.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.GetGeneration() != 1 || created.GetUID() == "" || created.GetResourceVersion() == "" {
		t.Fatalf("create: generation %d, uid %q, resourceVersion %q", created.GetGeneration(), created.GetUID(), created.GetResourceVersion())
	}
	if c.settled != nil {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			got, err := client.Get(ctx, obj.GetName(), metav1.GetOptions{})
			return err == nil && c.settled(got), nil
		})
		if err != nil {
			t.Fatalf("the worker did not write the status of %s: %v", obj.GetName(), err)
		}
	}

	got, err := client.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil || got.GetUID() != created.GetUID() {
		t.Fatalf("get: %v (uid %v, want %v)", err, got.GetUID(), created.GetUID())
	}

	list, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if !containsName(c.items(list), obj.GetName()) {
		t.Fatalf("list does not contain %s", obj.GetName())
	}
	listRV := mustListRV(t, list)

	w, err := client.Watch(ctx, metav1.ListOptions{ResourceVersion: listRV,
		FieldSelector: "metadata.name=" + obj.GetName()})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()

	// A metadata-only update keeps the generation.
	got.SetLabels(map[string]string{"tier": "gold"})
	updated, err := client.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update labels: %v", err)
	}
	if updated.GetGeneration() != 1 {
		t.Errorf("label update changed generation to %d", updated.GetGeneration())
	}
	expectEvent(t, w, watch.Modified, obj.GetName())

	// A spec change bumps it; an immutable spec refuses the change.
	changed := updated.DeepCopyObject().(T)
	c.changeSpec(changed)
	changed, err = client.Update(ctx, changed, metav1.UpdateOptions{})
	switch {
	case c.specImmutable:
		if !apierrors.IsInvalid(err) {
			t.Errorf("changing an immutable spec: want 422 Invalid, got %v", err)
		}
	case err != nil:
		t.Fatalf("update spec: %v", err)
	default:
		if changed.GetGeneration() != 2 {
			t.Errorf("spec update: generation %d, want 2", changed.GetGeneration())
		}
		expectEvent(t, w, watch.Modified, obj.GetName())
	}

	// A stale resourceVersion is a conflict.
	stale := created.DeepCopyObject().(T)
	stale.SetLabels(map[string]string{"tier": "bronze"})
	if _, err := client.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("update with stale resourceVersion: want 409 Conflict, got %v", err)
	}

	patched, err := client.Patch(ctx, obj.GetName(), types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"butler.butlerlabs.dev/owner":"platform"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("patch: %v", err)
	}
	if patched.GetAnnotations()["butler.butlerlabs.dev/owner"] != "platform" || patched.GetLabels()["tier"] != "gold" {
		t.Errorf("patch: annotations %v labels %v", patched.GetAnnotations(), patched.GetLabels())
	}
	expectEvent(t, w, watch.Modified, obj.GetName())

	if err := client.Delete(ctx, obj.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	expectEvent(t, w, watch.Deleted, obj.GetName())
	if _, err := client.Get(ctx, obj.GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: want 404, got %v", err)
	}
	c.applyCreates(t, client, obj)
}

// applyCreates checks that a server-side apply of obj, which does not exist, creates it (as
// kubectl apply --server-side and every GitOps tool do), then deletes it again.
func (c crudCase[T, L]) applyCreates(t *testing.T, client typedClient[T, L], obj T) {
	ctx := context.Background()
	body := obj.DeepCopyObject().(T)
	body.GetObjectKind().SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind(reflect.TypeOf(body).Elem().Name()))
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	applied, err := client.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "crud-test"})
	if err != nil {
		t.Fatalf("server-side apply of a new %s: %v", body.GetObjectKind().GroupVersionKind().Kind, err)
	}
	if applied.GetGeneration() != 1 || applied.GetUID() == "" {
		t.Errorf("server-side apply created generation %d, uid %q", applied.GetGeneration(), applied.GetUID())
	}
	if err := client.Delete(ctx, obj.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete after apply: %v", err)
	}
}

func TestCRUDEveryKind(t *testing.T) {
	c := shared.Client.ButlerV1alpha1()
	t.Run("ButlerConfig", crudCase[*v1alpha1.ButlerConfig, *v1alpha1.ButlerConfigList]{
		manifest: "artifacts/examples/00-butlerconfig.yaml",
		client: func(string) typedClient[*v1alpha1.ButlerConfig, *v1alpha1.ButlerConfigList] {
			return c.ButlerConfigs()
		},
		newObj:     func() *v1alpha1.ButlerConfig { return &v1alpha1.ButlerConfig{} },
		changeSpec: func(o *v1alpha1.ButlerConfig) { o.Spec.MultiTenancy.Mode = v1alpha1.MultiTenancyEnforced },
		items:      func(l *v1alpha1.ButlerConfigList) []*v1alpha1.ButlerConfig { return ptrs(l.Items) },
		settled:    func(o *v1alpha1.ButlerConfig) bool { return o.Status.ControlPlaneExposureMode != "" },
	}.run)
	t.Run("Team", crudCase[*v1alpha1.Team, *v1alpha1.TeamList]{
		manifest: "artifacts/examples/01-team.yaml",
		client: func(string) typedClient[*v1alpha1.Team, *v1alpha1.TeamList] {
			return c.Teams()
		},
		newObj:     func() *v1alpha1.Team { return &v1alpha1.Team{} },
		changeSpec: func(o *v1alpha1.Team) { o.Spec.DisplayName = "Team A (payments)" },
		items:      func(l *v1alpha1.TeamList) []*v1alpha1.Team { return ptrs(l.Items) },
	}.run)
	t.Run("ProviderConfig", crudCase[*v1alpha1.ProviderConfig, *v1alpha1.ProviderConfigList]{
		manifest:   "artifacts/examples/02-providerconfig.yaml",
		namespaced: true,
		client: func(ns string) typedClient[*v1alpha1.ProviderConfig, *v1alpha1.ProviderConfigList] {
			return c.ProviderConfigs(ns)
		},
		newObj:     func() *v1alpha1.ProviderConfig { return &v1alpha1.ProviderConfig{} },
		changeSpec: func(o *v1alpha1.ProviderConfig) { o.Spec.Network.DNSServers = []string{"10.40.0.2"} },
		items:      func(l *v1alpha1.ProviderConfigList) []*v1alpha1.ProviderConfig { return ptrs(l.Items) },
	}.run)
	t.Run("NetworkPool", crudCase[*v1alpha1.NetworkPool, *v1alpha1.NetworkPoolList]{
		manifest:   "artifacts/examples/03-networkpool.yaml",
		namespaced: true,
		client: func(ns string) typedClient[*v1alpha1.NetworkPool, *v1alpha1.NetworkPoolList] {
			return c.NetworkPools(ns)
		},
		newObj:     func() *v1alpha1.NetworkPool { return &v1alpha1.NetworkPool{} },
		changeSpec: func(o *v1alpha1.NetworkPool) { o.Spec.Defaults.NodesPerTenant = ptr.To[int32](7) },
		items:      func(l *v1alpha1.NetworkPoolList) []*v1alpha1.NetworkPool { return ptrs(l.Items) },
	}.run)
	t.Run("IPAllocation", crudCase[*v1alpha1.IPAllocation, *v1alpha1.IPAllocationList]{
		manifest:   "artifacts/examples/04-ipallocation.yaml",
		namespaced: true,
		client: func(ns string) typedClient[*v1alpha1.IPAllocation, *v1alpha1.IPAllocationList] {
			return c.IPAllocations(ns)
		},
		newObj:        func() *v1alpha1.IPAllocation { return &v1alpha1.IPAllocation{} },
		changeSpec:    func(o *v1alpha1.IPAllocation) { o.Spec.Count = ptr.To[int32](16) },
		specImmutable: true,
		items:         func(l *v1alpha1.IPAllocationList) []*v1alpha1.IPAllocation { return ptrs(l.Items) },
		setup:         func(t *testing.T, ns string) { createPool(t, ns, "lab") },
	}.run)
	t.Run("AddonDefinition", crudCase[*v1alpha1.AddonDefinition, *v1alpha1.AddonDefinitionList]{
		manifest: "artifacts/examples/05-addondefinition.yaml",
		client: func(string) typedClient[*v1alpha1.AddonDefinition, *v1alpha1.AddonDefinitionList] {
			return c.AddonDefinitions()
		},
		newObj:     func() *v1alpha1.AddonDefinition { return &v1alpha1.AddonDefinition{} },
		changeSpec: func(o *v1alpha1.AddonDefinition) { o.Spec.Chart.DefaultVersion = "3.12.1" },
		items:      func(l *v1alpha1.AddonDefinitionList) []*v1alpha1.AddonDefinition { return ptrs(l.Items) },
	}.run)
	t.Run("TenantCluster", crudCase[*v1alpha1.TenantCluster, *v1alpha1.TenantClusterList]{
		manifest:   "artifacts/examples/06-tenantcluster.yaml",
		namespaced: true,
		client: func(ns string) typedClient[*v1alpha1.TenantCluster, *v1alpha1.TenantClusterList] {
			return c.TenantClusters(ns)
		},
		newObj: func() *v1alpha1.TenantCluster { return &v1alpha1.TenantCluster{} },
		moved: func(o *v1alpha1.TenantCluster) {
			o.Spec.TeamRef.Name, o.Spec.ProviderConfigRef.Namespace = o.Namespace, o.Namespace
		},
		changeSpec: func(o *v1alpha1.TenantCluster) { o.Spec.Workers.Replicas = 5 },
		items:      func(l *v1alpha1.TenantClusterList) []*v1alpha1.TenantCluster { return ptrs(l.Items) },
	}.run)
	t.Run("TenantAddon", crudCase[*v1alpha1.TenantAddon, *v1alpha1.TenantAddonList]{
		manifest:   "artifacts/examples/07-tenantaddon.yaml",
		namespaced: true,
		client: func(ns string) typedClient[*v1alpha1.TenantAddon, *v1alpha1.TenantAddonList] {
			return c.TenantAddons(ns)
		},
		newObj:     func() *v1alpha1.TenantAddon { return &v1alpha1.TenantAddon{} },
		changeSpec: func(o *v1alpha1.TenantAddon) { o.Spec.Version = "3.12.1" },
		items:      func(l *v1alpha1.TenantAddonList) []*v1alpha1.TenantAddon { return ptrs(l.Items) },
	}.run)
}

func expectEvent(t *testing.T, w watch.Interface, want watch.EventType, name string) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatalf("watch closed while waiting for %s of %s", want, name)
		}
		accessor, err := meta.Accessor(ev.Object)
		if ev.Type != want || err != nil || accessor.GetName() != name {
			t.Fatalf("watch: got %s %v (%v), want %s %s", ev.Type, ev.Object, err, want, name)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s event for %s within 30s", want, name)
	}
}

func mustListRV(t *testing.T, list runtime.Object) string {
	t.Helper()
	l, err := meta.ListAccessor(list)
	if err != nil {
		t.Fatal(err)
	}
	return l.GetResourceVersion()
}

func containsName[T object](items []T, name string) bool {
	for _, item := range items {
		if item.GetName() == name {
			return true
		}
	}
	return false
}

func ptrs[E any](items []E) []*E {
	out := make([]*E, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
