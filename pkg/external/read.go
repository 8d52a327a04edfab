package external

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// FromUnstructured reads an external object as the dynamic client and its informers hold it into
// its Go type: a mirror of this package's (steward.TenantControlPlane, InfrastructureCluster) or
// Cluster API's own (clusterv1.Cluster, clusterv1.MachineDeployment, ...). Fields the type does
// not have are left out; a field of the wrong type is an error rather than a value read as absent.
func FromUnstructured[T any](u *unstructured.Unstructured) (*T, error) {
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, fmt.Errorf("reading %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return out, nil
}

// FromObject is FromUnstructured for an object as an informer hands it over.
func FromObject[T any](obj any) (*T, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("reading %T: not an unstructured object", obj)
	}
	return FromUnstructured[T](u)
}
