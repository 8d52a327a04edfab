package e2e

import (
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
)

// realNodeServingCertificates: each kubelet serves with a certificate of the tenant CA for its
// own address (a CSR the provider approved; the tenant's kube-apiserver verifies it for logs,
// exec and port-forward); and node one, with its own credentials, asks for a serving certificate
// as node two (the tenant's kube-apiserver refuses it at create), and as itself at node two's
// address: the provider denies it, nothing signs it.
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
	for _, ip := range []string{ip1, ip2} {
		realNodeServesWithTenantCA(t, roots, ip)
	}

	key := realNodeMachine(t, tenant, one)
	nodeConfig, err := clientcmd.BuildConfigFromFlags("", filepath.Join(plane.dir, "machines", key, "kubelet.kubeconfig"))
	if err != nil {
		t.Fatalf("node %s's credentials: %v", one, err)
	}
	asNode := kubernetes.NewForConfigOrDie(nodeConfig)
	for what, req := range map[string]struct {
		subject string
		ip      string
	}{"node " + two + "'s name and address": {two, ip2}, "its own name at " + two + "'s address": {one, ip2}} {
		name, err := realNodeRequestServing(asNode, req.subject, req.ip)
		if apierrors.IsForbidden(err) && req.subject != one {
			// The tenant's kube-apiserver itself refuses a node's CSR for another node's name.
			t.Logf("%s's request for %s: refused at create: %v", one, what, err)
			continue
		}
		if err != nil {
			t.Fatalf("%s's request for %s: %v", one, what, err)
		}
		// The provider looks at a node's requests again within a minute, or at once when its
		// LocalMachine changes.
		ns, machine, _ := strings.Cut(key, "/")
		if _, err := dynamicClient(t).Resource(external.LocalMachineGVR).Namespace(ns).Patch(context.Background(), machine, types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"e2e.butlerlabs.dev/poke":"`+name+`"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		lmWait(t, 30*time.Second, fmt.Sprintf("%s's request for %s to be decided", one, what), func() (bool, string) {
			csr, err := tenant.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, c := range csr.Status.Conditions {
				if c.Type == certificatesv1.CertificateApproved || len(csr.Status.Certificate) > 0 {
					t.Errorf("node %s's credentials got a serving certificate for %s approved: %+v", one, what, csr.Status)
					return true, ""
				}
				if c.Type == certificatesv1.CertificateDenied {
					return true, ""
				}
			}
			return false, fmt.Sprint(csr.Status)
		})
	}
}

// realNodeServesWithTenantCA checks that the kubelet at ip serves a certificate of the tenant CA
// (roots) for that address.
func realNodeServesWithTenantCA(t *testing.T, roots *x509.CertPool, ip string) {
	t.Helper()
	var state tls.ConnectionState
	lmWait(t, time.Minute, "the kubelet at "+ip+" to serve", func() (bool, string) {
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
}

// realNodeRequestServing creates, with client (a node's credentials), a kubelet-serving CSR
// for system:node:<subject> at ip, and returns its name.
func realNodeRequestServing(client kubernetes.Interface, subject, ip string) (string, error) {
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
	csr, err := client.CertificatesV1().CertificateSigningRequests().Create(context.Background(), &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "attack-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: certificatesv1.KubeletServingSignerName,
			Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			Usages:  []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}}}, metav1.CreateOptions{})
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
