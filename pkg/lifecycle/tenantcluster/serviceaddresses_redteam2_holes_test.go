package tenantcluster

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Red team (s8), a hole, closed (with the policy's, TestRedteam2LoadBalancerAddressAnnotations of package
// access): a Service that asks its load-balancer implementation for an address by annotation
// (MetalLB's metallb.universe.tf/loadBalancerIPs, the TenantCluster's default provider) is the
// same capture as spec.loadBalancerIP, and ServicesExposeExternalIPs did not report it. Failed
// before (False); reported now.
func TestRedteam2AuditMissesAnnotatedAddresses(t *testing.T) {
	annotated := pinned("team", "lb", "")
	annotated.Annotations = map[string]string{"metallb.universe.tf/loadBalancerIPs": "10.96.0.1"}
	f := newAuditFixture(t, annotated)
	if cond, _, _ := f.reconcile(t); cond == nil || cond.Status != metav1.ConditionTrue {
		t.Errorf("a Service asking MetalLB for 10.96.0.1 is not reported: %+v", cond)
	}
}
