// Package resource holds what every butler resource's registry shares: create/update/status
// strategies over a spec and a status, the store builder and the kubectl table convertor.
// Each kind's package under pkg/registry/butler supplies its validation, fields and columns.
package resource

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// Object is an internal butler API object.
type Object interface {
	runtime.Object
	metav1.Object
}

// Strategy is the create/update/delete strategy of a butler resource whose objects have a
// Spec and a Status. Users write spec through the main resource and controllers write status
// through /status; each path ignores the other's half, and metadata.generation counts spec changes.
type Strategy[T Object, Spec, Status any] struct {
	runtime.ObjectTyper
	names.NameGenerator

	// Namespaced says whether objects live in a namespace.
	Namespaced bool
	// Parts returns pointers to the object's spec and status.
	Parts func(T) (*Spec, *Status)
	// ValidateNew and ValidateChange check the main resource; ValidateStatusChange checks /status.
	ValidateNew          func(obj T) field.ErrorList
	ValidateChange       func(obj, old T) field.ErrorList
	ValidateStatusChange func(obj, old T) field.ErrorList
	// WarningsFor, if set, returns warnings for the client on create and update; ctx is the
	// request's (its namespace, its user).
	WarningsFor func(ctx context.Context, obj T) []string
	// SelectableFields, if set, adds field selector fields beyond metadata.name/namespace.
	SelectableFields func(obj T) fields.Set
	// HasStatus is false for kinds without a status (AddonDefinition).
	HasStatus bool
	// PrepareNew, if set, completes a new object before validation (labels, finalizers).
	PrepareNew func(obj T)
	// PrepareChange, if set, completes an updated object before validation (what the client
	// may not change).
	PrepareChange func(obj, old T)
}

func (s Strategy[T, Spec, Status]) NamespaceScoped() bool { return s.Namespaced }

// PrepareForCreate drops any client-sent status and starts the generation at 1.
func (s Strategy[T, Spec, Status]) PrepareForCreate(_ context.Context, obj runtime.Object) {
	o := obj.(T)
	_, status := s.Parts(o)
	var empty Status
	*status = empty
	o.SetGeneration(1)
	if s.PrepareNew != nil {
		s.PrepareNew(o)
	}
}

// PrepareForUpdate keeps the stored status and bumps the generation when the spec changed.
func (s Strategy[T, Spec, Status]) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newObj, oldObj := obj.(T), old.(T)
	newSpec, newStatus := s.Parts(newObj)
	oldSpec, oldStatus := s.Parts(oldObj)
	*newStatus = *oldStatus

	if apiequality.Semantic.DeepEqual(*newSpec, *oldSpec) {
		newObj.SetGeneration(oldObj.GetGeneration())
	} else {
		newObj.SetGeneration(oldObj.GetGeneration() + 1)
	}
	if s.PrepareChange != nil {
		s.PrepareChange(newObj, oldObj)
	}
}

func (s Strategy[T, Spec, Status]) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return s.ValidateNew(obj.(T))
}

func (s Strategy[T, Spec, Status]) WarningsOnCreate(ctx context.Context, obj runtime.Object) []string {
	if s.WarningsFor == nil {
		return nil
	}
	return s.WarningsFor(ctx, obj.(T))
}

func (s Strategy[T, Spec, Status]) Canonicalize(runtime.Object) {}

func (s Strategy[T, Spec, Status]) AllowCreateOnUpdate(context.Context) bool { return false }

func (s Strategy[T, Spec, Status]) AllowUnconditionalUpdate(context.Context) bool { return true }

func (s Strategy[T, Spec, Status]) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return s.ValidateChange(obj.(T), old.(T))
}

func (s Strategy[T, Spec, Status]) WarningsOnUpdate(ctx context.Context, obj, _ runtime.Object) []string {
	if s.WarningsFor == nil {
		return nil
	}
	return s.WarningsFor(ctx, obj.(T))
}

// GetResetFields tells server-side apply that status is not owned through the main resource.
func (s Strategy[T, Spec, Status]) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	if !s.HasStatus {
		return nil
	}
	return resetFields(fieldpath.MakePathOrDie("status"))
}

// GetAttrs returns the labels and the selectable fields of an object.
func (s Strategy[T, Spec, Status]) GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	o, ok := obj.(T)
	if !ok {
		return nil, nil, fmt.Errorf("unexpected object type %T", obj)
	}
	set := fields.Set{"metadata.name": o.GetName()}
	if s.Namespaced {
		set["metadata.namespace"] = o.GetNamespace()
	}
	if s.SelectableFields != nil {
		set = generic.MergeFieldsSets(set, s.SelectableFields(o))
	}
	return labels.Set(o.GetLabels()), set, nil
}

// Matches is the store's PredicateFunc.
func (s Strategy[T, Spec, Status]) Matches(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: s.GetAttrs}
}

// StatusStrategy is the update strategy of the /status subresource.
type StatusStrategy[T Object, Spec, Status any] struct {
	Strategy[T, Spec, Status]
}

// PrepareForUpdate keeps the stored spec, labels and annotations: /status writes status only.
func (s StatusStrategy[T, Spec, Status]) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newObj, oldObj := obj.(T), old.(T)
	newSpec, _ := s.Parts(newObj)
	oldSpec, _ := s.Parts(oldObj)
	*newSpec = *oldSpec
	newObj.SetLabels(oldObj.GetLabels())
	newObj.SetAnnotations(oldObj.GetAnnotations())
	newObj.SetGeneration(oldObj.GetGeneration())
}

func (s StatusStrategy[T, Spec, Status]) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return s.ValidateStatusChange(obj.(T), old.(T))
}

// WarningsOnUpdate returns nothing: warnings are about the spec, which /status does not change.
func (s StatusStrategy[T, Spec, Status]) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// GetResetFields tells server-side apply that /status does not own spec or metadata.
func (s StatusStrategy[T, Spec, Status]) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetFields(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata", "labels"),
		fieldpath.MakePathOrDie("metadata", "annotations"))
}

func resetFields(paths ...fieldpath.Path) map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(v1alpha1.SchemeGroupVersion.String()): fieldpath.NewSet(paths...),
	}
}
