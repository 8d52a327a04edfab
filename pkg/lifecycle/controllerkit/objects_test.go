package controllerkit

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

func configMap(name, rv string, finalizers ...string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: name, UID: types.UID("uid-" + name), ResourceVersion: rv, Finalizers: finalizers,
	}}
}

// Current gives a copy to change of the cached object; nothing when it is gone or the key is
// not one; ErrStaleCopy when the cached copy is one the controller's own write replaced.
func TestCurrentReadsACopyUnlessGoneOrStale(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	cached := configMap("a", "1")
	if err := indexer.Add(cached); err != nil {
		t.Fatal(err)
	}
	get := func(namespace, name string) (*corev1.ConfigMap, error) {
		obj, ok, err := indexer.GetByKey(namespace + "/" + name)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), name)
		}
		return obj.(*corev1.ConfigMap), nil
	}
	var written OwnWrites
	got, err := Current("ns/a", get, &written)
	if err != nil || got == nil || got == cached {
		t.Fatalf("Current = %p, %v; want a copy of %p", got, err, cached)
	}
	for _, key := range []string{"ns/gone", "a/b/c"} {
		if got, err := Current(key, get, &written); got != nil || err != nil {
			t.Errorf("Current(%q) = %v, %v; want nothing", key, got, err)
		}
	}
	written.Wrote(cached.UID, "1", "2")
	if got, err := Current("ns/a", get, &written); got != nil || !errors.Is(err, ErrStaleCopy) {
		t.Errorf("Current of a copy its own write replaced = %v, %v; want ErrStaleCopy", got, err)
	}
}

// EnsureFinalizer writes once, records the write (the copy it replaced is stale), and writes
// nothing when the finalizer is there.
func TestEnsureFinalizerWritesOnce(t *testing.T) {
	var updates int
	update := func(_ context.Context, cm *corev1.ConfigMap, _ metav1.UpdateOptions) (*corev1.ConfigMap, error) {
		updates++
		stored := cm.DeepCopy()
		stored.ResourceVersion = "2"
		return stored, nil
	}
	var written OwnWrites
	stored, err := EnsureFinalizer(context.Background(), configMap("a", "1"), "x/f", update, &written)
	if err != nil || !slices.Equal(stored.Finalizers, []string{"x/f"}) || stored.ResourceVersion != "2" {
		t.Fatalf("EnsureFinalizer = %v, %v; want the stored object with the finalizer", stored, err)
	}
	if !written.Stale(stored.UID, "1") {
		t.Error("the copy the write replaced is not stale")
	}
	if _, err := EnsureFinalizer(context.Background(), stored, "x/f", update, &written); err != nil {
		t.Fatal(err)
	}
	if updates != 1 {
		t.Errorf("%d updates, want 1 (none once the finalizer is there)", updates)
	}
}

// RemoveFinalizer works on the stored object, not the caller's old copy: a finalizer added
// since stays. An object already gone is no error.
func TestRemoveFinalizerKeepsLaterWrites(t *testing.T) {
	client := fake.NewClientset(configMap("a", "1", "x/f", "y/later"))
	maps := client.CoreV1().ConfigMaps("ns")
	if err := RemoveFinalizer(context.Background(), "a", "x/f", maps.Get, maps.Update); err != nil {
		t.Fatal(err)
	}
	got, _ := maps.Get(context.Background(), "a", metav1.GetOptions{})
	if !slices.Equal(got.Finalizers, []string{"y/later"}) {
		t.Errorf("finalizers = %v, want [y/later]", got.Finalizers)
	}
	if err := RemoveFinalizer(context.Background(), "gone", "x/f", maps.Get, maps.Update); err != nil {
		t.Errorf("an object gone: %v", err)
	}
}
