package controllerkit

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// A copy a controller's own writes replaced is stale until the informer shows another version;
// then the record goes. A write that changed nothing marks nothing stale.
func TestOwnWritesTellStaleCopies(t *testing.T) {
	var w OwnWrites
	if w.Stale("a", "1") {
		t.Error("nothing written: stale")
	}
	w.Wrote("a", "1", "2")
	w.Wrote("a", "2", "3") // a second write before the informer saw the first
	if !w.Stale("a", "1") || !w.Stale("a", "2") {
		t.Error("copies the writes replaced: not stale")
	}
	if w.Stale("b", "1") {
		t.Error("another object: stale")
	}
	if w.Stale("a", "3") {
		t.Error("the copy of the last write: stale")
	}
	if w.Stale("a", "1") {
		t.Error("once the current copy was seen, the record should be gone")
	}
	w.Wrote("a", "3", "3")
	if w.Stale("a", "3") {
		t.Error("a write that changed nothing made its own copy stale")
	}
	// Deleted, even seen only as a tombstone: forgotten.
	w.Wrote("a", "3", "4")
	w.Wrote("b", "1", "2")
	forget := w.ForgetDeleted()
	forget.OnDelete(&metav1.ObjectMeta{UID: "a"})
	forget.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/b", Obj: &metav1.ObjectMeta{UID: "b"}})
	if w.Stale("a", "3") || w.Stale("b", "1") {
		t.Error("deleted: stale")
	}
	if len(w.replaced) != 0 {
		t.Errorf("deleted objects still remembered: %v", w.replaced)
	}
}

// A retry skipped as stale keeps the key's backoff: a failing reconcile whose retries met its
// own stale copies would otherwise retry at the first backoff step forever.
func TestStaleSkipKeepsTheBackoff(t *testing.T) {
	results := []error{errors.New("failed"), ErrStaleCopy}
	q := NewQueue("test", func(context.Context, string) error {
		err := results[0]
		results = results[1:]
		return err
	})
	defer q.queue.ShutDown()
	ctx := context.Background()
	q.Add("ns/a")
	q.next(ctx) // fails: backoff 1
	q.next(ctx) // the retry, skipped as stale
	if n := q.queue.NumRequeues("ns/a"); n != 1 {
		t.Errorf("after a failure and a stale skip the key's backoff is %d requeues, want 1", n)
	}
}
