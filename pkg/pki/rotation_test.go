package pki

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
)

// certsIn parses every certificate of a PEM bundle.
func certsIn(t *testing.T, data []byte) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	for rest := data; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			return out
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
}

func TestBundle(t *testing.T) {
	a, _ := NewCA("a")
	b, _ := NewCA("b")
	got, err := Bundle(a.CertPEM, append(append([]byte{}, b.CertPEM...), a.KeyPEM...), a.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	certs := certsIn(t, got)
	if len(certs) != 2 || !certs[0].Equal(a.Cert) || !certs[1].Equal(b.Cert) {
		t.Errorf("Bundle(a, b+key, a) = %d certificates, want a then b, each once and no key", len(certs))
	}
	if _, err := Bundle(a.KeyPEM, nil); err == nil {
		t.Error("Bundle without a certificate: no error")
	}
}

// A rotation's two phases in a tenant's directory: after StartRotation and EnsureTenant with a
// new CA, the clients' certificates are the new CA's, the serving certificate stays the old
// CA's, both CAs are trusted and the service-account key is new with the old public key kept;
// after CompleteRotation only the new CA and key are left.
func TestRotationPhases(t *testing.T) {
	dir := t.TempDir()
	opts := TenantOptions{Name: "ns/t1"}
	oldCA, _ := NewCA("tenant")
	before, _, err := EnsureTenant(dir, oldCA, opts)
	if err != nil {
		t.Fatal(err)
	}
	if before.Rotating() || !bytes.Equal(before.Trust, oldCA.CertPEM) {
		t.Fatal("a tenant without a rotation trusts more than its CA")
	}

	previous, err := StartRotation(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !previous.Cert.Equal(oldCA.Cert) {
		t.Error("StartRotation did not keep the CA as the previous one")
	}
	sa, _ := readServiceAccountKey(dir)
	if bytes.Equal(sa.PublicPEM, before.ServiceAccount.PublicPEM) {
		t.Error("StartRotation kept the service-account key")
	}
	if kept, _ := os.ReadFile(filepath.Join(dir, PreviousServiceAccountPublic)); !bytes.Equal(kept, before.ServiceAccount.PublicPEM) {
		t.Error("the previous service-account public key is not kept")
	}
	// Again (a reconcile after a crash): nothing moves further.
	if again, err := StartRotation(dir); err != nil || !again.Cert.Equal(oldCA.Cert) {
		t.Errorf("a second StartRotation: %v", err)
	}
	if sa2, _ := readServiceAccountKey(dir); !bytes.Equal(sa2.PrivatePEM, sa.PrivatePEM) {
		t.Error("a second StartRotation made another service-account key")
	}

	newCA, _ := NewCA("tenant")
	during, _, err := EnsureTenant(dir, newCA, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !during.Rotating() {
		t.Fatal("EnsureTenant does not see the rotation")
	}
	if during.APIServer.Cert.CheckSignatureFrom(oldCA.Cert) != nil {
		t.Error("during the first phase the serving certificate is not the previous CA's")
	}
	for name, kp := range map[string]*KeyPair{"admin": during.Admin, "controller-manager": during.ControllerManager, "scheduler": during.Scheduler} {
		if kp.Cert.CheckSignatureFrom(newCA.Cert) != nil {
			t.Errorf("during the first phase %s's certificate is not the new CA's", name)
		}
	}
	if trust := certsIn(t, during.Trust); len(trust) != 2 || !trust[0].Equal(newCA.Cert) || !trust[1].Equal(oldCA.Cert) {
		t.Errorf("trust during the first phase: %d certificates, want the new CA and the previous", len(trust))
	}
	if file, _ := os.ReadFile(filepath.Join(dir, CABundle)); !bytes.Equal(file, during.Trust) {
		t.Error("ca-bundle.crt is not the trust")
	}

	if err := CompleteRotation(dir); err != nil {
		t.Fatal(err)
	}
	after, _, err := EnsureTenant(dir, newCA, opts)
	if err != nil {
		t.Fatal(err)
	}
	if after.Rotating() || !bytes.Equal(after.Trust, newCA.CertPEM) {
		t.Error("after CompleteRotation the previous CA is still trusted")
	}
	if after.APIServer.Cert.CheckSignatureFrom(newCA.Cert) != nil {
		t.Error("after CompleteRotation the serving certificate is not the new CA's")
	}
	if !after.Admin.Cert.Equal(during.Admin.Cert) || !bytes.Equal(after.ServiceAccount.PrivatePEM, sa.PrivatePEM) {
		t.Error("CompleteRotation changed the new CA's certificates or the new service-account key")
	}
	for _, name := range []string{PreviousCACert, PreviousCAKey, PreviousServiceAccountPublic, CABundle} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s left after CompleteRotation (%v)", name, err)
		}
	}
}
