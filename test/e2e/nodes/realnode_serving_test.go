package nodes

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/controlplane"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// realNodeServingCertificates: each kubelet serves with a certificate of the tenant CA for its
// own address, issued through a kubelet-serving CSR its node's credentials made and the
// provider approved (the tenant's kube-apiserver verifies it for logs, exec and port-forward);
// node one, with its own credentials, asks for a serving certificate as node two (the tenant's
// kube-apiserver refuses it at create) and as itself at node two's address, and the tenant's
// admin asks for one as node one: the provider denies both, nothing signs them.
func realNodeServingCertificates(t *testing.T, kubeconfig string, tenant kubernetes.Interface, one, two string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(cfg.CAData) {
		t.Fatal("the minted kubeconfig holds no CA")
	}
	ip1, ip2 := realNodeIP(t, tenant, one), realNodeIP(t, tenant, two)
	for node, ip := range map[string]string{one: ip1, two: ip2} {
		realNodeServingFromCSR(t, tenant, node, realNodeServesWithTenantCA(t, roots, ip))
	}

	key := realNodeMachine(t, tenant, one)
	nodeConfig, err := clientcmd.BuildConfigFromFlags("", filepath.Join(framework.Plane.Dir, "machines", key, "kubelet.kubeconfig"))
	if err != nil {
		t.Fatalf("node %s's credentials: %v", one, err)
	}
	asNode := kubernetes.NewForConfigOrDie(nodeConfig)
	realNodeServingCapped(t, tenant, asNode, key, one, ip1)
	for what, req := range map[string]struct {
		client  kubernetes.Interface
		subject string
		ip      string
		denial  string // what the provider's denial says
	}{
		one + "'s request for node " + two + "'s name and address":           {asNode, two, ip2, "not the node"},
		one + "'s request for its own name at " + two + "'s address":         {asNode, one, ip2, "IP address " + ip2},
		"the tenant admin's request for node " + one + "'s name and address": {tenant, one, ip1, "which is no node"},
	} {
		name, err := realNodeRequestServing(req.client, req.subject, req.ip, 0)
		if apierrors.IsForbidden(err) && req.client == asNode && req.subject != one {
			// The tenant's kube-apiserver itself refuses a node's CSR for another node's name.
			t.Logf("%s: refused at create: %v", what, err)
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		realNodePoke(t, key, name)
		framework.WaitFor(t, 30*time.Second, what+" to be decided", func() (bool, string) {
			csr, err := tenant.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, c := range csr.Status.Conditions {
				if c.Type == certificatesv1.CertificateApproved || len(csr.Status.Certificate) > 0 {
					t.Errorf("%s: approved: %+v", what, csr.Status)
					return true, ""
				}
				if c.Type == certificatesv1.CertificateDenied {
					if !strings.Contains(c.Message, req.denial) {
						t.Errorf("%s: denied with %q, want the reason (%q)", what, c.Message, req.denial)
					}
					return true, ""
				}
			}
			return false, fmt.Sprint(csr.Status)
		})
	}
}

// realNodePoke changes the LocalMachine key (namespace/name) so that the provider looks at its
// node's requests at once (else within a minute).
func realNodePoke(t *testing.T, key, value string) {
	t.Helper()
	ns, machine, _ := strings.Cut(key, "/")
	if _, err := framework.DynamicClient(t).Resource(external.LocalMachineGVR).Namespace(ns).Patch(context.Background(), machine, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"e2e.butlerlabs.dev/poke":"`+value+`"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// realNodeServingCapped: node one, with its own credentials, asks for its own serving
// certificate (which the provider approves) for ten years (spec.expirationSeconds); the
// tenant's kube-controller-manager signs it for no longer than its --cluster-signing-duration
// (controlplane.SigningDuration, and the 5 minutes it backdates a certificate by).
func realNodeServingCapped(t *testing.T, tenant, asNode kubernetes.Interface, key, node, ip string) {
	t.Helper()
	const tenYears = 10 * 365 * 24 * 60 * 60
	name, err := realNodeRequestServing(asNode, node, ip, tenYears)
	if err != nil {
		t.Fatalf("node %s's own request for ten years: %v", node, err)
	}
	realNodePoke(t, key, name)
	var issued []byte
	framework.WaitFor(t, 30*time.Second, "node "+node+"'s request for ten years to be issued", func() (bool, string) {
		csr, err := tenant.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		issued = csr.Status.Certificate
		return len(issued) > 0, fmt.Sprint(csr.Status.Conditions)
	})
	block, _ := pem.Decode(issued)
	if block == nil {
		t.Fatalf("node %s's certificate for ten years is no PEM: %q", node, issued)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	lifetime := cert.NotAfter.Sub(cert.NotBefore)
	t.Logf("node %s asked for a serving certificate of %d s and got one of %s", node, tenYears, lifetime)
	if lifetime > controlplane.SigningDuration+5*time.Minute {
		t.Errorf("node %s asked for ten years and got a certificate of %s, longer than the cap %s", node, lifetime, controlplane.SigningDuration)
	}
}

// realNodeServingFromCSR checks that leaf, the serving certificate node's kubelet serves, was
// issued through a kubelet-serving CSR made with the node's own credentials and approved by the
// local provider (the kube-controller-manager signs it with the tenant CA, and approves none).
func realNodeServingFromCSR(t *testing.T, tenant kubernetes.Interface, node string, leaf *x509.Certificate) {
	t.Helper()
	list, err := tenant.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{
		FieldSelector: "spec.signerName=" + certificatesv1.KubeletServingSignerName})
	if err != nil {
		t.Fatal(err)
	}
	for _, csr := range list.Items {
		block, _ := pem.Decode(csr.Status.Certificate)
		if block == nil || !bytes.Equal(block.Bytes, leaf.Raw) {
			continue
		}
		approvedBy := ""
		for _, c := range csr.Status.Conditions {
			if c.Type == certificatesv1.CertificateApproved {
				approvedBy = c.Reason
			}
		}
		if csr.Spec.Username != "system:node:"+node || approvedBy != "ButlerLocalProvider" {
			t.Errorf("node %s's serving certificate came from CSR %s, requested by %q, approved by %q; want its own, approved by the local provider", node, csr.Name, csr.Spec.Username, approvedBy)
		}
		return
	}
	t.Errorf("no kubelet-serving CSR of the tenant issued the certificate node %s serves (serial %s, issuer %q)", node, leaf.SerialNumber, leaf.Issuer)
}

// realNodeServesWithTenantCA checks that the kubelet at ip serves a certificate of the tenant CA
// (roots) for that address, and returns it.
func realNodeServesWithTenantCA(t *testing.T, roots *x509.CertPool, ip string) *x509.Certificate {
	t.Helper()
	var state tls.ConnectionState
	framework.WaitFor(t, time.Minute, "the kubelet at "+ip+" to serve", func() (bool, string) {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", net.JoinHostPort(ip, "10250"),
			&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // verified below, against the tenant CA
		if err != nil {
			return false, err.Error()
		}
		defer c.Close()
		state = c.ConnectionState()
		return true, ""
	})
	leaf := state.PeerCertificates[0]
	inter := x509.NewCertPool()
	for _, c := range state.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: ip,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("the kubelet at %s serves %q, issued by %q: %v (want a certificate of the tenant CA for its address)", ip, leaf.Subject, leaf.Issuer, err)
	}
	return leaf
}

// realNodeRequestServing creates, with client (a node's credentials), a kubelet-serving CSR
// for system:node:<subject> at ip, asking for expirationSeconds when not 0, and returns its name.
func realNodeRequestServing(client kubernetes.Interface, subject, ip string, expirationSeconds int32) (string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:  pkix.Name{CommonName: "system:node:" + subject, Organization: []string{"system:nodes"}},
		DNSNames: []string{subject}, IPAddresses: []net.IP{net.ParseIP(ip)}}, key)
	if err != nil {
		return "", err
	}
	var expiration *int32
	if expirationSeconds != 0 {
		expiration = &expirationSeconds
	}
	csr, err := client.CertificatesV1().CertificateSigningRequests().Create(context.Background(), &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "attack-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: certificatesv1.KubeletServingSignerName,
			Request:           pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
			ExpirationSeconds: expiration}}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return csr.Name, nil
}

// realNodeIP is the InternalIP of the tenant's Node node.
func realNodeIP(t *testing.T, tenant kubernetes.Interface, node string) string {
	t.Helper()
	n, err := tenant.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	t.Fatalf("Node %s has no InternalIP", node)
	return ""
}
