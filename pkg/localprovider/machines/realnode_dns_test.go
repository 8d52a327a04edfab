package machines

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
)

// The cluster DNS is where the kubelets send pods (the Service's ClusterIP), serves the
// cluster's domain, and reads the API at the endpoint the nodes dial.
func TestClusterDNS(t *testing.T) {
	client := fake.NewClientset()
	d := clusterDNS{address: "10.96.0.10", domain: "tenant.example", endpoint: "127.0.0.1:40123"}
	if err := d.apply(context.Background(), client); err != nil {
		t.Fatal(err)
	}
	svc, err := client.CoreV1().Services("kube-system").Get(context.Background(), "kube-dns", metav1.GetOptions{})
	if err != nil || svc.Spec.ClusterIP != "10.96.0.10" || len(svc.Spec.Ports) != 2 {
		t.Fatalf("kube-dns: %v %+v", err, svc)
	}
	cm, err := client.CoreV1().ConfigMaps("kube-system").Get(context.Background(), "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cm.Data["Corefile"], "kubernetes tenant.example in-addr.arpa") ||
		!strings.Contains(cm.Data["kubeconfig"], `server: "https://127.0.0.1:40123"`) {
		t.Errorf("coredns ConfigMap: %v", cm.Data)
	}
	dep, err := client.AppsV1().Deployments("kube-system").Get(context.Background(), "coredns", metav1.GetOptions{})
	if err != nil || dep.Spec.Template.Spec.Containers[0].Image != CoreDNSImage || !dep.Spec.Template.Spec.HostNetwork {
		t.Fatalf("coredns Deployment: %v %+v", err, dep)
	}
	// A cordoned node (kubectl drain, Cluster API's drain before a delete) does not take the
	// evicted DNS pod's replacement back.
	for _, tol := range dep.Spec.Template.Spec.Tolerations {
		if tol.ToleratesTaint(klog.Background(), &corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}, false) {
			t.Errorf("the coredns pods tolerate a cordoned node: %+v", tol)
		}
	}
	if err := (clusterDNS{address: "kube-dns"}).apply(context.Background(), client); err == nil {
		t.Error("a cluster DNS address that is no IP was applied")
	}
}
