package framework

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

// Plane is the running management plane.
var Plane struct {
	Dir        string // LOCAL_DIR
	Kubeconfig string // the management cluster's admin kubeconfig
	Config     *rest.Config
	Butler     clientset.Interface
	Kube       kubernetes.Interface
}

// Run starts the plane with env added to its processes' environment, runs the tests and stops
// the plane; a process of it that outlives it fails the run.
func Run(m *testing.M, env ...string) (code int) {
	root, err := RepoRoot()
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
	Plane.Dir = dir
	Plane.Kubeconfig = up.Kubeconfig

	Plane.Config, err = clientcmd.BuildConfigFromFlags("", Plane.Kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	Plane.Butler = clientset.NewForConfigOrDie(Plane.Config)
	Plane.Kube = kubernetes.NewForConfigOrDie(Plane.Config)

	code = m.Run()
	writeDurations(root, time.Since(started))
	if code != 0 {
		dumpLogs(dir)
		keepLogs(root, dir)
	}
	return code
}

// RepoRoot is the repository's root: the nearest directory up from the test's with a go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
		dir = parent
	}
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

// Kubectl runs kubectl against the management cluster as its admin.
func Kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return KubectlAs(t, Plane.Kubeconfig, "", args...)
}

// KubectlAs runs kubectl with the given kubeconfig and standard input.
func KubectlAs(t *testing.T, kubeconfig, stdin string, args ...string) (string, error) {
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

// MustKubectl runs kubectl as the admin and fails the test if it fails.
func MustKubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := Kubectl(t, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// MustApply applies a manifest given inline.
func MustApply(t *testing.T, manifest string, args ...string) string {
	t.Helper()
	out, err := KubectlAs(t, Plane.Kubeconfig, manifest, append([]string{"apply", "-f", "-"}, args...)...)
	if err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	return out
}

// namespace creates a namespace for one test and deletes it afterwards.
func Namespace(t *testing.T, name string) string {
	t.Helper()
	MustKubectl(t, "create", "namespace", name)
	t.Cleanup(func() { _, _ = Kubectl(t, "delete", "namespace", name, "--wait=false") })
	return name
}
