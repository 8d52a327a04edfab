package tenantcluster

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/access"
)

// A Service that asks its load balancer for an address by annotation is named with the address
// it asks for and the one announced (status.loadBalancer.ingress); a LoadBalancer Service that
// asks for none is not named for the address its pool gave it, which every one of them has.
func TestAnnotatedAddressesAreReportedWithWhatWasAnnounced(t *testing.T) {
	announced := func(s *corev1.Service, ips ...string) *corev1.Service {
		s.Spec.Type = corev1.ServiceTypeLoadBalancer
		for _, ip := range ips {
			s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
		}
		return s
	}
	asked := announced(pinned("team", "asked", ""), "192.168.1.240")
	asked.Annotations = map[string]string{"metallb.io/loadBalancerIPs": "192.168.1.240, 10.96.0.1"}
	pool := announced(pinned("team", "pool", ""), "192.168.1.241")
	tenant := fake.NewClientset(asked, pool)
	exposed, err := exposedServices(context.Background(), tenant.CoreV1(), []access.Namespace{{Name: "team"}})
	if err != nil {
		t.Fatal(err)
	}
	want := "team/asked (metallb.io/loadBalancerIPs 192.168.1.240, 10.96.0.1; announced 192.168.1.240)"
	if len(exposed) != 1 || exposed[0] != want {
		t.Errorf("exposed %q, want only %q", exposed, want)
	}
	if cond := exposureCondition(exposed); !strings.Contains(cond.Message, want) {
		t.Errorf("the condition: %s", cond.Message)
	}
}
