package plane

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// TestGettingStarted runs the commands of docs/getting-started.md's blocks marked for testing
// (fenced as sh test), taken from the page as a new user copies them after `make run`, against
// this suite's plane: the local example's TenantCluster Ready, its kubeconfig, its three Ready
// nodes, a Deployment, a scale and the delete. A page edited into commands that fail fails here.
func TestGettingStarted(t *testing.T) {
	framework.LongestFirst(t, 2*time.Minute) // 117 s in the suite (one CI run), 51 s alone
	t.Cleanup(func() { _, _ = framework.Kubectl(t, "delete", "namespace", "local-demo", "--wait=false") })
	runPage(t, filepath.Join("docs", "getting-started.md"), func(cmd, out string) {
		if strings.Contains(cmd, "get nodes") {
			if ready := strings.Count(out, " Ready "); ready != 3 {
				t.Fatalf("the page promises three Ready nodes; %d are", ready)
			}
		}
	})
}

// TestDocsSnapshots runs docs/concepts/snapshots.md's example as written: a cluster, its
// snapshot, a clone from it and a restore in place, each waited for by the page's own kubectl
// wait, then the deletes.
func TestDocsSnapshots(t *testing.T) {
	framework.LongestFirst(t, 90*time.Second) // 60 s beside TestGettingStarted (one run)
	t.Cleanup(func() { _, _ = framework.Kubectl(t, "delete", "namespace", "snapshot-demo", "--wait=false") })
	runPage(t, filepath.Join("docs", "concepts", "snapshots.md"), nil)
}

// runPage runs the commands of the page's blocks marked for testing, in a directory where the
// page's paths are the repository's; check, when set, reads each command's output.
func runPage(t *testing.T, page string, check func(cmd, out string)) {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(root, page))
	if err != nil {
		t.Fatal(err)
	}
	cmds := testedCommands(string(text))
	if len(cmds) == 0 {
		t.Fatalf("%s has no block marked for testing (```sh test)", page)
	}
	// What the page writes (demo.kubeconfig) stays in the test's directory.
	work := t.TempDir()
	for _, dir := range []string{"artifacts", "test"} {
		if err := os.Symlink(filepath.Join(root, dir), filepath.Join(work, dir)); err != nil {
			t.Fatal(err)
		}
	}
	for _, cmd := range cmds {
		if strings.Contains(" "+cmd+" ", " -w ") {
			// A watch runs until it is interrupted; the page's next line waits for the same end.
			t.Logf("skipped (a watch): %s", cmd)
			continue
		}
		out, err := userShell(work, cmd)
		t.Logf("$ %s\n%s", cmd, out)
		if err != nil {
			t.Fatalf("the page's command failed: %v", err)
		}
		if check != nil {
			check(cmd, out)
		}
	}
}

// testedCommands are the commands of the page's ```sh test blocks, lines continued with a
// trailing backslash joined into one.
func testedCommands(page string) []string {
	var cmds []string
	var cur strings.Builder
	in := false
	for _, line := range strings.Split(page, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case !in && trimmed == "```sh test":
			in = true
		case in && trimmed == "```":
			in = false
		case in && trimmed != "":
			if strings.HasSuffix(line, "\\") {
				cur.WriteString(strings.TrimSuffix(line, "\\") + " ")
				continue
			}
			cur.WriteString(line)
			cmds = append(cmds, strings.TrimSpace(cur.String()))
			cur.Reset()
		}
	}
	return cmds
}

// userShell runs cmd in bash in dir, with the plane's admin kubeconfig as the page's export sets
// it, and pipefail so that a failing step of a pipeline is not hidden by the last.
func userShell(dir, cmd string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", cmd)
	c.Dir = dir
	c.Env = append(os.Environ(), "KUBECONFIG="+framework.Plane.Kubeconfig)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	return out.String(), err
}
