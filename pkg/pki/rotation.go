package pki

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Files a tenant's PKI directory holds while a rotation of its CA and service-account key is
// under way (Gardener's two phases): the previous CA and public key, still trusted beside the
// new ones, and the bundle of both CAs that clients and kube-apiserver trust meanwhile.
const (
	PreviousCACert, PreviousCAKey = "ca-previous.crt", "ca-previous.key"
	PreviousServiceAccountPublic  = "sa-previous.pub"
	CABundle                      = "ca-bundle.crt"
)

// StartRotation begins the first phase of a rotation in dir: the CA and the service-account
// public key there are kept as the previous ones (once: a second call keeps what the first
// kept), and a new service-account key replaces the old one unless that was done already. The
// caller then hands EnsureTenant the new CA. It returns the previous CA.
func StartRotation(dir string) (*KeyPair, error) {
	if _, err := os.Stat(filepath.Join(dir, PreviousCACert)); errors.Is(err, fs.ErrNotExist) {
		ca, err := readPair(dir, CACert, CAKey)
		if err != nil {
			return nil, err
		}
		sa, err := readServiceAccountKey(dir)
		if err != nil {
			return nil, err
		}
		if err := writeFile(filepath.Join(dir, PreviousServiceAccountPublic), sa.PublicPEM, 0o644); err != nil {
			return nil, err
		}
		// The CA last: its presence says the whole previous set is kept.
		if err := writePair(dir, PreviousCACert, PreviousCAKey, ca); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	previous, err := readPair(dir, PreviousCACert, PreviousCAKey)
	if err != nil {
		return nil, err
	}
	sa, err := readServiceAccountKey(dir)
	if err != nil {
		return nil, err
	}
	old, err := os.ReadFile(filepath.Join(dir, PreviousServiceAccountPublic))
	if err != nil {
		return nil, err
	}
	if bytes.Equal(sa.PublicPEM, old) {
		next, err := NewServiceAccountKey()
		if err != nil {
			return nil, err
		}
		if err := writeServiceAccountKey(dir, next); err != nil {
			return nil, err
		}
	}
	return previous, nil
}

// CompleteRotation ends the rotation in dir: the previous CA and service-account key are no
// longer kept, so nothing trusts them once the processes read dir again.
func CompleteRotation(dir string) error {
	for _, name := range []string{CABundle, PreviousServiceAccountPublic, PreviousCAKey, PreviousCACert} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// previousCA is the previous CA kept in dir, nil when no rotation is under way.
func previousCA(dir string) (*KeyPair, error) {
	kp, err := readPair(dir, PreviousCACert, PreviousCAKey)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return kp, err
}

// Bundle is the certificates in pems, each once and in order, as one PEM: what a client or
// kube-apiserver trusts while two CAs are valid. Anything but certificates is left out.
func Bundle(pems ...[]byte) ([]byte, error) {
	var out bytes.Buffer
	var seen []*x509.Certificate
	for _, data := range pems {
		for rest := data; ; {
			var block *pem.Block
			if block, rest = pem.Decode(rest); block == nil {
				break
			}
			if block.Type != "CERTIFICATE" {
				continue
			}
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, err
			}
			dup := false
			for _, s := range seen {
				dup = dup || s.Equal(cert)
			}
			if dup {
				continue
			}
			seen = append(seen, cert)
			if err := pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: block.Bytes}); err != nil {
				return nil, err
			}
		}
	}
	if len(seen) == 0 {
		return nil, errors.New("no certificate")
	}
	return out.Bytes(), nil
}
