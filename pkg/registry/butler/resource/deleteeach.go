package resource

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// DeleteEach is a DeleteCollection that deletes every listed object through r's own
// Delete, for resources whose Delete does more than the generic store's (whose
// DeleteCollection would call its own Delete and skip it). It answers the list of what it
// deleted; objects already gone are skipped.
func DeleteEach(ctx context.Context, r interface {
	rest.Lister
	rest.GracefulDeleter
}, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions, listOptions *metainternalversion.ListOptions) (runtime.Object, error) {
	list, err := r.List(ctx, listOptions)
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	var deleted []runtime.Object
	for _, item := range items {
		m, err := meta.Accessor(item)
		if err != nil {
			return nil, err
		}
		obj, _, err := r.Delete(genericapirequest.WithNamespace(ctx, m.GetNamespace()), m.GetName(), deleteValidation, options.DeepCopy())
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		deleted = append(deleted, obj)
	}
	if err := meta.SetList(list, deleted); err != nil {
		return nil, err
	}
	return list, nil
}
