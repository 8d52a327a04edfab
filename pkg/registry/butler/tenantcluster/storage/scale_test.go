package storage

import (
	"context"
	"encoding/json"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	autoscaling "k8s.io/client-go/scale/scheme"
	scaleautoscalingv1 "k8s.io/client-go/scale/scheme/autoscalingv1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

func testTenantCluster() *butler.TenantCluster {
	return &butler.TenantCluster{
		ObjectMeta: metav1.ObjectMeta{
			Name:              "prod",
			Namespace:         "team-a",
			UID:               "uid-1",
			ResourceVersion:   "42",
			Generation:        3,
			CreationTimestamp: metav1.Unix(1700000000, 0),
			Labels:            map[string]string{"team": "a"},
		},
		Spec: butler.TenantClusterSpec{
			KubernetesVersion: "v1.31.4",
			Workers:           butler.WorkersSpec{Replicas: 3},
		},
	}
}

func TestScaleFromTenantCluster(t *testing.T) {
	tc := testTenantCluster()

	scale := scaleFromTenantCluster(tc)
	if scale.Name != "prod" || scale.Namespace != "team-a" || scale.UID != "uid-1" || scale.ResourceVersion != "42" ||
		!scale.CreationTimestamp.Equal(&tc.CreationTimestamp) {
		t.Errorf("metadata not copied: %+v", scale.ObjectMeta)
	}
	if len(scale.Labels) != 0 {
		t.Errorf("labels copied to the Scale: %v", scale.Labels)
	}
	if scale.Spec.Replicas != 3 {
		t.Errorf("spec.replicas = %d, want 3", scale.Spec.Replicas)
	}
	if scale.Status.Replicas != 0 {
		t.Errorf("status.replicas = %d without observedState, want 0", scale.Status.Replicas)
	}
	if scale.Status.Selector != nil {
		t.Errorf("status.selector = %v, want none", scale.Status.Selector)
	}

	tc.Status.ObservedState = &butler.ObservedClusterState{Workers: butler.WorkerCounts{Desired: 3, Ready: 2}}
	if got := scaleFromTenantCluster(tc).Status.Replicas; got != 2 {
		t.Errorf("status.replicas = %d, want observedState.workers.ready 2", got)
	}
}

// TestScaleWireForm converts the internal Scale the way the API server's scheme does, and checks
// what clients get: autoscaling/v1 with an empty selector.
func TestScaleWireForm(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := scaleautoscalingv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := autoscaling.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	tc := testTenantCluster()
	tc.Status.ObservedState = &butler.ObservedClusterState{Workers: butler.WorkerCounts{Ready: 1}}

	out, err := scheme.ConvertToVersion(scaleFromTenantCluster(tc), autoscalingv1.SchemeGroupVersion)
	if err != nil {
		t.Fatalf("converting to autoscaling/v1: %v", err)
	}
	v1Scale, ok := out.(*autoscalingv1.Scale)
	if !ok {
		t.Fatalf("converted to %T, want *autoscalingv1.Scale", out)
	}
	if v1Scale.Spec.Replicas != 3 || v1Scale.Status.Replicas != 1 || v1Scale.Status.Selector != "" || v1Scale.ResourceVersion != "42" {
		t.Errorf("unexpected autoscaling/v1 Scale: %+v", v1Scale)
	}

	back, err := scheme.ConvertToVersion(v1Scale, autoscaling.SchemeGroupVersion)
	if err != nil {
		t.Fatalf("converting to the internal version: %v", err)
	}
	if _, ok := back.(*autoscaling.Scale); !ok {
		t.Fatalf("converted to %T, want the internal *scheme.Scale", back)
	}
}

func TestValidateScale(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*autoscaling.Scale)
		want   []string // field paths
	}{
		{"valid", func(*autoscaling.Scale) {}, nil},
		{"zero replicas", func(s *autoscaling.Scale) { s.Spec.Replicas = 0 }, nil},
		{"no namespace", func(s *autoscaling.Scale) { s.Namespace = "" }, nil},
		{"negative replicas", func(s *autoscaling.Scale) { s.Spec.Replicas = -1 }, []string{"spec.replicas"}},
		{"other name", func(s *autoscaling.Scale) { s.Name = "other" }, []string{"metadata.name"}},
		{"other namespace", func(s *autoscaling.Scale) { s.Namespace = "team-b" }, []string{"metadata.namespace"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc := testTenantCluster()
			scale := scaleFromTenantCluster(tc)
			tt.modify(scale)
			errs := validateScale(scale, tc)
			if len(errs) != len(tt.want) {
				t.Fatalf("got errors %v, want on %v", errs, tt.want)
			}
			for i, err := range errs {
				if err.Field != tt.want[i] || err.Type != field.ErrorTypeInvalid {
					t.Errorf("error %d = %v, want Invalid on %s", i, err, tt.want[i])
				}
			}
		})
	}
}

func TestApplyScale(t *testing.T) {
	tc := testTenantCluster()
	scale := scaleFromTenantCluster(tc)
	scale.Spec.Replicas = 5

	updated, err := applyScale(tc, scale)
	if err != nil {
		t.Fatal(err)
	}
	if updated.Spec.Workers.Replicas != 5 || updated.ResourceVersion != "42" {
		t.Errorf("got replicas %d resourceVersion %q, want 5 and 42", updated.Spec.Workers.Replicas, updated.ResourceVersion)
	}
	if updated.Spec.KubernetesVersion != "v1.31.4" || updated.Labels["team"] != "a" {
		t.Errorf("the rest of the TenantCluster was not kept: %+v", updated)
	}
	if tc.Spec.Workers.Replicas != 3 {
		t.Errorf("applyScale modified the stored object")
	}

	// No resourceVersion: an unconditional update, left to the store.
	scale.ResourceVersion = ""
	if updated, err = applyScale(tc, scale); err != nil || updated.ResourceVersion != "" {
		t.Errorf("unconditional: got resourceVersion %q, err %v", updated.ResourceVersion, err)
	}
	// A stale resourceVersion is passed on, so that the store refuses it with a conflict.
	scale.ResourceVersion = "1"
	if updated, err = applyScale(tc, scale); err != nil || updated.ResourceVersion != "1" {
		t.Errorf("stale: got resourceVersion %q, err %v", updated.ResourceVersion, err)
	}
}

func TestApplyScaleErrors(t *testing.T) {
	tc := testTenantCluster()

	negative := scaleFromTenantCluster(tc)
	negative.Spec.Replicas = -1
	_, err := applyScale(tc, negative)
	if !apierrors.IsInvalid(err) {
		t.Fatalf("negative replicas: got %v, want 422 Invalid", err)
	}
	status := err.(apierrors.APIStatus).Status()
	if status.Code != 422 || status.Details.Group != "autoscaling" || status.Details.Kind != "Scale" || status.Details.Name != "prod" {
		t.Errorf("unexpected status details: code %d %+v", status.Code, status.Details)
	}
	if len(status.Details.Causes) != 1 || status.Details.Causes[0].Field != "spec.replicas" {
		t.Errorf("unexpected causes: %+v", status.Details.Causes)
	}

	otherUID := scaleFromTenantCluster(tc)
	otherUID.UID = "uid-2"
	if _, err := applyScale(tc, otherUID); !apierrors.IsConflict(err) {
		t.Errorf("other UID: got %v, want 409 Conflict", err)
	}
}

// recordingObjInfo stands for the handler's UpdatedObjectInfo: it records the Scale it is shown
// and answers with a modified copy.
type recordingObjInfo struct {
	seen   *autoscaling.Scale
	modify func(*autoscaling.Scale) runtime.Object
}

func (r *recordingObjInfo) Preconditions() *metav1.Preconditions { return nil }

func (r *recordingObjInfo) UpdatedObject(_ context.Context, oldObj runtime.Object) (runtime.Object, error) {
	r.seen = oldObj.(*autoscaling.Scale)
	return r.modify(r.seen.DeepCopy()), nil
}

func managedEntry(manager, apiVersion, subresource, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{
		Manager:     manager,
		Operation:   metav1.ManagedFieldsOperationUpdate,
		APIVersion:  apiVersion,
		FieldsType:  "FieldsV1",
		FieldsV1:    metav1.NewFieldsV1(fields),
		Subresource: subresource,
	}
}

func fieldsOf(t *testing.T, entries []metav1.ManagedFieldsEntry, manager string) (string, map[string]any) {
	t.Helper()
	var found []metav1.ManagedFieldsEntry
	for _, e := range entries {
		if e.Manager == manager {
			found = append(found, e)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one managed fields entry of %q, got %d in %+v", manager, len(found), entries)
	}
	var fields map[string]any
	if err := json.Unmarshal(found[0].FieldsV1.GetRawBytes(), &fields); err != nil {
		t.Fatal(err)
	}
	return found[0].APIVersion, fields
}

func TestScaleUpdatedObject(t *testing.T) {
	tc := testTenantCluster()
	tc.ManagedFields = []metav1.ManagedFieldsEntry{
		managedEntry("creator", "butler.butlerlabs.dev/v1alpha1", "",
			`{"f:spec":{"f:kubernetesVersion":{},"f:workers":{"f:replicas":{}}}}`),
	}
	objInfo := &recordingObjInfo{modify: func(s *autoscaling.Scale) runtime.Object {
		s.Spec.Replicas = 5
		// The handler's field manager moves spec.replicas to the new manager; creator owned
		// nothing else on the Scale, so its entry goes away.
		s.ManagedFields = []metav1.ManagedFieldsEntry{
			managedEntry("scaler", "autoscaling/v1", "scale", `{"f:spec":{"f:replicas":{}}}`)}
		return s
	}}

	obj, err := (&scaleUpdatedObjectInfo{reqObjInfo: objInfo}).UpdatedObject(context.Background(), tc)
	if err != nil {
		t.Fatal(err)
	}

	// The caller saw the current Scale, with the TenantCluster's replicas owner mapped onto it.
	if objInfo.seen.Spec.Replicas != 3 || objInfo.seen.ResourceVersion != "42" {
		t.Errorf("caller saw %+v", objInfo.seen)
	}
	if apiVersion, fields := fieldsOf(t, objInfo.seen.ManagedFields, "creator"); apiVersion != "autoscaling/v1" ||
		fields["f:spec"].(map[string]any)["f:replicas"] == nil {
		t.Errorf("creator on the Scale: %s %v", apiVersion, fields)
	}

	updated := obj.(*butler.TenantCluster)
	if updated.Spec.Workers.Replicas != 5 || updated.ResourceVersion != "42" {
		t.Errorf("got replicas %d resourceVersion %q", updated.Spec.Workers.Replicas, updated.ResourceVersion)
	}
	// The new owner of spec.replicas owns spec.workers.replicas of the TenantCluster; the old one
	// keeps only its other fields.
	apiVersion, fields := fieldsOf(t, updated.ManagedFields, "scaler")
	if workers, _ := fields["f:spec"].(map[string]any)["f:workers"].(map[string]any); apiVersion != "butler.butlerlabs.dev/v1alpha1" || workers["f:replicas"] == nil {
		t.Errorf("scaler on the TenantCluster: %s %v", apiVersion, fields)
	}
	_, fields = fieldsOf(t, updated.ManagedFields, "creator")
	if spec := fields["f:spec"].(map[string]any); spec["f:workers"] != nil || spec["f:kubernetesVersion"] == nil {
		t.Errorf("creator on the TenantCluster: %v", fields)
	}
	if tc.Spec.Workers.Replicas != 3 {
		t.Errorf("UpdatedObject modified the stored object")
	}
}

func TestScaleUpdatedObjectErrors(t *testing.T) {
	tc := testTenantCluster()

	negative := &recordingObjInfo{modify: func(s *autoscaling.Scale) runtime.Object { s.Spec.Replicas = -2; return s }}
	if _, err := (&scaleUpdatedObjectInfo{reqObjInfo: negative}).UpdatedObject(context.Background(), tc); !apierrors.IsInvalid(err) {
		t.Errorf("negative replicas: got %v, want Invalid", err)
	}

	wrongType := rest.DefaultUpdatedObjectInfo(&butler.TenantCluster{})
	if _, err := (&scaleUpdatedObjectInfo{reqObjInfo: wrongType}).UpdatedObject(context.Background(), tc); !apierrors.IsBadRequest(err) {
		t.Errorf("not a Scale: got %v, want BadRequest", err)
	}
}

func TestScaleValidationWrappers(t *testing.T) {
	oldTC, newTC := testTenantCluster(), testTenantCluster()
	newTC.Spec.Workers.Replicas = 7

	var gotNew, gotOld runtime.Object
	update := toScaleUpdateValidation(func(_ context.Context, obj, old runtime.Object) error {
		gotNew, gotOld = obj, old
		return nil
	})
	if err := update(context.Background(), newTC, oldTC); err != nil {
		t.Fatal(err)
	}
	if s, ok := gotNew.(*autoscaling.Scale); !ok || s.Spec.Replicas != 7 {
		t.Errorf("admission saw new %#v, want a Scale of 7", gotNew)
	}
	if s, ok := gotOld.(*autoscaling.Scale); !ok || s.Spec.Replicas != 3 {
		t.Errorf("admission saw old %#v, want a Scale of 3", gotOld)
	}

	create := toScaleCreateValidation(func(_ context.Context, obj runtime.Object) error {
		gotNew = obj
		return nil
	})
	if err := create(context.Background(), newTC); err != nil {
		t.Fatal(err)
	}
	if _, ok := gotNew.(*autoscaling.Scale); !ok {
		t.Errorf("admission saw %T, want a Scale", gotNew)
	}
	if toScaleCreateValidation(nil) != nil || toScaleUpdateValidation(nil) != nil {
		t.Errorf("nil validation must stay nil")
	}
}

func TestScaleRESTKind(t *testing.T) {
	r := NewScaleREST(nil)
	if gvk := r.GroupVersionKind(butler.SchemeGroupVersion); gvk != autoscalingv1.SchemeGroupVersion.WithKind("Scale") {
		t.Errorf("GroupVersionKind = %v", gvk)
	}
	if _, ok := r.New().(*autoscaling.Scale); !ok {
		t.Errorf("New() = %T", r.New())
	}
}
