package tenantcluster

import (
	"context"
	"crypto/sha256"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// objects reads and writes the external kinds (Cluster API, Steward, providers) by GVK, through
// the management cluster's discovery.
type objects struct {
	dyn    dynamic.Interface
	mapper meta.ResettableRESTMapper
	// watched holds the informers of the kinds the controller watches (set before they start):
	// an apply that their copy shows would change nothing is not sent. A cluster is reconciled
	// on every event of every object it owns, and each request counts against the controllers'
	// client rate limit.
	watched map[schema.GroupVersionResource]cache.SharedIndexInformer
	// applied remembers, per object, what this process last applied to it.
	applied sync.Map // objectKey -> appliedObject
	// deleting remembers, per object, the UID this process asked to delete: an informer copy
	// that does not show the deletion yet is not deleted again.
	deleting sync.Map // objectKey -> types.UID
}

type objectKey struct {
	gvr             schema.GroupVersionResource
	namespace, name string
}

// appliedObject is an apply's configuration (its JSON digest) and the UID of the object it made.
type appliedObject struct {
	digest [sha256.Size]byte
	uid    types.UID
}

// NotInstalledError says the management cluster serves no such kind: its CRD is missing.
type NotInstalledError struct{ GVK schema.GroupVersionKind }

func (e *NotInstalledError) Error() string {
	return fmt.Sprintf("the management cluster does not serve %s (%s): install its CRD (artifacts/crds)", e.GVK.Kind, e.GVK.GroupVersion())
}

func (o *objects) resource(gvk schema.GroupVersionKind, ns string) (dynamic.ResourceInterface, error) {
	r, _, err := o.resourceOf(gvk, ns)
	return r, err
}

// resourceOf is resource, and the key of its object name in the kind's informer.
func (o *objects) resourceOf(gvk schema.GroupVersionKind, ns string) (dynamic.ResourceInterface, schema.GroupVersionResource, error) {
	// A kind installed since discovery was cached is found once the CRD watch resets the mapper
	// (watchCRDs); resetting here would rediscover every group on each read of a missing kind.
	m, err := o.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return nil, schema.GroupVersionResource{}, &NotInstalledError{GVK: gvk}
	}
	if err != nil {
		return nil, schema.GroupVersionResource{}, err
	}
	if m.Scope.Name() == meta.RESTScopeNameRoot {
		return o.dyn.Resource(m.Resource), m.Resource, nil
	}
	return o.dyn.Resource(m.Resource).Namespace(ns), m.Resource, nil
}

// cached is the informer's copy of the object, or nil when its kind is not watched, the
// informer has not synced, or it holds no such object. The copy may lag the API server: its
// watch event, which brings the cluster back, follows.
func (o *objects) cached(gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	u, _ := o.cachedOrAbsent(gvr, ns, name)
	return u
}

// cachedOrAbsent is cached, and whether the informer knows: false when the kind is not watched
// or its informer has not synced (nil then says nothing of the object).
func (o *objects) cachedOrAbsent(gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, bool) {
	inf := o.watched[gvr]
	if inf == nil || !inf.HasSynced() {
		return nil, false
	}
	key := name
	if ns != "" {
		key = ns + "/" + name
	}
	obj, ok, err := inf.GetIndexer().GetByKey(key)
	if err != nil || !ok {
		return nil, err == nil
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, false
	}
	return u.DeepCopy(), true
}

// apply server-side applies obj, owning every field it sets. It sends nothing when this process
// applied the same configuration to the same object before and the object still holds every
// value of it: the apply would change nothing. Any other change (a field dropped from the
// configuration, a value someone else changed, the object made again) is applied.
func (o *objects) apply(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	r, gvr, err := o.resourceOf(obj.GroupVersionKind(), obj.GetNamespace())
	if err != nil {
		return nil, err
	}
	key := objectKey{gvr: gvr, namespace: obj.GetNamespace(), name: obj.GetName()}
	want, digest, err := normalized(obj)
	if err != nil {
		return nil, err
	}
	if live := o.cached(gvr, key.namespace, key.name); live != nil {
		if prev, ok := o.applied.Load(key); ok && prev.(appliedObject) == (appliedObject{digest: digest, uid: live.GetUID()}) &&
			holds(live.Object, want) {
			return live, nil
		}
	}
	sent := time.Now()
	got, err := external.Workers.Apply(ctx, r, obj)
	if err != nil {
		o.applied.Delete(key)
		return nil, err
	}
	appliesSent.WithLabelValues(gvr.Resource, strconv.FormatBool(!appliedNothing(got, sent))).Inc()
	o.applied.Store(key, appliedObject{digest: digest, uid: got.GetUID()})
	return got, nil
}

// appliesSent counts the applies objects.apply sent, by whether they changed the object: those
// that did not are requests to be rid of.
var appliesSent = metrics.NewCounterVec(&metrics.CounterOpts{
	Subsystem: "butler_workers", Name: "applies_total", StabilityLevel: metrics.ALPHA,
	Help: "Server-side applies the TenantCluster workers sent for Cluster API, Steward and provider objects, by resource and by whether they changed the object.",
}, []string{"resource", "changed"})

func init() { legacyregistry.MustRegister(appliesSent) }

// appliedNothing says whether an apply sent at sent left the object as it was: kube-apiserver
// keeps the time of the field manager's entry when an apply changes nothing. Its resolution is a
// second, so an apply within the second of the last change counts as one that changed it.
func appliedNothing(got *unstructured.Unstructured, sent time.Time) bool {
	for _, mf := range got.GetManagedFields() {
		if mf.Manager == string(external.Workers) && mf.Operation == metav1.ManagedFieldsOperationApply && mf.Time != nil {
			return mf.Time.Time.Before(sent.Truncate(time.Second))
		}
	}
	return false
}

// forget drops what this process remembers applying in namespace, once a cluster's objects
// there are gone: without it the memory of applies grows with every cluster ever made.
func (o *objects) forget(namespace string) {
	for _, m := range []*sync.Map{&o.applied, &o.deleting} {
		m.Range(func(k, _ any) bool {
			if k.(objectKey).namespace == namespace {
				m.Delete(k)
			}
			return true
		})
	}
}

// normalized is obj as the API server's JSON decodes it (int64 and float64 numbers, []any and
// map[string]any), to compare with an informer's object, and its digest.
func normalized(obj *unstructured.Unstructured) (map[string]any, [sha256.Size]byte, error) {
	data, err := obj.MarshalJSON()
	if err != nil {
		return nil, [sha256.Size]byte{}, err
	}
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, [sha256.Size]byte{}, err
	}
	return u.Object, sha256.Sum256(data), nil
}

// holds says whether live has every value of want: maps may hold more keys (defaults, status,
// other managers' fields), lists must be as long and hold each item in order, scalars equal.
func holds(live, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			lv, ok := l[k]
			if !ok || !holds(lv, v) {
				return false
			}
		}
		return true
	case []any:
		l, ok := live.([]any)
		if !ok || len(l) != len(w) {
			return false
		}
		for i := range w {
			if !holds(l[i], w[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(live, want)
	}
}

// get returns the object, or nil when it does not exist (or its kind is not served). It asks
// the API server, not the informer: a step decides on what it reads (whether the Cluster is
// paused already, whether an object is gone), and the informer may not have seen the controller's
// own last write yet.
func (o *objects) get(ctx context.Context, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	r, err := o.resource(gvk, ns)
	if _, missing := err.(*NotInstalledError); missing {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	got, err := r.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return got, err
}

// remove deletes the object (in the background: its dependents go after it) and says whether
// it is gone. A watched kind is read from its informer: a deleting cluster is reconciled on
// every event of every object it owns, and asking the API server for each of the kinds it may
// have made (every provider's) was most of its requests. What the informer lacks counts as gone
// unless this process applied it (its own write may not have been seen yet): then the API server
// is asked.
func (o *objects) remove(ctx context.Context, gvk schema.GroupVersionKind, ns, name string) (bool, error) {
	r, gvr, err := o.resourceOf(gvk, ns)
	if _, missing := err.(*NotInstalledError); missing {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	key := objectKey{gvr: gvr, namespace: ns, name: name}
	got, known := o.cachedOrAbsent(gvr, ns, name)
	if known && got == nil {
		if _, applied := o.applied.Load(key); !applied {
			o.deleting.Delete(key)
			return true, nil
		}
	}
	if !known || got == nil {
		if got, err = o.get(ctx, gvk, ns, name); err != nil {
			return false, err
		}
		if got == nil {
			o.applied.Delete(key)
			o.deleting.Delete(key)
			return true, nil
		}
	}
	if got.GetDeletionTimestamp() != nil {
		return false, nil // its finalizers run; its deletion's watch event brings the cluster back
	}
	if uid, asked := o.deleting.Load(key); asked && uid == got.GetUID() {
		return false, nil // deleted already; the informer has not seen it yet, its event follows
	}
	policy := metav1.DeletePropagationBackground
	err = r.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy,
		Preconditions: &metav1.Preconditions{UID: ptrTo(got.GetUID())}})
	if err == nil {
		o.deleting.Store(key, got.GetUID())
	}
	if apierrors.IsNotFound(err) {
		o.applied.Delete(key)
		o.deleting.Delete(key)
		return true, nil
	}
	if apierrors.IsConflict(err) {
		return false, nil // another object of the name (the informer's copy was older): next time
	}
	return false, err
}

// unpause removes the CAPI Cluster's spec.paused, if the Cluster exists.
func (o *objects) unpause(ctx context.Context, ns, name string) error {
	r, err := o.resource(external.ClusterGVK, ns)
	if _, missing := err.(*NotInstalledError); missing {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = r.Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"paused":null}}`), external.Workers.PatchOptions())
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func ptrTo[T any](v T) *T { return &v }

// applyAll applies objs in order; a kind the management cluster does not serve needs a person.
func (c *Controller) applyAll(ctx context.Context, objs ...*unstructured.Unstructured) ([]*unstructured.Unstructured, *steps.Result, error) {
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		if o == nil {
			continue
		}
		got, err := c.objects.apply(ctx, o)
		var missing *NotInstalledError
		if asNotInstalled(err, &missing) {
			r := steps.Failure("CRDNotInstalled", "%s", missing.Error())
			return nil, &r, nil
		}
		if apierrors.IsInvalid(err) {
			r := steps.Failure("Rejected", "the management cluster rejected %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
			return nil, &r, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("applying %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
		out = append(out, got)
	}
	return out, nil, nil
}

func asNotInstalled(err error, into **NotInstalledError) bool {
	m, ok := err.(*NotInstalledError)
	if ok {
		*into = m
	}
	return ok
}

func deref(r *steps.Result) steps.Result {
	if r == nil {
		return steps.Result{}
	}
	return *r
}
