package machines

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/cluster-bootstrap/token/jws"

	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
)

const (
	testToken    = "abcdef.0123456789abcdef"
	testEndpoint = "127.0.0.1:6443"
)

// testCA is a tenant CA: it signs node client certificates as the tenant's
// kube-controller-manager would.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tenant-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issueClient issues a client certificate for cn.
func (ca *testCA) issueClient(t *testing.T, cn string) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn}}, key)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(ca.sign(t, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})))
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// sign issues the certificate a CSR asks for.
func (ca *testCA) sign(t *testing.T, request []byte) []byte {
	block, _ := pem.Decode(request)
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		t.Error(err)
		return nil
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: req.Subject,
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, req.PublicKey, ca.key)
	if err != nil {
		t.Error(err)
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// clusterInfo is kube-public/cluster-info as kubeadm writes it, signed for tokens by the
// bootstrap signer.
func clusterInfo(t *testing.T, caPEM []byte, tokens ...string) *corev1.ConfigMap {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[""] = &clientcmdapi.Cluster{Server: "https://" + testEndpoint, CertificateAuthorityData: caPEM}
	kubeconfig, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespacePublic, Name: bootstrapapi.ConfigMapClusterInfo},
		Data: map[string]string{bootstrapapi.KubeConfigKey: string(kubeconfig)}}
	for _, tok := range tokens {
		id, secret := tok[:6], tok[7:]
		sig, err := jws.ComputeDetachedSignature(string(kubeconfig), id, secret)
		if err != nil {
			t.Fatal(err)
		}
		cm.Data[bootstrapapi.JWSSignatureKeyPrefix+id] = sig
	}
	return cm
}

// fakeCluster is a tenant cluster on a fake clientset that records the client configurations
// it was reached with.
type fakeCluster struct {
	client  *fake.Clientset
	mu      sync.Mutex
	configs []*rest.Config
}

func newFakeCluster(objs ...runtime.Object) *fakeCluster {
	return &fakeCluster{client: fake.NewClientset(objs...)}
}

func (f *fakeCluster) joiner() *Joiner {
	return &Joiner{CertificateTimeout: 5 * time.Second, SignatureTimeout: 300 * time.Millisecond, NewClient: func(c *rest.Config) (kubernetes.Interface, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.configs = append(f.configs, rest.CopyConfig(c))
		return f.client, nil
	}}
}

// approveAndSign plays the tenant's kube-controller-manager: it approves and signs the first
// node client CSR, and hands it to check first.
func (f *fakeCluster) approveAndSign(t *testing.T, ctx context.Context, ca *testCA, check func(*certificatesv1.CertificateSigningRequest)) {
	go func() {
		for ctx.Err() == nil {
			list, err := f.client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
			if err == nil && len(list.Items) > 0 {
				csr := list.Items[0].DeepCopy()
				if check != nil {
					check(csr)
				}
				csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
					Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "AutoApproved"})
				csr.Status.Certificate = ca.sign(t, csr.Spec.Request)
				if _, err := f.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
					t.Error(err)
				}
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
}

func pinnedInfo(t *testing.T, ca *testCA) bootstrap.JoinInfo {
	pin, err := bootstrap.CAPin(ca.pem)
	if err != nil {
		t.Fatal(err)
	}
	return bootstrap.JoinInfo{Format: bootstrap.OSRocky, Endpoint: testEndpoint, Token: testToken,
		CACertHashes: []string{pin}, NodeName: "worker-0", KubernetesVersion: "v1.36.3",
		NodeLabels: map[string]string{"butler.butlerlabs.dev/tenant-cluster": "prod"},
		NodeTaints: []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}}
}

func reasonOf(err error) string {
	var je *JoinError
	if errors.As(err, &je) {
		return je.Reason
	}
	return ""
}

func TestDiscoverWithPin(t *testing.T) {
	ca := newTestCA(t)
	f := newFakeCluster(clusterInfo(t, ca.pem, testToken))
	got, err := f.joiner().Discover(context.Background(), pinnedInfo(t, ca))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(ca.pem) {
		t.Fatalf("discovered CA %q, want the cluster's", got)
	}
	if len(f.configs) != 2 || !f.configs[0].Insecure || f.configs[1].Insecure || string(f.configs[1].CAData) != string(ca.pem) {
		t.Fatalf("want one anonymous insecure read, then one verified by the pinned CA; got %d configs", len(f.configs))
	}
	for _, c := range f.configs {
		if c.BearerToken != "" || c.CertData != nil {
			t.Fatalf("discovery must be anonymous, got credentials in %+v", c)
		}
	}
}

func TestDiscoverFailures(t *testing.T) {
	ca, other := newTestCA(t), newTestCA(t)
	cases := map[string]struct {
		cm   *corev1.ConfigMap
		info func(bootstrap.JoinInfo) bootstrap.JoinInfo
	}{
		"wrong token secret": {clusterInfo(t, ca.pem, testToken), func(i bootstrap.JoinInfo) bootstrap.JoinInfo {
			i.Token = "abcdef.ffffffffffffffff"
			return i
		}},
		"token the cluster does not know": {clusterInfo(t, ca.pem, testToken), func(i bootstrap.JoinInfo) bootstrap.JoinInfo {
			i.Token = "zzzzzz.0123456789abcdef"
			return i
		}},
		"pin of another CA": {clusterInfo(t, ca.pem, testToken), func(i bootstrap.JoinInfo) bootstrap.JoinInfo {
			pin, _ := bootstrap.CAPin(other.pem)
			i.CACertHashes = []string{pin}
			return i
		}},
		"an unreadable CA in the data": {clusterInfo(t, ca.pem, testToken), func(i bootstrap.JoinInfo) bootstrap.JoinInfo {
			i.CACertHashes, i.CACert = nil, []byte("not a certificate")
			return i
		}},
		"no cluster-info": {nil, func(i bootstrap.JoinInfo) bootstrap.JoinInfo { return i }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var objs []runtime.Object
			if tc.cm != nil {
				objs = append(objs, tc.cm)
			}
			f := newFakeCluster(objs...)
			_, err := f.joiner().Discover(context.Background(), tc.info(pinnedInfo(t, ca)))
			if reasonOf(err) != ReasonDiscoveryFailed {
				t.Fatalf("got %v (reason %q), want %s", err, reasonOf(err), ReasonDiscoveryFailed)
			}
		})
	}
}

func TestDiscoverWithCA(t *testing.T) {
	ca := newTestCA(t)
	f := newFakeCluster() // no cluster-info: a carried CA needs no discovery
	info := pinnedInfo(t, ca)
	info.CACertHashes, info.CACert = nil, ca.pem
	got, err := f.joiner().Discover(context.Background(), info)
	if err != nil || string(got) != string(ca.pem) {
		t.Fatalf("got %q, %v; want the carried CA", got, err)
	}
	if len(f.configs) != 0 {
		t.Fatalf("a carried CA needs no request, made %d", len(f.configs))
	}
}

func TestRequestNodeCertificate(t *testing.T) {
	ca := newTestCA(t)
	f := newFakeCluster()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var seen *certificatesv1.CertificateSigningRequest
	f.approveAndSign(t, ctx, ca, func(c *certificatesv1.CertificateSigningRequest) { seen = c.DeepCopy() })
	key, err := loadOrCreateKey(filepath.Join(t.TempDir(), keyFile))
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err := f.joiner().RequestNodeCertificate(ctx, &rest.Config{Host: "https://" + testEndpoint, BearerToken: testToken}, "worker-0", key)
	if err != nil {
		t.Fatal(err)
	}
	if seen.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
		t.Errorf("signer %q", seen.Spec.SignerName)
	}
	if !slices.Equal(seen.Spec.Usages, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}) {
		t.Errorf("usages %v", seen.Spec.Usages)
	}
	block, _ := pem.Decode(seen.Spec.Request)
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if req.Subject.CommonName != "system:node:worker-0" || !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) {
		t.Errorf("subject %v, want CN system:node:worker-0, O system:nodes", req.Subject)
	}
	block, _ = pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if err := cert.CheckSignatureFrom(ca.cert); err != nil {
		t.Errorf("the returned certificate is not the CA's: %v", err)
	}
}

func TestRequestNodeCertificateNotIssued(t *testing.T) {
	f := newFakeCluster()
	j := f.joiner()
	j.CertificateTimeout = 300 * time.Millisecond
	key, _ := loadOrCreateKey(filepath.Join(t.TempDir(), keyFile))
	start := time.Now()
	_, err := j.RequestNodeCertificate(context.Background(), &rest.Config{Host: "https://" + testEndpoint}, "worker-0", key)
	if reasonOf(err) != ReasonCertificateNotIssued {
		t.Fatalf("got %v, want %s", err, ReasonCertificateNotIssued)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %s, want about the timeout", d)
	}
}

func TestJoin(t *testing.T) {
	ca := newTestCA(t)
	f := newFakeCluster(clusterInfo(t, ca.pem, testToken))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.approveAndSign(t, ctx, ca, nil)
	dir := filepath.Join(t.TempDir(), "machine")
	joined, err := f.joiner().Join(ctx, pinnedInfo(t, ca), KwokNode("local://tenant/worker-0"), dir)
	if err != nil {
		t.Fatal(err)
	}
	node, err := f.client.CoreV1().Nodes().Get(ctx, "worker-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if joined.Node.Name != node.Name || node.Spec.ProviderID != "local://tenant/worker-0" {
		t.Errorf("node %s provider ID %q", node.Name, node.Spec.ProviderID)
	}
	if node.Labels["butler.butlerlabs.dev/tenant-cluster"] != "prod" || node.Labels[corev1.LabelHostname] != "worker-0" || node.Labels[corev1.LabelOSStable] != "linux" {
		t.Errorf("labels %v", node.Labels)
	}
	if len(node.Spec.Taints) != 1 || node.Spec.Taints[0].Key != "dedicated" {
		t.Errorf("taints %v", node.Spec.Taints)
	}
	if node.Annotations[KwokNodeAnnotation] != KwokNodeValue {
		t.Errorf("annotations %v: kwok would not manage it", node.Annotations)
	}
	if node.Status.NodeInfo.KubeletVersion != "v1.36.3" {
		t.Errorf("kubelet version %q", node.Status.NodeInfo.KubeletVersion)
	}
	// The credentials used: anonymous discovery, the token for the CSR, the certificate for
	// the Node.
	var token, cert bool
	for _, c := range f.configs {
		token = token || c.BearerToken == testToken
		cert = cert || (c.CertData != nil && c.KeyData != nil && c.BearerToken == "")
	}
	if !token || !cert {
		t.Errorf("want a bootstrap-token client and a client-certificate client, got token=%v cert=%v", token, cert)
	}
	for _, f := range []string{keyFile, certFile, caFile, kubeconfigFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("state: %v", err)
		}
	}
	kc, err := clientcmd.LoadFromFile(filepath.Join(dir, kubeconfigFile))
	if err != nil || kc.AuthInfos["system:node:worker-0"] == nil {
		t.Errorf("the node kubeconfig: %v", err)
	}

	// A join repeated after a restart finds its Node and its request again.
	again, err := f.joiner().Join(ctx, pinnedInfo(t, ca), KwokNode("local://tenant/worker-0"), dir)
	if err != nil || again.Node.Name != "worker-0" {
		t.Fatalf("repeated join: %v", err)
	}
	csrs, _ := f.client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if len(csrs.Items) != 1 {
		t.Errorf("%d certificate requests after two joins with one key, want 1", len(csrs.Items))
	}

	// Once the Node exists the bootstrap provider deletes the token (cluster-info unsigned, the
	// request gone): a join resumed then (a real node whose boot failed) registers with the
	// certificate it has, without the token.
	if _, err := f.client.CoreV1().ConfigMaps(metav1.NamespacePublic).Update(ctx, clusterInfo(t, ca.pem), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.client.CertificatesV1().CertificateSigningRequests().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	f.configs = nil
	if again, err := f.joiner().Join(ctx, pinnedInfo(t, ca), KwokNode("local://tenant/worker-0"), dir); err != nil || again.Node.Name != "worker-0" {
		t.Fatalf("a join resumed after the token was deleted: %v", err)
	}
	for _, c := range f.configs {
		if c.BearerToken != "" || c.CertData == nil {
			t.Errorf("the resumed join used a client without the node's certificate: %+v", c)
		}
	}
}

func TestRegisterNodeTakenByAnother(t *testing.T) {
	existing := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-0"}, Spec: corev1.NodeSpec{ProviderID: "local://other/worker-0"}}
	f := newFakeCluster(existing)
	_, err := f.joiner().RegisterNode(context.Background(), f.client, NodeFor(bootstrap.JoinInfo{NodeName: "worker-0"}, KwokNode("local://tenant/worker-0"), "v1.36.3"))
	if reasonOf(err) != ReasonNodeRegistrationFailed {
		t.Fatalf("got %v, want %s", err, ReasonNodeRegistrationFailed)
	}
}

// A token minted a moment ago: discovery waits for the signer rather than failing.
func TestDiscoverWaitsForTheSignature(t *testing.T) {
	ca := newTestCA(t)
	f := newFakeCluster(clusterInfo(t, ca.pem)) // not signed for the token yet
	j := f.joiner()
	j.SignatureTimeout = 5 * time.Second
	go func() {
		time.Sleep(300 * time.Millisecond)
		if _, err := f.client.CoreV1().ConfigMaps(metav1.NamespacePublic).Update(context.Background(), clusterInfo(t, ca.pem, testToken), metav1.UpdateOptions{}); err != nil {
			t.Error(err)
		}
	}()
	got, err := j.Discover(context.Background(), pinnedInfo(t, ca))
	if err != nil || string(got) != string(ca.pem) {
		t.Fatalf("got %q, %v; want the CA once signed", got, err)
	}
}

// signPending plays kube-controller-manager after a rotation's start: it approves and signs,
// with ca, every node client CSR that has no certificate yet, until ctx ends; the channel is
// closed once it stopped.
func (f *fakeCluster) signPending(t *testing.T, ctx context.Context, ca *testCA) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			list, _ := f.client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
			for i := range list.Items {
				csr := list.Items[i].DeepCopy()
				if len(csr.Status.Certificate) > 0 {
					continue
				}
				csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
					Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "AutoApproved"})
				csr.Status.Certificate = ca.sign(t, csr.Spec.Request)
				_, _ = f.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{})
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return done
}

// A joined machine renews its node client certificate once the cluster CA is another: a new
// key, a request authenticated by its current certificate, the new CA trusted beside the one
// it trusted; nothing when its certificate is the cluster CA's, and an error (tried again)
// while the signer still signs with the previous CA.
func TestRenew(t *testing.T) {
	oldCA := newTestCA(t)
	f := newFakeCluster(clusterInfo(t, oldCA.pem, testToken))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.approveAndSign(t, ctx, oldCA, nil)
	dir := filepath.Join(t.TempDir(), "machine")
	if _, err := f.joiner().Join(ctx, pinnedInfo(t, oldCA), KwokNode("local://tenant/worker-0"), dir); err != nil {
		t.Fatal(err)
	}
	before, err := clientcmd.LoadFromFile(filepath.Join(dir, kubeconfigFile))
	if err != nil {
		t.Fatal(err)
	}
	oldCert := before.AuthInfos["system:node:worker-0"].ClientCertificateData
	if renewed, err := f.joiner().Renew(ctx, dir, oldCA.pem); renewed || err != nil {
		t.Fatalf("a certificate of the cluster CA: renewed %v, %v", renewed, err)
	}

	newCA := newTestCA(t)
	stale, stop := context.WithCancel(ctx)
	staleDone := f.signPending(t, stale, oldCA)
	if renewed, err := f.joiner().Renew(ctx, dir, newCA.pem); renewed || reasonOf(err) != ReasonCertificateNotIssued {
		t.Errorf("signed by the previous CA: renewed %v, %v; want %s", renewed, err, ReasonCertificateNotIssued)
	}
	stop()
	<-staleDone
	// The fake's watch ignores the name it is asked for: only the new request may be there.
	list, _ := f.client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	for _, csr := range list.Items {
		if err := f.client.CertificatesV1().CertificateSigningRequests().Delete(ctx, csr.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f.signPending(t, ctx, newCA)
	f.configs = nil
	if renewed, err := f.joiner().Renew(ctx, dir, newCA.pem); !renewed || err != nil {
		t.Fatalf("a new cluster CA: renewed %v, %v", renewed, err)
	}
	if len(f.configs) == 0 || !bytes.Equal(f.configs[0].CertData, oldCert) {
		t.Error("the renewal's request was not authenticated by the current certificate")
	}
	after, err := clientcmd.LoadFromFile(filepath.Join(dir, kubeconfigFile))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(after.AuthInfos["system:node:worker-0"].ClientCertificateData)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil || cert.CheckSignatureFrom(newCA.cert) != nil || cert.Subject.CommonName != "system:node:worker-0" {
		t.Errorf("the renewed certificate is not worker-0's from the new CA: %v", err)
	}
	pool := x509.NewCertPool()
	trust := after.Clusters["tenant"].CertificateAuthorityData
	if !pool.AppendCertsFromPEM(trust) || !bytes.Contains(trust, newCA.pem) || !bytes.Contains(trust, oldCA.pem) {
		t.Error("the machine does not trust both CAs after the renewal")
	}
	if renewed, err := f.joiner().Renew(ctx, dir, newCA.pem); renewed || err != nil {
		t.Errorf("renewed again: %v, %v", renewed, err)
	}

	// While the rotation is prepared the cluster's kubeconfig trusts both: nothing changes.
	both := append(append([]byte{}, oldCA.pem...), newCA.pem...)
	if changed, err := f.joiner().Trust(dir, both); changed || err != nil {
		t.Errorf("trusting both CAs again: changed %v, %v", changed, err)
	}
	// Once it completed, the new CA only: a client certificate of the previous CA, which the
	// kubelet still took (ca.crt, its client CA file), is refused from then on.
	if changed, err := f.joiner().Trust(dir, newCA.pem); !changed || err != nil {
		t.Fatalf("trusting the new CA only: changed %v, %v", changed, err)
	}
	oldClient := oldCA.issueClient(t, "kubernetes-admin")
	for _, f := range []string{caFile, kubeconfigFile} {
		var trusted []byte
		if f == caFile {
			trusted, _ = os.ReadFile(filepath.Join(dir, caFile))
		} else {
			cfg, err := clientcmd.LoadFromFile(filepath.Join(dir, kubeconfigFile))
			if err != nil {
				t.Fatal(err)
			}
			trusted = cfg.Clusters["tenant"].CertificateAuthorityData
			if !bytes.Equal(cfg.AuthInfos["system:node:worker-0"].ClientCertificateData, after.AuthInfos["system:node:worker-0"].ClientCertificateData) {
				t.Error("the node's client certificate changed with its trust")
			}
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(trusted)
		if _, err := oldClient.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
			t.Errorf("%s still trusts a certificate of the previous CA after the rotation completed", f)
		}
		if !bytes.Contains(trusted, newCA.pem) {
			t.Errorf("%s does not trust the new CA", f)
		}
	}
}
