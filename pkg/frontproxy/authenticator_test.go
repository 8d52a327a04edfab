package frontproxy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
)

// keyPair is a certificate and its key.
type keyPair struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

type certSpec struct {
	cn                  string
	serial              int64
	notBefore, notAfter time.Time
	isCA                bool
	usages              []x509.ExtKeyUsage
}

// issue makes a certificate of spec signed by parent (self-signed when parent is nil).
func issue(t *testing.T, spec certSpec, parent *keyPair) *keyPair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(spec.serial), Subject: pkix.Name{CommonName: spec.cn},
		NotBefore: spec.notBefore, NotAfter: spec.notAfter, ExtKeyUsage: spec.usages, BasicConstraintsValid: true}
	if spec.isCA {
		tmpl.IsCA, tmpl.KeyUsage = true, x509.KeyUsageCertSign
	}
	signer, signerCert := key, tmpl
	if parent != nil {
		signer, signerCert = parent.key, parent.cert
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &keyPair{cert, key}
}

// caProvider is a CA bundle that a test replaces, as a rewritten --requestheader-client-ca-file is.
type caProvider struct {
	mu     sync.Mutex
	bundle []byte
	pool   *x509.CertPool
}

func newCAProvider(cas ...*keyPair) *caProvider {
	p := &caProvider{}
	p.set(cas...)
	return p
}

func (p *caProvider) set(cas ...*keyPair) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bundle, p.pool = nil, x509.NewCertPool()
	for _, ca := range cas {
		p.bundle = append(p.bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})...)
		p.pool.AddCert(ca.cert)
	}
}

func (p *caProvider) Name() string                                      { return "test" }
func (p *caProvider) AddListener(listener dynamiccertificates.Listener) {}
func (p *caProvider) CurrentCABundleContent() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bundle
}
func (p *caProvider) VerifyOptions() (x509.VerifyOptions, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return x509.VerifyOptions{Roots: p.pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, p.pool != nil
}

// fixture is a front-proxy CA, a front-proxy client certificate from it, and the authenticator
// with a fake clock and a counted Verify; fallback answers "no" and counts.
type fixture struct {
	ca, client       *keyPair
	provider         *caProvider
	config           *authenticatorfactory.RequestHeaderConfig
	auth             *Authenticator
	clock            time.Time
	verifies, falls  int
	start, end       time.Time
	clientAuthUsages []x509.ExtKeyUsage
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{start: time.Now().Add(-time.Hour), end: time.Now().Add(time.Hour)}
	f.clientAuthUsages = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	f.ca = issue(t, certSpec{cn: "front-proxy-ca", serial: 1, notBefore: f.start.Add(-time.Hour), notAfter: f.end.Add(time.Hour), isCA: true}, nil)
	f.client = f.issue(t, "front-proxy-client", 2)
	f.provider = newCAProvider(f.ca)
	f.config = requestHeaderConfig(f.provider)
	f.clock = time.Now()
	f.auth = New(f.config, authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		f.falls++
		return nil, false, nil
	}))
	f.auth.now = func() time.Time { return f.clock }
	f.auth.verify = func(c *x509.Certificate, opts x509.VerifyOptions) ([][]*x509.Certificate, error) {
		f.verifies++
		return c.Verify(opts)
	}
	return f
}

func (f *fixture) issue(t *testing.T, cn string, serial int64) *keyPair {
	return issue(t, certSpec{cn: cn, serial: serial, notBefore: f.start, notAfter: f.end, usages: f.clientAuthUsages}, f.ca)
}

func requestHeaderConfig(ca dynamiccertificates.CAContentProvider) *authenticatorfactory.RequestHeaderConfig {
	return &authenticatorfactory.RequestHeaderConfig{
		UsernameHeaders:     headerrequest.StaticStringSlice{"X-Remote-User"},
		UIDHeaders:          headerrequest.StaticStringSlice{"X-Remote-Uid"},
		GroupHeaders:        headerrequest.StaticStringSlice{"X-Remote-Group"},
		ExtraHeaderPrefixes: headerrequest.StaticStringSlice{"X-Remote-Extra-"},
		CAContentProvider:   ca,
		AllowedClientNames:  headerrequest.StaticStringSlice{"front-proxy-client"},
	}
}

// request is a proxied request for alice presenting certs.
func request(certs ...*x509.Certificate) *http.Request {
	req := httptest.NewRequest(http.MethodGet, "/apis/butler.butlerlabs.dev/v1alpha1/tenantclusters", nil)
	if certs != nil {
		req.TLS = &tls.ConnectionState{PeerCertificates: certs}
	}
	req.Header.Set("X-Remote-User", "alice")
	req.Header.Add("X-Remote-Group", "team-a")
	req.Header.Set("X-Remote-Extra-Scopes", "one")
	return req
}

// expectAlice fails unless a authenticates req as alice, the identity in its headers.
func expectAlice(t *testing.T, a authenticator.Request, req *http.Request) {
	t.Helper()
	resp, ok, err := a.AuthenticateRequest(req)
	if err != nil || !ok {
		t.Fatalf("not authenticated: ok=%v err=%v", ok, err)
	}
	u := resp.User
	if u.GetName() != "alice" || !slices.Equal(u.GetGroups(), []string{"team-a", "system:authenticated"}) ||
		!slices.Equal(u.GetExtra()["scopes"], []string{"one"}) {
		t.Fatalf("user = %#v", u)
	}
}

func TestVerifiesACertificateOnceAndKeepsIt(t *testing.T) {
	f := newFixture(t)
	for range 3 {
		expectAlice(t, f.auth, request(f.client.cert))
	}
	if f.verifies != 1 || f.falls != 0 {
		t.Fatalf("verifies = %d, fallbacks = %d; want 1, 0", f.verifies, f.falls)
	}
}

// TestAnswersAsTheLibrary compares every answer with k8s.io/apiserver's request-header
// authenticator (what DelegatingAuthenticatorConfig builds), first and second time.
func TestAnswersAsTheLibrary(t *testing.T) {
	f := newFixture(t)
	otherCA := issue(t, certSpec{cn: "front-proxy-ca", serial: 1, notBefore: f.start, notAfter: f.end, isCA: true}, nil)
	cases := map[string]func() *http.Request{
		"the front proxy":     func() *http.Request { return request(f.client.cert) },
		"no identity headers": func() *http.Request { r := request(f.client.cert); r.Header.Del("X-Remote-User"); return r },
		"no certificate":      func() *http.Request { return request() },
		"another CA": func() *http.Request {
			return request(issue(t, certSpec{cn: "front-proxy-client", serial: 2, notBefore: f.start, notAfter: f.end, usages: f.clientAuthUsages}, otherCA).cert)
		},
		"a name not allowed": func() *http.Request { return request(f.issue(t, "mallory", 3).cert) },
		"server auth only": func() *http.Request {
			return request(issue(t, certSpec{cn: "front-proxy-client", serial: 4, notBefore: f.start, notAfter: f.end, usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, f.ca).cert)
		},
		"expired": func() *http.Request {
			return request(issue(t, certSpec{cn: "front-proxy-client", serial: 5, notBefore: f.start, notAfter: time.Now().Add(-time.Minute), usages: f.clientAuthUsages}, f.ca).cert)
		},
		"not yet valid": func() *http.Request {
			return request(issue(t, certSpec{cn: "front-proxy-client", serial: 6, notBefore: time.Now().Add(time.Minute), notAfter: f.end, usages: f.clientAuthUsages}, f.ca).cert)
		},
		"the CA as the client": func() *http.Request { return request(f.ca.cert) },
	}
	library := group.NewAuthenticatedGroupAdder(union.New(headerrequest.NewDynamicVerifyOptionsSecure(
		f.provider.VerifyOptions, f.config.AllowedClientNames, f.config.UsernameHeaders, f.config.UIDHeaders, f.config.GroupHeaders, f.config.ExtraHeaderPrefixes)))
	ours := New(f.config, library)
	for name, req := range cases {
		t.Run(name, func(t *testing.T) {
			r := req()
			want, wantOK, wantErr := library.AuthenticateRequest(r.Clone(r.Context()))
			for range 2 {
				got, gotOK, gotErr := ours.AuthenticateRequest(r.Clone(r.Context()))
				if gotOK != wantOK || (gotErr != nil) != (wantErr != nil) {
					t.Fatalf("ok=%v err=%v, the library: ok=%v err=%v", gotOK, gotErr, wantOK, wantErr)
				}
				if wantOK && (got.User.GetName() != want.User.GetName() || !slices.Equal(got.User.GetGroups(), want.User.GetGroups())) {
					t.Fatalf("user %#v, the library: %#v", got.User, want.User)
				}
			}
		})
	}
}

func TestChecksValidityTimesOnEveryRequest(t *testing.T) {
	f := newFixture(t)
	expectAlice(t, f.auth, request(f.client.cert))
	for name, at := range map[string]time.Time{
		"after the certificate's NotAfter":   f.end.Add(time.Second),
		"before the certificate's NotBefore": f.start.Add(-time.Second),
		"after the CA's NotAfter":            f.end.Add(2 * time.Hour),
	} {
		f.clock, f.falls = at, 0
		if _, ok, _ := f.auth.AuthenticateRequest(request(f.client.cert)); ok || f.falls != 1 {
			t.Errorf("%s: trusted (ok=%v, fallbacks %d)", name, ok, f.falls)
		}
	}
	// Back within the window, the kept answer holds again.
	f.clock, f.verifies = time.Now(), 0
	expectAlice(t, f.auth, request(f.client.cert))
	if f.verifies != 0 {
		t.Errorf("verified again within the window")
	}

	// A CA that expires before its client certificate bounds the window.
	shortCA := issue(t, certSpec{cn: "short-ca", serial: 10, notBefore: f.start, notAfter: time.Now().Add(time.Minute), isCA: true}, nil)
	client := issue(t, certSpec{cn: "front-proxy-client", serial: 11, notBefore: f.start, notAfter: f.end, usages: f.clientAuthUsages}, shortCA)
	f.provider.set(f.ca, shortCA)
	expectAlice(t, f.auth, request(client.cert))
	f.clock, f.falls = time.Now().Add(2*time.Minute), 0
	if _, ok, _ := f.auth.AuthenticateRequest(request(client.cert)); ok || f.falls != 1 {
		t.Errorf("trusted after its CA expired")
	}
}

func TestForgetsWhenTheCABundleChanges(t *testing.T) {
	f := newFixture(t)
	expectAlice(t, f.auth, request(f.client.cert))

	// The proxy's CA is replaced: its old certificate is no longer trusted, and nothing is kept.
	next := issue(t, certSpec{cn: "front-proxy-ca-2", serial: 20, notBefore: f.start, notAfter: f.end, isCA: true}, nil)
	f.provider.set(next)
	if _, ok, _ := f.auth.AuthenticateRequest(request(f.client.cert)); ok || f.falls != 1 {
		t.Fatalf("trusted under a bundle without its CA")
	}
	if len(f.auth.verified) != 0 {
		t.Fatalf("%d chains kept after the bundle changed", len(f.auth.verified))
	}

	// A bundle that adds a CA is another bundle: the certificate is verified again under it.
	f.provider.set(f.ca, next)
	f.verifies = 0
	for range 2 {
		expectAlice(t, f.auth, request(f.client.cert))
	}
	if f.verifies != 1 {
		t.Fatalf("verifies under the new bundle = %d, want 1", f.verifies)
	}
}

// TestKeysOnTheWholeCertificate: a certificate that copies the trusted one's subject, serial,
// validity and issuer name, signed by another key, is not taken for it.
func TestKeysOnTheWholeCertificate(t *testing.T) {
	f := newFixture(t)
	expectAlice(t, f.auth, request(f.client.cert))
	impostorCA := issue(t, certSpec{cn: "front-proxy-ca", serial: 1, notBefore: f.ca.cert.NotBefore, notAfter: f.ca.cert.NotAfter, isCA: true}, nil)
	forged := issue(t, certSpec{cn: "front-proxy-client", serial: 2, notBefore: f.start, notAfter: f.end, usages: f.clientAuthUsages}, impostorCA)
	if _, ok, _ := f.auth.AuthenticateRequest(request(forged.cert)); ok || f.falls != 1 {
		t.Fatalf("a forged certificate was trusted")
	}

	// The key is every presented certificate: the leaf alone, kept with its intermediate, is
	// verified on its own (and fails: the intermediate is what chains it to the CA).
	inter := issue(t, certSpec{cn: "front-proxy-intermediate", serial: 30, notBefore: f.start, notAfter: f.end, isCA: true}, f.ca)
	leaf := issue(t, certSpec{cn: "front-proxy-client", serial: 31, notBefore: f.start, notAfter: f.end, usages: f.clientAuthUsages}, inter)
	expectAlice(t, f.auth, request(leaf.cert, inter.cert))
	f.falls = 0
	if _, ok, _ := f.auth.AuthenticateRequest(request(leaf.cert)); ok || f.falls != 1 {
		t.Fatalf("the leaf without its intermediate was trusted")
	}
}

func TestKeepsAtMostMaxVerified(t *testing.T) {
	f := newFixture(t)
	for i := range MaxVerified + 10 {
		expectAlice(t, f.auth, request(f.issue(t, "front-proxy-client", int64(100+i)).cert))
		if n := len(f.auth.verified); n > MaxVerified {
			t.Fatalf("%d chains kept, at most %d", n, MaxVerified)
		}
	}
	if len(f.auth.verified) != MaxVerified {
		t.Fatalf("%d chains kept, want %d", len(f.auth.verified), MaxVerified)
	}
}

// TestConcurrentRequests runs requests from many goroutines while the bundle changes between two
// that both hold the proxy's CA (for -race).
func TestConcurrentRequests(t *testing.T) {
	f := newFixture(t)
	f.auth.verify, f.auth.now = (*x509.Certificate).Verify, time.Now
	other := issue(t, certSpec{cn: "other-ca", serial: 40, notBefore: f.start, notAfter: f.end, isCA: true}, nil)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				switch {
				case g == 0 && i%20 == 0:
					f.provider.set(f.ca, other)
				case g == 0 && i%10 == 0:
					f.provider.set(f.ca)
				}
				expectAlice(t, f.auth, request(f.client.cert))
			}
		})
	}
	wg.Wait()
}
