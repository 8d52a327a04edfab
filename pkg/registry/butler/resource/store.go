package resource

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

// Category groups every butler resource: `kubectl get butler -A` lists them all.
const Category = "butler"

// Names are a resource's names as kubectl sees them.
type Names struct {
	Plural     string
	Singular   string
	ShortNames []string
}

// REST is the main endpoint of a butler resource.
type REST struct {
	*genericregistry.Store
	shortNames []string
}

var (
	_ rest.ShortNamesProvider   = &REST{}
	_ rest.CategoriesProvider   = &REST{}
	_ rest.SingularNameProvider = &REST{}
)

// ShortNames implements rest.ShortNamesProvider.
func (r *REST) ShortNames() []string { return r.shortNames }

// Categories implements rest.CategoriesProvider.
func (r *REST) Categories() []string { return []string{Category} }

// NewStore builds the etcd-backed store of a resource from its strategy and table.
func NewStore[T Object, Spec, Status any](
	optsGetter generic.RESTOptionsGetter,
	names Names,
	newObj func() runtime.Object,
	newList func() runtime.Object,
	strategy Strategy[T, Spec, Status],
	table rest.TableConvertor,
) (*REST, error) {
	store := &genericregistry.Store{
		NewFunc:                   newObj,
		NewListFunc:               newList,
		PredicateFunc:             strategy.Matches,
		DefaultQualifiedResource:  butler.Resource(names.Plural),
		SingularQualifiedResource: butler.Resource(names.Singular),

		CreateStrategy:      strategy,
		UpdateStrategy:      strategy,
		DeleteStrategy:      strategy,
		ResetFieldsStrategy: strategy,

		TableConvertor: table,
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: strategy.GetAttrs}); err != nil {
		return nil, err
	}
	return &REST{Store: store, shortNames: names.ShortNames}, nil
}

// NewStatusREST returns the /status endpoint over the same storage as main.
func NewStatusREST[T Object, Spec, Status any](main *REST, strategy Strategy[T, Spec, Status]) *StatusREST {
	statusStrategy := StatusStrategy[T, Spec, Status]{strategy}
	store := *main.Store
	store.CreateStrategy = nil
	store.DeleteStrategy = nil
	store.UpdateStrategy = statusStrategy
	store.ResetFieldsStrategy = statusStrategy
	return &StatusREST{store: &store}
}

// StatusREST is the /status subresource: get and update of status only.
type StatusREST struct {
	store *genericregistry.Store
}

var _ rest.Patcher = &StatusREST{}

// New returns an empty object of the resource.
func (r *StatusREST) New() runtime.Object { return r.store.New() }

// Destroy does nothing: the storage is shared with the main resource, which destroys it.
func (r *StatusREST) Destroy() {}

// Get returns the object, as the status subresource shows the whole object.
func (r *StatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Update writes the status of an existing object; it never creates one.
func (r *StatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

// GetResetFields implements rest.ResetFieldsStrategy for server-side apply.
func (r *StatusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

// ConvertToTable uses the main resource's columns.
func (r *StatusREST) ConvertToTable(ctx context.Context, object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}
