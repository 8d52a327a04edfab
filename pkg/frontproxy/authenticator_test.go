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
	"reflect"
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
// with a fake clock and a counted Verify in front of k8s.io/apiserver's own request-header
// authenticator (what DelegatingAuthenticatorConfig builds), whose verifications are counted too.
type fixture struct {
	ca, client       *keyPair
	provider         *caProvider
	allowed          *names
	config           *authenticatorfactory.RequestHeaderConfig
	library          authenticator.Request
	auth             *Authenticator
	clock            time.Time
	verifies, falls  int // ours, and requests handed to the library
	libraryVerifies  int
	start, end       time.Time
	clientAuthUsages []x509.ExtKeyUsage
}

// names is an allowed-names list a test changes, as a reloaded ConfigMap does.
type names struct {
	mu sync.Mutex
	v  []string
}

func (n *names) Value() []string { n.mu.Lock(); defer n.mu.Unlock(); return slices.Clone(n.v) }
func (n *names) set(v ...string) { n.mu.Lock(); defer n.mu.Unlock(); n.v = v }

func newFixture(t *testing.T) *fixture {
	f := &fixture{start: time.Now().Add(-time.Hour), end: time.Now().Add(time.Hour)}
	f.clientAuthUsages = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	f.ca = issue(t, certSpec{cn: "front-proxy-ca", serial: 1, notBefore: f.start.Add(-time.Hour), notAfter: f.end.Add(time.Hour), isCA: true}, nil)
	f.client = f.issue(t, "front-proxy-client", 2)
	f.provider = newCAProvider(f.ca)
	f.allowed = &names{v: []string{"front-proxy-client"}}
	f.config = requestHeaderConfig(f.provider, f.allowed)
	f.clock = time.Now()
	// The library calls its options function once before each Verify of a presented chain.
	f.library = group.NewAuthenticatedGroupAdder(union.New(headerrequest.NewDynamicVerifyOptionsSecure(
		func() (x509.VerifyOptions, bool) {
			f.libraryVerifies++
			opts, ok := f.provider.VerifyOptions()
			opts.CurrentTime = f.clock
			return opts, ok
		},
		f.config.AllowedClientNames, f.config.UsernameHeaders, f.config.UIDHeaders, f.config.GroupHeaders, f.config.ExtraHeaderPrefixes)))
	f.auth = newAuthenticator(f.config, authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
		f.falls++
		return f.library.AuthenticateRequest(r)
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

func requestHeaderConfig(ca dynamiccertificates.CAContentProvider, allowed headerrequest.StringSliceProvider) *authenticatorfactory.RequestHeaderConfig {
	return &authenticatorfactory.RequestHeaderConfig{
		UsernameHeaders:     headerrequest.StaticStringSlice{"X-Remote-User"},
		UIDHeaders:          headerrequest.StaticStringSlice{"X-Remote-Uid"},
		GroupHeaders:        headerrequest.StaticStringSlice{"X-Remote-Group"},
		ExtraHeaderPrefixes: headerrequest.StaticStringSlice{"X-Remote-Extra-"},
		CAContentProvider:   ca,
		AllowedClientNames:  allowed,
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

// rejected fails unless a request presenting certs goes to the library and is not authenticated.
func (f *fixture) rejected(t *testing.T, what string, certs ...*x509.Certificate) {
	t.Helper()
	f.falls = 0
	if _, ok, _ := f.auth.AuthenticateRequest(request(certs...)); ok || f.falls != 1 {
		t.Errorf("%s: trusted (ok=%v, requests to the library %d)", what, ok, f.falls)
	}
}

func TestVerifiesACertificateOnceAndKeepsIt(t *testing.T) {
	f := newFixture(t)
	for range 3 {
		expectAlice(t, f.auth, request(f.client.cert))
	}
	// The first request: the library verifies, then the chain is verified here and kept.
	if f.verifies != 1 || f.libraryVerifies != 1 || f.falls != 1 {
		t.Fatalf("verifies = %d here, %d by the library, requests to the library = %d; want 1, 1, 1", f.verifies, f.libraryVerifies, f.falls)
	}
}

// TestAFailedCertificateCostsWhatItDid: a chain the library rejects is never verified here, so
// whoever presents one costs one Verify a request, as with the library alone.
func TestAFailedCertificateCostsWhatItDid(t *testing.T) {
	f := newFixture(t)
	impostorCA := issue(t, certSpec{cn: "front-proxy-ca", serial: 1, notBefore: f.start, notAfter: f.end, isCA: true}, nil)
	forged := issue(t, certSpec{cn: "front-proxy-client", serial: 2, notBefore: f.start, notAfter: f.end, usages: f.clientAuthUsages}, impostorCA)
	expired := issue(t, certSpec{cn: "front-proxy-client", serial: 3, notBefore: f.start, notAfter: time.Now().Add(-time.Minute), usages: f.clientAuthUsages}, f.ca)
	for range 5 {
		f.rejected(t, "forged", forged.cert)
		f.rejected(t, "expired", expired.cert)
	}
	if f.verifies != 0 || f.libraryVerifies != 10 {
		t.Fatalf("verifies = %d here, %d by the library; want 0, 10", f.verifies, f.libraryVerifies)
	}
	// The front proxy's own certificate without identity headers is not learnt either.
	r := request(f.client.cert)
	r.Header.Del("X-Remote-User")
	if _, ok, _ := f.auth.AuthenticateRequest(r); ok || f.verifies != 0 || len(f.auth.verified) != 0 {
		t.Fatalf("no identity: ok=%v, verifies here %d, kept %d", ok, f.verifies, len(f.auth.verified))
	}
}

// TestAnswersAsTheLibrary compares every answer, the user whole and the headers left on the
// request, with k8s.io/apiserver's request-header authenticator, first and second time.
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
	for name, req := range cases {
		t.Run(name, func(t *testing.T) {
			r := req()
			wantReq := r.Clone(r.Context())
			want, wantOK, wantErr := f.library.AuthenticateRequest(wantReq)
			for range 2 {
				gotReq := r.Clone(r.Context())
				got, gotOK, gotErr := f.auth.AuthenticateRequest(gotReq)
				if gotOK != wantOK || (gotErr != nil) != (wantErr != nil) {
					t.Fatalf("ok=%v err=%v, the library: ok=%v err=%v", gotOK, gotErr, wantOK, wantErr)
				}
				if wantOK && !reflect.DeepEqual(got.User, want.User) {
					t.Fatalf("user %#v, the library: %#v", got.User, want.User)
				}
				if wantOK && (!reflect.DeepEqual(got.Audiences, want.Audiences)) {
					t.Fatalf("audiences %v, the library: %v", got.Audiences, want.Audiences)
				}
				if !reflect.DeepEqual(gotReq.Header, wantReq.Header) {
					t.Fatalf("headers left %v, the library: %v", gotReq.Header, wantReq.Header)
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
		f.clock = at
		f.rejected(t, name, f.client.cert)
	}
	// Back within the window, the kept answer holds again.
	f.clock, f.verifies, f.falls = time.Now(), 0, 0
	expectAlice(t, f.auth, request(f.client.cert))
	if f.verifies != 0 || f.falls != 0 {
		t.Errorf("within the window: verified %d, to the library %d", f.verifies, f.falls)
	}

	// A CA that expires before its client certificate bounds the window.
	shortCA := issue(t, certSpec{cn: "short-ca", serial: 10, notBefore: f.start, notAfter: time.Now().Add(time.Minute), isCA: true}, nil)
	client := issue(t, certSpec{cn: "front-proxy-client", serial: 11, notBefore: f.start, notAfter: f.end, usages: f.clientAuthUsages}, shortCA)
	f.provider.set(f.ca, shortCA)
	expectAlice(t, f.auth, request(client.cert))
	f.clock = time.Now().Add(2 * time.Minute)
	f.rejected(t, "after its CA expired", client.cert)

	// So does an intermediate that expires first.
	f.clock = time.Now()
	inter := issue(t, certSpec{cn: "front-proxy-intermediate", serial: 12, notBefore: f.start, notAfter: time.Now().Add(time.Minute), isCA: true}, f.ca)
	leaf := issue(t, certSpec{cn: "front-proxy-client", serial: 13, notBefore: f.start, notAfter: f.end, usages: f.clientAuthUsages}, inter)
	expectAlice(t, f.auth, request(leaf.cert, inter.cert))
	f.clock = time.Now().Add(2 * time.Minute)
	f.rejected(t, "after its intermediate expired", leaf.cert, inter.cert)
}

func TestForgetsWhenTheCABundleChanges(t *testing.T) {
	f := newFixture(t)
	expectAlice(t, f.auth, request(f.client.cert))

	// The proxy's CA is replaced: its old certificate is no longer trusted.
	next := issue(t, certSpec{cn: "front-proxy-ca-2", serial: 20, notBefore: f.start, notAfter: f.end, isCA: true}, nil)
	f.provider.set(next)
	f.rejected(t, "under a bundle without its CA", f.client.cert)

	// A bundle that adds a CA is another bundle: the certificate is verified again under it,
	// and what was kept under the old one is gone.
	f.provider.set(f.ca, next)
	f.verifies = 0
	for range 2 {
		expectAlice(t, f.auth, request(f.client.cert))
	}
	if f.verifies != 1 || len(f.auth.verified) != 1 {
		t.Fatalf("verifies under the new bundle = %d, kept %d; want 1, 1", f.verifies, len(f.auth.verified))
	}

	// The same roots in a new pool (a provider that builds one per call) keep what was learnt.
	f.provider.set(f.ca, next)
	f.verifies, f.falls = 0, 0
	expectAlice(t, f.auth, request(f.client.cert))
	if f.verifies != 0 || f.falls != 0 {
		t.Fatalf("the same roots in a new pool: verified %d, to the library %d", f.verifies, f.falls)
	}

	// No bundle loaded: nothing is trusted here.
	f.provider.mu.Lock()
	f.provider.pool = nil
	f.provider.mu.Unlock()
	f.rejected(t, "with no bundle loaded", f.client.cert)
}

func TestChecksTheAllowedNamesOnEveryRequest(t *testing.T) {
	f := newFixture(t)
	expectAlice(t, f.auth, request(f.client.cert))
	f.allowed.set("another-proxy")
	f.rejected(t, "a name no longer allowed", f.client.cert)
	f.allowed.set()
	expectAlice(t, f.auth, request(f.client.cert)) // an empty list allows any name, as the library's
}

// TestKeysOnTheWholeCertificate: a certificate that copies the trusted one's subject, serial,
// validity and issuer name, signed by another key, is not taken for it.
func TestKeysOnTheWholeCertificate(t *testing.T) {
	f := newFixture(t)
	expectAlice(t, f.auth, request(f.client.cert))
	impostorCA := issue(t, certSpec{cn: "front-proxy-ca", serial: 1, notBefore: f.ca.cert.NotBefore, notAfter: f.ca.cert.NotAfter, isCA: true}, nil)
	forged := issue(t, certSpec{cn: "front-proxy-client", serial: 2, notBefore: f.start, notAfter: f.end, usages: f.clientAuthUsages}, impostorCA)
	f.rejected(t, "a forged certificate", forged.cert)

	// The key is every presented certificate: the leaf alone, kept with its intermediate, is
	// not known on its own (and fails: the intermediate is what chains it to the CA).
	inter := issue(t, certSpec{cn: "front-proxy-intermediate", serial: 30, notBefore: f.start, notAfter: f.end, isCA: true}, f.ca)
	leaf := issue(t, certSpec{cn: "front-proxy-client", serial: 31, notBefore: f.start, notAfter: f.end, usages: f.clientAuthUsages}, inter)
	expectAlice(t, f.auth, request(leaf.cert, inter.cert))
	f.rejected(t, "the leaf without its intermediate", leaf.cert)
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

func TestWithoutARequestHeaderConfigIsTheFallback(t *testing.T) {
	fallback := authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) { return nil, false, nil })
	f := newFixture(t)
	for name, c := range map[string]*authenticatorfactory.RequestHeaderConfig{
		"nil": nil,
		"no CA": {UsernameHeaders: f.config.UsernameHeaders, UIDHeaders: f.config.UIDHeaders,
			GroupHeaders: f.config.GroupHeaders, ExtraHeaderPrefixes: f.config.ExtraHeaderPrefixes},
		"no username headers": {CAContentProvider: f.provider, UIDHeaders: f.config.UIDHeaders,
			GroupHeaders: f.config.GroupHeaders, ExtraHeaderPrefixes: f.config.ExtraHeaderPrefixes},
	} {
		if _, ours := New(c, fallback).(*Authenticator); ours {
			t.Errorf("%s: wrapped", name)
		}
	}
}

// TestConcurrentRequestsWhileTheBundleChanges is for -race: requests while the bundle flips.
func TestConcurrentRequestsWhileTheBundleChanges(t *testing.T) {
	f := newFixture(t)
	f.auth.verify = (*x509.Certificate).Verify
	f.library = group.NewAuthenticatedGroupAdder(union.New(headerrequest.NewDynamicVerifyOptionsSecure(
		f.provider.VerifyOptions, f.config.AllowedClientNames, f.config.UsernameHeaders, f.config.UIDHeaders, f.config.GroupHeaders, f.config.ExtraHeaderPrefixes)))
	f.auth.fallback = f.library
	f.auth.now = time.Now
	next := issue(t, certSpec{cn: "front-proxy-ca-2", serial: 20, notBefore: f.start, notAfter: f.end, isCA: true}, nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				switch {
				case i == 0 && j%20 == 0:
					f.provider.set(f.ca, next)
				case i == 0 && j%10 == 0:
					f.provider.set(f.ca)
				}
				if _, ok, _ := f.auth.AuthenticateRequest(request(f.client.cert)); !ok {
					t.Error("the front proxy not authenticated")
					return
				}
			}
		}()
	}
	wg.Wait()
}
