package tenantcluster

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestForgetDropsOnlyThatNamespace: a deleted cluster's applies are forgotten, others' are kept.
func TestForgetDropsOnlyThatNamespace(t *testing.T) {
	o := &objects{}
	gvr := schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}
	o.applied.Store(objectKey{gvr: gvr, namespace: "gone", name: "a"}, appliedObject{})
	o.applied.Store(objectKey{gvr: gvr, namespace: "kept", name: "b"}, appliedObject{})
	o.forget("gone")
	if _, ok := o.applied.Load(objectKey{gvr: gvr, namespace: "gone", name: "a"}); ok {
		t.Error("the deleted cluster's apply is still remembered")
	}
	if _, ok := o.applied.Load(objectKey{gvr: gvr, namespace: "kept", name: "b"}); !ok {
		t.Error("another cluster's apply was forgotten")
	}
}
