package main

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

// TestFloorDeletesEachNamespaceOnceItsObjectsAreGone: P4's floor deletes a cluster's namespace
// only after its watches saw the last of its objects go (a Cluster held here, as Cluster API's
// finalizer holds it), as the controller does, and its clock stops when all namespaces are gone.
func TestFloorDeletesEachNamespaceOnceItsObjectsAreGone(t *testing.T) {
	f := newFakePlane(t)
	inputs := floorTestInputs(2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	selector := floorLabel + "=" + lifecycleNamespace
	for _, in := range inputs {
		labels := map[string]string{floorLabel: lifecycleNamespace}
		if _, err := f.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: in.Namespace, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, o := range floorObjects(in) {
			obj := &unstructured.Unstructured{}
			obj.SetGroupVersionKind(o.gvk)
			obj.SetName(o.name)
			obj.SetNamespace(in.Namespace)
			obj.SetLabels(labels)
			if _, err := f.dyn.Resource(external.MustGVR(o.gvk)).Namespace(in.Namespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	held := inputs[0]
	f.dyn.PrependReactor("delete", "clusters", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return a.GetNamespace() == held.Namespace, nil, nil // the finalizer holds it
	})
	namespaceDeletes := make(chan string, 4)
	f.kube.PrependReactor("delete", "namespaces", func(a clienttesting.Action) (bool, runtime.Object, error) {
		namespaceDeletes <- a.(clienttesting.DeleteAction).GetName()
		return false, nil, nil
	})
	done := make(chan error, 1)
	go func() {
		_, err := deleteSide(ctx, nil, f.kube, f.dyn, sideFloor, lifecycleNamespace, selector, inputs, 2)
		done <- err
	}()

	if got := <-namespaceDeletes; got != inputs[1].Namespace {
		t.Fatalf("first namespace deleted %q, want %q (its objects are gone; %q's Cluster is held)", got, inputs[1].Namespace, held.Namespace)
	}
	select {
	case got := <-namespaceDeletes:
		t.Fatalf("namespace %q deleted while its Cluster is held", got)
	case err := <-done:
		t.Fatalf("the clock stopped with a namespace left: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	if err := f.dyn.Tracker().Delete(external.MustGVR(external.ClusterGVK), held.Namespace, held.Cluster.Name); err != nil {
		t.Fatal(err) // the finalizer lets it go
	}
	if got := <-namespaceDeletes; got != held.Namespace {
		t.Fatalf("then namespace %q deleted, want %q", got, held.Namespace)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
