package machines

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

// servingCSR is a kubelet-serving CSR of an ECDSA key requested by the node requester for the
// subject system:node:<subject>, naming dns and ips, with usages (by default the kubelet's for
// an ECDSA key).
func servingCSR(t *testing.T, name, requester, subject string, dns []string, ips []string, usages ...certificatesv1.KeyUsage) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if len(usages) == 0 {
		usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	}
	return servingCSRWithKey(t, key, name, requester, subject, dns, ips, usages...)
}

// servingCSRWithKey is servingCSR with the key key and exactly usages.
func servingCSRWithKey(t *testing.T, key crypto.Signer, name, requester, subject string, dns []string, ips []string, usages ...certificatesv1.KeyUsage) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + subject, Organization: []string{"system:nodes"}}, DNSNames: dns}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: certificatesv1.KubeletServingSignerName,
			Username: "system:node:" + requester, Groups: []string{"system:nodes", "system:authenticated"},
			Usages:  usages,
			Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})}}
}

// machineNode is the identity of a machine whose node name is its host name, at ip.
func machineNode(name, ip string) servingIdentity {
	return servingIdentity{node: name, dns: []string{name}, ips: []netip.Addr{netip.MustParseAddr(ip)}}
}

// rsaKey is an RSA key, as a kubelet configured for RSA keys has.
func rsaKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// The node n0 (10.250.0.2) holds its own credentials and asks, besides its own serving
// certificate, for one that serves as n1 (10.250.0.3) or as itself at n1's address, or as the
// tenant's API: the provider approves only its own name and address. n1's decisions approve
// nothing n0 asked for either.
func TestAttackServingCSRForAnotherNode(t *testing.T) {
	own := servingCSR(t, "own", "n0", "n0", []string{"n0"}, []string{"10.250.0.2"})
	attacks := map[string]*certificatesv1.CertificateSigningRequest{
		"another node's name and address":  servingCSR(t, "other-name", "n0", "n1", []string{"n1"}, []string{"10.250.0.3"}),
		"its name at another's address":    servingCSR(t, "other-ip", "n0", "n0", []string{"n0"}, []string{"10.250.0.3"}),
		"its address, another's DNS name":  servingCSR(t, "other-dns", "n0", "n0", []string{"n1"}, []string{"10.250.0.2"}),
		"the tenant API's name":            servingCSR(t, "api-name", "n0", "n0", []string{"n0", "kubernetes.default.svc"}, []string{"10.250.0.2"}),
		"a loopback address":               servingCSR(t, "loopback", "n0", "n0", []string{"n0"}, []string{"10.250.0.2", "127.0.0.1"}),
		"the nodes' API address":           servingCSR(t, "api-ip", "n0", "n0", []string{"n0"}, []string{"10.250.0.2", "10.250.255.254"}),
		"the tenant API's Service address": servingCSR(t, "api-svc", "n0", "n0", []string{"n0"}, []string{"10.250.0.2", "10.96.0.1"}),
		"a DNS name not the node's":        servingCSR(t, "other-dns-extra", "n0", "n0", []string{"n0", "evil.example.com"}, []string{"10.250.0.2"}),
		"server auth alone": servingCSR(t, "server-only", "n0", "n0", []string{"n0"}, []string{"10.250.0.2"},
			certificatesv1.UsageServerAuth),
		"key encipherment for an ECDSA key": servingCSR(t, "ecdsa-encipher", "n0", "n0", []string{"n0"}, []string{"10.250.0.2"},
			certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth),
		"client auth too": servingCSR(t, "client-auth", "n0", "n0", []string{"n0"}, []string{"10.250.0.2"},
			certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth, certificatesv1.UsageClientAuth),
	}
	client := fake.NewClientset(own)
	for _, csr := range attacks {
		if _, err := client.CertificatesV1().CertificateSigningRequests().Create(context.Background(), csr, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []servingIdentity{machineNode("n1", "10.250.0.3"), machineNode("n0", "10.250.0.2")} {
		if _, err := decideServingCSRs(context.Background(), client, id, time.Time{}); err != nil {
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
	} else if !slices.Equal(c.Spec.Usages, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}) {
		t.Errorf("the approved request's usages: %v, want exactly a serving certificate's for an ECDSA key", c.Spec.Usages)
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
		if err := decideServingCSR(csr, machineNode("n0", "10.250.0.2")); err == nil {
			t.Errorf("requested by %s: approved for n0", requester)
		}
		csr.Spec.Username = "alice"
		if err := decideServingCSR(csr, machineNode("n0", "10.250.0.2")); err == nil {
			t.Errorf("requested by a user: approved for n0")
		}
	}
	client := fake.NewClientset(servingCSR(t, "by-n1", "n1", "n0", []string{"n0"}, []string{"10.250.0.2"}))
	approved, err := decideServingCSRs(context.Background(), client, machineNode("n0", "10.250.0.2"), time.Time{})
	csr, _ := client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), "by-n1", metav1.GetOptions{})
	if err != nil || approved || len(csr.Status.Conditions) != 0 {
		t.Errorf("n0's decisions on n1's request: approved %v, %v, %+v; want it untouched", approved, err, csr.Status.Conditions)
	}
}

// A user (a tenant admin, a ServiceAccount: anyone allowed to create CSRs) asks for a
// kubelet-serving certificate with a serving certificate's usages, for the node n0's name and
// address or for a name no machine has: no node asked, so no machine ever approves it, and the
// first machine to see it denies it with the reason (as kubelet-csr-approver does), rather than
// leaving it pending for an approver less careful.
func TestAttackServingCSRFromAUser(t *testing.T) {
	asUser := func(name, user string, subject string) *certificatesv1.CertificateSigningRequest {
		csr := servingCSR(t, name, "n0", subject, []string{subject}, []string{"10.250.0.2"})
		csr.Spec.Username, csr.Spec.Groups = user, []string{"system:authenticated"}
		return csr
	}
	attacks := []*certificatesv1.CertificateSigningRequest{
		asUser("admin-as-n0", "kubernetes-admin", "n0"),
		asUser("sa-as-n0", "system:serviceaccount:kube-system:csr-maker", "n0"),
		asUser("admin-as-ghost", "kubernetes-admin", "ghost"),
	}
	// A user named like a node, without the nodes' group, is no node either.
	named := servingCSR(t, "named-n0", "n0", "n0", []string{"n0"}, []string{"10.250.0.2"})
	named.Spec.Groups = []string{"system:authenticated"}
	attacks = append(attacks, named)
	client := fake.NewClientset()
	for _, csr := range attacks {
		if _, err := client.CertificatesV1().CertificateSigningRequests().Create(context.Background(), csr, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	approved, err := decideServingCSRs(context.Background(), client, machineNode("n0", "10.250.0.2"), time.Time{})
	if err != nil || approved {
		t.Fatalf("n0's decisions: approved %v, %v", approved, err)
	}
	for _, want := range attacks {
		c, err := client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), want.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Status.Conditions) != 1 || c.Status.Conditions[0].Type != certificatesv1.CertificateDenied ||
			!strings.Contains(c.Status.Conditions[0].Message, want.Spec.Username) {
			t.Errorf("%s's request for %s: %+v, want denied naming the requester", want.Spec.Username, want.Name, c.Status.Conditions)
		}
	}
}

// A request the node's kubelet made before it was restarted (its credentials changed) is its
// own and approved, but is no certificate of the running kubelet: the node is looked at again
// each second until one made since is approved, not in a minute (the rotation's e2e waited 59 s).
func TestServingApprovedSinceTheKubeletStarted(t *testing.T) {
	stale := servingCSR(t, "before-restart", "n0", "n0", []string{"n0"}, []string{"10.250.0.2"})
	stale.CreationTimestamp = metav1.NewTime(time.Now().Add(-time.Minute))
	client := fake.NewClientset(stale)
	approved, err := decideServingCSRs(context.Background(), client, machineNode("n0", "10.250.0.2"), time.Now())
	if err != nil || approved {
		t.Errorf("a request from before the kubelet started: approved %v (%v), want it not counted", approved, err)
	}
	if c, _ := client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), "before-restart", metav1.GetOptions{}); len(c.Status.Conditions) != 1 || c.Status.Conditions[0].Type != certificatesv1.CertificateApproved {
		t.Errorf("the node's earlier request: %+v, want approved (it is the node's own)", c.Status.Conditions)
	}
	fresh := servingCSR(t, "after-restart", "n0", "n0", []string{"n0"}, []string{"10.250.0.2"})
	fresh.CreationTimestamp = metav1.NewTime(time.Now())
	if _, err := client.CertificatesV1().CertificateSigningRequests().Create(context.Background(), fresh, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if approved, err := decideServingCSRs(context.Background(), client, machineNode("n0", "10.250.0.2"), time.Now().Add(-time.Second)); err != nil || !approved {
		t.Errorf("a request made since the kubelet started: approved %v (%v)", approved, err)
	}
}

// The kubelet's own requests are approved: with an ECDSA key it asks for digital signature and
// server auth, with an RSA key key encipherment besides (client-go's
// DefaultKubeletServingGetUsages); for its name and address, exactly as the machine's status
// has them. A request naming fewer of them is no kubelet's and is denied.
func TestServingCSRExactly(t *testing.T) {
	ecdsaCSR := servingCSR(t, "ecdsa", "n0", "n0", []string{"n0"}, []string{"10.250.0.2"})
	rsaCSR := servingCSRWithKey(t, rsaKey(t), "rsa", "n0", "n0", []string{"n0"}, []string{"10.250.0.2"},
		certificatesv1.UsageKeyEncipherment, certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth)
	for _, csr := range []*certificatesv1.CertificateSigningRequest{ecdsaCSR, rsaCSR} {
		if err := decideServingCSR(csr, machineNode("n0", "10.250.0.2")); err != nil {
			t.Errorf("the kubelet's own request %s: %v, want approved", csr.Name, err)
		}
	}
	for what, csr := range map[string]*certificatesv1.CertificateSigningRequest{
		"its address only":           servingCSR(t, "ip-only", "n0", "n0", nil, []string{"10.250.0.2"}),
		"its name only":              servingCSR(t, "name-only", "n0", "n0", []string{"n0"}, nil),
		"its address twice, no name": servingCSR(t, "ip-twice", "n0", "n0", nil, []string{"10.250.0.2", "10.250.0.2"}),
		"an RSA key without key encipherment": servingCSRWithKey(t, rsaKey(t), "rsa-no-encipher", "n0", "n0", []string{"n0"}, []string{"10.250.0.2"},
			certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth),
	} {
		if err := decideServingCSR(csr, machineNode("n0", "10.250.0.2")); err == nil {
			t.Errorf("a request for %s: approved", what)
		}
	}
}

// The names and addresses a node's serving certificate may name are the LocalMachine's status
// (the provider's record: its Hostname and InternalIP), not anything the node reports.
func TestServingIdentityOf(t *testing.T) {
	lm := &external.LocalMachine{Status: external.LocalMachineStatus{NodeName: "n0", Addresses: []external.MachineAddress{
		{Type: "Hostname", Address: "n0"}, {Type: "InternalIP", Address: "10.250.0.2"}}}}
	id, ok := servingIdentityOf(lm)
	if !ok || id.node != "n0" || !slices.Equal(id.dns, []string{"n0"}) || !slices.Equal(id.ips, []netip.Addr{netip.MustParseAddr("10.250.0.2")}) {
		t.Errorf("servingIdentityOf: %+v %v, want n0 at [n0] [10.250.0.2]", id, ok)
	}
	lm.Status.NodeName = ""
	if _, ok := servingIdentityOf(lm); ok {
		t.Error("a machine that has not joined has an identity to approve")
	}
}
