package addons

import "testing"

// Red team (s8), a hole (closed): a Team's chart is installed as the
// tenant's admin, whom butler-api-endpoint exempts, so the allow-list is the only check. It
// refuses spec.loadBalancerIP but not the load-balancer implementations' own annotations asking
// for an address (MetalLB, in the platform's catalog and the TenantCluster's default
// loadBalancer provider; kube-vip; Cilium): the same capture. Failed before (allowed); refused now.
func TestRedteam2ChartLoadBalancerAddressAnnotations(t *testing.T) {
	svc := func(key string) string {
		return "apiVersion: v1\nkind: Service\nmetadata: {name: s, annotations: {" + key + ": 10.96.0.1}}\nspec: {ports: [{port: 443}], type: LoadBalancer}"
	}
	var cases []checkCase
	for _, key := range []string{"metallb.universe.tf/loadBalancerIPs", "metallb.io/loadBalancerIPs", "kube-vip.io/loadbalancerIPs",
		"lbipam.cilium.io/ips", "io.cilium/lb-ipam-ips"} {
		cases = append(cases, checkCase{key, svc(key), "Service apps/s"})
	}
	runCheckCases(t, cases)
}
