package app

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// Standalone files under <data-dir>/pki, and the admin kubeconfig at <data-dir>/admin.kubeconfig.
const (
	caCertFile      = "ca.crt"
	caKeyFile       = "ca.key"
	servingCertFile = "serving.crt"
	servingKeyFile  = "serving.key"
	adminCertFile   = "admin.crt"
	adminKeyFile    = "admin.key"
	// AdminKubeconfigFile is the standalone admin's kubeconfig, relative to the data directory.
	AdminKubeconfigFile = "admin.kubeconfig"
	// adminUser is the standalone admin; its group system:masters is authorized for everything.
	adminUser  = "butler-admin"
	adminGroup = "system:masters"
	certTTL    = 365 * 24 * time.Hour
)

// standalonePKI is a CA and the serving and admin certificates it signed.
type standalonePKI struct {
	dir string
}

func (p standalonePKI) path(name string) string { return filepath.Join(p.dir, name) }

// ensure creates whatever is missing; existing files are kept, so a restart keeps the
// admin kubeconfig valid.
func (p standalonePKI) ensure(servingNames []string) error {
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return err
	}
	caCert, caKey, err := p.loadOrCreateCA()
	if err != nil {
		return err
	}
	if !exists(p.path(servingCertFile)) {
		var ips []net.IP
		var dnsNames []string
		for _, name := range servingNames {
			if ip := net.ParseIP(name); ip != nil {
				ips = append(ips, ip)
			} else {
				dnsNames = append(dnsNames, name)
			}
		}
		tmpl := &x509.Certificate{
			Subject:     pkix.Name{CommonName: "butler-apiserver"},
			KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			DNSNames:    dnsNames,
			IPAddresses: ips,
		}
		if err := p.issue(tmpl, caCert, caKey, servingCertFile, servingKeyFile); err != nil {
			return err
		}
	}
	if !exists(p.path(adminCertFile)) {
		tmpl := &x509.Certificate{
			Subject:     pkix.Name{CommonName: adminUser, Organization: []string{adminGroup}},
			KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		if err := p.issue(tmpl, caCert, caKey, adminCertFile, adminKeyFile); err != nil {
			return err
		}
	}
	return nil
}

func (p standalonePKI) loadOrCreateCA() (*x509.Certificate, crypto.Signer, error) {
	if exists(p.path(caCertFile)) {
		certs, err := certutil.CertsFromFile(p.path(caCertFile))
		if err != nil {
			return nil, nil, err
		}
		key, err := keyutil.PrivateKeyFromFile(p.path(caKeyFile))
		if err != nil {
			return nil, nil, err
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, nil, fmt.Errorf("%s is not a signing key", p.path(caKeyFile))
		}
		return certs[0], signer, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "butler-apiserver-ca"}, key)
	if err != nil {
		return nil, nil, err
	}
	if err := writeKeyPair(p.path(caCertFile), p.path(caKeyFile), cert.Raw, key); err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

func (p standalonePKI) issue(tmpl *x509.Certificate, ca *x509.Certificate, caKey crypto.Signer, certFile, keyFile string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Minute)
	tmpl.NotAfter = time.Now().Add(certTTL)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return err
	}
	return writeKeyPair(p.path(certFile), p.path(keyFile), der, key)
}

func writeKeyPair(certPath, keyPath string, der []byte, key *ecdsa.PrivateKey) error {
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return err
	}
	if err := keyutil.WriteKey(keyPath, keyPEM); err != nil {
		return err
	}
	return certutil.WriteCert(certPath, pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: der}))
}

// writeAdminKubeconfig writes a kubeconfig for the standalone admin that reaches server.
func (p standalonePKI) writeAdminKubeconfig(path, server string) error {
	ca, err := os.ReadFile(p.path(caCertFile))
	if err != nil {
		return err
	}
	cert, err := os.ReadFile(p.path(adminCertFile))
	if err != nil {
		return err
	}
	key, err := os.ReadFile(p.path(adminKeyFile))
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["butler"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[adminUser] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cert,
		ClientKeyData:         key,
	}
	cfg.Contexts["butler"] = &clientcmdapi.Context{Cluster: "butler", AuthInfo: adminUser}
	cfg.CurrentContext = "butler"
	return clientcmd.WriteToFile(*cfg, path)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
