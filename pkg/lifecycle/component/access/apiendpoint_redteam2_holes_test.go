package access

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

// Red team (s8), a hole (closed): a load-balancer
// implementation's own annotation asks for an address as spec.loadBalancerIP does, and the
// policy judges none of them. MetalLB is in the platform's catalog and the default
// loadBalancer provider of a TenantCluster (spec.loadBalancer.provider: metallb), Cilium too:
// a Team operator's LoadBalancer Service annotated metallb.universe.tf/loadBalancerIPs: <an
// address of the pool> (a tenant admin's Service's, once released, or one he picks ahead of
// it) gets it announced, and kube-proxy takes every Pod's traffic to it to his Pods. Also on a
// Service that kept spec.loadBalancerIP from before the policy: an annotation is metadata, the
// spec stays as it was, and the write is not judged. Each case failed before (admitted); refused now.
func TestRedteam2LoadBalancerAddressAnnotations(t *testing.T) {
	operator := &user.DefaultInfo{Name: "butler:otto", Groups: []string{GroupPrefix + "ops", user.AllAuthenticated}}
	lb := svc("team", "lb", corev1.ServiceTypeLoadBalancer, []string{"10.96.0.30"}, nil)
	annotated := func(base *corev1.Service, key, value string) *corev1.Service {
		s := base.DeepCopy()
		s.Annotations = map[string]string{key: value}
		return s
	}
	legacy := lb.DeepCopy()
	legacy.Spec.LoadBalancerIP = "192.168.1.240"
	var cases []serviceCase
	for _, key := range []string{
		"metallb.universe.tf/loadBalancerIPs", // MetalLB before 0.14, still read
		"metallb.io/loadBalancerIPs",          // MetalLB 0.14 on
		"kube-vip.io/loadbalancerIPs",
		"lbipam.cilium.io/ips",
		"io.cilium/lb-ipam-ips",
	} {
		cases = append(cases,
			serviceCase{key + " at the API's ClusterIP", admission.Create, annotated(lb, key, apiClusterIP), nil, operator, true, ""},
			serviceCase{key + " at a pool address", admission.Create, annotated(lb, key, "192.168.1.240"), nil, operator, true, ""},
			serviceCase{key + " added to a Service", admission.Update, annotated(lb, key, "192.168.1.240"), lb, operator, true, ""},
			serviceCase{key + " added to a legacy Service, moving its address", admission.Update, annotated(legacy, key, apiClusterIP), legacy, operator, true, ""})
	}
	judgeServices(t, cases)
}

// Red team (s8), a hole (small, closed): docs/security.md says an operator "may not change the spec of a
// Service a tenant admin gave externalIPs or loadBalancerIP, only delete it". He may, in the
// write that removes spec.loadBalancerIP: that write is not judged, whatever else it changes.
// The address itself stays where kube-proxy reads it: status.loadBalancer.ingress is the
// load-balancer controller's, and MetalLB keeps a Service's assigned address when it no longer
// asks for one. So one patch ({"spec":{"loadBalancerIP":null,"selector":{"app":"thief"}}})
// repoints a tenant admin's announced address at his Pods, without labelling any Pod as the
// admin's. Failed before (admitted); refused now.
func TestRedteam2RemovingLoadBalancerIPRepointsTheService(t *testing.T) {
	operator := &user.DefaultInfo{Name: "butler:otto", Groups: []string{GroupPrefix + "ops", user.AllAuthenticated}}
	adminsOwn := svc("team", "lb", corev1.ServiceTypeLoadBalancer, []string{"10.96.0.30"}, nil)
	adminsOwn.Spec.LoadBalancerIP = "192.168.1.240"
	adminsOwn.Spec.Selector = map[string]string{"app": "admins-own"}
	judgeServices(t, []serviceCase{
		{"removed and repointed in one patch", admission.Update,
			patched(t, adminsOwn, `{"spec":{"loadBalancerIP":null,"selector":{"app":"thief"}}}`), adminsOwn, operator, true, ""},
	})
}
