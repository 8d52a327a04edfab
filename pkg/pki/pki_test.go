package pki

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/keyutil"
)

func TestIssueVerifiesAgainstCA(t *testing.T) {
	ca, err := NewCA("tenant-ca")
	if err != nil {
		t.Fatal(err)
	}
	if !ca.Cert.IsCA || ca.Cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Fatalf("the CA may not sign: IsCA=%v usage=%v", ca.Cert.IsCA, ca.Cert.KeyUsage)
	}
	server, err := ca.Issue(Request{CommonName: "kube-apiserver", DNSNames: []string{"localhost"},
		IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Usage: ServerAuth})
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.Issue(Request{CommonName: AdminUser, Organizations: []string{AdminsGroup}, Usage: ClientAuth})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	if _, err := server.Cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "localhost",
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("serving certificate: %v", err)
	}
	if _, err := server.Cert.Verify(x509.VerifyOptions{Roots: roots,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("the serving certificate verified as a client certificate")
	}
	if _, err := client.Cert.Verify(x509.VerifyOptions{Roots: roots,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}
	if client.Cert.IsCA {
		t.Error("a leaf certificate says it is a CA")
	}
	if got := client.Cert.Subject.Organization; !slices.Equal(got, []string{AdminsGroup}) {
		t.Errorf("organizations = %v", got)
	}
	// The PEM forms load as a TLS key pair, as kube-apiserver will load them.
	if _, err := tls.X509KeyPair(server.CertPEM, server.KeyPEM); err != nil {
		t.Errorf("tls.X509KeyPair: %v", err)
	}
	if _, err := ca.Issue(Request{Usage: ClientAuth}); err == nil {
		t.Error("a certificate without a common name was issued")
	}
}

func TestParseRejectsForeignKey(t *testing.T) {
	a, _ := NewCA("a")
	b, _ := NewCA("b")
	if _, err := Parse(a.CertPEM, a.KeyPEM); err != nil {
		t.Fatalf("own key: %v", err)
	}
	if _, err := Parse(a.CertPEM, b.KeyPEM); err == nil {
		t.Fatal("a certificate parsed with another certificate's key")
	}
}

func TestServiceAccountKey(t *testing.T) {
	sa, err := NewServiceAccountKey()
	if err != nil {
		t.Fatal(err)
	}
	priv, err := keyutil.ParsePrivateKeyPEM(sa.PrivatePEM)
	if err != nil {
		t.Fatal(err)
	}
	pubs, err := keyutil.ParsePublicKeysPEM(sa.PublicPEM)
	if err != nil || len(pubs) != 1 {
		t.Fatalf("public keys: %v %v", pubs, err)
	}
	if !publicKeysEqual(pubs[0], priv.(crypto.Signer).Public()) {
		t.Fatal("sa.pub is not the public half of sa.key")
	}
}

func TestEnsureTenant(t *testing.T) {
	dir := t.TempDir()
	ca, _ := NewCA("tenant")
	opts := TenantOptions{Name: "ns/t1", ServiceIP: net.ParseIP("10.96.0.1"), CertSANs: []string{"t1.example.com", "192.0.2.7"}}
	first, changed, err := EnsureTenant(dir, ca, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !changed {
		t.Error("a first EnsureTenant reported no change")
	}
	s := first.APIServer.Cert
	for _, name := range []string{"localhost", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "t1.example.com"} {
		if !slices.Contains(s.DNSNames, name) {
			t.Errorf("serving certificate lacks DNS name %s: %v", name, s.DNSNames)
		}
	}
	for _, ip := range []string{"127.0.0.1", "10.96.0.1", "192.0.2.7"} {
		if !slices.ContainsFunc(s.IPAddresses, net.ParseIP(ip).Equal) {
			t.Errorf("serving certificate lacks IP %s: %v", ip, s.IPAddresses)
		}
	}
	checks := []struct {
		kp     *KeyPair
		signer *KeyPair
		cn     string
		orgs   []string
	}{
		{first.Admin, ca, AdminUser, []string{AdminsGroup}},
		{first.SuperAdmin, ca, SuperAdminUser, []string{MastersGroup}},
		{first.ControllerManager, ca, ControllerManager, nil},
		{first.Scheduler, ca, Scheduler, nil},
		{first.APIServerKubeletClient, ca, KubeletClient, []string{AdminsGroup}},
		{first.FrontProxyClient, first.FrontProxyCA, FrontProxyClient, nil},
	}
	for _, c := range checks {
		if err := c.kp.Cert.CheckSignatureFrom(c.signer.Cert); err != nil {
			t.Errorf("%s: not signed by its CA: %v", c.cn, err)
		}
		if c.kp.Cert.Subject.CommonName != c.cn || !slices.Equal(c.kp.Cert.Subject.Organization, c.orgs) {
			t.Errorf("%s: subject %v", c.cn, c.kp.Cert.Subject)
		}
	}
	if first.FrontProxyClient.Cert.CheckSignatureFrom(ca.Cert) == nil {
		t.Error("the front-proxy client is signed by the cluster CA; it must have its own CA")
	}

	// Again with the same CA: nothing is rewritten.
	second, changed, err := EnsureTenant(dir, ca, opts)
	if err != nil {
		t.Fatal(err)
	}
	if changed || !second.Admin.Cert.Equal(first.Admin.Cert) || string(second.ServiceAccount.PrivatePEM) != string(first.ServiceAccount.PrivatePEM) {
		t.Errorf("a second EnsureTenant changed files (changed=%v)", changed)
	}

	// A new SAN: only the serving certificate is remade.
	opts.CertSANs = append(opts.CertSANs, "other.example.com")
	third, changed, err := EnsureTenant(dir, ca, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !changed || third.APIServer.Cert.Equal(first.APIServer.Cert) || !slices.Contains(third.APIServer.Cert.DNSNames, "other.example.com") {
		t.Error("a new certSAN did not remake the serving certificate")
	}
	if !third.Admin.Cert.Equal(first.Admin.Cert) {
		t.Error("a new certSAN remade the admin certificate")
	}

	// Another CA (the Secret was replaced): every leaf it signs is remade; the service-account
	// key and the front-proxy CA stay.
	ca2, _ := NewCA("tenant")
	fourth, _, err := EnsureTenant(dir, ca2, opts)
	if err != nil {
		t.Fatal(err)
	}
	if fourth.Admin.Cert.CheckSignatureFrom(ca2.Cert) != nil || fourth.APIServer.Cert.CheckSignatureFrom(ca2.Cert) != nil {
		t.Error("leaves were not reissued by the new CA")
	}
	if string(fourth.ServiceAccount.PrivatePEM) != string(first.ServiceAccount.PrivatePEM) || !fourth.FrontProxyCA.Cert.Equal(first.FrontProxyCA.Cert) {
		t.Error("the service-account key or the front-proxy CA changed")
	}
	if info, err := os.Stat(filepath.Join(dir, "ca.key")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("ca.key mode: %v %v", info, err)
	}
}

func TestKubeconfig(t *testing.T) {
	ca, _ := NewCA("tenant")
	admin, _ := ca.Issue(Request{CommonName: AdminUser, Organizations: []string{AdminsGroup}, Usage: ClientAuth})
	data, err := Kubeconfig("t1", "https://127.0.0.1:30001", ca.CertPEM, AdminUser, admin)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:30001" || string(cfg.CAData) != string(ca.CertPEM) ||
		string(cfg.CertData) != string(admin.CertPEM) || string(cfg.KeyData) != string(admin.KeyPEM) {
		t.Errorf("kubeconfig does not round-trip: %+v", cfg)
	}
	if _, err := Kubeconfig("t1", "https://x", ca.CertPEM, "u", nil); err == nil {
		t.Error("a kubeconfig without credentials was made")
	}
}

func TestCertHash(t *testing.T) {
	ca, _ := NewCA("tenant")
	h := CertHash(ca.Cert)
	if len(h) != len("sha256:")+64 || h[:7] != "sha256:" {
		t.Errorf("CertHash = %q", h)
	}
}

// EnsureCA makes a CA once and keeps it (its clients' trust); a CA it cannot read is an error,
// never silently replaced.
func TestEnsureCAKeepsTheCA(t *testing.T) {
	dir := t.TempDir()
	ca, err := EnsureCA(dir, "front-proxy-ca", "test-ca")
	if err != nil {
		t.Fatal(err)
	}
	again, err := EnsureCA(dir, "front-proxy-ca", "another name")
	if err != nil || !bytes.Equal(again.CertPEM, ca.CertPEM) || ca.Cert.Subject.CommonName != "test-ca" || !ca.Cert.IsCA {
		t.Fatalf("the second call: %v (same CA: %v)", err, again != nil && bytes.Equal(again.CertPEM, ca.CertPEM))
	}
	if err := os.WriteFile(filepath.Join(dir, "front-proxy-ca.key"), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureCA(dir, "front-proxy-ca", "test-ca"); err == nil {
		t.Error("an unreadable CA was replaced")
	}
	sa, err := EnsureServiceAccountKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := EnsureServiceAccountKey(dir); err != nil || !bytes.Equal(again.PrivatePEM, sa.PrivatePEM) {
		t.Errorf("the service-account key was made again: %v", err)
	}
}
