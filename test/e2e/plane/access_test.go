package plane

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"

	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// userKubeconfig writes a kubeconfig for a user whose client certificate the management
// cluster's CA signs, as a platform team would hand out.
func userKubeconfig(t *testing.T, user string, groups ...string) string {
	t.Helper()
	caCerts, err := certutil.CertsFromFile(filepath.Join(framework.Plane.Dir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := keyutil.PrivateKeyFromFile(filepath.Join(framework.Plane.Dir, "pki", "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: user, Organization: groups},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCerts[0], &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: framework.Plane.Config.Host, CertificateAuthorityData: framework.Plane.Config.CAData}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificateData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		ClientKeyData:         pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: user}
	cfg.CurrentContext = "local"
	path := filepath.Join(t.TempDir(), user+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// bind gives user the ClusterRole role in namespace ns.
func bind(t *testing.T, ns, user, role string) {
	t.Helper()
	framework.MustKubectl(t, "create", "rolebinding", user+"-"+role, "-n", ns, "--clusterrole="+role, "--user="+user)
}

func TestKubeconfigSubresource(t *testing.T) {
	ns := framework.Namespace(t, "e2e-kubeconfig")
	framework.MustApply(t, tenantCluster(ns, "prod"))
	req := framework.KubeconfigRequestFile(t, framework.KubeconfigRequest)

	// No kubeconfig until the control plane is up: a clear error, not an empty kubeconfig.
	out, err := framework.Kubectl(t, "create", "--raw", framework.KubeconfigPath(ns, "prod"), "-f", req)
	if err == nil || !strings.Contains(out, "has no kubeconfig yet (phase Pending)") {
		t.Fatalf("before the control plane is ready: err=%v\n%s", err, out)
	}

	// The tenant cluster's admin kubeconfig and CA, as the lifecycle controller and Steward would
	// store them. The management cluster itself stands in for the tenant cluster, so the answer
	// can be used.
	tenantKubeconfig, err := os.ReadFile(framework.Plane.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	tenantNS := fixtureTenantNamespace(t, ns, "prod")
	framework.MustKubectl(t, "create", "secret", "generic", "prod-admin-kubeconfig", "-n", tenantNS,
		"--from-file=admin.conf="+framework.Plane.Kubeconfig)
	framework.MustKubectl(t, "patch", "tc", "prod", "-n", ns, "--subresource=status", "--type=merge",
		"-p", `{"status":{"phase":"Ready","tenantNamespace":"`+tenantNS+`","kubeconfigSecretRef":{"name":"prod-admin-kubeconfig"}}}`)
	// No CA: no credential, rather than the stored admin's.
	if out, err := framework.Kubectl(t, "create", "--raw", framework.KubeconfigPath(ns, "prod"), "-f", req); err == nil || !strings.Contains(out, "holds no CA certificate and key") {
		t.Errorf("without a readable tenant CA: err=%v\n%s", err, out)
	}
	framework.MustKubectl(t, "create", "secret", "generic", "prod-ca", "-n", tenantNS,
		"--from-file=ca.crt="+filepath.Join(framework.Plane.Dir, "pki", "ca.crt"), "--from-file=ca.key="+filepath.Join(framework.Plane.Dir, "pki", "ca.key"))

	out = framework.MustKubectl(t, "create", "--raw", framework.KubeconfigPath(ns, "prod"), "-f", req)
	var answer struct {
		Kind   string
		Status struct {
			Kubeconfig          string
			ExpirationTimestamp time.Time
			User                string
			Groups              []string
		}
	}
	if err := json.Unmarshal([]byte(out), &answer); err != nil {
		t.Fatalf("answer is not JSON: %v\n%s", err, out)
	}
	got, err := base64.StdEncoding.DecodeString(answer.Status.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if answer.Kind != "KubeconfigRequest" || string(got) == string(tenantKubeconfig) {
		t.Fatalf("answer kind %q, kubeconfig equal to the Secret's: %v", answer.Kind, string(got) == string(tenantKubeconfig))
	}
	// A cluster no Team owns: the platform admins' identity (the e2e's admin is "admin" here).
	if !strings.HasPrefix(answer.Status.User, "butler:") || !slices.Equal(answer.Status.Groups, []string{"butler:platform-admins"}) {
		t.Errorf("identity %q %v, want butler:<asker> in butler:platform-admins", answer.Status.User, answer.Status.Groups)
	}
	if d := time.Until(answer.Status.ExpirationTimestamp); d < 55*time.Minute || d > time.Hour+time.Minute {
		t.Errorf("expirationTimestamp %v is not an hour away (the default)", answer.Status.ExpirationTimestamp)
	}
	issued := filepath.Join(t.TempDir(), "tenant.kubeconfig")
	if err := os.WriteFile(issued, got, 0o600); err != nil {
		t.Fatal(err)
	}
	// The stand-in tenant knows the identity: its own CA signed it.
	if out, err := framework.KubectlAs(t, issued, "", "auth", "whoami"); err != nil || !strings.Contains(out, answer.Status.User) {
		t.Errorf("whoami with the issued kubeconfig: %v\n%s", err, out)
	}

	// Bad request bodies are 422s naming the field.
	out, err = framework.Kubectl(t, "create", "--raw", framework.KubeconfigPath(ns, "prod"), "-f",
		framework.KubeconfigRequestFile(t, `{"apiVersion":"butler.butlerlabs.dev/v1alpha1","kind":"KubeconfigRequest","spec":{"expirationSeconds":60}}`))
	if err == nil || !strings.Contains(out, "spec.expirationSeconds") {
		t.Errorf("expirationSeconds 60: err=%v\n%s", err, out)
	}
	out, err = framework.Kubectl(t, "create", "--raw", framework.KubeconfigPath(ns, "missing"), "-f", req)
	if err == nil || !strings.Contains(out, "NotFound") {
		t.Errorf("kubeconfig of a missing cluster: err=%v\n%s", err, out)
	}
}

func TestRBACThroughDelegatedAuthorization(t *testing.T) {
	ns := framework.Namespace(t, "e2e-rbac")
	other := framework.Namespace(t, "e2e-rbac-other")
	framework.MustApply(t, tenantCluster(ns, "prod"))
	framework.MustApply(t, tenantCluster(other, "prod"))
	req := framework.KubeconfigRequestFile(t, framework.KubeconfigRequest)

	nobody := userKubeconfig(t, "nobody")
	viewer := userKubeconfig(t, "vera")
	operator := userKubeconfig(t, "oscar")
	admin := userKubeconfig(t, "alice")
	bind(t, ns, "vera", "butler-viewer")
	bind(t, ns, "oscar", "butler-operator")
	bind(t, ns, "alice", "butler-admin")

	type check struct {
		who, kubeconfig string
		args            []string
		allowed         bool
	}
	get := []string{"get", "tc", "prod", "-n", ns}
	checks := []check{
		{"nobody", nobody, get, false},
		{"nobody", nobody, []string{"get", "tc", "-A"}, false},
		{"vera", viewer, get, true},
		{"vera", viewer, []string{"get", "tc", "prod", "-n", other}, false},
		{"vera", viewer, []string{"scale", "tc", "prod", "-n", ns, "--replicas=4"}, false},
		{"vera", viewer, []string{"create", "--raw", framework.KubeconfigPath(ns, "prod"), "-f", req}, false},
		{"vera", viewer, []string{"get", "networkpools", "-n", ns}, false},
		{"oscar", operator, []string{"scale", "tc", "prod", "-n", ns, "--replicas=4"}, true},
		{"oscar", operator, []string{"label", "tc", "prod", "-n", ns, "edited-by=oscar"}, true},
		{"oscar", operator, []string{"get", "tc", "prod", "-n", other}, false},
		{"alice", admin, []string{"get", "tc", "prod", "-n", other}, false},
		{"alice", admin, []string{"get", "providerconfigs", "-n", ns}, false},
		{"alice", admin, []string{"get", "addondefinitions"}, false},
	}
	for _, c := range checks {
		out, err := framework.KubectlAs(t, c.kubeconfig, "", c.args...)
		denied := err != nil && strings.Contains(out, "Forbidden")
		switch {
		case c.allowed && err != nil:
			t.Errorf("%s: kubectl %s: want allowed, got %v\n%s", c.who, strings.Join(c.args, " "), err, out)
		case !c.allowed && !denied:
			t.Errorf("%s: kubectl %s: want 403 Forbidden, got err=%v\n%s", c.who, strings.Join(c.args, " "), err, out)
		case !c.allowed && !strings.Contains(out, `User "`+c.who+`" cannot`):
			t.Errorf("%s: kubectl %s: the 403 does not name the user:\n%s", c.who, strings.Join(c.args, " "), out)
		}
	}

	// The admin and the operator reach the kubeconfig subresource: it answers (no kubeconfig
	// yet), not 403; what their kubeconfig may do in the tenant is the Team's bindings' to say.
	for who, kubeconfig := range map[string]string{"alice": admin, "oscar": operator} {
		out, err := framework.KubectlAs(t, kubeconfig, "", "create", "--raw", framework.KubeconfigPath(ns, "prod"), "-f", req)
		if err == nil || !strings.Contains(out, "has no kubeconfig yet") {
			t.Errorf("%s's kubeconfig request: err=%v\n%s", who, err, out)
		}
	}

	// kubectl auth can-i agrees, through the same authorizer.
	for _, c := range []struct {
		kubeconfig string
		args       []string
		want       string
	}{
		{viewer, []string{"auth", "can-i", "get", "tenantclusters", "-n", ns}, "yes"},
		{viewer, []string{"auth", "can-i", "create", "tenantclusters", "--subresource=kubeconfig", "-n", ns}, "no"},
		{admin, []string{"auth", "can-i", "create", "tenantclusters", "--subresource=kubeconfig", "-n", ns}, "yes"},
		{nobody, []string{"auth", "can-i", "list", "tenantclusters", "-n", ns}, "no"},
	} {
		out, _ := framework.KubectlAs(t, c.kubeconfig, "", c.args...)
		if strings.TrimSpace(out) != c.want {
			t.Errorf("kubectl %s: %q, want %q", strings.Join(c.args, " "), strings.TrimSpace(out), c.want)
		}
	}

	// The team roles aggregate into the built-in view role (kube-controller-manager does it).
	viewUser := userKubeconfig(t, "victor")
	bind(t, ns, "victor", "view")
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := framework.KubectlAs(t, viewUser, "", get...)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a user with the built-in view role cannot read tenantclusters: %v\n%s", err, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
