package tenantcluster

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// Reconciling and Stalled are the "abnormal-true" conditions of kstatus (sigs.k8s.io/cli-utils),
// which Flux's health checks use to tell a resource still on its way from a settled or a stuck
// one. Without them kstatus falls back on Ready: a cluster the controller has not yet seen reads
// Current, and a Failed one reads InProgress until the health check's timeout.
const (
	ConditionReconciling = v1alpha1.ConditionReconciling
	ConditionStalled     = v1alpha1.ConditionStalled
)

// setKstatusConditions derives Reconciling and Stalled from the phase the status already says:
// Stalled while Failed, neither once the cluster has settled where its spec asks (Ready, or
// Hibernated), Reconciling with the phase and the operation's progress otherwise. A Hibernated
// cluster still reads InProgress through kstatus's Ready fallback (Ready is False while it
// sleeps); docs/concepts/gitops.md gives Flux's health check expression for it.
func setKstatusConditions(st *v1alpha1.TenantClusterStatus, generation int64) {
	switch {
	case st.Phase == v1alpha1.TenantClusterFailed:
		reason, message := "Failed", "the cluster failed"
		if r := meta.FindStatusCondition(st.Conditions, ConditionReady); r != nil && r.Status == metav1.ConditionFalse {
			reason, message = r.Reason, r.Message
		}
		meta.RemoveStatusCondition(&st.Conditions, ConditionReconciling)
		steps.SetConditions(&st.Conditions, metav1.Condition{Type: ConditionStalled, Status: metav1.ConditionTrue,
			Reason: reason, Message: message, ObservedGeneration: generation})
	case settled(st):
		meta.RemoveStatusCondition(&st.Conditions, ConditionReconciling)
		meta.RemoveStatusCondition(&st.Conditions, ConditionStalled)
	default:
		message := "reconciling"
		if op := st.LastOperation; op != nil && op.Description != "" {
			message = op.Description
		}
		meta.RemoveStatusCondition(&st.Conditions, ConditionStalled)
		steps.SetConditions(&st.Conditions, metav1.Condition{Type: ConditionReconciling, Status: metav1.ConditionTrue,
			Reason: orDefault(string(st.Phase), "Pending"), Message: message, ObservedGeneration: generation})
	}
}

// settled: Ready and not on its way to sleep, or asleep with every sleep step done.
func settled(st *v1alpha1.TenantClusterStatus) bool {
	hib := meta.FindStatusCondition(st.Conditions, ConditionHibernated)
	switch st.Phase {
	case v1alpha1.TenantClusterReady:
		return meta.IsStatusConditionTrue(st.Conditions, ConditionReady) && (hib == nil || hib.Reason != "Hibernating")
	case v1alpha1.TenantClusterHibernated:
		return hib != nil && hib.Status == metav1.ConditionTrue
	}
	return false
}
