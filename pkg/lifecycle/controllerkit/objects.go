package controllerkit

import (
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// Object is a typed API object (a pointer) whose DeepCopy returns its own type.
type Object[T any] interface {
	metav1.Object
	DeepCopy() T
}

// Current reads the object of key (namespace/name, or a name) through get, a lister's read, and
// returns a copy to change: nil when it is gone or key is not one. The error is ErrStaleCopy
// when the cached copy is one that written's own writes replaced.
func Current[T Object[T]](key string, get func(namespace, name string) (T, error), written *OwnWrites) (T, error) {
	var none T
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return none, nil
	}
	cached, err := get(namespace, name)
	if apierrors.IsNotFound(err) {
		return none, nil
	}
	if err != nil {
		return none, err
	}
	if written.Stale(cached.GetUID(), cached.GetResourceVersion()) {
		return none, ErrStaleCopy
	}
	return cached.DeepCopy(), nil
}

// EnsureFinalizer adds finalizer to obj (a copy the caller owns) through update, a client's
// Update, unless obj has it, and records the write in written. It returns the stored object.
func EnsureFinalizer[T Object[T]](ctx context.Context, obj T, finalizer string,
	update func(context.Context, T, metav1.UpdateOptions) (T, error), written *OwnWrites) (T, error) {
	if slices.Contains(obj.GetFinalizers(), finalizer) {
		return obj, nil
	}
	obj.SetFinalizers(append(obj.GetFinalizers(), finalizer))
	updated, err := update(ctx, obj, metav1.UpdateOptions{})
	if err != nil {
		var none T
		return none, err
	}
	written.Wrote(obj.GetUID(), obj.GetResourceVersion(), updated.GetResourceVersion())
	return updated, nil
}

// RemoveFinalizer removes finalizer from the object name as stored, read anew through get (a
// client's Get) so that an old copy cannot undo a later write, and stores it through update.
// An object already gone is no error.
func RemoveFinalizer[T Object[T]](ctx context.Context, name, finalizer string,
	get func(context.Context, string, metav1.GetOptions) (T, error),
	update func(context.Context, T, metav1.UpdateOptions) (T, error)) error {
	latest, err := get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	latest.SetFinalizers(slices.DeleteFunc(latest.GetFinalizers(), func(f string) bool { return f == finalizer }))
	_, err = update(ctx, latest, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
