// Package frontproxy authenticates the requests kube-apiserver's aggregator proxies to
// butler-apiserver as k8s.io/apiserver's request-header authenticator does, but verifies the
// proxy's client certificate once per certificate and CA bundle, not on every request.
//
// k8s.io/apiserver (x509.Verifier) runs crypto/x509's Verify for every request, although every
// request on a connection carries the same certificate: with the usual ECDSA P-256 front-proxy
// certificate that is about 80 µs of CPU a request, 7% of butler-apiserver's CPU per create.
// Verify's answer depends only on the presented certificates, the CA bundle's roots and key
// usages, and the current time, so a success is kept, keyed on the exact bytes of every
// presented certificate, for as long as the CA bundle in force is byte for byte the one it was
// verified against; the validity times of the verified chain are checked on every request.
// Failures are not kept: they go to the library's authenticators as before.
package frontproxy

import (
	"bytes"
	"crypto/x509"
	"encoding/binary"
	"net/http"
	"slices"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
)

// MaxVerified bounds how many verified certificate chains are kept at once. A front proxy
// presents one certificate (one per kube-apiserver replica, or two while one rotates).
const MaxVerified = 64

// Authenticator authenticates a request carrying a front-proxy certificate verified before by
// its headers, and hands every other request to the authenticator k8s.io/apiserver built.
type Authenticator struct {
	config   *authenticatorfactory.RequestHeaderConfig
	headers  authenticator.Request // the identity in the request's headers, with system:authenticated
	fallback authenticator.Request
	now      func() time.Time
	verify   func(*x509.Certificate, x509.VerifyOptions) ([][]*x509.Certificate, error)

	mu sync.Mutex
	// bundle is the CA bundle verified holds for; a different bundle in force empties verified.
	bundle   []byte
	verified map[string]validity
}

// validity is when a verified chain may be used: within every certificate's validity period
// (the latest NotBefore, the earliest NotAfter) of one chain Verify found.
type validity []struct{ notBefore, notAfter time.Time }

func (v validity) holdsAt(t time.Time) bool {
	for _, w := range v {
		if !t.Before(w.notBefore) && !t.After(w.notAfter) {
			return true
		}
	}
	return false
}

// New wraps fallback, the authenticator k8s.io/apiserver built with config as its request-header
// part (server.AuthenticationInfo after DelegatingAuthenticationOptions.ApplyTo).
func New(config *authenticatorfactory.RequestHeaderConfig, fallback authenticator.Request) *Authenticator {
	return &Authenticator{
		config: config,
		headers: group.NewAuthenticatedGroupAdder(headerrequest.NewDynamic(
			config.UsernameHeaders, config.UIDHeaders, config.GroupHeaders, config.ExtraHeaderPrefixes)),
		fallback: fallback,
		now:      time.Now,
		verify:   (*x509.Certificate).Verify,
		verified: map[string]validity{},
	}
}

// AuthenticateRequest implements authenticator.Request.
func (a *Authenticator) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	if req.TLS == nil || len(req.TLS.PeerCertificates) == 0 || !a.trusted(req.TLS.PeerCertificates) {
		return a.fallback.AuthenticateRequest(req)
	}
	resp, ok, err := a.headers.AuthenticateRequest(req)
	if err != nil || !ok {
		// No identity in the headers: the library's other authenticators decide, as its union does.
		return a.fallback.AuthenticateRequest(req)
	}
	return resp, true, nil
}

// trusted says whether certs verify against the front proxy's CA bundle in force now, for client
// auth, and name an allowed front proxy: what x509.Verifier checks.
func (a *Authenticator) trusted(certs []*x509.Certificate) bool {
	bundle := a.config.CAContentProvider.CurrentCABundleContent()
	opts, ok := a.config.CAContentProvider.VerifyOptions()
	if !ok || !a.allowedName(certs[0].Subject.CommonName) {
		return false
	}
	now := a.now()
	key := chainKey(certs)
	a.mu.Lock()
	if !bytes.Equal(bundle, a.bundle) {
		a.bundle = slices.Clone(bundle)
		clear(a.verified)
	}
	v, found := a.verified[string(key)]
	a.mu.Unlock()
	if found && v.holdsAt(now) {
		return true
	}

	if opts.Intermediates == nil && len(certs) > 1 {
		opts.Intermediates = x509.NewCertPool()
		for _, c := range certs[1:] {
			opts.Intermediates.AddCert(c)
		}
	}
	opts.CurrentTime = now
	chains, err := a.verify(certs[0], opts)
	if err != nil {
		return false
	}
	v = make(validity, 0, len(chains))
	for _, chain := range chains {
		w := struct{ notBefore, notAfter time.Time }{chain[0].NotBefore, chain[0].NotAfter}
		for _, c := range chain[1:] {
			if c.NotBefore.After(w.notBefore) {
				w.notBefore = c.NotBefore
			}
			if c.NotAfter.Before(w.notAfter) {
				w.notAfter = c.NotAfter
			}
		}
		v = append(v, w)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	// Kept only under the bundle it was verified against: if the bundle changed meanwhile, the
	// answer is used for this request alone.
	if bytes.Equal(bundle, a.bundle) && bytes.Equal(bundle, a.config.CAContentProvider.CurrentCABundleContent()) {
		if _, present := a.verified[string(key)]; !present && len(a.verified) >= MaxVerified {
			for k := range a.verified {
				delete(a.verified, k)
				break
			}
		}
		a.verified[string(key)] = v
	}
	return true
}

// allowedName is x509.Verifier's check of the certificate's common name.
func (a *Authenticator) allowedName(cn string) bool {
	if a.config.AllowedClientNames == nil {
		return true
	}
	allowed := a.config.AllowedClientNames.Value()
	return len(allowed) == 0 || slices.Contains(allowed, cn)
}

// chainKey is every presented certificate's DER, each after its length.
func chainKey(certs []*x509.Certificate) []byte {
	n := 0
	for _, c := range certs {
		n += 4 + len(c.Raw)
	}
	b := make([]byte, 0, n)
	for _, c := range certs {
		b = binary.BigEndian.AppendUint32(b, uint32(len(c.Raw)))
		b = append(b, c.Raw...)
	}
	return b
}
