package workers

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
)

// Auto-repair's defaults: a node not Ready for five minutes is replaced (long enough for a
// kubelet restart or a reboot), one that never joins after ten (Cluster API's own default), and
// nothing is replaced while more than 40% of the workers are unhealthy (then the cause is the
// network or the platform, which new machines would not cure).
var (
	defaultUnhealthyTimeout   = 5 * time.Minute
	defaultNodeStartupTimeout = 10 * time.Minute
	defaultMaxUnhealthy       = intstr.FromString("40%")
)

// AutoRepairEnabled says whether the cluster asks for auto-repair.
func AutoRepairEnabled(tc *v1alpha1.TenantCluster) bool {
	return tc.Spec.Workers.AutoRepair != nil && tc.Spec.Workers.AutoRepair.Enabled
}

// MachineHealthCheck is <tc>-workers, Cluster API's health check over the workers' machines
// (the MachineDeployment's selector): a machine whose node holds an unhealthy condition for its
// timeout, or never joins, is deleted and its MachineDeployment makes a new one; none is while
// more than maxUnhealthy are unhealthy. nil when auto-repair is off.
func MachineHealthCheck(in component.Input) (*unstructured.Unstructured, error) {
	if !AutoRepairEnabled(in.Cluster) {
		return nil, nil
	}
	ar := in.Cluster.Spec.Workers.AutoRepair
	name := component.WorkersName(in)
	conditions := []clusterv1.UnhealthyNodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionFalse, TimeoutSeconds: ptr.To(seconds(defaultUnhealthyTimeout))},
		{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, TimeoutSeconds: ptr.To(seconds(defaultUnhealthyTimeout))},
	}
	if len(ar.UnhealthyConditions) > 0 {
		conditions = conditions[:0]
		for _, c := range ar.UnhealthyConditions {
			conditions = append(conditions, clusterv1.UnhealthyNodeCondition{Type: corev1.NodeConditionType(c.Type),
				Status: corev1.ConditionStatus(c.Status), TimeoutSeconds: ptr.To(seconds(c.Timeout.Duration))})
		}
	}
	startup := defaultNodeStartupTimeout
	if ar.NodeStartupTimeout != nil {
		startup = ar.NodeStartupTimeout.Duration
	}
	maxUnhealthy := ptr.Deref(ar.MaxUnhealthy, defaultMaxUnhealthy)
	mhc := &clusterv1.MachineHealthCheck{Spec: clusterv1.MachineHealthCheckSpec{
		ClusterName: in.Cluster.Name,
		Selector: metav1.LabelSelector{MatchLabels: map[string]string{
			clusterv1.ClusterNameLabel: in.Cluster.Name,
			DeploymentNameLabel:        name,
		}},
		Checks: clusterv1.MachineHealthCheckChecks{
			NodeStartupTimeoutSeconds: ptr.To(seconds(startup)),
			UnhealthyNodeConditions:   conditions,
		},
		Remediation: clusterv1.MachineHealthCheckRemediation{TriggerIf: clusterv1.MachineHealthCheckRemediationTriggerIf{
			UnhealthyLessThanOrEqualTo: &maxUnhealthy,
		}},
	}}
	return component.FromTyped(in, external.MachineHealthCheckGVK, name, mhc)
}

func seconds(d time.Duration) int32 { return int32(d / time.Second) }
