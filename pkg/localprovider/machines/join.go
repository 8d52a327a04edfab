package machines

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/certificate/csr"
	"k8s.io/client-go/util/keyutil"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/cluster-bootstrap/token/jws"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

// Joiner joins a machine to its tenant cluster from the machine's bootstrap data alone, as a
// kubelet bootstrapped by kubeadm, Talos or Bottlerocket does: discovery of the cluster CA,
// a node client certificate requested with the bootstrap token, then the Node registered with
// that certificate.
type Joiner struct {
	// NewClient returns a client for config; tests replace it with fakes.
	NewClient func(config *rest.Config) (kubernetes.Interface, error)
	// CertificateTimeout bounds the wait for the node client certificate to be approved and
	// issued.
	CertificateTimeout time.Duration
	// SignatureTimeout bounds the wait for cluster-info to be signed for the token (default 10s).
	SignatureTimeout time.Duration
}

func (j *Joiner) signatureTimeout() time.Duration {
	if j.SignatureTimeout > 0 {
		return j.SignatureTimeout
	}
	return 10 * time.Second
}

// NewJoiner returns a Joiner over real clients.
func NewJoiner() *Joiner {
	return &Joiner{
		NewClient: func(c *rest.Config) (kubernetes.Interface, error) {
			return kubernetes.NewForConfig(c)
		},
		CertificateTimeout: 2 * time.Minute,
	}
}

// JoinError is a failed join step; Reason is the condition reason that names the step.
type JoinError struct {
	Reason string
	Err    error
}

func (e *JoinError) Error() string { return e.Err.Error() }
func (e *JoinError) Unwrap() error { return e.Err }

func stepError(reason string, format string, args ...any) error {
	return &JoinError{Reason: reason, Err: fmt.Errorf(format, args...)}
}

// Joined is what a successful join leaves: the registered Node and the files in the machine's
// state directory.
type Joined struct {
	Node *corev1.Node
}

// State file names in a machine's state directory: what a kubelet keeps in /var/lib/kubelet/pki
// and /etc/kubernetes.
const (
	keyFile        = "kubelet-client.key"
	certFile       = "kubelet-client.crt"
	caFile         = "ca.crt"
	kubeconfigFile = "kubelet.kubeconfig"
)

// Join runs the whole join of one machine: dir is its state directory (created), providerID
// what the Node registers. It is idempotent: the private key survives in dir, so a join
// interrupted after its certificate request resumes with the same request.
func (j *Joiner) Join(ctx context.Context, info bootstrap.JoinInfo, reg Registration, dir string) (*Joined, error) {
	return j.JoinAs(ctx, info, dir, func() (Registration, error) { return reg, nil })
}

// JoinAs is Join that asks for the Node's registration only once the machine holds its node
// credentials: a real node leases its address then, not while discovery waits on a token the
// cluster may not know. registration may be asked for twice.
func (j *Joiner) JoinAs(ctx context.Context, info bootstrap.JoinInfo, dir string, registration func() (Registration, error)) (*Joined, error) {
	if before := joinedBefore(dir, info); before != nil {
		reg, err := registration()
		if err != nil {
			return nil, err
		}
		if joined, err := j.register(ctx, info, reg, before); err == nil {
			return joined, nil
		}
		// Not admitted any more (a rotated CA, say): join afresh, as before it joined.
	}
	nodeConfig, err := j.requestCredentials(ctx, info, dir)
	if err != nil {
		return nil, err
	}
	reg, err := registration()
	if err != nil {
		return nil, err
	}
	return j.register(ctx, info, reg, nodeConfig)
}

// register registers the machine's Node with the node's own credentials.
func (j *Joiner) register(ctx context.Context, info bootstrap.JoinInfo, reg Registration, nodeConfig *rest.Config) (*Joined, error) {
	nodeClient, err := j.NewClient(nodeConfig)
	if err != nil {
		return nil, err
	}
	version := info.KubernetesVersion
	if version == "" {
		// A kubelet reports its own version; this one is as new as the server it joins.
		if v, err := nodeClient.Discovery().ServerVersion(); err == nil {
			version = v.GitVersion
		}
	}
	node, err := j.RegisterNode(ctx, nodeClient, NodeFor(info, reg, version))
	if err != nil {
		return nil, err
	}
	klog.FromContext(ctx).Info("Node registered", "node", info.NodeName, "endpoint", info.Endpoint, "providerID", reg.ProviderID)
	return &Joined{Node: node}, nil
}

// joinedBefore is the node's client configuration from an earlier join in dir, nil when there
// is none for this node and endpoint or its certificate is no longer good. A join resumed after
// its certificate was issued (a real node whose boot failed) must not need the bootstrap token:
// the bootstrap provider deletes it once the Node exists.
func joinedBefore(dir string, info bootstrap.JoinInfo) *rest.Config {
	config, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, kubeconfigFile))
	if err != nil || config.Host != "https://"+info.Endpoint {
		return nil
	}
	cert, err := parseCertificate(config.CertData)
	if err != nil || cert.Subject.CommonName != "system:node:"+info.NodeName || time.Now().After(cert.NotAfter) {
		return nil
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(config.CAData) {
		return nil
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return nil
	}
	config.Timeout = 30 * time.Second
	return config
}

// requestCredentials is the join's first half: the cluster CA discovered, the node client
// certificate requested with the bootstrap token and kept in dir.
func (j *Joiner) requestCredentials(ctx context.Context, info bootstrap.JoinInfo, dir string) (*rest.Config, error) {
	logger := klog.FromContext(ctx).WithValues("node", info.NodeName, "endpoint", info.Endpoint)
	caPEM, err := j.Discover(ctx, info)
	if err != nil {
		return nil, err
	}
	logger.V(2).Info("Discovered the cluster CA")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	key, err := loadOrCreateKey(filepath.Join(dir, keyFile))
	if err != nil {
		return nil, err
	}
	server := "https://" + info.Endpoint
	bootstrapConfig := &rest.Config{Host: server, BearerToken: info.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}, Timeout: 30 * time.Second}
	certPEM, err := j.RequestNodeCertificate(ctx, bootstrapConfig, info.NodeName, key)
	if err != nil {
		return nil, err
	}
	logger.V(2).Info("Node client certificate issued")
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, err
	}
	nodeConfig := &rest.Config{Host: server, Timeout: 30 * time.Second,
		TLSClientConfig: rest.TLSClientConfig{CAData: caPEM, CertData: certPEM, KeyData: keyPEM}}
	if err := writeState(dir, info.NodeName, nodeConfig); err != nil {
		return nil, err
	}
	return nodeConfig, nil
}

// Discover returns the cluster CA (PEM) the machine may trust. With a CA in the data, that CA.
// With CA pins (kubeadm's token discovery): the kube-public/cluster-info ConfigMap fetched
// anonymously without verifying the server, its JWS signature checked for the token, its CA
// checked against the pins, then fetched again over TLS verified by that CA.
func (j *Joiner) Discover(ctx context.Context, info bootstrap.JoinInfo) ([]byte, error) {
	server := "https://" + info.Endpoint
	if len(info.CACert) > 0 {
		if err := info.VerifyCA(info.CACert); err != nil {
			return nil, stepError(ReasonDiscoveryFailed, "the CA in the bootstrap data: %w", err)
		}
		return info.CACert, nil
	}
	tokenID, tokenSecret, ok := strings.Cut(info.Token, ".")
	if !ok {
		return nil, stepError(ReasonBootstrapDataInvalid, "the bootstrap token is not <id>.<secret>")
	}
	insecure, err := j.NewClient(&rest.Config{Host: server, Timeout: 15 * time.Second,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	if err != nil {
		return nil, err
	}
	// As kubeadm, wait a while for the signature: a token minted a moment ago is signed by the
	// control plane's bootstrap signer shortly after. (Anonymous users may get cluster-info,
	// not watch it.)
	// A failed read is tried again too, as kubeadm does: the wait's own deadline fails the last one
	// (client-go's rate limiter refuses a request that would outlast it), and the machine's
	// condition then named that instead of the token.
	var cm *corev1.ConfigMap
	var signature string
	var readErr error
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, j.signatureTimeout(), true, func(ctx context.Context) (bool, error) {
		got, err := insecure.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(ctx, bootstrapapi.ConfigMapClusterInfo, metav1.GetOptions{})
		if err != nil {
			readErr = err
			return false, nil
		}
		var signed bool
		cm = got
		signature, signed = cm.Data[bootstrapapi.JWSSignatureKeyPrefix+tokenID]
		return signed, nil
	})
	if err != nil && cm == nil {
		return nil, stepError(ReasonDiscoveryFailed, "reading %s/%s from %s: %v", metav1.NamespacePublic, bootstrapapi.ConfigMapClusterInfo, server, readErr)
	}
	if err != nil {
		return nil, stepError(ReasonDiscoveryFailed, "%s is not signed for token %q after %s: the token does not exist in the cluster, or its control plane signs no tokens", bootstrapapi.ConfigMapClusterInfo, tokenID, j.signatureTimeout())
	}
	content := cm.Data[bootstrapapi.KubeConfigKey]
	if !jws.DetachedTokenIsValid(signature, content, tokenID, tokenSecret) {
		return nil, stepError(ReasonDiscoveryFailed, "the signature of %s for token %q does not verify with the token's secret", bootstrapapi.ConfigMapClusterInfo, tokenID)
	}
	caPEM, err := clusterInfoCA(content)
	if err != nil {
		return nil, stepError(ReasonDiscoveryFailed, "%s: %w", bootstrapapi.ConfigMapClusterInfo, err)
	}
	if err := info.VerifyCA(caPEM); err != nil {
		return nil, stepError(ReasonDiscoveryFailed, "the cluster CA fails the pin in the bootstrap data: %w", err)
	}
	secure, err := j.NewClient(&rest.Config{Host: server, Timeout: 15 * time.Second,
		TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}})
	if err != nil {
		return nil, err
	}
	again, err := secure.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(ctx, bootstrapapi.ConfigMapClusterInfo, metav1.GetOptions{})
	if err != nil {
		return nil, stepError(ReasonDiscoveryFailed, "reading %s again over TLS verified by the pinned CA: %w", bootstrapapi.ConfigMapClusterInfo, err)
	}
	if again.Data[bootstrapapi.KubeConfigKey] != content {
		return nil, stepError(ReasonDiscoveryFailed, "%s changed between the insecure and the verified read", bootstrapapi.ConfigMapClusterInfo)
	}
	return caPEM, nil
}

// clusterInfoCA returns the CA of the single cluster in a cluster-info kubeconfig.
func clusterInfoCA(kubeconfig string) ([]byte, error) {
	cfg, err := clientcmd.Load([]byte(kubeconfig))
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	for _, c := range cfg.Clusters {
		if len(c.CertificateAuthorityData) > 0 {
			return c.CertificateAuthorityData, nil
		}
	}
	return nil, errors.New("the kubeconfig names no cluster with a CA")
}

// Kubelet's node client certificate request: its signer, and its key usages for an ECDSA key.
var nodeClientUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}

// RequestNodeCertificate creates the node client CertificateSigningRequest with the bootstrap
// credentials in config and waits (a watch) until it is approved and issued, for at most
// CertificateTimeout. It returns the certificate (PEM).
func (j *Joiner) RequestNodeCertificate(ctx context.Context, config *rest.Config, nodeName string, key crypto.Signer) ([]byte, error) {
	client, err := j.NewClient(config)
	if err != nil {
		return nil, err
	}
	subject := pkix.Name{CommonName: "system:node:" + nodeName, Organization: []string{"system:nodes"}}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		return nil, err
	}
	csrPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	name, err := csrName(key.Public(), subject)
	if err != nil {
		return nil, err
	}
	// RequestCertificate accepts an existing request of this name made with the same key:
	// a join resumed after a restart waits for the request it made before.
	reqName, reqUID, err := csr.RequestCertificateWithContext(ctx, client, csrPEM, name,
		certificatesv1.KubeAPIServerClientKubeletSignerName, nil, nodeClientUsages, key)
	if err != nil {
		return nil, stepError(ReasonCertificateRequestFailed, "creating the node client certificate request with the bootstrap token: %w", err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, j.CertificateTimeout)
	defer cancel()
	certPEM, err := csr.WaitForCertificate(waitCtx, client, reqName, reqUID)
	if err != nil {
		if waitCtx.Err() != nil && ctx.Err() == nil {
			return nil, stepError(ReasonCertificateNotIssued, "certificate request %s was not approved and issued within %s (the control plane's kube-controller-manager approves and signs node client certificates)", reqName, j.CertificateTimeout)
		}
		return nil, stepError(ReasonCertificateNotIssued, "certificate request %s: %w", reqName, err)
	}
	return certPEM, nil
}

// csrName is a name that depends only on the key and the subject, as kubelet's does, so a
// repeated request finds the earlier one.
func csrName(pub crypto.PublicKey, subject pkix.Name) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	h := sha512.New512_256()
	h.Write(der)
	h.Write([]byte(subject.CommonName))
	for _, o := range subject.Organization {
		h.Write([]byte{0})
		h.Write([]byte(o))
	}
	return "node-csr-" + base64.RawURLEncoding.EncodeToString(h.Sum(nil)), nil
}

// Registration is how a machine's Node registers: its provider ID, its InternalIP, and
// whether the tenant's kwok keeps it (a real node's kubelet keeps its own).
type Registration struct {
	ProviderID string
	Address    string
	Kwok       bool
}

// KwokNode is the registration of a kwok node: on this host's loopback, kept by kwok.
func KwokNode(providerID string) Registration {
	return Registration{ProviderID: providerID, Address: NodeIP, Kwok: true}
}

// NodeFor is the Node a kubelet registers from the data: name, labels and taints from the
// data, the well-known labels a kubelet adds, the provider ID, and for a kwok node the
// annotation that hands the Node to the tenant's kwok (heartbeats, conditions and capacity are
// then kwok's; a real node's kubelet finds the Node registered and keeps it).
func NodeFor(info bootstrap.JoinInfo, reg Registration, kubeletVersion string) *corev1.Node {
	labels := map[string]string{}
	for k, v := range info.NodeLabels {
		labels[k] = v
	}
	labels[corev1.LabelHostname] = info.NodeName
	labels[corev1.LabelOSStable] = "linux"
	labels[corev1.LabelArchStable] = "amd64"
	var annotations map[string]string
	if reg.Kwok {
		annotations = map[string]string{KwokNodeAnnotation: KwokNodeValue}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        info.NodeName,
			Labels:      labels,
			Annotations: annotations,
		},
		Spec: corev1.NodeSpec{ProviderID: reg.ProviderID, Taints: info.NodeTaints},
		Status: corev1.NodeStatus{
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: reg.Address},
				{Type: corev1.NodeHostName, Address: info.NodeName},
			},
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: kubeletVersion, OperatingSystem: "linux",
				Architecture: "amd64", OSImage: "butler local machine (" + string(info.Format) + ")"},
		},
	}
}

// NodeIP is every kwok machine's address: they all live on this host's loopback.
const NodeIP = "127.0.0.1"

// RegisterNode creates node with the node's own credentials. A Node of that name that already
// carries the same provider ID is this machine's from an earlier, interrupted join.
func (j *Joiner) RegisterNode(ctx context.Context, client kubernetes.Interface, node *corev1.Node) (*corev1.Node, error) {
	created, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{FieldManager: "kubelet"})
	if err == nil {
		return created, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, stepError(ReasonNodeRegistrationFailed, "registering Node %s with its client certificate: %w", node.Name, err)
	}
	existing, err := client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
	if err != nil {
		return nil, stepError(ReasonNodeRegistrationFailed, "reading the existing Node %s: %w", node.Name, err)
	}
	if existing.Spec.ProviderID != node.Spec.ProviderID {
		return nil, stepError(ReasonNodeRegistrationFailed, "a Node named %s already exists with provider ID %q, not %q", node.Name, existing.Spec.ProviderID, node.Spec.ProviderID)
	}
	return existing, nil
}

// Renew renews the node client certificate kept in dir when clusterCA (the cluster CA now, PEM)
// did not sign it: a rotation of the tenant CA has begun. As a kubelet rotating its
// certificate, it requests a new one for a new key, authenticated by the current certificate
// (the control plane trusts the previous CA until the rotation completes), and from then on
// trusts clusterCA beside what it trusted. renewed says whether it wrote a new certificate.
func (j *Joiner) Renew(ctx context.Context, dir string, clusterCA []byte) (renewed bool, err error) {
	config, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, kubeconfigFile))
	if err != nil {
		return false, err
	}
	current, err := parseCertificate(config.CertData)
	if err != nil {
		return false, fmt.Errorf("the node client certificate: %w", err)
	}
	ca, err := parseCertificate(clusterCA)
	if err != nil {
		return false, fmt.Errorf("the cluster CA: %w", err)
	}
	if current.CheckSignatureFrom(ca) == nil {
		return false, nil
	}
	nodeName := strings.TrimPrefix(current.Subject.CommonName, "system:node:")
	nextKey := filepath.Join(dir, "kubelet-client-next.key")
	key, err := loadOrCreateKey(nextKey)
	if err != nil {
		return false, err
	}
	config.Timeout = 30 * time.Second
	certPEM, err := j.RequestNodeCertificate(ctx, config, nodeName, key)
	if err != nil {
		return false, err
	}
	issued, err := parseCertificate(certPEM)
	if err != nil {
		return false, err
	}
	if issued.CheckSignatureFrom(ca) != nil {
		// Signed a moment before the control plane's signer moved to the new CA: a new key asks again.
		_ = os.Remove(nextKey)
		return false, stepError(ReasonCertificateNotIssued, "the renewed node client certificate is not the cluster CA's yet (the control plane's signer moves to it)")
	}
	trust, err := pki.Bundle(clusterCA, config.CAData)
	if err != nil {
		return false, err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return false, err
	}
	renewedConfig := &rest.Config{Host: config.Host, Timeout: 30 * time.Second,
		TLSClientConfig: rest.TLSClientConfig{CAData: trust, CertData: certPEM, KeyData: keyPEM}}
	if err := keyutil.WriteKey(filepath.Join(dir, keyFile), keyPEM); err != nil {
		return false, err
	}
	if err := writeState(dir, nodeName, renewedConfig); err != nil {
		return false, err
	}
	return true, os.Remove(nextKey)
}

// Trust makes the CAs the machine in dir trusts those of trust (PEM): its kubeconfig's, for the
// tenant's API, and ca.crt, the kubelet's for client certificates. A rotation's completion
// drops the previous CA this way: Renew trusted it beside the new one, and a kubelet that still
// did would take client certificates of a CA the tenant no longer trusts. changed says whether
// they changed.
func (j *Joiner) Trust(dir string, trust []byte) (changed bool, err error) {
	config, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, kubeconfigFile))
	if err != nil {
		return false, err
	}
	want, err := certSet(trust)
	if err != nil {
		return false, fmt.Errorf("the CAs to trust: %w", err)
	}
	have, _ := certSet(config.CAData)
	onDisk, _ := os.ReadFile(filepath.Join(dir, caFile))
	held, _ := certSet(onDisk)
	if want.Equal(have) && want.Equal(held) {
		return false, nil
	}
	current, err := parseCertificate(config.CertData)
	if err != nil {
		return false, fmt.Errorf("the node client certificate: %w", err)
	}
	config.CAData = trust
	return true, writeState(dir, strings.TrimPrefix(current.Subject.CommonName, "system:node:"), config)
}

// certSet is the certificates of PEM data, by their DER bytes; an error when there is none.
func certSet(data []byte) (sets.Set[string], error) {
	out := sets.New[string]()
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		if block.Type == "CERTIFICATE" {
			out.Insert(string(block.Bytes))
		}
	}
	if out.Len() == 0 {
		return out, errors.New("no certificate")
	}
	return out, nil
}

func parseCertificate(data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

// loadOrCreateKey returns the machine's private key, generating (ECDSA P-256, as kubelet) and
// saving it first if there is none.
func loadOrCreateKey(path string) (crypto.Signer, error) {
	if data, err := os.ReadFile(path); err == nil {
		k, err := keyutil.ParsePrivateKeyPEM(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if s, ok := k.(crypto.Signer); ok {
			return s, nil
		}
		return nil, fmt.Errorf("%s: not a signing key", path)
	} else if !os.IsNotExist(err) {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	data, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, err
	}
	if err := keyutil.WriteKey(path, data); err != nil {
		return nil, err
	}
	return key, nil
}

// writeState keeps the node's credentials as a kubelet does: certificate, CA, and a kubeconfig
// that uses them.
func writeState(dir, nodeName string, c *rest.Config) error {
	if err := os.WriteFile(filepath.Join(dir, certFile), c.CertData, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, caFile), c.CAData, 0o600); err != nil {
		return err
	}
	kubeconfig := clientcmdKubeconfig(c, "system:node:"+nodeName)
	return clientcmd.WriteToFile(*kubeconfig, filepath.Join(dir, kubeconfigFile))
}
