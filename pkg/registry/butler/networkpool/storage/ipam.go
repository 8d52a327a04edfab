package storage

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/ipam"
	"github.com/butlerdotdev/butler-apiserver/pkg/ipam/store"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// REST is networkpools. Its status is computed from the allocation state: on create, after
// a spec change, and in every allocation's transaction. A spec change may not strand a live
// allocation, and a pool with live allocations cannot be deleted.
type REST struct {
	*resource.REST
	ipam        *store.Store
	allocations rest.Lister // ipallocations, to name a pool's holders
}

// Create stores the pool, then its computed status.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	created, err := r.REST.Create(ctx, obj, createValidation, options)
	if err != nil || (options != nil && len(options.DryRun) > 0) {
		return created, err
	}
	pool := created.(*butler.NetworkPool)
	return r.ipam.Refresh(ctx, pool.Namespace, pool.Name)
}

// Update refuses a spec that would strand a live allocation, then recomputes the status.
// The check runs inside the generic store's compare-and-swap loop, and every allocation
// rewrites the pool, so an allocation that lands during the update makes it check again.
func (r *REST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	checked := &shrinkCheck{UpdatedObjectInfo: objInfo, ipam: r.ipam}
	updated, created, err := r.REST.Update(ctx, name, checked, createValidation, updateValidation, forceAllowCreate, options)
	if err != nil || (options != nil && len(options.DryRun) > 0) {
		return updated, created, err
	}
	pool := updated.(*butler.NetworkPool)
	refreshed, err := r.ipam.Refresh(ctx, pool.Namespace, pool.Name)
	return refreshed, created, err
}

type shrinkCheck struct {
	rest.UpdatedObjectInfo
	ipam *store.Store
}

func (c *shrinkCheck) UpdatedObject(ctx context.Context, oldObj runtime.Object) (runtime.Object, error) {
	obj, err := c.UpdatedObjectInfo.UpdatedObject(ctx, oldObj)
	if err != nil {
		return nil, err
	}
	if old, ok := oldObj.(*butler.NetworkPool); !ok || old.ResourceVersion == "" {
		// A create through update (a server-side apply of a new pool; the generic store passes
		// an empty object): nothing is allocated in a pool not stored yet, and asking the
		// store for it answered 404.
		return obj, nil
	}
	pool := obj.(*butler.NetworkPool)
	allocator, _, err := c.ipam.Allocator(ctx, pool.Namespace, pool.Name)
	if err != nil {
		return nil, err
	}
	next, err := ipam.NewPool(store.PoolSpec(&pool.Spec))
	if err != nil {
		return obj, nil // validation answers with the field paths
	}
	if stranded := ipam.Stranded(next, allocator.Allocations()); len(stranded) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: butler.GroupName, Kind: "NetworkPool"}, pool.Name, field.ErrorList{
			field.Forbidden(field.NewPath("spec"), fmt.Sprintf(
				"the new cidr, ranges or reserved CIDRs leave out %d live allocation(s): %s", len(stranded), rangesText(stranded, 5)))})
	}
	return obj, nil
}

// Delete refuses while any address is allocated, naming the IPAllocations.
func (r *REST) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	ns, _ := genericapirequest.NamespaceFrom(ctx)
	allocator, pool, err := r.ipam.Allocator(ctx, ns, name)
	if err != nil {
		return nil, false, err
	}
	if n := allocator.Count(); n > 0 {
		return nil, false, apierrors.NewConflict(butler.Resource("networkpools"), name, fmt.Errorf(
			"%d live allocation(s) hold addresses in it (%s); delete those IPAllocations first", n, r.holders(ctx, name, 5)))
	}
	// Delete the pool as it was when found empty: an allocation since then fails the precondition.
	opts := &metav1.DeleteOptions{}
	if options != nil {
		opts = options.DeepCopy()
	}
	if opts.Preconditions == nil {
		opts.Preconditions = &metav1.Preconditions{}
	}
	if opts.Preconditions.ResourceVersion == nil {
		opts.Preconditions.ResourceVersion = &pool.ResourceVersion
	}
	return r.REST.Delete(ctx, name, deleteValidation, opts)
}

// DeleteCollection deletes each pool through Delete, so the live-allocation rule holds.
func (r *REST) DeleteCollection(ctx context.Context, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions, listOptions *metainternalversion.ListOptions) (runtime.Object, error) {
	return resource.DeleteEach(ctx, r, deleteValidation, options, listOptions)
}

// holders names up to max IPAllocations of the pool.
func (r *REST) holders(ctx context.Context, pool string, max int) string {
	names := []string{}
	if r.allocations == nil {
		return ""
	}
	listObj, err := r.allocations.List(ctx, &metainternalversion.ListOptions{})
	if err != nil {
		return ""
	}
	for _, a := range listObj.(*butler.IPAllocationList).Items {
		if a.Spec.PoolRef.Name == pool {
			names = append(names, a.Name)
		}
	}
	if len(names) > max {
		return strings.Join(names[:max], ", ") + fmt.Sprintf(" and %d more", len(names)-max)
	}
	return strings.Join(names, ", ")
}

func rangesText(rs []ipam.Range, max int) string {
	var parts []string
	for i, r := range rs {
		if i == max {
			parts = append(parts, fmt.Sprintf("and %d more", len(rs)-max))
			break
		}
		parts = append(parts, r.String())
	}
	return strings.Join(parts, ", ")
}

// StatusREST is networkpools/status, read only: the status is computed, never taken from a client.
type StatusREST struct {
	status *resource.StatusREST
}

var _ rest.Getter = &StatusREST{}

func (r *StatusREST) New() runtime.Object { return r.status.New() }
func (r *StatusREST) Destroy()            {}
func (r *StatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.status.Get(ctx, name, options)
}

// AllocateREST is networkpools/allocate: POST an IPAllocation, get it back stored with its
// addresses. The pool is the one in the URL. Authorized as create on networkpools/allocate.
type AllocateREST struct {
	allocations rest.Creater
}

var (
	_ rest.NamedCreater             = &AllocateREST{}
	_ rest.GroupVersionKindProvider = &AllocateREST{}
)

func (r *AllocateREST) New() runtime.Object { return &butler.IPAllocation{} }
func (r *AllocateREST) Destroy()            {}

// GroupVersionKind says the subresource takes and returns IPAllocations.
func (r *AllocateREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return v1alpha1.SchemeGroupVersion.WithKind("IPAllocation")
}

// Create allocates from the pool called name.
func (r *AllocateREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	alloc, ok := obj.(*butler.IPAllocation)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected an IPAllocation, got %T", obj))
	}
	if ref := alloc.Spec.PoolRef.Name; ref != "" && ref != name {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: butler.GroupName, Kind: "IPAllocation"}, alloc.Name, field.ErrorList{
			field.Invalid(field.NewPath("spec", "poolRef", "name"), ref, fmt.Sprintf("must be empty or %q, the pool in the URL", name))})
	}
	alloc.Spec.PoolRef.Name = name
	return r.allocations.Create(ctx, alloc, createValidation, options)
}
