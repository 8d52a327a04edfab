// Package frontproxy authenticates the requests kube-apiserver's aggregator proxies to
// butler-apiserver as k8s.io/apiserver's request-header authenticator does, but verifies the
// proxy's client certificate once per certificate chain and CA bundle, not on every request.
//
// k8s.io/apiserver (x509.Verifier) runs crypto/x509's Verify for every request, although every
// request on a connection carries the same certificate: with the usual ECDSA P-256 front-proxy
// certificate that is about 80 µs of CPU a request, 7% of butler-apiserver's CPU per create.
//
// Only chains the library itself has accepted are learnt: a request whose chain is not known
// goes to the library's authenticators unchanged, and only when its request-header
// authenticator took the request (it alone clears the identity headers) is the chain verified
// here once and kept. So a certificate that fails costs exactly what it cost before, whoever
// presents it. A kept chain is used while:
//   - the CA bundle's roots and key usages in force are those it was verified against (a
//     bundle with other roots empties the cache);
//   - the time is within the validity of every certificate of a chain Verify found;
//   - its leaf's common name is an allowed front-proxy name.
//
// Verify's answer depends only on those, so a kept chain is accepted exactly when Verify would
// accept it. Chains are keyed on a SHA-256 of every presented certificate's DER.
package frontproxy

import (
	"crypto/sha256"
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

// Authenticator authenticates a request carrying a front-proxy certificate chain the library
// accepted before by its headers, and hands every other request to the authenticator
// k8s.io/apiserver built.
type Authenticator struct {
	config   *authenticatorfactory.RequestHeaderConfig
	headers  authenticator.Request // the identity in the request's headers, with system:authenticated
	fallback authenticator.Request
	now      func() time.Time
	verify   func(*x509.Certificate, x509.VerifyOptions) ([][]*x509.Certificate, error)

	mu sync.RWMutex
	// roots and usages are what verified holds for; other roots in force empty it.
	roots    *x509.CertPool
	usages   []x509.ExtKeyUsage
	verified map[[sha256.Size]byte]validity
}

// window is when one chain is valid: the latest NotBefore and the earliest NotAfter of its
// certificates.
type window struct{ notBefore, notAfter time.Time }

// validity is when a verified chain may be used: within the window of one chain Verify found.
type validity []window

func (v validity) holdsAt(t time.Time) bool {
	for _, w := range v {
		if !t.Before(w.notBefore) && !t.After(w.notAfter) {
			return true
		}
	}
	return false
}

// New wraps fallback, the authenticator k8s.io/apiserver built with config as its request-header
// part (server.AuthenticationInfo after DelegatingAuthenticationOptions.ApplyTo). Without a CA
// or header names in config there is nothing to verify: it returns fallback.
func New(config *authenticatorfactory.RequestHeaderConfig, fallback authenticator.Request) authenticator.Request {
	if config == nil || config.CAContentProvider == nil || config.UsernameHeaders == nil || config.UIDHeaders == nil ||
		config.GroupHeaders == nil || config.ExtraHeaderPrefixes == nil {
		return fallback
	}
	return newAuthenticator(config, fallback)
}

func newAuthenticator(config *authenticatorfactory.RequestHeaderConfig, fallback authenticator.Request) *Authenticator {
	return &Authenticator{
		config: config,
		headers: group.NewAuthenticatedGroupAdder(headerrequest.NewDynamic(
			config.UsernameHeaders, config.UIDHeaders, config.GroupHeaders, config.ExtraHeaderPrefixes)),
		fallback: fallback,
		now:      time.Now,
		verify:   (*x509.Certificate).Verify,
		verified: map[[sha256.Size]byte]validity{},
	}
}

// AuthenticateRequest implements authenticator.Request.
func (a *Authenticator) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	if req.TLS == nil || len(req.TLS.PeerCertificates) == 0 {
		return a.fallback.AuthenticateRequest(req)
	}
	certs := req.TLS.PeerCertificates
	opts, ok := a.config.CAContentProvider.VerifyOptions()
	if !ok || !a.allowedName(certs[0].Subject.CommonName) {
		return a.fallback.AuthenticateRequest(req)
	}
	now := a.now()
	key := chainKey(certs)
	if a.known(opts, key, now) {
		if resp, ok, err := a.headers.AuthenticateRequest(req); err == nil && ok {
			return resp, true, nil
		}
		// No identity in the headers: the library's other authenticators decide, as its union does.
		return a.fallback.AuthenticateRequest(req)
	}
	hadUser := a.hasUser(req.Header)
	resp, ok, err := a.fallback.AuthenticateRequest(req)
	if ok && hadUser && !a.hasUser(req.Header) {
		a.learn(opts, key, certs, now)
	}
	return resp, ok, err
}

// known says whether the chain keyed key was verified under opts's roots and usages and is
// valid at now.
func (a *Authenticator) known(opts x509.VerifyOptions, key [sha256.Size]byte, now time.Time) bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if !a.sameOptions(opts) {
		return false
	}
	v, found := a.verified[key]
	return found && v.holdsAt(now)
}

// sameOptions says whether opts has the roots and key usages verified holds for. The CA
// providers hand out one pool per load, so the pointer usually decides; a provider that builds
// a new pool per call (a union of bundles) is compared by content.
func (a *Authenticator) sameOptions(opts x509.VerifyOptions) bool {
	if a.roots == nil || opts.Roots == nil || !slices.Equal(a.usages, opts.KeyUsages) {
		return false
	}
	return a.roots == opts.Roots || a.roots.Equal(opts.Roots)
}

// learn verifies the chain the library has just accepted, under the options read before it
// did, and keeps its validity.
func (a *Authenticator) learn(opts x509.VerifyOptions, key [sha256.Size]byte, certs []*x509.Certificate, now time.Time) {
	if opts.Roots == nil {
		return
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
		return
	}
	v := make(validity, 0, len(chains))
	for _, chain := range chains {
		w := window{chain[0].NotBefore, chain[0].NotAfter}
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
	if !a.sameOptions(opts) {
		a.roots, a.usages = opts.Roots, slices.Clone(opts.KeyUsages)
		clear(a.verified)
	}
	if _, present := a.verified[key]; !present && len(a.verified) >= MaxVerified {
		for k := range a.verified {
			delete(a.verified, k)
			break
		}
	}
	a.verified[key] = v
}

// allowedName is x509.Verifier's check of the certificate's common name.
func (a *Authenticator) allowedName(cn string) bool {
	if a.config.AllowedClientNames == nil {
		return true
	}
	allowed := a.config.AllowedClientNames.Value()
	return len(allowed) == 0 || slices.Contains(allowed, cn)
}

// hasUser says whether h names a user in one of the username headers, as the library's
// request-header authenticator reads them.
func (a *Authenticator) hasUser(h http.Header) bool {
	for _, name := range a.config.UsernameHeaders.Value() {
		if h.Get(name) != "" {
			return true
		}
	}
	return false
}

// chainKey is a SHA-256 of every presented certificate's DER, each after its length.
func chainKey(certs []*x509.Certificate) [sha256.Size]byte {
	h := sha256.New()
	var n [4]byte
	for _, c := range certs {
		binary.BigEndian.PutUint32(n[:], uint32(len(c.Raw)))
		h.Write(n[:])
		h.Write(c.Raw)
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}
