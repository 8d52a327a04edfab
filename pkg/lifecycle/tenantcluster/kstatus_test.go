package tenantcluster

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	butlerfake "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned/fake"
)

// TestKstatusReadsWhatTheClusterIs: what the controller stores, read by kstatus as Flux's health
// checks read it, says whether the cluster is still on its way (InProgress), where its spec asks
// (Current) or stuck (Failed). Before Reconciling and Stalled, a Failed cluster read InProgress
// (kstatus's fallback on Ready False), so a health check waited out its timeout.
func TestKstatusReadsWhatTheClusterIs(t *testing.T) {
	cond := func(typ string, s metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: reason, LastTransitionTime: metav1.Now()}
	}
	for _, tt := range []struct {
		name       string
		generation int64 // of the object read back; the status observed generation 1
		status     v1alpha1.TenantClusterStatus
		want       status.Status
	}{
		{"provisioning", 1, v1alpha1.TenantClusterStatus{Phase: v1alpha1.TenantClusterProvisioning,
			Conditions: []metav1.Condition{cond(ConditionReady, metav1.ConditionFalse, "WaitingForControlPlane")}}, status.InProgressStatus},
		{"installing addons", 1, v1alpha1.TenantClusterStatus{Phase: v1alpha1.TenantClusterInstalling,
			Conditions: []metav1.Condition{cond(ConditionReady, metav1.ConditionFalse, "Installing")}}, status.InProgressStatus},
		{"ready", 1, v1alpha1.TenantClusterStatus{Phase: v1alpha1.TenantClusterReady,
			Conditions: []metav1.Condition{cond(ConditionReady, metav1.ConditionTrue, "Ready")}}, status.CurrentStatus},
		{"ready, a spec change not yet observed", 2, v1alpha1.TenantClusterStatus{Phase: v1alpha1.TenantClusterReady,
			Conditions: []metav1.Condition{cond(ConditionReady, metav1.ConditionTrue, "Ready")}}, status.InProgressStatus},
		{"ready, a transient error", 1, v1alpha1.TenantClusterStatus{Phase: v1alpha1.TenantClusterReady,
			Conditions: []metav1.Condition{cond(ConditionReady, metav1.ConditionFalse, "Error")}}, status.InProgressStatus},
		{"updating", 1, v1alpha1.TenantClusterStatus{Phase: v1alpha1.TenantClusterUpdating,
			Conditions: []metav1.Condition{cond(ConditionReady, metav1.ConditionFalse, "RollingOut")}}, status.InProgressStatus},
		{"hibernating", 1, v1alpha1.TenantClusterStatus{Phase: v1alpha1.TenantClusterReady,
			Conditions: []metav1.Condition{cond(ConditionReady, metav1.ConditionTrue, "Ready"),
				cond(ConditionHibernated, metav1.ConditionFalse, "Hibernating")}}, status.InProgressStatus},
		{"hibernated", 1, v1alpha1.TenantClusterStatus{Phase: v1alpha1.TenantClusterHibernated,
			Conditions: []metav1.Condition{cond(ConditionReady, metav1.ConditionFalse, "Hibernated"),
				cond(ConditionHibernated, metav1.ConditionTrue, "Hibernated")}}, status.InProgressStatus}, // Ready False: see setKstatusConditions
		{"waking", 1, v1alpha1.TenantClusterStatus{Phase: v1alpha1.TenantClusterHibernated,
			Conditions: []metav1.Condition{cond(ConditionReady, metav1.ConditionFalse, "WaitingForControlPlane"),
				cond(ConditionHibernated, metav1.ConditionFalse, "Waking")}}, status.InProgressStatus},
		{"failed", 1, v1alpha1.TenantClusterStatus{Phase: v1alpha1.TenantClusterFailed,
			Conditions: []metav1.Condition{cond(ConditionReady, metav1.ConditionFalse, "CredentialsNotFound")}}, status.FailedStatus},
		{"ready again after a failure", 1, v1alpha1.TenantClusterStatus{Phase: v1alpha1.TenantClusterReady,
			Conditions: []metav1.Condition{cond(ConditionReady, metav1.ConditionTrue, "Ready"),
				cond(ConditionStalled, metav1.ConditionTrue, "CredentialsNotFound")}}, status.CurrentStatus},
		{"deleting", 1, v1alpha1.TenantClusterStatus{Phase: v1alpha1.TenantClusterDeleting}, status.InProgressStatus},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tc := cluster()
			tc.Generation = 1
			client := butlerfake.NewSimpleClientset(tc)
			c := &Controller{butler: client}
			st := tt.status.DeepCopy()
			st.ObservedGeneration = 1
			if stored, err := c.writeStatus(context.Background(), tc, st); !stored || err != nil {
				t.Fatalf("writeStatus: stored %v, err %v", stored, err)
			}
			got, err := client.ButlerV1alpha1().TenantClusters(tc.Namespace).Get(context.Background(), tc.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got.Generation = tt.generation
			res := kstatusOf(t, got)
			if res.Status != tt.want {
				t.Errorf("kstatus %s (%q), want %s; conditions %+v", res.Status, res.Message, tt.want, got.Status.Conditions)
			}
		})
	}
}

// TestKstatusReadsAClusterBeingDeletedAsTerminating: kstatus's own rule, kept.
func TestKstatusReadsAClusterBeingDeletedAsTerminating(t *testing.T) {
	tc := cluster()
	now := metav1.Now()
	tc.DeletionTimestamp = &now
	tc.Status.Phase = v1alpha1.TenantClusterDeleting
	setKstatusConditions(&tc.Status, tc.Generation)
	if res := kstatusOf(t, tc); res.Status != status.TerminatingStatus {
		t.Errorf("kstatus %s, want %s", res.Status, status.TerminatingStatus)
	}
}

func kstatusOf(t *testing.T, tc *v1alpha1.TenantCluster) *status.Result {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tc)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(v1alpha1.SchemeGroupVersion.String())
	u.SetKind("TenantCluster")
	res, err := status.Compute(u)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
