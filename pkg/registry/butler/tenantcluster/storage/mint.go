package storage

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// caKeyPairs are the key pairs a tenant CA Secret may hold, in the order they are tried:
// Steward/Kamaji's <tcp>-ca (ca.crt, ca.key), then Cluster API's <cluster>-ca (tls.crt, tls.key).
var caKeyPairs = [][2]string{{"ca.crt", "ca.key"}, {"tls.crt", "tls.key"}}

// caFrom returns the CA certificate and key in a tenant CA Secret's data, if it holds them.
func caFrom(data map[string][]byte) (*x509.Certificate, any, bool) {
	for _, pair := range caKeyPairs {
		certPEM, keyPEM := data[pair[0]], data[pair[1]]
		if len(certPEM) == 0 || len(keyPEM) == 0 {
			continue
		}
		kp, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil || len(kp.Certificate) == 0 {
			continue
		}
		cert, err := x509.ParseCertificate(kp.Certificate[0])
		if err != nil || !cert.IsCA {
			continue
		}
		return cert, kp.PrivateKey, true
	}
	return nil, nil, false
}

// mintKubeconfig returns stored's cluster (server and CA) with a new client certificate signed
// by the tenant CA: CN the requester's name, O system:masters (as Gardener's adminkubeconfig),
// valid for ttl. The tenant's audit log then names who asked.
func mintKubeconfig(stored []byte, ca *x509.Certificate, caKey any, who user.Info, ttl time.Duration, now time.Time) ([]byte, time.Time, error) {
	cfg, err := clientcmd.Load(stored)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("reading the stored kubeconfig: %w", err)
	}
	kctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return nil, time.Time{}, fmt.Errorf("the stored kubeconfig has no current context")
	}
	cluster, ok := cfg.Clusters[kctx.Cluster]
	if !ok {
		return nil, time.Time{}, fmt.Errorf("the stored kubeconfig has no cluster %q", kctx.Cluster)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, time.Time{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, time.Time{}, err
	}
	notAfter := now.Add(ttl).Truncate(time.Second)
	if notAfter.After(ca.NotAfter) {
		notAfter = ca.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: who.GetName(), Organization: []string{user.SystemPrivilegedGroup}},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("signing the client certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, time.Time{}, err
	}
	out := clientcmdapi.NewConfig()
	out.Clusters[kctx.Cluster] = cluster
	authName := who.GetName()
	out.AuthInfos[authName] = &clientcmdapi.AuthInfo{
		ClientCertificateData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		ClientKeyData:         pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
	out.Contexts[cfg.CurrentContext] = &clientcmdapi.Context{Cluster: kctx.Cluster, AuthInfo: authName}
	out.CurrentContext = cfg.CurrentContext
	data, err := clientcmd.Write(*out)
	return data, notAfter, err
}
