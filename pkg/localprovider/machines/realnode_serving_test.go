package machines

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"net/netip"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// servingCSR is a kubelet-serving CSR requested by the node requester for the subject
// system:node:<subject>, naming dns and ips.
func servingCSR(t *testing.T, name, requester, subject string, dns []string, ips []string, usages ...certificatesv1.KeyUsage) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + subject, Organization: []string{"system:nodes"}}, DNSNames: dns}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(usages) == 0 {
		usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	}
	return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: certificatesv1.KubeletServingSignerName,
			Username: "system:node:" + requester, Groups: []string{"system:nodes", "system:authenticated"},
			Usages:  usages,
			Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})}}
}

// The node n0 (10.250.0.2) holds its own credentials and asks, besides its own serving
// certificate, for one that serves as n1 (10.250.0.3) or as itself at n1's address, or as the
// tenant's API: the provider approves only its own name and address. n1's decisions approve
// nothing n0 asked for either.
func TestAttackServingCSRForAnotherNode(t *testing.T) {
	ip0, ip1 := netip.MustParseAddr("10.250.0.2"), netip.MustParseAddr("10.250.0.3")
	own := servingCSR(t, "own", "n0", "n0", []string{"n0"}, []string{"10.250.0.2"})
	attacks := map[string]*certificatesv1.CertificateSigningRequest{
		"another node's name and address": servingCSR(t, "other-name", "n0", "n1", []string{"n1"}, []string{"10.250.0.3"}),
		"its name at another's address":   servingCSR(t, "other-ip", "n0", "n0", []string{"n0"}, []string{"10.250.0.3"}),
		"its address, another's DNS name": servingCSR(t, "other-dns", "n0", "n0", []string{"n1"}, []string{"10.250.0.2"}),
		"the tenant API's name":           servingCSR(t, "api-name", "n0", "n0", []string{"n0", "kubernetes.default.svc"}, []string{"10.250.0.2"}),
		"a loopback address":              servingCSR(t, "loopback", "n0", "n0", []string{"n0"}, []string{"10.250.0.2", "127.0.0.1"}),
		"client auth too": servingCSR(t, "client-auth", "n0", "n0", []string{"n0"}, []string{"10.250.0.2"},
			certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth, certificatesv1.UsageClientAuth),
	}
	client := fake.NewClientset(own)
	for _, csr := range attacks {
		if _, err := client.CertificatesV1().CertificateSigningRequests().Create(context.Background(), csr, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for node, ip := range map[string]netip.Addr{"n1": ip1, "n0": ip0} {
		if _, err := decideServingCSRs(context.Background(), client, node, ip); err != nil {
			t.Fatal(err)
		}
	}
	get := func(name string) *certificatesv1.CertificateSigningRequest {
		csr, err := client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return csr
	}
	if c := get("own"); len(c.Status.Conditions) != 1 || c.Status.Conditions[0].Type != certificatesv1.CertificateApproved {
		t.Errorf("the node's own serving certificate request: %+v, want approved", c.Status.Conditions)
	}
	for what, csr := range attacks {
		c := get(csr.Name)
		if len(c.Status.Conditions) != 1 || c.Status.Conditions[0].Type != certificatesv1.CertificateDenied {
			t.Errorf("n0 asked for %s: %+v, want denied", what, c.Status.Conditions)
		} else if !strings.Contains(c.Status.Conditions[0].Message, "denies") {
			t.Errorf("n0 asked for %s: the denial says %q", what, c.Status.Conditions[0].Message)
		}
	}
}

// A CSR the node did not request itself (another node's credentials, a user's) for the node's
// own name and address is not the node's: its decisions leave it alone.
func TestServingCSRRequestedByAnother(t *testing.T) {
	for requester, csr := range map[string]*certificatesv1.CertificateSigningRequest{
		"another node": servingCSR(t, "by-n1", "n1", "n0", []string{"n0"}, []string{"10.250.0.2"}),
	} {
		if err := decideServingCSR(csr, "n0", netip.MustParseAddr("10.250.0.2")); err == nil {
			t.Errorf("requested by %s: approved for n0", requester)
		}
		csr.Spec.Username = "alice"
		if err := decideServingCSR(csr, "n0", netip.MustParseAddr("10.250.0.2")); err == nil {
			t.Errorf("requested by a user: approved for n0")
		}
	}
	client := fake.NewClientset(servingCSR(t, "by-n1", "n1", "n0", []string{"n0"}, []string{"10.250.0.2"}))
	approved, err := decideServingCSRs(context.Background(), client, "n0", netip.MustParseAddr("10.250.0.2"))
	csr, _ := client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), "by-n1", metav1.GetOptions{})
	if err != nil || approved || len(csr.Status.Conditions) != 0 {
		t.Errorf("n0's decisions on n1's request: approved %v, %v, %+v; want it untouched", approved, err, csr.Status.Conditions)
	}
}
