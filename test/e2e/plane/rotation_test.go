package plane

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// restConfigOf is the client configuration of a kubeconfig file.
func restConfigOf(t *testing.T, path string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 15 * time.Second
	return cfg
}

// whoami asks the tenant who cfg's credential is (a SelfSubjectReview, which every
// authenticated user may make): the user, or the error (401 for a refused credential).
func whoami(ctx context.Context, cfg *rest.Config) (string, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	r, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return r.Status.UserInfo.Username, nil
}

// withToken is cfg with a bearer token instead of its client certificate.
func withToken(cfg *rest.Config, token string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.CertData, c.KeyData, c.BearerToken = nil, nil, token
	return c
}

// trusting is cfg trusting caPEM instead of what it trusted: to present an old credential to
// the server after its certificate moved to the new CA, so that the server's answer is seen.
func trusting(cfg *rest.Config, caPEM []byte) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.CAData = caPEM
	return c
}

// nodeWatch lists the tenant's Nodes every second and remembers every Node seen not Ready.
type nodeWatch struct {
	mu       sync.Mutex
	notReady []string
	lists    int
	stop     context.CancelFunc
	done     chan struct{}
}

func watchNodes(client kubernetes.Interface) *nodeWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &nodeWatch{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			if nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
				w.mu.Lock()
				w.lists++
				for _, n := range nodes.Items {
					ready := false
					for _, c := range n.Status.Conditions {
						ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
					}
					if !ready {
						w.notReady = append(w.notReady, n.Name+" at "+time.Now().Format(time.TimeOnly))
					}
				}
				w.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	return w
}

// end stops the watch: how many lists it made, and the Nodes it saw not Ready.
func (w *nodeWatch) end() (int, []string) {
	w.stop()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lists, w.notReady
}

// TestLocalCredentialsRotation: a rotation of a local tenant's CA and service-account key in
// two phases while a Deployment runs. After rotate-credentials-start the cluster is Prepared:
// a kubeconfig minted before and one minted now both work, as do service-account tokens of
// the old and the new key, and every machine's node client certificate was renewed from the new
// CA (its old one still works). After rotate-credentials-complete the cluster is Completed:
// the old kubeconfig's certificate, the old token and each machine's old certificate are
// refused (401), the new ones work; the Nodes stayed Ready throughout and no pod was recreated.
func TestLocalCredentialsRotation(t *testing.T) {
	framework.LongestFirst(t, 200*time.Second)
	ctx := context.Background()
	ns := framework.Namespace(t, "e2e-rotation")
	const name = "rot"
	localCluster(t, ns, name, framework.PinnedVersion, bootstrap.OSTalos, 2)
	tc := framework.WaitReady(t, ns, name, 2, 4*time.Minute)
	tenantNS := tc.Status.TenantNamespace
	tcp, err := framework.DynamicClient(t).Resource(framework.TenantCPGVR).Namespace(tenantNS).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uid := string(tcp.GetUID())
	endpoint := tc.Status.ControlPlaneEndpoint

	// Before: a kubeconfig, a Deployment, a token of the old key, the machines' credentials.
	oldPath, oldTenant := framework.MintKubeconfig(t, ns, name)
	oldCfg := restConfigOf(t, oldPath)
	if out, err := framework.KubectlAs(t, oldPath, "", "create", "deployment", "hello", "--image=registry.k8s.io/pause:3.10", "--replicas=2"); err != nil {
		t.Fatalf("creating a Deployment in the tenant: %v\n%s", err, out)
	}
	if out, err := framework.KubectlAs(t, oldPath, "", "rollout", "status", "deployment/hello", "--timeout=90s"); err != nil {
		t.Fatalf("the Deployment did not roll out: %v\n%s", err, out)
	}
	podsBefore, err := oldTenant.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=hello"})
	if err != nil || len(podsBefore.Items) != 2 {
		t.Fatalf("the Deployment's pods: %v", err)
	}
	var oldToken string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		tr, err := oldTenant.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			return false, nil // the default ServiceAccount comes with the tenant's controller manager
		}
		oldToken = tr.Status.Token
		return true, nil
	})
	if err != nil {
		t.Fatal("no token for the default ServiceAccount")
	}
	machineFiles, _ := filepath.Glob(filepath.Join(framework.Plane.Dir, "machines", tenantNS, "*", "kubelet.kubeconfig"))
	if len(machineFiles) != 2 {
		t.Fatalf("machine kubeconfigs %v, want 2", machineFiles)
	}
	oldMachines := map[string]*rest.Config{}
	for _, f := range machineFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Timeout = 15 * time.Second
		oldMachines[f] = cfg
	}

	// Completing before the rotation is prepared is refused, at the annotation's path.
	if out, err := framework.Kubectl(t, "annotate", "tc", name, "-n", ns, "butler.butlerlabs.dev/operation=rotate-credentials-complete"); err == nil ||
		!strings.Contains(out, "metadata.annotations[butler.butlerlabs.dev/operation]") {
		t.Errorf("complete before start: %v\n%s", err, out)
	}

	// Phase one.
	nodes := watchNodes(oldTenant)
	started := time.Now()
	framework.MustKubectl(t, "annotate", "tc", name, "-n", ns, "butler.butlerlabs.dev/operation=rotate-credentials-start")
	tc = framework.WaitCluster(t, ns, name, 2*time.Minute, "rotation Prepared and Ready", func(tc *v1alpha1.TenantCluster) bool {
		r := framework.RotationOfCluster(tc)
		return r != nil && r.Phase == v1alpha1.RotationPrepared && tc.Status.Phase == v1alpha1.TenantClusterReady
	})
	prepared := time.Since(started)
	if _, ok := tc.Annotations["butler.butlerlabs.dev/operation"]; ok {
		t.Error("the operation annotation is still there once taken")
	}
	if r := framework.RotationOfCluster(tc); r.LastInitiationTime == nil || r.LastInitiationTime.Time.Before(started.Add(-time.Second)) {
		t.Errorf("lastInitiationTime %v, want the start", r.LastInitiationTime)
	}
	if tc.Status.ControlPlaneEndpoint != endpoint {
		t.Errorf("the endpoint moved from %s to %s", endpoint, tc.Status.ControlPlaneEndpoint)
	}
	if out, err := framework.Kubectl(t, "annotate", "tc", name, "-n", ns, "butler.butlerlabs.dev/operation=rotate-credentials-start"); err == nil ||
		!strings.Contains(out, "Prepared") {
		t.Errorf("a second start while Prepared: %v\n%s", err, out)
	}
	caSecret, err := framework.Plane.Kube.CoreV1().Secrets(tenantNS).Get(ctx, name+"-ca", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	newCAPEM := caSecret.Data["tls.crt"]
	block, _ := pem.Decode(newCAPEM)
	newCA, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if signedBy(t, oldCfg.CertData, newCA) {
		t.Fatal("the CA Secret still holds the CA of the kubeconfig minted before the rotation")
	}

	newPath, newTenant := framework.MintKubeconfig(t, ns, name)
	newCfg := restConfigOf(t, newPath)
	if !signedBy(t, newCfg.CertData, newCA) {
		t.Error("a kubeconfig minted while Prepared is not the new CA's")
	}
	for what, cfg := range map[string]*rest.Config{"the kubeconfig minted before": oldCfg, "the kubeconfig minted now": newCfg} {
		if _, err := whoami(ctx, cfg); err != nil {
			t.Errorf("Prepared: %s: %v", what, err)
		}
	}
	tr, err := newTenant.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	newToken := tr.Status.Token
	for what, token := range map[string]string{"old key": oldToken, "new key": newToken} {
		if user, err := whoami(ctx, withToken(newCfg, token)); err != nil || user != "system:serviceaccount:default:default" {
			t.Errorf("Prepared: a token of the %s: %q, %v", what, user, err)
		}
	}
	newMachines := map[string]*rest.Config{}
	for f, old := range oldMachines {
		cfg := restConfigOf(t, f)
		newMachines[f] = cfg
		if !signedBy(t, cfg.CertData, newCA) {
			t.Errorf("machine %s: its client certificate is not the new CA's", f)
		}
		for what, c := range map[string]*rest.Config{"old": old, "renewed": cfg} {
			if user, err := whoami(ctx, c); err != nil || !strings.HasPrefix(user, "system:node:") {
				t.Errorf("Prepared: machine %s's %s certificate: %q, %v", f, what, user, err)
			}
		}
	}
	lists, notReady := nodes.end()
	if lists == 0 || len(notReady) > 0 {
		t.Errorf("phase one: %d lists of the Nodes; not Ready: %v", lists, notReady)
	}

	// Phase two.
	nodes = watchNodes(newTenant)
	completing := time.Now()
	framework.MustKubectl(t, "annotate", "tc", name, "-n", ns, "butler.butlerlabs.dev/operation=rotate-credentials-complete")
	tc = framework.WaitCluster(t, ns, name, 2*time.Minute, "rotation Completed and Ready", func(tc *v1alpha1.TenantCluster) bool {
		r := framework.RotationOfCluster(tc)
		return r != nil && r.Phase == v1alpha1.RotationCompleted && tc.Status.Phase == v1alpha1.TenantClusterReady &&
			meta.IsStatusConditionTrue(tc.Status.Conditions, "Ready")
	})
	completed := time.Since(completing)
	if r := framework.RotationOfCluster(tc); r.LastCompletionTime == nil || r.LastCompletionTime.Before(r.LastInitiationTime) {
		t.Errorf("lastCompletionTime %v", r.LastCompletionTime)
	}
	if tc.Status.ControlPlaneEndpoint != endpoint {
		t.Errorf("the endpoint moved from %s to %s", endpoint, tc.Status.ControlPlaneEndpoint)
	}
	// What the new kubeconfig trusts now is the server's CA; the old credentials are presented
	// with it, so that the server's answer is what the test sees.
	if _, err := whoami(ctx, oldCfg); err == nil {
		t.Error("Completed: the kubeconfig minted before the rotation still works as it is")
	}
	refused := func(what string, cfg *rest.Config) {
		if user, err := whoami(ctx, trusting(cfg, newCAPEM)); !apierrors.IsUnauthorized(err) {
			t.Errorf("Completed: %s: %q, %v; want 401", what, user, err)
		}
	}
	refused("the certificate of the kubeconfig minted before", oldCfg)
	refused("a token of the old key", withToken(oldCfg, oldToken))
	for f, old := range oldMachines {
		refused("machine "+f+"'s old certificate", old)
		if user, err := whoami(ctx, newMachines[f]); err != nil || !strings.HasPrefix(user, "system:node:") {
			t.Errorf("Completed: machine %s's renewed certificate: %q, %v", f, user, err)
		}
	}
	if _, err := whoami(ctx, newCfg); err != nil {
		t.Errorf("Completed: the kubeconfig minted while Prepared: %v", err)
	}
	if user, err := whoami(ctx, withToken(newCfg, newToken)); err != nil || user != "system:serviceaccount:default:default" {
		t.Errorf("Completed: a token of the new key: %q, %v", user, err)
	}
	lists, notReady = nodes.end()
	if lists == 0 || len(notReady) > 0 {
		t.Errorf("phase two: %d lists of the Nodes; not Ready: %v", lists, notReady)
	}
	if ready, err := readyNodes(ctx, newTenant); err != nil || len(ready) != 2 {
		t.Errorf("Ready Nodes after the rotation: %d, %v", len(ready), err)
	}
	podsAfter, err := newTenant.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=hello"})
	if err != nil {
		t.Fatal(err)
	}
	uids := map[string]bool{}
	for _, p := range podsBefore.Items {
		uids[string(p.UID)] = true
	}
	for _, p := range podsAfter.Items {
		if !uids[string(p.UID)] || p.Status.Phase != corev1.PodRunning {
			t.Errorf("pod %s (%s, %s) is not one of those running before the rotation", p.Name, p.UID, p.Status.Phase)
		}
	}
	if len(podsAfter.Items) != len(podsBefore.Items) {
		t.Errorf("%d pods after the rotation, %d before", len(podsAfter.Items), len(podsBefore.Items))
	}

	// The story in Events.
	out := framework.MustKubectl(t, "events", "-n", ns, "--for", "tenantcluster/"+name)
	for _, reason := range []string{"CredentialsRotationPreparing", "CredentialsRotationPrepared", "CredentialsRotationCompleting", "CredentialsRotationCompleted"} {
		if !strings.Contains(out, reason) {
			t.Errorf("no %s Event:\n%s", reason, out)
		}
	}
	t.Logf("rotation: start -> Prepared %s, complete -> Completed %s", prepared.Round(100*time.Millisecond), completed.Round(100*time.Millisecond))
	framework.DeleteCluster(t, ns, name, uid)
}

// signedBy says whether the certificate certPEM was signed by ca.
func signedBy(t *testing.T, certPEM []byte, ca *x509.Certificate) bool {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatal("no certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert.CheckSignatureFrom(ca) == nil
}
