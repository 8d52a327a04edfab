package resource

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
)

// CreateUpdateStrategy is a main resource's create and update strategy.
type CreateUpdateStrategy interface {
	rest.RESTCreateStrategy
	rest.RESTUpdateStrategy
}

// KeepAnnotation wraps a main resource's strategy so that no client writes one annotation
// (the quota Ledger's reservations, which the Ledger writes directly to storage, past this
// strategy): a create drops it, an update keeps the stored value.
type KeepAnnotation struct {
	CreateUpdateStrategy
	Key string
}

var _ CreateUpdateStrategy = KeepAnnotation{}

// PrepareForCreate drops a client-sent annotation.
func (s KeepAnnotation) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	s.CreateUpdateStrategy.PrepareForCreate(ctx, obj)
	if m, err := meta.Accessor(obj); err == nil {
		a := m.GetAnnotations()
		delete(a, s.Key)
		m.SetAnnotations(a)
	}
}

// PrepareForUpdate keeps the stored annotation.
func (s KeepAnnotation) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	s.CreateUpdateStrategy.PrepareForUpdate(ctx, obj, old)
	newMeta, err1 := meta.Accessor(obj)
	oldMeta, err2 := meta.Accessor(old)
	if err1 != nil || err2 != nil {
		return
	}
	KeepStoredAnnotation(newMeta, oldMeta, s.Key)
}

// KeepStoredAnnotation sets obj's annotation key to old's, or removes it when old has none.
func KeepStoredAnnotation(obj, old metav1.Object, key string) {
	a := obj.GetAnnotations()
	if v, ok := old.GetAnnotations()[key]; ok {
		if a == nil {
			a = map[string]string{}
		}
		a[key] = v
	} else {
		delete(a, key)
	}
	obj.SetAnnotations(a)
}
