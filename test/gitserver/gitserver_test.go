package gitserver

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCloneWithTheCredentialOnly serves a repository on loopback: git clones it over HTTPS with
// the credential and the server's CA, and gets the commit pushed; a wrong password and no
// credential are refused with 401.
func TestCloneWithTheCredentialOnly(t *testing.T) {
	s, err := New(t.TempDir(), []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		t.Skip(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Serve(l)
	defer s.Close()
	repo, err := s.Init("apps", "main")
	if err != nil {
		t.Fatal(err)
	}
	head, err := repo.Commit(map[string]string{"cm.yaml": "kind: ConfigMap\n"}, "first")
	if err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, s.CA, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_SSL_CAINFO", ca) // over http.sslCAInfo, and set on machines with a proxy of their own
	base := "https://" + l.Addr().String() + "/apps.git"
	withCredential := func(password string) string {
		u, _ := url.Parse(base)
		u.User = url.UserPassword(s.Username, password)
		return u.String()
	}
	clone := filepath.Join(t.TempDir(), "clone")
	if _, err := Git(t.TempDir(), "clone", "-q", withCredential(s.Password), clone); err != nil {
		t.Fatal(err)
	}
	if got, _ := Git(clone, "rev-parse", "HEAD"); got != head {
		t.Errorf("the clone's HEAD is %q, want %q", got, head)
	}
	if _, err := Git(t.TempDir(), "-c", "credential.helper=", "clone", "-q", withCredential("wrong"), filepath.Join(t.TempDir(), "c")); err == nil || !strings.Contains(err.Error(), "401") && !strings.Contains(err.Error(), "Authentication failed") {
		t.Errorf("a clone with a wrong password: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.CA)
	resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}).Get(base + "/info/refs?service=git-upload-pack")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a request without a credential: %s, want 401", resp.Status)
	}
}
