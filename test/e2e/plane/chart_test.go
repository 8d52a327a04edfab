package plane

import (
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// TestChartManifestsValidOnKubeAPIServer renders the chart for each way to install it and has the
// plane's real kube-apiserver check every object (server-side dry run, strict field validation:
// its OpenAPI schemas, defaulting and admission, Pod Security among it — butler-system enforces
// the restricted profile), as it does artifacts/deploy, the chart's plain rendering. cert-manager's
// kinds are left out: the plane has no cert-manager CRDs.
func TestChartManifestsValidOnKubeAPIServer(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	external := []string{"--set", "etcd.mode=external", "--set", "etcd.external.endpoints={https://etcd.example:2379}"}
	cases := map[string][]string{
		"external etcd, generated certificates": external,
		"external etcd with client TLS": append(external, "--set", "etcd.external.clientSecretName=etcd-client",
			"--set", "replicas=3", "--set", "podAntiAffinity=required"),
		// The trial a newcomer installs: one Pod on its embedded etcd.
		"no values": nil,
	}
	for name, values := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			args := append([]string{"template", "butler-apiserver", filepath.Join(root, "charts", "butler-apiserver"),
				"--namespace", "butler-system"}, values...)
			cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "helm.sh"), args...)
			cmd.Stderr = os.Stderr
			manifests, err := cmd.Output()
			if err != nil {
				t.Fatalf("helm template: %v", err)
			}
			serverDryRun(t, string(manifests))
		})
	}
	t.Run("artifacts/deploy", func(t *testing.T) {
		files, err := filepath.Glob(filepath.Join(root, "artifacts", "deploy", "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var all []string
		for _, f := range files {
			if filepath.Base(f) == "certificate.yaml" {
				continue
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, string(data))
		}
		serverDryRun(t, strings.Join(all, "\n---\n"))
	})
}

// TestChartKeepsGeneratedCertificateOnUpgrade renders an upgrade against the plane (helm's
// lookup reads the cluster then): the serving Secret a release made before is rendered again
// unchanged, and the APIService's caBundle is its CA, so the aggregator keeps trusting the Pods.
func TestChartKeepsGeneratedCertificateOnUpgrade(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	ns := framework.Namespace(t, "chart-upgrade")
	framework.MustKubectl(t, "-n", ns, "create", "secret", "generic", "butler-apiserver-serving",
		"--from-literal=ca.crt=the CA of the first install", "--from-literal=tls.crt=its certificate",
		"--from-literal=tls.key=its key")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "helm.sh"), "template", "butler-apiserver",
		filepath.Join(root, "charts", "butler-apiserver"), "--namespace", ns, "--kubeconfig", framework.Plane.Kubeconfig,
		"--dry-run=server", "--is-upgrade")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template --dry-run=server: %v", err)
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for _, want := range []string{
		"caBundle: " + b64("the CA of the first install"),
		"ca.crt: " + b64("the CA of the first install"),
		"tls.crt: " + b64("its certificate"),
		"tls.key: " + b64("its key"),
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the upgrade's rendering lacks %q:\n%s", want, out)
		}
	}
}

// serverDryRun has kube-apiserver validate and admit the manifests without storing them; any
// warning (an unknown field, a Pod Security violation) fails the test.
func serverDryRun(t *testing.T, manifests string) {
	t.Helper()
	out, err := framework.KubectlAs(t, framework.Plane.Kubeconfig, manifests, "apply", "--dry-run=server", "--validate=strict", "-f", "-")
	if err != nil {
		t.Fatalf("kubectl apply --dry-run=server: %v\n%s", err, out)
	}
	if strings.Contains(out, "Warning") {
		t.Fatalf("kube-apiserver warned:\n%s", out)
	}
	if !strings.Contains(out, "deployment.apps/butler-apiserver") {
		t.Fatalf("no Deployment in the rendering:\n%s", out)
	}
}
