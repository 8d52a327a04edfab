package controllerkit

import (
	"k8s.io/apimachinery/pkg/api/meta"
)

// sameVersion says whether an update event carries the object it replaced (a resync).
func sameVersion(oldObj, newObj any) bool {
	o, err1 := meta.Accessor(oldObj)
	n, err2 := meta.Accessor(newObj)
	return err1 == nil && err2 == nil && o.GetResourceVersion() != "" && o.GetResourceVersion() == n.GetResourceVersion()
}

// ByKey is a key function for Handler: the object's own namespace/name.
func ByKey(obj any) []string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	if m.GetNamespace() == "" {
		return []string{m.GetName()}
	}
	return []string{m.GetNamespace() + "/" + m.GetName()}
}

// DropManagedFields is an informer transform that keeps managedFields out of the caches: no
// controller reads them, and they are a large share of each object.
func DropManagedFields(obj any) (any, error) {
	if o, err := meta.Accessor(obj); err == nil {
		o.SetManagedFields(nil)
	}
	return obj, nil
}
