package storage

import (
	"context"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	autoscaling "k8s.io/client-go/scale/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// ScaleREST is tenantclusters/scale: an autoscaling/v1 Scale over spec.workers.replicas, so
// `kubectl scale tenantcluster prod --replicas=5` (and an HPA) can size the worker pool. It reads
// and writes the TenantCluster through the main store, so the Scale's resourceVersion is the
// TenantCluster's and a stale one is refused with a conflict.
//
// Like Kubernetes' own scale endpoints it handles the internal Scale (client-go's
// k8s.io/client-go/scale/scheme, registered in the API server's scheme with its conversions);
// clients see autoscaling/v1, as GroupVersionKind says.
type ScaleREST struct {
	store *genericregistry.Store
}

var (
	_ rest.Storage                  = &ScaleREST{}
	_ rest.Patcher                  = &ScaleREST{}
	_ rest.GroupVersionKindProvider = &ScaleREST{}
)

// scaleGroupVersionKind is the kind the scale subresource speaks.
var scaleGroupVersionKind = autoscalingv1.SchemeGroupVersion.WithKind("Scale")

// replicasPathInTenantCluster maps each served version of TenantCluster to the field the Scale's
// spec.replicas stands for, so server-side apply ownership of the replicas moves between the
// TenantCluster and its Scale.
var replicasPathInTenantCluster = managedfields.ResourcePathMappings{
	v1alpha1.SchemeGroupVersion.String(): fieldpath.MakePathOrDie("spec", "workers", "replicas"),
}

// NewScaleREST returns the scale subresource over the main store of tenantclusters.
func NewScaleREST(store *genericregistry.Store) *ScaleREST {
	return &ScaleREST{store: store}
}

// New returns an empty internal Scale.
func (r *ScaleREST) New() runtime.Object { return &autoscaling.Scale{} }

// Destroy does nothing: the storage is shared with the main resource, which destroys it.
func (r *ScaleREST) Destroy() {}

// GroupVersionKind tells discovery and the handlers that this subresource is autoscaling/v1 Scale.
func (r *ScaleREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return scaleGroupVersionKind
}

// Get returns the Scale of a TenantCluster.
func (r *ScaleREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	obj, err := r.store.Get(ctx, name, options)
	if err != nil {
		return nil, scaleNotFound(err, name)
	}
	return scaleFromTenantCluster(obj.(*butler.TenantCluster)), nil
}

// Update sets spec.workers.replicas from a Scale. It never creates a TenantCluster.
func (r *ScaleREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	obj, _, err := r.store.Update(ctx, name,
		&scaleUpdatedObjectInfo{reqObjInfo: objInfo},
		toScaleCreateValidation(createValidation),
		toScaleUpdateValidation(updateValidation),
		false, options)
	if err != nil {
		return nil, false, scaleNotFound(err, name)
	}
	return scaleFromTenantCluster(obj.(*butler.TenantCluster)), false, nil
}

// scaleNotFound names the subresource in a not-found error, as Kubernetes' own scale endpoints do.
func scaleNotFound(err error, name string) error {
	if apierrors.IsNotFound(err) {
		return apierrors.NewNotFound(butler.Resource("tenantclusters/scale"), name)
	}
	return err
}

// toScaleCreateValidation makes admission, which sees the request's kind (Scale), validate the
// Scale of the object about to be written rather than the TenantCluster.
func toScaleCreateValidation(f rest.ValidateObjectFunc) rest.ValidateObjectFunc {
	if f == nil {
		return nil
	}
	return func(ctx context.Context, obj runtime.Object) error {
		return f(ctx, scaleFromTenantCluster(obj.(*butler.TenantCluster)))
	}
}

// toScaleUpdateValidation is toScaleCreateValidation for updates.
func toScaleUpdateValidation(f rest.ValidateObjectUpdateFunc) rest.ValidateObjectUpdateFunc {
	if f == nil {
		return nil
	}
	return func(ctx context.Context, obj, old runtime.Object) error {
		return f(ctx, scaleFromTenantCluster(obj.(*butler.TenantCluster)), scaleFromTenantCluster(old.(*butler.TenantCluster)))
	}
}

// scaleFromTenantCluster returns the Scale view of a TenantCluster: spec.replicas is the desired
// number of workers, status.replicas the ready ones. TenantClusters have no label selector
// for their workers, so status.selector stays empty.
func scaleFromTenantCluster(tc *butler.TenantCluster) *autoscaling.Scale {
	var ready int32
	if tc.Status.ObservedState != nil {
		ready = tc.Status.ObservedState.Workers.Ready
	}
	return &autoscaling.Scale{
		ObjectMeta: metav1.ObjectMeta{
			Name:              tc.Name,
			Namespace:         tc.Namespace,
			UID:               tc.UID,
			ResourceVersion:   tc.ResourceVersion,
			CreationTimestamp: tc.CreationTimestamp,
		},
		Spec:   autoscaling.ScaleSpec{Replicas: tc.Spec.Workers.Replicas},
		Status: autoscaling.ScaleStatus{Replicas: ready},
	}
}

// validateScale checks a Scale written to the TenantCluster tc.
func validateScale(scale *autoscaling.Scale, tc *butler.TenantCluster) field.ErrorList {
	var allErrs field.ErrorList
	if scale.Name != tc.Name {
		allErrs = append(allErrs, field.Invalid(field.NewPath("metadata", "name"), scale.Name,
			fmt.Sprintf("must match the TenantCluster's name %q", tc.Name)))
	}
	if scale.Namespace != "" && scale.Namespace != tc.Namespace {
		allErrs = append(allErrs, field.Invalid(field.NewPath("metadata", "namespace"), scale.Namespace,
			fmt.Sprintf("must match the TenantCluster's namespace %q", tc.Namespace)))
	}
	if scale.Spec.Replicas < 0 {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec", "replicas"), scale.Spec.Replicas,
			"must be greater than or equal to 0"))
	}
	return allErrs
}

// applyScale writes a validated Scale into a copy of the TenantCluster: the replicas, and the
// resourceVersion as the precondition of the write (empty means unconditional).
func applyScale(tc *butler.TenantCluster, scale *autoscaling.Scale) (*butler.TenantCluster, error) {
	if errs := validateScale(scale, tc); len(errs) > 0 {
		return nil, apierrors.NewInvalid(scaleGroupVersionKind.GroupKind(), tc.Name, errs)
	}
	if scale.UID != "" && scale.UID != tc.UID {
		return nil, apierrors.NewConflict(butler.Resource("tenantclusters"), tc.Name,
			fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", scale.UID, tc.UID))
	}
	updated := tc.DeepCopy()
	updated.Spec.Workers.Replicas = scale.Spec.Replicas
	updated.ResourceVersion = scale.ResourceVersion
	return updated, nil
}

// scaleUpdatedObjectInfo turns the caller's update of a Scale into an update of the TenantCluster.
type scaleUpdatedObjectInfo struct {
	reqObjInfo rest.UpdatedObjectInfo
}

// Preconditions are the caller's.
func (i *scaleUpdatedObjectInfo) Preconditions() *metav1.Preconditions {
	return i.reqObjInfo.Preconditions()
}

// UpdatedObject shows the caller the current Scale, takes the Scale it wants back, and applies
// that to the stored TenantCluster.
func (i *scaleUpdatedObjectInfo) UpdatedObject(ctx context.Context, oldObj runtime.Object) (runtime.Object, error) {
	tc, ok := oldObj.(*butler.TenantCluster)
	if !ok {
		return nil, fmt.Errorf("expected an existing TenantCluster, got %T", oldObj)
	}
	managedFieldsHandler := managedfields.NewScaleHandler(tc.ManagedFields, v1alpha1.SchemeGroupVersion, replicasPathInTenantCluster)

	oldScale := scaleFromTenantCluster(tc)
	scaleManagedFields, err := managedFieldsHandler.ToSubresource()
	if err != nil {
		return nil, err
	}
	oldScale.ManagedFields = scaleManagedFields

	newScaleObj, err := i.reqObjInfo.UpdatedObject(ctx, oldScale)
	if err != nil {
		return nil, err
	}
	if newScaleObj == nil {
		return nil, apierrors.NewBadRequest("nil update passed to Scale")
	}
	scale, ok := newScaleObj.(*autoscaling.Scale)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected input object type to be Scale, but %T", newScaleObj))
	}

	updated, err := applyScale(tc, scale)
	if err != nil {
		return nil, err
	}
	updated.ManagedFields, err = managedFieldsHandler.ToParent(scale.ManagedFields)
	if err != nil {
		return nil, err
	}
	return updated, nil
}
