package storage

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/ipam/store"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// REST is ipallocations: creating one reserves its addresses and deleting one frees them,
// each in one etcd transaction with the object (see pkg/ipam/store). Reads, watches and
// updates (of metadata; spec is immutable and status belongs to the allocator) are the
// generic store's.
type REST struct {
	*resource.REST
	ipam *store.Store
}

// Create allocates: the object is stored with its addresses, or not at all.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	alloc, ok := obj.(*butler.IPAllocation)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected an IPAllocation, got %T", obj))
	}
	// Metadata, name generation, defaults and validation, as the generic store does them.
	rest.FillObjectMetaSystemFields(alloc)
	if alloc.GenerateName != "" && alloc.Name == "" {
		alloc.Name = r.CreateStrategy.GenerateName(alloc.GenerateName)
	}
	if err := rest.BeforeCreate(r.CreateStrategy, ctx, obj); err != nil {
		return nil, err
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	if options != nil && len(options.DryRun) > 0 {
		return r.ipam.DryRun(ctx, alloc)
	}
	return r.ipam.Allocate(ctx, alloc)
}

// Delete frees the addresses with the object. An IPAllocation with finalizers is only
// marked for deletion, by the generic store; once its finalizers are gone the repair loop
// frees what it held.
func (r *REST) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	for attempt := 0; ; attempt++ {
		obj, err := r.Get(ctx, name, &metav1.GetOptions{})
		if err != nil {
			return nil, false, err
		}
		alloc := obj.(*butler.IPAllocation)
		if len(alloc.Finalizers) > 0 || alloc.DeletionTimestamp != nil {
			return r.REST.Delete(ctx, name, deleteValidation, options)
		}
		if options != nil && options.Preconditions != nil {
			if uid := options.Preconditions.UID; uid != nil && *uid != alloc.UID {
				return nil, false, apierrors.NewConflict(butler.Resource("ipallocations"), name,
					fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", *uid, alloc.UID))
			}
			if rv := options.Preconditions.ResourceVersion; rv != nil && *rv != alloc.ResourceVersion {
				return nil, false, apierrors.NewConflict(butler.Resource("ipallocations"), name,
					fmt.Errorf("precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *rv, alloc.ResourceVersion))
			}
		}
		if deleteValidation != nil {
			if err := deleteValidation(ctx, alloc.DeepCopy()); err != nil {
				return nil, false, err
			}
		}
		if options != nil && len(options.DryRun) > 0 {
			return alloc, true, nil
		}
		out, err := r.ipam.Release(ctx, alloc)
		// A concurrent metadata update moved the object: read it again.
		if apierrors.IsConflict(err) && attempt < 5 && (options == nil || options.Preconditions == nil) {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		return out, true, nil
	}
}

// DeleteCollection deletes each matching IPAllocation through Delete, so every one frees
// its addresses (the generic store's would bypass it).
func (r *REST) DeleteCollection(ctx context.Context, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions, listOptions *metainternalversion.ListOptions) (runtime.Object, error) {
	return resource.DeleteEach(ctx, r, deleteValidation, options, listOptions)
}
