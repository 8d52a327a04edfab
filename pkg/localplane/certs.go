package localplane

import (
	"net"
	"os"
	"path/filepath"

	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

// leafCert is a certificate the plane's processes present, signed by one of its two CAs.
type leafCert struct {
	stem string // <stem>.crt and <stem>.key in LOCAL_DIR/pki
	ca   string // "ca" or "front-proxy-ca"
	req  pki.Request
}

var loopback = []net.IP{net.ParseIP("127.0.0.1")}

// leafCerts are the plane's certificates, as the processes' flags name them.
var leafCerts = []leafCert{
	{"kube-apiserver", "ca", pki.Request{CommonName: "kube-apiserver", Usage: pki.ServerAuth,
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPs:      append([]net.IP{net.ParseIP("10.96.0.1")}, loopback...)}},
	{"admin", "ca", pki.Request{CommonName: "kubernetes-admin", Organizations: []string{"system:masters"}, Usage: pki.ClientAuth}},
	{"kube-controller-manager", "ca", pki.Request{CommonName: "system:kube-controller-manager", Usage: pki.ClientAuth}},
	{"front-proxy-client", "front-proxy-ca", pki.Request{CommonName: "front-proxy-client", Usage: pki.ClientAuth}},
	// butler-apiserver acts in the management cluster as the ServiceAccount that
	// artifacts/deploy binds, so the RBAC a real cluster applies is the RBAC exercised here.
	{"butler-apiserver-client", "ca", pki.Request{CommonName: "system:serviceaccount:butler-system:butler-apiserver",
		Organizations: []string{"system:serviceaccounts", "system:serviceaccounts:butler-system"}, Usage: pki.ClientAuth}},
	// The aggregator checks the name <service>.<namespace>.svc.
	{"butler-apiserver-serving", "ca", pki.Request{CommonName: "butler-apiserver.butler-system.svc", Usage: pki.ServerAuth,
		DNSNames: []string{"butler-apiserver.butler-system.svc", "localhost"}, IPs: loopback}},
	{"butler-localprovider-client", "ca", pki.Request{CommonName: localProviderUser, Usage: pki.ClientAuth}},
	// The Cluster API manager: a client identity and its webhook server's certificate (no
	// cert-manager here; no webhook configuration is installed, but the manager serves them).
	{"capi-manager-client", "ca", pki.Request{CommonName: capiManagerUser, Usage: pki.ClientAuth}},
	{"capi-webhook", "ca", pki.Request{CommonName: "capi-webhook-service.capi-system.svc", Usage: pki.ServerAuth,
		DNSNames: []string{"capi-webhook-service.capi-system.svc", "localhost"}, IPs: loopback}},
}

// The users the local provider and the Cluster API manager are, bound to cluster-admin.
const (
	localProviderUser = "butler-local:localprovider"
	capiManagerUser   = "butler-local:capi-manager"
)

// ensureCertificates makes the CAs, the leaves and the service-account key in LOCAL_DIR/pki, or
// keeps those there: a plane started again on the same directory keeps its clients' trust.
func ensureCertificates(dir string) (ca *pki.KeyPair, err error) {
	cas := map[string]*pki.KeyPair{}
	for stem, cn := range map[string]string{"ca": "butler-local-ca", "front-proxy-ca": "butler-local-front-proxy-ca"} {
		if cas[stem], err = pki.EnsureCA(dir, stem, cn); err != nil {
			return nil, err
		}
	}
	for _, l := range leafCerts {
		if _, err := pki.EnsureLeaf(dir, l.stem, cas[l.ca], l.req); err != nil {
			return nil, err
		}
	}
	if _, err := pki.EnsureServiceAccountKey(dir); err != nil {
		return nil, err
	}
	return cas["ca"], nil
}

// writeKubeconfig writes file: server, trusting ca, as the client certificate cert.
func writeKubeconfig(file, pkiDir, cert, user, server string, ca *pki.KeyPair) error {
	kp, err := pki.EnsureLeaf(pkiDir, cert, ca, requestOf(cert))
	if err != nil {
		return err
	}
	data, err := pki.Kubeconfig("local", server, ca.CertPEM, user, kp)
	if err != nil {
		return err
	}
	return pki.WriteFile(file, data, 0o600)
}

func requestOf(stem string) pki.Request {
	for _, l := range leafCerts {
		if l.stem == stem {
			return l.req
		}
	}
	panic("no certificate " + stem)
}

// copyWebhookCerts puts the webhook server's certificate where the Cluster API manager reads it.
func copyWebhookCerts(pkiDir, certDir string) error {
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	for from, to := range map[string]string{"capi-webhook.crt": "tls.crt", "capi-webhook.key": "tls.key"} {
		data, err := os.ReadFile(filepath.Join(pkiDir, from))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(certDir, to), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}
