// Package e2e brings up the local management plane once (cmd/butler-localplane: etcd, a real
// kube-apiserver and kube-controller-manager, butler-apiserver behind an APIService) and drives
// it through the management cluster's endpoint only, with real kubectl and the generated clientset.
//
// A test that spends most of its time waiting on its own clusters (a timer, a cron minute, a
// rollout) calls longestFirst (t.Parallel, ordered): Go runs those after the serial tests, four
// at once, the longest first (order_test.go), which keeps the suite inside CI's budget. A test
// that kills or restarts the plane's processes, counts across namespaces, or measures a duration
// it asserts stays serial.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	"github.com/butlerdotdev/butler-apiserver/test/localplane"
)

// plane is the running management plane.
var plane struct {
	dir        string // LOCAL_DIR
	kubeconfig string // the management cluster's admin kubeconfig
	config     *rest.Config
	butler     clientset.Interface
	kube       kubernetes.Interface
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) (code int) {
	root, err := filepath.Abs("../..")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "butler-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)

	started := time.Now()
	var env []string
	if os.Getenv("BUTLER_E2E_REALNODE") != "" {
		// TestGitOpsTenant's Git server is at an internal address, and so is the address where
		// nothing answers: the fetch policy's exception for tests, never a user's.
		env = append(env, "BUTLER_APISERVER_ARGS="+strings.TrimSpace(os.Getenv("BUTLER_APISERVER_ARGS")+
			" --fetch-allowed-internal="+gitOpsServerAddr+","+gitOpsNobodyAddr))
	}
	up, err := localplane.Start(root, dir, 10*time.Minute, env...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v:\n%s", err, up.Output())
		dumpLogs(dir)
		return 1
	}
	// Nothing of the plane may outlive it: a process left running is a failure of the run.
	defer func() {
		if err := up.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: the plane stopped with %v\n", err)
		}
		if left := localplane.Leftovers(root, dir); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "e2e: FAIL: %d processes of the plane still ran after it stopped (killed now):\n", len(left))
			for _, p := range left {
				fmt.Fprintln(os.Stderr, "  ", p)
			}
			localplane.Kill(left)
			code = 1
		}
	}()
	fmt.Fprintf(os.Stderr, "e2e: management plane up in %s\n", time.Since(started).Round(100*time.Millisecond))
	plane.dir = dir
	plane.kubeconfig = up.Kubeconfig

	plane.config, err = clientcmd.BuildConfigFromFlags("", plane.kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	plane.butler = clientset.NewForConfigOrDie(plane.config)
	plane.kube = kubernetes.NewForConfigOrDie(plane.config)

	code = m.Run()
	writeDurations(root, time.Since(started))
	if code != 0 {
		dumpLogs(dir)
		keepLogs(root, dir)
	}
	return code
}

// writeDurations leaves the parallel tests' times, longest first, in _output/e2e-durations.txt,
// which make test-e2e prints: go test shows a passing package's output only with -v, and the
// CI budget is read from it.
func writeDurations(root string, suite time.Duration) {
	text := fmt.Sprintf("e2e: the suite took %s; the parallel tests' longest slots:\n%s",
		suite.Round(time.Second), order.Summary(15))
	if err := os.WriteFile(filepath.Join(root, "_output", "e2e-durations.txt"), []byte(text), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
	}
}

// keepLogs copies the plane's logs of a failed run to _output/e2e-logs/<run>, where they outlive
// the run's directory: a failure that shows after minutes (a fault test's) is read from them.
func keepLogs(root, dir string) {
	out := filepath.Join(root, "_output", "e2e-logs", filepath.Base(dir))
	if err := os.CopyFS(out, os.DirFS(filepath.Join(dir, "logs"))); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: keeping the logs: %v\n", err)
		return
	}
	fmt.Fprintf(os.Stderr, "e2e: the plane's logs are kept in %s\n", out)
}

// dumpLogs prints the tail of every process log, for a failed run.
func dumpLogs(dir string) {
	logs, _ := filepath.Glob(filepath.Join(dir, "logs", "*.log"))
	for _, l := range logs {
		data, _ := os.ReadFile(l)
		lines := strings.Split(string(data), "\n")
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		fmt.Fprintf(os.Stderr, "==== %s (last lines)\n%s\n", l, strings.Join(lines, "\n"))
	}
}

// kubectl runs kubectl against the management cluster as its admin.
func kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return kubectlAs(t, plane.kubeconfig, "", args...)
}

// kubectlAs runs kubectl with the given kubeconfig and standard input.
func kubectlAs(t *testing.T, kubeconfig, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// mustKubectl runs kubectl as the admin and fails the test if it fails.
func mustKubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := kubectl(t, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// mustApply applies a manifest given inline.
func mustApply(t *testing.T, manifest string, args ...string) string {
	t.Helper()
	out, err := kubectlAs(t, plane.kubeconfig, manifest, append([]string{"apply", "-f", "-"}, args...)...)
	if err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	return out
}

// namespace creates a namespace for one test and deletes it afterwards.
func namespace(t *testing.T, name string) string {
	t.Helper()
	mustKubectl(t, "create", "namespace", name)
	t.Cleanup(func() { _, _ = kubectl(t, "delete", "namespace", name, "--wait=false") })
	return name
}

// tenantCluster is a valid TenantCluster manifest, paused: the tests that use it drive the API
// (and write the status the lifecycle controller would), not the lifecycle.
func tenantCluster(namespace, name string) string {
	return fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: TenantCluster
metadata:
  name: %s
  namespace: %s
  annotations: {butler.butlerlabs.dev/paused: "true"}
spec:
  kubernetesVersion: v1.31.4
  teamRef:
    name: %[2]s
  providerConfigRef:
    name: harvester
  controlPlane:
    type: hosted
  workers:
    replicas: 3
    machineTemplate:
      cpu: 4
      memory: 16Gi
      diskSize: 100Gi
      os:
        type: talos
  networking:
    podCIDR: 10.244.0.0/16
    serviceCIDR: 10.96.0.0/12
`, name, namespace)
}
