// Package controllerkit is what every lifecycle controller runs on: the table both binaries run
// their controllers from, the shared clients and informers (Deps), one queue loop (a rate-limited
// workqueue of string keys, a reconcile function, event handlers that turn informer events into
// keys, and a typed error that asks for a later look without counting as a failure), and the
// Events and own-write bookkeeping they share. (It was named "worker", which here means a node.)
package controllerkit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/time/rate"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// Reconciler brings the object named by key (namespace/name, or name) in line with its spec.
type Reconciler func(ctx context.Context, key string) error

// Queue runs a Reconciler over the keys it is given, each key by one goroutine at a time.
type Queue struct {
	name      string
	reconcile Reconciler
	queue     workqueue.TypedRateLimitingInterface[string]
}

// NewQueue returns a queue named name (its metrics and log name) that runs reconcile.
func NewQueue(name string, reconcile Reconciler) *Queue {
	return &Queue{
		name: name, reconcile: reconcile,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(RateLimiter(),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name}),
	}
}

// RateLimiter retries a failing key after 5ms, doubling up to 10s (not client-go's default
// 1000s: an object stuck behind a transient error should not wait minutes once it clears), and
// bounds all retries together to 10/s with bursts of 100.
func RateLimiter() workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 10*time.Second),
		&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}

// Add queues key now.
func (q *Queue) Add(key string) { q.queue.Add(key) }

// AddAfter queues key after d.
func (q *Queue) AddAfter(key string, d time.Duration) { q.queue.AddAfter(key, d) }

// Enqueue queues obj's key (namespace/name); tombstones of deleted objects are understood.
func (q *Queue) Enqueue(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		q.queue.Add(key)
	}
}

// Handler returns event handlers that queue the keys keys returns for an added, updated or
// deleted object (a tombstone is unwrapped first). An update that changed nothing (a resync)
// is ignored.
func (q *Queue) Handler(keys func(obj any) []string) cache.ResourceEventHandler {
	add := func(obj any) {
		for _, k := range keys(Unwrap(obj)) {
			q.queue.Add(k)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: add, DeleteFunc: add,
		UpdateFunc: func(oldObj, newObj any) {
			if sameVersion(oldObj, newObj) {
				return
			}
			add(newObj)
		},
	}
}

// Run processes keys with workers goroutines once every synced reports true, until ctx is done.
func (q *Queue) Run(ctx context.Context, workers int, synced ...cache.InformerSynced) {
	defer utilruntime.HandleCrashWithContext(ctx)
	defer q.queue.ShutDown()
	logger := klog.FromContext(ctx).WithValues("controller", q.name)
	ctx = klog.NewContext(ctx, logger)
	logger.Info("Starting")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, synced...) {
		return
	}
	for range workers {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for q.next(ctx) {
			}
		}, time.Second)
	}
	<-ctx.Done()
	logger.Info("Stopping")
}

func (q *Queue) next(ctx context.Context) bool {
	key, quit := q.queue.Get()
	if quit {
		return false
	}
	defer q.queue.Done(key)
	logger := klog.FromContext(ctx).WithValues("key", key)
	start := time.Now()
	err := q.reconcile(klog.NewContext(ctx, logger), key)
	logger.V(4).Info("Reconciled", "duration", time.Since(start), "err", err)
	var later *requeue
	switch {
	case errors.Is(err, ErrStaleCopy):
		logger.V(4).Info("Skipped a stale copy")
	case errors.As(err, &later):
		q.queue.Forget(key)
		q.queue.AddAfter(key, later.after)
	case err != nil:
		logger.Error(err, "Reconcile failed; retrying with backoff")
		q.queue.AddRateLimited(key)
	default:
		q.queue.Forget(key)
	}
	return true
}

// requeue is the error RequeueAfter returns.
type requeue struct{ after time.Duration }

func (r *requeue) Error() string { return fmt.Sprintf("look again in %s", r.after) }

// RequeueAfter, returned by a Reconciler, brings the key back after d: for what no watch can
// announce (a token's expiry, a process that may start). It is not logged as a failure and
// resets the key's backoff.
func RequeueAfter(d time.Duration) error { return &requeue{after: d} }

// Unwrap returns the object inside a tombstone, or obj itself.
func Unwrap(obj any) any {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return obj
}
