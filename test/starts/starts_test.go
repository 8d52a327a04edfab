package starts

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/butlerdotdev/butler-apiserver/pkg/localports"
	"github.com/butlerdotdev/butler-apiserver/test/localplane"
)

func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// A port given in the environment and held by another listener: the plane does not start, says
// which component failed and why, exits non-zero, and leaves none of its processes running.
func TestPlaneStartFailsCleanly(t *testing.T) {
	r, dir := root(t), t.TempDir()
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	port := held.Addr().(*net.TCPAddr).Port

	started := time.Now()
	p, err := localplane.Start(r, dir, 5*time.Minute, "KUBE_APISERVER_PORT="+strconv.Itoa(port))
	if err == nil {
		_ = p.Stop() // the test fails on the start; how the stop went adds nothing
		t.Fatalf("the plane started though kube-apiserver's port %d is held by another listener", port)
	}
	out := p.Output()
	t.Logf("failed after %s:\n%s", time.Since(started).Round(100*time.Millisecond), out)
	for _, want := range []string{"kube-apiserver failed to start", "address already in use", "stopped"} {
		if !strings.Contains(out, want) {
			t.Errorf("the plane's output does not say %q", want)
		}
	}
	if left := localplane.Leftovers(r, dir); len(left) > 0 {
		localplane.Kill(left)
		t.Errorf("the failed start left %d processes: %v", len(left), left)
	}
	// etcd had started before kube-apiserver failed: it was stopped, not left.
	if !strings.Contains(out, "port was given in the environment") {
		t.Errorf("the plane does not say the port was given in the environment (so not picked again)")
	}

	// The next start in the same LOCAL_DIR, the port free again, starts clean.
	held.Close()
	p, err = localplane.Start(r, dir, 10*time.Minute)
	if err != nil {
		t.Fatalf("the start after a failed one: %v\n%s", err, p.Output())
	}
	if err := p.Stop(); err != nil {
		t.Errorf("stop: %v\n%s", err, p.Output())
	}
	if left := localplane.Leftovers(r, dir); len(left) > 0 {
		localplane.Kill(left)
		t.Errorf("the stop left %d processes: %v", len(left), left)
	}
}

// report appends a line to _output/bench/starts.md.
func report(t *testing.T, line string) {
	t.Log(line)
	path := filepath.Join(root(t), "_output", "bench", "starts.md")
	_ = os.MkdirAll(filepath.Dir(path), 0o755)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Log(err)
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %s\n", time.Now().Format(time.RFC3339), line)
}

func load(t *testing.T) *connLoad {
	t.Helper()
	n, churn := envInt("STARTS_CONNECTIONS", 1500), envInt("STARTS_CHURN", 100)
	l, err := startLoad(n, churn)
	if err != nil {
		t.Fatalf("the connection load: %v", err)
	}
	t.Cleanup(l.close)
	t.Logf("holding %d loopback connections, replacing %d a second", l.held(), churn)
	return l
}

// STARTS_N plane starts and stops in a row under the connection load: every start succeeds, and
// every stop leaves no process. With STARTS_BASELINE=<git revision>, that revision's plane first
// runs STARTS_BASELINE_N starts under the same load, for the ratio (its failures are reported,
// not failed on).
func TestPlaneStartsUnderLoad(t *testing.T) {
	r := root(t)
	l := load(t)
	if rev := os.Getenv("STARTS_BASELINE"); rev != "" {
		baseline := baselinePlane(t, r, rev)
		failed, leftover, times := planeStarts(t, baseline, t.TempDir(), envInt("STARTS_BASELINE_N", 10), false)
		report(t, fmt.Sprintf("baseline %s: plane starts under %d held loopback connections: %d of %d failed, %d processes left after the stops; start median %s",
			rev, l.held(), failed, envInt("STARTS_BASELINE_N", 10), leftover, median(times)))
	}
	n := envInt("STARTS_N", 50)
	command, err := localplane.Command(r)
	if err != nil {
		t.Fatal(err)
	}
	failed, leftover, times := planeStarts(t, command, t.TempDir(), n, true)
	report(t, fmt.Sprintf("plane starts under %d held loopback connections: %d of %d failed, %d processes left after the stops; start median %s (min %s, max %s)",
		l.held(), failed, n, leftover, median(times), first(times), last(times)))
}

// baselinePlane is revision rev's plane executable, run from this tree (so that it finds the same
// binaries and manifests): its cmd/butler-localplane built, or, in a revision from before it, its
// hack/local-up.sh placed in this tree's hack/.
func baselinePlane(t *testing.T, r, rev string) string {
	script := filepath.Join(r, "hack", ".local-up-baseline.sh")
	if data, err := exec.Command("git", "-C", r, "show", rev+":hack/local-up.sh").Output(); err == nil {
		if err := os.WriteFile(script, data, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(script) })
		return script
	}
	src := t.TempDir()
	archive := exec.Command("sh", "-c", `git -C "$0" archive "$1" | tar -x -C "$2"`, r, rev, src)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", rev, err, out)
	}
	exe := filepath.Join(t.TempDir(), "butler-localplane")
	build := exec.Command("go", "build", "-o", exe, "./cmd/butler-localplane")
	build.Dir, build.Env = src, append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-trimpath")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s's cmd/butler-localplane: %v\n%s", rev, err, out)
	}
	return exe
}

// planeStarts starts and stops the plane of script (a plane executable) n times in dir; strict fails the test on a
// failed start or a process left.
func planeStarts(t *testing.T, script, dir string, n int, strict bool) (failed, leftover int, times []time.Duration) {
	r := root(t)
	fail := t.Errorf
	if !strict {
		fail = t.Logf
	}
	for i := 1; i <= n; i++ {
		started := time.Now()
		p, err := localplane.StartScript(script, r, dir, 10*time.Minute)
		if err != nil {
			failed++
			fail("%s: start %d of %d failed: %v\n%s", filepath.Base(script), i, n, err, grep(p.Output(), "local"))
		} else {
			times = append(times, time.Since(started))
			if out, err := exec.Command("kubectl", "--kubeconfig", p.Kubeconfig, "get", "tenantclusters", "-A").CombinedOutput(); err != nil {
				fail("start %d: kubectl get tenantclusters: %v\n%s", i, err, out)
			}
			if err := p.Stop(); err != nil {
				fail("stop %d: %v\n%s", i, err, p.Output())
			}
		}
		if left := localplane.Leftovers(r, dir); len(left) > 0 {
			leftover += len(left)
			localplane.Kill(left)
			fail("%s: after stop %d: %d processes left: %v", filepath.Base(script), i, len(left), left)
		}
		if strings.Contains(p.Output(), "a port was taken") {
			t.Logf("start %d moved a component to another port:\n%s", i, grep(p.Output(), "a port was taken"))
		}
	}
	slices.Sort(times)
	return failed, leftover, times
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[len(d)/2].Round(100 * time.Millisecond)
}

func grep(s, sub string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func first(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[0].Round(100 * time.Millisecond)
}

func last(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[len(d)-1].Round(100 * time.Millisecond)
}

// STARTS_TENANTS local TenantClusters (no workers) applied at once on one plane under the
// connection load: every control plane becomes Ready, each on its own port outside the
// ephemeral range; deleted, none leaves a process.
func TestTenantControlPlanesUnderLoad(t *testing.T) {
	r, dir := root(t), t.TempDir()
	l := load(t)
	n := envInt("STARTS_TENANTS", 20)
	p, err := localplane.Start(r, dir, 10*time.Minute)
	if err != nil {
		t.Fatalf("%v\n%s", err, p.Output())
	}
	defer func() {
		if err := p.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
		if left := localplane.Leftovers(r, dir); len(left) > 0 {
			localplane.Kill(left)
			t.Errorf("after the stop: %d processes left: %v", len(left), left)
		}
	}()
	kubectl := func(stdin string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", p.Kubeconfig}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	var manifest strings.Builder
	manifest.WriteString("apiVersion: v1\nkind: Namespace\nmetadata: {name: starts}\n---\n" +
		"apiVersion: butler.butlerlabs.dev/v1alpha1\nkind: ProviderConfig\nmetadata: {name: local, namespace: starts}\nspec: {provider: local}\n")
	for i := range n {
		fmt.Fprintf(&manifest, `---
apiVersion: butler.butlerlabs.dev/v1alpha1
kind: TenantCluster
metadata: {name: t%02d, namespace: starts}
spec:
  kubernetesVersion: v1.36.3
  providerConfigRef: {name: local}
  workers: {replicas: 0, machineTemplate: {os: {type: talos}}}
`, i)
	}
	created := time.Now()
	if out, err := kubectl(manifest.String(), "apply", "-f", "-"); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	ready := map[string]time.Duration{}
	deadline := time.Now().Add(15 * time.Minute)
	for len(ready) < n && time.Now().Before(deadline) {
		out, _ := kubectl("", "get", "tenantclusters", "-n", "starts", "-o",
			`jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="ControlPlaneReady")].status} {.status.controlPlaneEndpoint}{"\n"}{end}`)
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			if len(f) == 3 && f[1] == "True" && ready[f[0]] == 0 {
				ready[f[0]] = time.Since(created)
			}
		}
		time.Sleep(time.Second)
	}
	if len(ready) < n {
		out, _ := kubectl("", "get", "tenantclusters", "-n", "starts", "-o", "wide")
		t.Fatalf("%d of %d control planes Ready after 15 min:\n%s", len(ready), n, out)
	}
	// Each on its own port, outside the kernel's ephemeral range.
	out, _ := kubectl("", "get", "tenantclusters", "-n", "starts", "-o", `jsonpath={range .items[*]}{.status.controlPlaneEndpoint}{"\n"}{end}`)
	seen := map[string]bool{}
	eph := localports.Ephemeral()
	for _, ep := range strings.Fields(out) {
		_, portStr, _ := net.SplitHostPort(strings.TrimPrefix(ep, "https://"))
		port, _ := strconv.Atoi(portStr)
		if seen[portStr] || eph.Contains(port) {
			t.Errorf("endpoint %s: a port shared or inside the ephemeral range %v", ep, eph)
		}
		seen[portStr] = true
	}
	var times []time.Duration
	for _, d := range ready {
		times = append(times, d)
	}
	slices.Sort(times)

	deleted := time.Now()
	if out, err := kubectl("", "delete", "tenantclusters", "--all", "-n", "starts", "--timeout=10m"); err != nil {
		t.Fatalf("delete: %v\n%s", err, out)
	}
	var tenantsLeft []localplane.Process
	for _, pr := range localplane.Leftovers(r, dir) {
		if strings.Contains(pr.Cmdline, filepath.Join(dir, "tenants")+"/") {
			tenantsLeft = append(tenantsLeft, pr)
		}
	}
	if len(tenantsLeft) > 0 {
		t.Errorf("after the delete, %d tenant processes run: %v", len(tenantsLeft), tenantsLeft)
	}
	report(t, fmt.Sprintf("%d tenant control planes applied at once under %d held loopback connections: %d Ready (last %s after the apply, median %s), on %d distinct ports outside the ephemeral range; deleted in %s with %d tenant processes left",
		n, l.held(), len(ready), last(times), median(times), len(seen), time.Since(deleted).Round(100*time.Millisecond), len(tenantsLeft)))
}
