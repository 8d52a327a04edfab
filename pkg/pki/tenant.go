package pki

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Identities of a tenant's clients, as kubeadm names them.
const (
	// AdminsGroup is the group kubeadm's admin.conf is in; the tenant binds it to cluster-admin
	// (ClusterRoleBinding kubeadm:cluster-admins), so it can be revoked, unlike system:masters.
	AdminsGroup       = "kubeadm:cluster-admins"
	AdminUser         = "kubernetes-admin"
	SuperAdminUser    = "kubernetes-super-admin"
	MastersGroup      = "system:masters"
	ControllerManager = "system:kube-controller-manager"
	Scheduler         = "system:kube-scheduler"
	FrontProxyClient  = "front-proxy-client"
	KubeletClient     = "kube-apiserver-kubelet-client"
)

// TenantOptions is what a tenant's certificates name.
type TenantOptions struct {
	// Name names the CAs (the TenantControlPlane's namespace/name).
	Name string
	// ServiceIP is the first address of the tenant's service CIDR (the kubernetes Service).
	ServiceIP net.IP
	// ClusterDomain is the tenant's DNS domain (cluster.local when empty).
	ClusterDomain string
	// CertSANs are extra names or addresses of the serving certificate.
	CertSANs []string
}

// Tenant is every certificate and key of one tenant control plane.
type Tenant struct {
	CA, FrontProxyCA                                    *KeyPair
	APIServer, APIServerKubeletClient, FrontProxyClient *KeyPair
	Admin, SuperAdmin, ControllerManager, Scheduler     *KeyPair
	ServiceAccount                                      *ServiceAccountKey
	// PreviousCA is the CA a rotation replaces, kept until it completes (nil otherwise); Trust
	// is what clients and kube-apiserver trust meanwhile: CA and PreviousCA (CABundle), else CA.
	PreviousCA *KeyPair
	Trust      []byte
}

// Rotating says whether a rotation of the CA is under way: its first phase is done, and both
// CAs are trusted.
func (t *Tenant) Rotating() bool { return t.PreviousCA != nil }

// servingCA signs kube-apiserver's serving certificate: the previous CA while a rotation is
// under way, so that a client that trusts only the previous CA still verifies the server
// (Gardener does the same); the CA once it completes.
func (t *Tenant) servingCA() *KeyPair {
	if t.PreviousCA != nil {
		return t.PreviousCA
	}
	return t.CA
}

// File names in a tenant's PKI directory (kubeadm's, without its pki/ subdirectories).
const (
	CACert, CAKey                     = "ca.crt", "ca.key"
	FrontProxyCACert, FrontProxyCAKey = "front-proxy-ca.crt", "front-proxy-ca.key"
	ServiceAccountPrivate             = "sa.key"
	ServiceAccountPublic              = "sa.pub"
)

// leaf is one leaf certificate of a tenant: its file stem, who signs it, and what it says.
type leaf struct {
	stem   string
	signer func(*Tenant) *KeyPair
	slot   func(*Tenant) **KeyPair
	req    Request
}

func (o TenantOptions) leaves() []leaf {
	ca := func(t *Tenant) *KeyPair { return t.CA }
	fp := func(t *Tenant) *KeyPair { return t.FrontProxyCA }
	return []leaf{
		{"apiserver", (*Tenant).servingCA, func(t *Tenant) **KeyPair { return &t.APIServer }, o.servingRequest()},
		{"apiserver-kubelet-client", ca, func(t *Tenant) **KeyPair { return &t.APIServerKubeletClient },
			Request{CommonName: KubeletClient, Organizations: []string{AdminsGroup}, Usage: ClientAuth}},
		{"front-proxy-client", fp, func(t *Tenant) **KeyPair { return &t.FrontProxyClient },
			Request{CommonName: FrontProxyClient, Usage: ClientAuth}},
		{"admin", ca, func(t *Tenant) **KeyPair { return &t.Admin },
			Request{CommonName: AdminUser, Organizations: []string{AdminsGroup}, Usage: ClientAuth}},
		{"super-admin", ca, func(t *Tenant) **KeyPair { return &t.SuperAdmin },
			Request{CommonName: SuperAdminUser, Organizations: []string{MastersGroup}, Usage: ClientAuth}},
		{"controller-manager", ca, func(t *Tenant) **KeyPair { return &t.ControllerManager },
			Request{CommonName: ControllerManager, Usage: ClientAuth}},
		{"scheduler", ca, func(t *Tenant) **KeyPair { return &t.Scheduler },
			Request{CommonName: Scheduler, Usage: ClientAuth}},
	}
}

// servingRequest is kube-apiserver's serving certificate: loopback (where it listens here), the
// kubernetes Service's names and address, and the extra SANs.
func (o TenantOptions) servingRequest() Request {
	domain := o.ClusterDomain
	if domain == "" {
		domain = "cluster.local"
	}
	req := Request{
		CommonName: "kube-apiserver",
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc." + domain},
		IPs:   []net.IP{net.IPv4(127, 0, 0, 1)},
		Usage: ServerAuth,
	}
	if o.ServiceIP != nil {
		req.IPs = append(req.IPs, o.ServiceIP)
	}
	for _, san := range o.CertSANs {
		if ip := net.ParseIP(san); ip != nil {
			if !slices.ContainsFunc(req.IPs, ip.Equal) {
				req.IPs = append(req.IPs, ip)
			}
		} else if san != "" && !slices.Contains(req.DNSNames, san) {
			req.DNSNames = append(req.DNSNames, san)
		}
	}
	return req
}

// EnsureTenant returns the tenant's certificates in dir, signed by ca: what is there and still
// right is kept, the rest is made and written. A leaf is remade when it is missing, not signed
// by its CA (ca differs from the one in dir), expires within a day, or (the serving
// certificate) lacks a name it must have. The front-proxy CA and the service-account key are
// kept once made: a new service-account key would invalidate every token the tenant issued.
// While a rotation is under way (StartRotation kept a previous CA in dir), the serving
// certificate stays signed by the previous CA and CABundle holds both. changed says whether any
// file was written.
func EnsureTenant(dir string, ca *KeyPair, opts TenantOptions) (t *Tenant, changed bool, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, err
	}
	t = &Tenant{CA: ca, Trust: ca.CertPEM}
	if t.PreviousCA, err = previousCA(dir); err != nil {
		return nil, false, err
	}
	if t.PreviousCA != nil {
		if t.Trust, err = Bundle(ca.CertPEM, t.PreviousCA.CertPEM); err != nil {
			return nil, false, err
		}
		if old, err := os.ReadFile(filepath.Join(dir, CABundle)); err != nil || !bytes.Equal(old, t.Trust) {
			if err := writeFile(filepath.Join(dir, CABundle), t.Trust, 0o644); err != nil {
				return nil, false, err
			}
			changed = true
		}
	}
	if old, err := readPair(dir, CACert, CAKey); err != nil || !bytes.Equal(old.CertPEM, ca.CertPEM) {
		if err := writePair(dir, CACert, CAKey, ca); err != nil {
			return nil, false, err
		}
		changed = true
	}
	if t.FrontProxyCA, err = readPair(dir, FrontProxyCACert, FrontProxyCAKey); err != nil {
		if t.FrontProxyCA, err = NewCA("front-proxy-ca " + opts.Name); err != nil {
			return nil, false, err
		}
		if err := writePair(dir, FrontProxyCACert, FrontProxyCAKey, t.FrontProxyCA); err != nil {
			return nil, false, err
		}
		changed = true
	}
	if t.ServiceAccount, err = readServiceAccountKey(dir); err != nil {
		if t.ServiceAccount, err = NewServiceAccountKey(); err != nil {
			return nil, false, err
		}
		if err := writeServiceAccountKey(dir, t.ServiceAccount); err != nil {
			return nil, false, err
		}
		changed = true
	}
	for _, l := range opts.leaves() {
		signer := l.signer(t)
		kp, err := readPair(dir, l.stem+".crt", l.stem+".key")
		if err == nil && usable(kp, signer, l.req) {
			*l.slot(t) = kp
			continue
		}
		if kp, err = signer.Issue(l.req); err != nil {
			return nil, false, err
		}
		if err := writePair(dir, l.stem+".crt", l.stem+".key", kp); err != nil {
			return nil, false, err
		}
		*l.slot(t) = kp
		changed = true
	}
	return t, changed, nil
}

// EnsureLeaf returns the certificate <stem>.crt/.key in dir when it is signed by signer, not
// about to expire and names what req asks; otherwise it issues one and writes it.
func EnsureLeaf(dir, stem string, signer *KeyPair, req Request) (*KeyPair, error) {
	if kp, err := readPair(dir, stem+".crt", stem+".key"); err == nil && usable(kp, signer, req) {
		return kp, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	kp, err := signer.Issue(req)
	if err != nil {
		return nil, err
	}
	return kp, writePair(dir, stem+".crt", stem+".key", kp)
}

// CertPath and KeyPath are where EnsureTenant keeps a leaf (stem as in the leaves list:
// apiserver, apiserver-kubelet-client, front-proxy-client, admin, super-admin,
// controller-manager, scheduler).
func CertPath(dir, stem string) string { return filepath.Join(dir, stem+".crt") }
func KeyPath(dir, stem string) string  { return filepath.Join(dir, stem+".key") }

// usable says whether kp was signed by signer, is not about to expire, and names what req asks.
func usable(kp, signer *KeyPair, req Request) bool {
	if kp.Cert.CheckSignatureFrom(signer.Cert) != nil || time.Until(kp.Cert.NotAfter) < 24*time.Hour {
		return false
	}
	if kp.Cert.Subject.CommonName != req.CommonName || !slices.Equal(kp.Cert.Subject.Organization, req.Organizations) {
		return false
	}
	for _, name := range req.DNSNames {
		if !slices.Contains(kp.Cert.DNSNames, name) {
			return false
		}
	}
	for _, ip := range req.IPs {
		if !slices.ContainsFunc(kp.Cert.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

func readPair(dir, certName, keyName string) (*KeyPair, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, certName))
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, keyName))
	if err != nil {
		return nil, err
	}
	return Parse(certPEM, keyPEM)
}

func writePair(dir, certName, keyName string, kp *KeyPair) error {
	if err := writeFile(filepath.Join(dir, keyName), kp.KeyPEM, 0o600); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, certName), kp.CertPEM, 0o644)
}

func writeServiceAccountKey(dir string, sa *ServiceAccountKey) error {
	if err := writeFile(filepath.Join(dir, ServiceAccountPrivate), sa.PrivatePEM, 0o600); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, ServiceAccountPublic), sa.PublicPEM, 0o644)
}

func readServiceAccountKey(dir string) (*ServiceAccountKey, error) {
	priv, err := os.ReadFile(filepath.Join(dir, ServiceAccountPrivate))
	if err != nil {
		return nil, err
	}
	pub, err := os.ReadFile(filepath.Join(dir, ServiceAccountPublic))
	if err != nil {
		return nil, err
	}
	if len(priv) == 0 || len(pub) == 0 {
		return nil, fs.ErrNotExist
	}
	return &ServiceAccountKey{PrivatePEM: priv, PublicPEM: pub}, nil
}

// writeFile replaces name atomically, so a process starting meanwhile reads the old or the new
// content, never half of it.
func writeFile(name string, data []byte, mode os.FileMode) error {
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

// WriteFile is writeFile for the callers of this package (kubeconfigs next to the certificates).
func WriteFile(name string, data []byte, mode os.FileMode) error { return writeFile(name, data, mode) }

// Kubeconfig is a kubeconfig for server that trusts caPEM and authenticates with the client
// certificate kp, with one context named after cluster.
func Kubeconfig(cluster, server string, caPEM []byte, user string, kp *KeyPair) ([]byte, error) {
	if kp == nil {
		return nil, errors.New("a kubeconfig needs a client certificate")
	}
	ctxName := fmt.Sprintf("%s@%s", user, cluster)
	cfg := clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{cluster: {Server: server, CertificateAuthorityData: caPEM}},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{user: {
			ClientCertificateData: kp.CertPEM, ClientKeyData: kp.KeyPEM,
		}},
		Contexts:       map[string]*clientcmdapi.Context{ctxName: {Cluster: cluster, AuthInfo: user}},
		CurrentContext: ctxName,
	}
	return clientcmd.Write(cfg)
}

// EnsureCA returns the CA <stem>.crt/.key in dir, or makes and writes one named commonName: a
// CA kept across restarts keeps its clients' trust.
func EnsureCA(dir, stem, commonName string) (*KeyPair, error) {
	if kp, err := readPair(dir, stem+".crt", stem+".key"); err == nil {
		return kp, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, stem+".crt"), err)
	}
	ca, err := NewCA(commonName)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return ca, writePair(dir, stem+".crt", stem+".key", ca)
}

// EnsureServiceAccountKey returns the service-account key pair in dir (sa.key, sa.pub), or
// makes and writes one.
func EnsureServiceAccountKey(dir string) (*ServiceAccountKey, error) {
	if sa, err := readServiceAccountKey(dir); err == nil {
		return sa, nil
	}
	sa, err := NewServiceAccountKey()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return sa, writeServiceAccountKey(dir, sa)
}
