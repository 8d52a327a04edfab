package nodes

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// realNodeRotation rotates the cluster's CA in its two phases with its real nodes running the
// echo pods first and second. Once it completed, kubectl logs and exec reach them with a
// kubeconfig minted then: each kubelet serves a certificate of the new CA, asked for through a
// CSR its node made after its credentials were renewed (the tenant's kube-apiserver trusts the
// new CA only now). The previous CA's client certificate (the kubeconfig minted before) is
// refused by the kubelets themselves, not only by the kube-apiserver. It returns the new
// kubeconfig and its client.
func realNodeRotation(t *testing.T, ns, name, oldKubeconfig string, oldTenant kubernetes.Interface, first, second string) (string, kubernetes.Interface) {
	t.Helper()
	start := time.Now()
	framework.MustKubectl(t, "annotate", "tc", name, "-n", ns, "butler.butlerlabs.dev/operation=rotate-credentials-start")
	framework.WaitCluster(t, ns, name, 2*time.Minute, "rotation Prepared and Ready", func(tc *v1alpha1.TenantCluster) bool {
		r := framework.RotationOfCluster(tc)
		return r != nil && r.Phase == v1alpha1.RotationPrepared && tc.Status.Phase == v1alpha1.TenantClusterReady
	})
	prepared := time.Since(start)
	framework.MustKubectl(t, "annotate", "tc", name, "-n", ns, "butler.butlerlabs.dev/operation=rotate-credentials-complete")
	framework.WaitCluster(t, ns, name, 2*time.Minute, "rotation Completed and Ready", func(tc *v1alpha1.TenantCluster) bool {
		r := framework.RotationOfCluster(tc)
		return r != nil && r.Phase == v1alpha1.RotationCompleted && tc.Status.Phase == v1alpha1.TenantClusterReady &&
			meta.IsStatusConditionTrue(tc.Status.Conditions, "Ready")
	})
	t.Logf("CA rotation with real nodes: Prepared in %s, Completed %s after the start", prepared.Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))

	kubeconfig, tenant := framework.MintKubeconfig(t, ns, name)
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(cfg.CAData) {
		t.Fatal("the kubeconfig minted after the rotation holds no CA")
	}
	var nodes []string
	for _, pod := range []string{first, second} {
		p, err := tenant.CoreV1().Pods("default").Get(t.Context(), pod, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("pod %s after the rotation: %v", pod, err)
		}
		nodes = append(nodes, p.Spec.NodeName)
	}
	// The kubelets ask for serving certificates of the new CA when their credentials change (the
	// kube-apiserver trusts no other now); each came from its node's approved CSR.
	for _, node := range nodes {
		ip := realNodeIP(t, tenant, node)
		var leaf *x509.Certificate
		framework.WaitFor(t, time.Minute, "the kubelet of "+node+" to serve a certificate of the new CA", func() (bool, string) {
			c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", net.JoinHostPort(ip, "10250"),
				&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // verified below, against the new CA
			if err != nil {
				return false, err.Error()
			}
			defer c.Close()
			leaf = c.ConnectionState().PeerCertificates[0]
			_, err = leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: ip, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
			return err == nil, fmt.Sprintf("serves %q of %q: %v", leaf.Subject, leaf.Issuer, err)
		})
		realNodeServingFromCSR(t, tenant, node, leaf)
	}
	t.Logf("both kubelets serve certificates of the new CA %s after the start", time.Since(start).Round(100*time.Millisecond))
	out, err := framework.KubectlAs(t, kubeconfig, "", "logs", first)
	if err != nil || !strings.Contains(out, "serving on :8080") {
		t.Errorf("kubectl logs after the rotation: %v: %s", err, out)
	}
	out, err = framework.KubectlAs(t, kubeconfig, "", "exec", second, "--", "/usr/local/bin/echo", "-say", "hello after the rotation")
	if err != nil || !strings.HasSuffix(strings.TrimSpace(out), "hello after the rotation") {
		t.Errorf("kubectl exec after the rotation: %v: %s", err, out)
	}

	// The previous CA's client certificate, straight to a kubelet: 401 (its client CA file no
	// longer holds that CA), as the kube-apiserver refuses it.
	old, err := clientcmd.BuildConfigFromFlags("", oldKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(old.CertData, old.KeyData)
	if err != nil {
		t.Fatalf("the kubeconfig minted before the rotation holds no client certificate: %v", err)
	}
	for _, node := range nodes {
		ip := realNodeIP(t, tenant, node)
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			InsecureSkipVerify: true, Certificates: []tls.Certificate{cert}}}} //nolint:gosec // the attacker does not verify the kubelet
		resp, err := c.Get("https://" + net.JoinHostPort(ip, "10250") + "/pods")
		if err != nil {
			t.Errorf("kubelet API of %s with the previous CA's certificate: %v", node, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("kubelet API of %s at %s with the previous CA's client certificate: %s, want 401", node, ip, resp.Status)
		}
	}
	if _, err := oldTenant.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{}); err == nil {
		t.Error("the kubeconfig minted before the rotation still lists Nodes")
	}
	return kubeconfig, tenant
}
