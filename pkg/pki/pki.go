// Package pki is the one place butler makes certificates, keys and kubeconfigs (crypto/x509):
// CAs and the leaves they sign (Issue, EnsureLeaf), kubeconfigs around a client certificate
// (Kubeconfig), and a whole tenant control plane's set in kubeadm's split (EnsureTenant): a
// cluster CA that signs the serving certificate, the client certificates of the control plane's
// components and of the admins (and that kube-controller-manager uses to sign node client
// certificates), a separate front-proxy CA, and a service-account key pair. The local provider
// makes its tenants' and datastores' certificates with it, and tenantclusters/kubeconfig mints
// the askers' with it. Keys are ECDSA P-256: a whole set is made in a few milliseconds, which
// matters when a tenant is to be Ready within seconds of its creation.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// Validity of the certificates made here. kubeadm gives CAs 10 years and leaves 1 year; a local
// tenant lives for hours, but a long validity keeps a restarted plane's state usable.
const (
	CAValidity   = 10 * 365 * 24 * time.Hour
	LeafValidity = 365 * 24 * time.Hour
)

// KeyPair is a certificate with its private key, parsed and PEM-encoded.
type KeyPair struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
	KeyPEM  []byte
}

// Usage says what a leaf certificate is for.
type Usage int

const (
	// ServerAuth is a TLS serving certificate.
	ServerAuth Usage = iota
	// ClientAuth is a TLS client certificate.
	ClientAuth
	// PeerAuth is both, as etcd's peers present one certificate to serve and to connect.
	PeerAuth
)

// Request describes a leaf certificate.
type Request struct {
	CommonName    string
	Organizations []string
	DNSNames      []string
	IPs           []net.IP
	Usage         Usage
	// NotAfter ends the certificate's validity (LeafValidity from now when zero); never after
	// its CA's.
	NotAfter time.Time
}

// NewCA makes a self-signed CA named commonName.
func NewCA(commonName string) (*KeyPair, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		DNSNames:              []string{commonName},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageKeyEncipherment | x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("creating the CA certificate %q: %w", commonName, err)
	}
	return fromDER(der, key)
}

// Issue makes a certificate for req signed by ca.
func (ca *KeyPair) Issue(req Request) (*KeyPair, error) {
	if req.CommonName == "" {
		return nil, errors.New("a certificate needs a common name")
	}
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	notAfter := req.NotAfter
	if notAfter.IsZero() {
		notAfter = now.Add(LeafValidity)
	}
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: req.CommonName, Organization: req.Organizations},
		DNSNames:     req.DNSNames,
		IPAddresses:  req.IPs,
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageKeyEncipherment | x509.KeyUsageDigitalSignature,
		// A leaf must never sign: say so, as kubeadm does.
		BasicConstraintsValid: true,
	}
	switch req.Usage {
	case ServerAuth:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	case ClientAuth:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	case PeerAuth:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	default:
		return nil, fmt.Errorf("unknown certificate usage %d", req.Usage)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, fmt.Errorf("signing the certificate %q: %w", req.CommonName, err)
	}
	return fromDER(der, key)
}

// Parse reads a PEM certificate and its PEM private key and checks that they belong together.
func Parse(certPEM, keyPEM []byte) (*KeyPair, error) {
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("parsing the certificate: %w", err)
	}
	parsed, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("parsing the private key: %w", err)
	}
	key, ok := parsed.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("the private key (%T) cannot sign", parsed)
	}
	if !publicKeysEqual(certs[0].PublicKey, key.Public()) {
		return nil, errors.New("the private key does not belong to the certificate")
	}
	return &KeyPair{Cert: certs[0], Key: key, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// ServiceAccountKey is the key pair kube-apiserver signs and verifies service-account tokens
// with (kubeadm's sa.key and sa.pub).
type ServiceAccountKey struct {
	PrivatePEM []byte
	PublicPEM  []byte
}

// NewServiceAccountKey makes a service-account signing key pair.
func NewServiceAccountKey() (*ServiceAccountKey, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	priv, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, err
	}
	return &ServiceAccountKey{
		PrivatePEM: priv,
		PublicPEM:  pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}),
	}, nil
}

// CertHash is a CA's public key pin as kubeadm join's --discovery-token-ca-cert-hash takes it:
// "sha256:" and the hex SHA-256 of the certificate's SubjectPublicKeyInfo.
func CertHash(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func newKey() (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating a key: %w", err)
	}
	return key, nil
}

func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating a serial number: %w", err)
	}
	return serial, nil
}

func fromDER(der []byte, key *ecdsa.PrivateKey) (*KeyPair, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, err
	}
	return &KeyPair{
		Cert: cert, Key: key,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  keyPEM,
	}, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	e, ok := a.(equaler)
	return ok && e.Equal(b)
}
