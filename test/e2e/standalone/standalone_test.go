// Package standalone checks the standalone server with real kubectl, as a new user would try it:
// its TestMain starts `butler-apiserver --standalone` (BUTLER_APISERVER, or _output/bin's) on a
// data directory of its own; the test applies the examples, reads the columns and gets the
// headline 422. API only: no management plane, no controllers.
package standalone

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/butlerdotdev/butler-apiserver/pkg/localports"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// server is the running standalone server.
var server struct {
	root       string // the repository
	kubeconfig string // its admin kubeconfig
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// run starts the server, runs the tests and stops it; a failed run prints the server log's tail.
func run(m *testing.M) int {
	root, err := framework.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	work, err := os.MkdirTemp("", "butler-standalone-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(work)
	stop, err := start(root, work)
	if err != nil {
		fmt.Fprintln(os.Stderr, "standalone:", err)
		printTail(filepath.Join(work, "server.log"))
		return 1
	}
	defer stop()
	server.root, server.kubeconfig = root, filepath.Join(work, "data", "admin.kubeconfig")
	code := m.Run()
	if code != 0 {
		printTail(filepath.Join(work, "server.log"))
	}
	return code
}

// start runs butler-apiserver --standalone in work and waits up to 60 s for its /readyz.
func start(root, work string) (stop func(), err error) {
	bin := os.Getenv("BUTLER_APISERVER")
	if bin == "" {
		bin = filepath.Join(root, "_output", "bin", "butler-apiserver")
	}
	port, err := localports.Free()
	if err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(work, "server.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--standalone", "--data-dir", filepath.Join(work, "data"), "--secure-port", fmt.Sprint(port))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop = func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); _ = log.Close() }
	kubeconfig := filepath.Join(work, "data", "admin.kubeconfig")
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if _, err := os.Stat(kubeconfig); err != nil {
			continue
		}
		if exec.Command("kubectl", "--kubeconfig", kubeconfig, "get", "--raw", "/readyz").Run() == nil {
			return stop, nil
		}
	}
	stop()
	return nil, fmt.Errorf("%s did not serve /readyz within 60 s", bin)
}

// printTail prints the last 20 lines of the server's log.
func printTail(path string) {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	fmt.Fprintf(os.Stderr, "--- server log (tail)\n%s\n", strings.Join(lines, "\n"))
}

// kubectl runs kubectl as the server's admin with stdin; its output is stdout and stderr.
func kubectl(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	return framework.KubectlAs(t, server.kubeconfig, stdin, args...)
}

// succeeds fails t unless kubectl succeeds, and returns its output.
func succeeds(t *testing.T, args ...string) string {
	t.Helper()
	out, err := kubectl(t, "", args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// contains fails t unless kubectl's output, whether it succeeded or not, holds needle.
func contains(t *testing.T, needle string, args ...string) {
	t.Helper()
	if out, _ := kubectl(t, "", args...); !strings.Contains(out, needle) {
		t.Fatalf("kubectl %s: output lacks %q:\n%s", strings.Join(args, " "), needle, out)
	}
}

// refusedNaming fails t unless kubectl fails and its output names every field.
func refusedNaming(t *testing.T, stdin string, fields []string, args ...string) {
	t.Helper()
	out, err := kubectl(t, stdin, args...)
	if err == nil {
		t.Fatalf("kubectl %s: unexpectedly accepted:\n%s", strings.Join(args, " "), out)
	}
	for _, f := range fields {
		if !strings.Contains(out, f) {
			t.Errorf("kubectl %s: the error lacks %q:\n%s", strings.Join(args, " "), f, out)
		}
	}
}
