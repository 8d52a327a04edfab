package tenantcluster

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

// objects reads and writes the external kinds (Cluster API, Steward, providers) by GVK, through
// the management cluster's discovery.
type objects struct {
	dyn    dynamic.Interface
	mapper meta.ResettableRESTMapper
}

// NotInstalledError says the management cluster serves no such kind: its CRD is missing.
type NotInstalledError struct{ GVK schema.GroupVersionKind }

func (e *NotInstalledError) Error() string {
	return fmt.Sprintf("the management cluster does not serve %s (%s): install its CRD (artifacts/crds)", e.GVK.Kind, e.GVK.GroupVersion())
}

func (o *objects) resource(gvk schema.GroupVersionKind, ns string) (dynamic.ResourceInterface, error) {
	// A kind installed since discovery was cached is found once the CRD watch resets the mapper
	// (watchCRDs); resetting here would rediscover every group on each read of a missing kind.
	m, err := o.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return nil, &NotInstalledError{GVK: gvk}
	}
	if err != nil {
		return nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameRoot {
		return o.dyn.Resource(m.Resource), nil
	}
	return o.dyn.Resource(m.Resource).Namespace(ns), nil
}

// apply server-side applies obj, owning every field it sets.
func (o *objects) apply(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	r, err := o.resource(obj.GroupVersionKind(), obj.GetNamespace())
	if err != nil {
		return nil, err
	}
	return r.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
}

// get returns the object, or nil when it does not exist (or its kind is not served).
func (o *objects) get(ctx context.Context, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	r, err := o.resource(gvk, ns)
	if _, missing := err.(*NotInstalledError); missing {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	got, err := r.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return got, err
}

// remove deletes the object (in the background: its dependents go after it) and says whether
// it is gone.
func (o *objects) remove(ctx context.Context, gvk schema.GroupVersionKind, ns, name string) (bool, error) {
	got, err := o.get(ctx, gvk, ns, name)
	if err != nil || got == nil {
		return got == nil, err
	}
	if got.GetDeletionTimestamp() != nil {
		return false, nil
	}
	r, err := o.resource(gvk, ns)
	if err != nil {
		return false, err
	}
	policy := metav1.DeletePropagationBackground
	err = r.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy,
		Preconditions: &metav1.Preconditions{UID: ptrTo(got.GetUID())}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return apierrors.IsNotFound(err), nil
	}
	return false, err
}

// unpause removes the CAPI Cluster's spec.paused, if the Cluster exists.
func (o *objects) unpause(ctx context.Context, ns, name string) error {
	r, err := o.resource(external.ClusterGVK, ns)
	if _, missing := err.(*NotInstalledError); missing {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = r.Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"paused":null}}`), metav1.PatchOptions{FieldManager: FieldManager})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func ptrTo[T any](v T) *T { return &v }
