package controllerkit

import (
	"errors"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// OwnWrites remembers, per object, the versions a controller's own writes replaced, to tell a
// stale informer copy from a current one. An object is reconciled on every event of what it
// owns, and often before the informer has seen the controller's own last write to it: such a
// reconcile works from the old copy, and its status write loses with a conflict (a request sent
// for nothing: 2.3 per cluster while 200 TenantClusters were deleted). The watch event of the
// write brings the object back with the current copy, so a reconcile of an old one can stop.
// Versions are compared for equality only, never ordered.
type OwnWrites struct {
	mu       sync.Mutex
	replaced map[types.UID][]string
}

// Wrote records that a write of the object uid, made from the copy at version before, stored
// version after. A write that changed nothing (after == before) makes no event and is not
// recorded: the copy at before is current.
func (w *OwnWrites) Wrote(uid types.UID, before, after string) {
	if after == before || before == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.replaced == nil {
		w.replaced = map[types.UID][]string{}
	}
	w.replaced[uid] = append(w.replaced[uid], before)
}

// Stale says whether the copy at version rv of the object uid is one the controller's own
// writes replaced: the informer has not seen the last of them yet, and its event will come.
// A copy at any other version is current, and what was remembered of older ones is dropped.
func (w *OwnWrites) Stale(uid types.UID, rv string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	versions, ok := w.replaced[uid]
	if !ok {
		return false
	}
	if slices.Contains(versions, rv) {
		return true
	}
	delete(w.replaced, uid)
	return false
}

// ForgetDeleted is an informer handler that drops what is remembered of an object once it is
// deleted, whichever way it went (its finalizer removed by hand too).
func (w *OwnWrites) ForgetDeleted() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		o, err := meta.Accessor(Unwrap(obj))
		if err != nil {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.replaced, o.GetUID())
	}}
}

// ErrStaleCopy, returned by a Reconciler, says it did not run on a copy its own write replaced
// (OwnWrites): the write's event brings the key back. Unlike success it keeps the key's
// backoff, which a retry skipped this way would otherwise reset.
var ErrStaleCopy = errors.New("not reconciled: a copy older than this process's own last write; its event follows")
