package tenantcluster

import (
	"context"
	"maps"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

// watchedMachineDeployments is fakeObjects with the MachineDeployments watched, synced.
func watchedMachineDeployments(ctx context.Context, t *testing.T) (*objects, *dynamicfake.FakeDynamicClient, schema.GroupVersionResource) {
	o, client := fakeObjects(t)
	gvr, _ := external.GVR(external.MachineDeploymentGVK)
	factory := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	inf := factory.ForResource(gvr).Informer()
	o.watched = map[schema.GroupVersionResource]cache.SharedIndexInformer{gvr: inf}
	factory.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
	return o, client, gvr
}

// An apply that would change nothing is not sent; one that would (a value changed by someone
// else, a field dropped from the configuration, the object gone) is.
func TestApplySendsOnlyWhatChanges(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o, client, gvr := watchedMachineDeployments(ctx, t)

	md := func(replicas int64, labels map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": external.MachineDeploymentGVK.GroupVersion().String(), "kind": external.MachineDeploymentGVK.Kind,
			"metadata": map[string]any{"name": "w", "namespace": "ns"},
			"spec":     map[string]any{"replicas": replicas, "clusterName": "c"}}}
		if labels != nil {
			u.SetLabels(map[string]string{})
			_ = unstructured.SetNestedMap(u.Object, labels, "metadata", "labels")
		}
		return u
	}
	applies := func() int {
		n := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "patch" && a.GetResource() == gvr {
				n++
			}
		}
		return n
	}
	// cachedReplicas waits until the informer holds replicas (or no object, for -1).
	cachedReplicas := func(want int64) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			got := o.cached(gvr, "ns", "w")
			if want < 0 {
				return got == nil, nil
			}
			if got == nil {
				return false, nil
			}
			r, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas")
			return r == want, nil
		}); err != nil {
			t.Fatalf("the informer never held replicas %d", want)
		}
	}
	apply := func(u *unstructured.Unstructured, wantApplies int, why string) {
		t.Helper()
		got, err := o.apply(ctx, u)
		if err != nil || got == nil {
			t.Fatalf("%s: apply = %v, %v", why, got, err)
		}
		if n := applies(); n != wantApplies {
			t.Fatalf("%s: %d applies sent, want %d", why, n, wantApplies)
		}
	}

	apply(md(2, map[string]any{"a": "1"}), 1, "a new object")
	cachedReplicas(2)
	apply(md(2, map[string]any{"a": "1"}), 1, "the same configuration on an object that holds it")
	// Someone else scales it: the configuration is put back.
	live, _ := client.Resource(gvr).Namespace("ns").Get(ctx, "w", metav1.GetOptions{})
	_ = unstructured.SetNestedField(live.Object, int64(5), "spec", "replicas")
	if _, err := client.Resource(gvr).Namespace("ns").Update(ctx, live, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cachedReplicas(5)
	apply(md(2, map[string]any{"a": "1"}), 2, "a value someone else changed")
	cachedReplicas(2)
	// A label the configuration no longer sets: the object still holds the rest, but the apply
	// must go out so that the label is no longer owned (and so removed).
	apply(md(2, nil), 3, "a field dropped from the configuration")
	cachedReplicas(2)
	apply(md(2, nil), 3, "again, unchanged")
	if err := client.Resource(gvr).Namespace("ns").Delete(ctx, "w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cachedReplicas(-1)
	apply(md(2, nil), 4, "the object is gone")
}

// remove reads a watched kind from its informer: an object it lacks, which this process never
// applied, is gone without a request; one being deleted is waited for without one; one this
// process applied is asked for (its own write may not have reached the informer yet); one this
// process deleted is not deleted again while the informer's copy does not show it.
func TestRemoveReadsTheInformer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o, client, gvr := watchedMachineDeployments(ctx, t)
	requests := func() map[string]int {
		n := map[string]int{}
		for _, a := range client.Actions() {
			if a.GetResource() == gvr {
				n[a.GetVerb()]++
			}
		}
		return n
	}
	remove := func(name string, wantGone bool, want map[string]int, why string) {
		t.Helper()
		client.ClearActions()
		gone, err := o.remove(ctx, external.MachineDeploymentGVK, "ns", name)
		if err != nil || gone != wantGone {
			t.Fatalf("%s: remove = %v, %v; want gone %v", why, gone, err, wantGone)
		}
		if got := requests(); !maps.Equal(got, want) {
			t.Fatalf("%s: requests %v, want %v", why, got, want)
		}
	}

	remove("never-made", true, map[string]int{}, "an object nobody made")

	md := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": external.MachineDeploymentGVK.GroupVersion().String(), "kind": external.MachineDeploymentGVK.Kind,
			"metadata": map[string]any{"name": name, "namespace": "ns", "uid": name + "-uid"},
			"spec":     map[string]any{"clusterName": "c"}}}
	}
	cachedAs := func(name string, present, deleting bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			got := o.cached(gvr, "ns", name)
			return (got != nil) == present && (got == nil || (got.GetDeletionTimestamp() != nil) == deleting), nil
		}); err != nil {
			t.Fatalf("the informer never showed %s present %v, deleting %v", name, present, deleting)
		}
	}

	// Being deleted (its finalizers run): waited for without a request.
	deleting := md("deleting")
	now := metav1.Now()
	deleting.SetDeletionTimestamp(&now)
	if err := client.Tracker().Create(gvr, deleting, "ns"); err != nil {
		t.Fatal(err)
	}
	cachedAs("deleting", true, true)
	remove("deleting", false, map[string]int{}, "an object being deleted")

	// Present: deleted without a read first, the informer's UID the precondition.
	if err := client.Tracker().Create(gvr, md("present"), "ns"); err != nil {
		t.Fatal(err)
	}
	cachedAs("present", true, false)
	remove("present", false, map[string]int{"delete": 1}, "an object the informer holds (gone once its deletion is seen)")

	// Deleted by this process, the informer's copy not showing it yet: not deleted again.
	client.PrependReactor("delete", gvr.Resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
		return a.(k8stesting.DeleteAction).GetName() == "unseen", nil, nil
	})
	if err := client.Tracker().Create(gvr, md("unseen"), "ns"); err != nil {
		t.Fatal(err)
	}
	cachedAs("unseen", true, false)
	remove("unseen", false, map[string]int{"delete": 1}, "an object the informer holds")
	remove("unseen", false, map[string]int{}, "the same, its deletion not seen yet")

	// Applied by this process, then gone: the API server is asked once, then it is known gone.
	if _, err := o.apply(ctx, md("applied")); err != nil {
		t.Fatal(err)
	}
	cachedAs("applied", true, false)
	if err := client.Tracker().Delete(gvr, "ns", "applied"); err != nil {
		t.Fatal(err)
	}
	cachedAs("applied", false, false)
	remove("applied", true, map[string]int{"get": 1}, "an object this process applied, gone from the informer")
	remove("applied", true, map[string]int{}, "the same, known gone")
}
