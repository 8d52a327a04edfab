package access

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

// What the policy still lets through around a load balancer's address, by spec.loadBalancerIP or
// an address annotation: removing it alone (an operator undoing a request), a metadata-only write
// that keeps it (a label, a finalizer), a tenant admin's own request; and what it refuses beside
// the red team's cases: a removal that changes the ports, an annotation removed in a write that
// repoints the Service, an annotation's value changed.
func TestLoadBalancerAddressRemovalAloneAndKeptPass(t *testing.T) {
	operator := &user.DefaultInfo{Name: "butler:otto", Groups: []string{GroupPrefix + "ops", user.AllAuthenticated}}
	admin := &user.DefaultInfo{Name: "butler:alice", Groups: []string{GroupPrefix + "admins", user.AllAuthenticated}}
	const key = "metallb.io/loadBalancerIPs"
	pinned := svc("team", "lb", corev1.ServiceTypeLoadBalancer, []string{"10.96.0.30"}, nil)
	pinned.Spec.LoadBalancerIP = "192.168.1.240"
	asked := svc("team", "lb", corev1.ServiceTypeLoadBalancer, []string{"10.96.0.30"}, nil)
	asked.Annotations = map[string]string{key: "192.168.1.240", "team": "a"}
	judgeServices(t, []serviceCase{
		{"loadBalancerIP removed alone", admission.Update, patched(t, pinned, `{"spec":{"loadBalancerIP":null}}`), pinned, operator, false, ""},
		{"loadBalancerIP removed and a port changed", admission.Update,
			patched(t, pinned, `{"spec":{"loadBalancerIP":null,"ports":[{"port":443,"targetPort":8443}]}}`), pinned, operator, true, "spec.loadBalancerIP"},
		{"loadBalancerIP removed and the type changed", admission.Update,
			patched(t, pinned, `{"spec":{"loadBalancerIP":null,"type":"NodePort"}}`), pinned, operator, true, "spec.loadBalancerIP"},
		{"annotation removed alone", admission.Update, patched(t, asked, `{"metadata":{"annotations":{"`+key+`":null}}}`), asked, operator, false, ""},
		{"annotation kept, a label added", admission.Update, patched(t, asked, `{"metadata":{"labels":{"x":"y"}}}`), asked, operator, false, ""},
		{"annotation kept, another annotation changed", admission.Update, patched(t, asked, `{"metadata":{"annotations":{"team":"b"}}}`), asked, operator, false, ""},
		{"annotation's address changed", admission.Update, patched(t, asked, `{"metadata":{"annotations":{"`+key+`":"10.96.0.1"}}}`), asked, operator, true, key},
		{"annotation kept, the selector changed", admission.Update, patched(t, asked, `{"spec":{"selector":{"app":"other"}}}`), asked, operator, true, key},
		{"annotation removed and the selector changed", admission.Update,
			patched(t, asked, `{"metadata":{"annotations":{"`+key+`":null}},"spec":{"selector":{"app":"other"}}}`), asked, operator, true, key},
		{"a tenant admin asks", admission.Create, asked, nil, admin, false, ""},
		{"a tenant admin repoints", admission.Update, patched(t, asked, `{"spec":{"selector":{"app":"other"}}}`), asked, admin, false, ""},
		{"an operator's Service with no address asked", admission.Update,
			patched(t, svc("team", "lb", corev1.ServiceTypeLoadBalancer, []string{"10.96.0.30"}, nil), `{"spec":{"selector":{"app":"other"}}}`),
			svc("team", "lb", corev1.ServiceTypeLoadBalancer, []string{"10.96.0.30"}, nil), operator, false, ""},
	})
}
