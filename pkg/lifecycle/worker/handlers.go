package worker

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

// ByLabels is a key function for Handler that maps an object to the owner its labels name: the
// owner's namespace from nsLabel (or the object's own namespace when nsLabel is empty) and its
// name from nameLabel. Objects without nameLabel map to nothing.
func ByLabels(nsLabel, nameLabel string) func(obj any) []string {
	return func(obj any) []string {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil
		}
		l := m.GetLabels()
		name := l[nameLabel]
		if name == "" {
			return nil
		}
		ns := m.GetNamespace()
		if nsLabel != "" {
			ns = l[nsLabel]
		}
		if ns == "" {
			return []string{name}
		}
		return []string{ns + "/" + name}
	}
}

// DropManagedFields is an informer transform that keeps managedFields out of the caches: no
// worker reads them, and they are a large share of each object.
func DropManagedFields(obj any) (any, error) {
	if o, err := meta.Accessor(obj); err == nil {
		o.SetManagedFields(nil)
	}
	return obj, nil
}
