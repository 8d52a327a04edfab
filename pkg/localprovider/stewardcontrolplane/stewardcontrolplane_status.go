package stewardcontrolplane

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/external/steward"
)

// scpStatus is what a StewardControlPlane's status is to say.
type scpStatus struct {
	conditions     []metav1.Condition
	tcp            *unstructured.Unstructured
	cluster        string
	failureReason  string
	failureMessage string
}

func (s *scpStatus) set(t string, ok bool, reason, message string) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&s.conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: message})
}

func (s *scpStatus) failure(reason, message string) {
	s.failureReason, s.failureMessage = reason, message
}

func scpConditions(scp *unstructured.Unstructured) []metav1.Condition {
	raw, _, _ := unstructured.NestedSlice(scp.Object, "status", "conditions")
	var out []metav1.Condition
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		var cond metav1.Condition
		if runtime.DefaultUnstructuredConverter.FromUnstructured(m, &cond) == nil {
			out = append(out, cond)
		}
	}
	return out
}

// setSCPStatus writes the status with a merge patch, only when it differs. The fields are those
// of Steward's CRD, which implements Cluster API's v1beta1 control-plane contract (its label
// cluster.x-k8s.io/v1beta1: v1alpha1): initialized and ready, which Cluster API v1beta2 reads
// for such a provider in place of status.initialization.controlPlaneInitialized.
func (c *Controller) setSCPStatus(ctx context.Context, scp *unstructured.Unstructured, s scpStatus) error {
	for i := range s.conditions {
		s.conditions[i].ObservedGeneration = scp.GetGeneration()
	}
	versionStatus, version := "", ""
	if s.tcp != nil {
		versionStatus = publishedStatus(s.tcp).KubernetesResources.Version.Status
		version = publishedStatus(s.tcp).KubernetesResources.Version.Version
	}
	ready := versionStatus == steward.VersionStatusReady || versionStatus == steward.VersionStatusUpgrading
	initialized := version != "" || ready
	readyReplicas, updated, replicas := int64(0), int64(0), int64(1)
	if versionStatus == steward.VersionStatusReady {
		readyReplicas, updated = 1, 1
	}
	if s.tcp != nil {
		// As the TenantControlPlane reports them: 0 once stopped.
		if d := publishedStatus(s.tcp).KubernetesResources.Deployment; d != nil && d.Replicas != nil {
			replicas = int64(*d.Replicas)
		}
	}
	conditions := make([]any, 0, len(s.conditions))
	for _, cond := range s.conditions {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&cond)
		if err != nil {
			return err
		}
		conditions = append(conditions, m)
	}
	status := map[string]any{
		"externalManagedControlPlane": true,
		"initialized":                 initialized,
		"ready":                       ready,
		"version":                     version,
		"replicas":                    replicas,
		"readyReplicas":               readyReplicas,
		"updatedReplicas":             updated,
		"unavailableReplicas":         max(replicas-readyReplicas, 0),
		"selector":                    clusterv1.ClusterNameLabel + "=" + s.cluster,
		"conditions":                  conditions,
		"failureReason":               nilIfEmpty(s.failureReason),
		"failureMessage":              nilIfEmpty(s.failureMessage),
	}
	if current, ok := scp.Object["status"].(map[string]any); ok && scpStatusEqual(status, current) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	_, err = c.deps.Dynamic.Resource(external.StewardControlPlaneGVR).Namespace(scp.GetNamespace()).
		Patch(ctx, scp.GetName(), types.MergePatchType, patch, external.LocalProvider.PatchOptions(), "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// publishedStatus is the TenantControlPlane's status, read through the contract's mirror; one the
// mirror cannot read (a field of another type) is as none.
func publishedStatus(tcp *unstructured.Unstructured) steward.TenantControlPlaneStatus {
	typed, err := external.FromUnstructured[steward.TenantControlPlane](tcp)
	if err != nil {
		return steward.TenantControlPlaneStatus{}
	}
	return typed.Status
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// scpStatusEqual compares the status to write with the current one, ignoring the conditions'
// transition times.
func scpStatusEqual(want, have map[string]any) bool {
	for k, w := range want {
		h, present := have[k]
		switch k {
		case "conditions":
			if !conditionsEqual(w.([]any), h) {
				return false
			}
		default:
			if w == nil {
				if present && h != nil {
					return false
				}
				continue
			}
			if !present || fmt.Sprint(w) != fmt.Sprint(h) {
				return false
			}
		}
	}
	return true
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func conditionsEqual(want []any, have any) bool {
	list, _ := have.([]any)
	if len(list) != len(want) {
		return false
	}
	for i := range want {
		w, h := asMap(want[i]), asMap(list[i])
		for _, f := range []string{"type", "status", "reason", "message", "observedGeneration"} {
			if fmt.Sprint(w[f]) != fmt.Sprint(h[f]) {
				return false
			}
		}
	}
	return true
}
