package plane

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/pkg/hibernation"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// The slow hibernation checks run in make bench-hibernation, not in make test.

// TestSlowHibernationWakeFlood is TestLocalWakeFlood at the size: 100 connections at
// once to 20 clusters asleep.
func TestSlowHibernationWakeFlood(t *testing.T) { wakeFlood(t, 20) }

// TestSlowHibernationSchedule: a schedule takes a cluster down at its start time and up at its
// end time; the lag after each time is reported (the goal: within a minute).
func TestSlowHibernationSchedule(t *testing.T) {
	ns := framework.Namespace(t, "e2e-schedule")
	const name = "nightly"
	localCluster(t, ns, name, framework.PinnedVersion, bootstrap.OSTalos, 0)
	framework.WaitReady(t, ns, name, 0, 5*time.Minute)

	now := time.Now().UTC()
	start := now.Add(90 * time.Second).Truncate(time.Minute)
	end := start.Add(2 * time.Minute)
	cron := func(t time.Time) string { return fmt.Sprintf("%d %d * * *", t.Minute(), t.Hour()) }
	framework.MustKubectl(t, "patch", "tc", name, "-n", ns, "--type=merge", "-p",
		fmt.Sprintf(`{"spec":{"hibernation":{"schedules":[{"start":%q,"end":%q,"location":"UTC"}]}}}`, cron(start), cron(end)))

	framework.WaitCluster(t, ns, name, time.Until(start)+3*time.Minute, "Hibernated by the schedule", framework.Hibernated)
	asleep := time.Since(start)
	framework.WaitCluster(t, ns, name, time.Until(end)+3*time.Minute, "Ready by the schedule", func(tc *v1alpha1.TenantCluster) bool {
		return !tc.Spec.Hibernation.Hibernated && tc.Status.Phase == v1alpha1.TenantClusterReady
	})
	awake := time.Since(end)
	t.Logf("schedule start %s -> Hibernated %.1f s after; end %s -> Ready %.1f s after", start.Format("15:04"), asleep.Seconds(), end.Format("15:04"), awake.Seconds())
	if asleep > time.Minute || awake > time.Minute {
		t.Errorf("not within a minute of the schedule's times: asleep %s after the start, Ready %s after the end", asleep, awake)
	}
}

// TestSlowHibernationQuietAndWakeLatency: in one run, a wake's first served request against
// that version's cold kube-apiserver start (the tenant's own kube-apiserver command line, run by
// hand while the cluster sleeps, until /readyz answers) and against a cold create; then five
// minutes asleep with nothing waking the cluster. The provider's log lines of each wake say
// where its time went.
func TestSlowHibernationQuietAndWakeLatency(t *testing.T) {
	ctx := context.Background()
	ns := framework.Namespace(t, "e2e-wake")
	const name = "latency"
	created := time.Now()
	applyHibernatingCluster(t, ns, name, 0, "{wakeOnRequest: true}")
	tc := framework.WaitReady(t, ns, name, 0, 5*time.Minute)
	kubeconfig, _ := framework.MintKubeconfig(t, ns, name)
	if out, err := framework.KubectlAs(t, kubeconfig, "", "get", "ns", "default"); err != nil {
		t.Fatalf("kubectl on the new cluster: %v\n%s", err, out)
	}
	cold := time.Since(created)
	tcp, err := framework.DynamicClient(t).Resource(framework.TenantCPGVR).Namespace(tc.Status.TenantNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tenantDir := filepath.Join(framework.Plane.Dir, "tenants", string(tcp.GetUID()))

	// kubectl's own cost on the awake cluster: process start, TLS, one request.
	var warm []time.Duration
	for range 3 {
		start := time.Now()
		if out, err := framework.KubectlAs(t, kubeconfig, "", "get", "ns", "default"); err != nil {
			t.Fatalf("kubectl on the awake cluster: %v\n%s", err, out)
		}
		warm = append(warm, time.Since(start))
	}

	var wakes, apiStarts []time.Duration
	for i := range 3 {
		framework.MustKubectl(t, "patch", "tc", name, "-n", ns, "--type=merge", "-p", `{"spec":{"hibernation":{"hibernated":true}}}`)
		framework.WaitCluster(t, ns, name, 3*time.Minute, "Hibernated", framework.Hibernated)
		apiStarts = append(apiStarts, coldAPIServerStart(t, tenantDir))
		if i == 2 {
			// Five minutes asleep: nothing but a user may wake it.
			tc, _ := framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns).Get(ctx, name, metav1.GetOptions{})
			note := tc.Annotations[hibernation.LastChangeAnnotation]
			spurious := 0
			for end := time.Now().Add(5 * time.Minute); time.Now().Before(end); time.Sleep(5 * time.Second) {
				tc, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns).Get(ctx, name, metav1.GetOptions{})
				if err == nil && (!tc.Spec.Hibernation.Hibernated || tc.Annotations[hibernation.LastChangeAnnotation] != note) {
					spurious++
					t.Errorf("woken without a request: %q", tc.Annotations[hibernation.LastChangeAnnotation])
					break
				}
			}
			if procs := framework.TenantProcesses(t, string(tcp.GetUID())); len(procs) != 0 {
				t.Errorf("tenant processes after 5 minutes asleep: %v", procs)
			}
			t.Logf("5 minutes asleep: %d wakes without a user request", spurious)
		}
		logFrom := fileSize(providerLog())
		start := time.Now()
		if out, err := framework.KubectlAs(t, kubeconfig, "", "get", "ns", "default"); err != nil {
			t.Fatalf("kubectl on the hibernated cluster: %v\n%s", err, out)
		}
		wake := time.Since(start)
		wakes = append(wakes, wake)
		t.Logf("wake %d: kubectl answered in %.2f s; the provider's log:\n%s", i+1, wake.Seconds(), wakeLog(logFrom))
		// kubectl gives up on a TLS handshake after 10 s; the listener holds its connection at
		// most wakeHold (8 s), then kubectl retries: a wake should end inside the first one.
		if wake > 10*time.Second {
			t.Errorf("wake %d took %s: longer than kubectl's TLS handshake timeout (answered on a retry)", i+1, wake)
		}
		framework.WaitReady(t, ns, name, 0, 3*time.Minute)
	}
	wake, api, kubectl := median(wakes), median(apiStarts), median(warm)
	t.Logf("cold create -> first request served %.2f s", cold.Seconds())
	t.Logf("cold kube-apiserver %s start -> /readyz %s (median %.2f s); kubectl on the awake cluster %s (median %.2f s)",
		framework.PinnedVersion, seconds(apiStarts), api.Seconds(), seconds(warm), kubectl.Seconds())
	t.Logf("wake -> first request served %s (median %.2f s): %.2fx the cold kube-apiserver start (+%.2f s; goal at most +0.5 s), "+
		"+%.2f s over the cold start and an awake kubectl; %.2fx the cold create",
		seconds(wakes), wake.Seconds(), wake.Seconds()/api.Seconds(), (wake - api).Seconds(), (wake - api - kubectl).Seconds(), wake.Seconds()/cold.Seconds())
}

func median(ds []time.Duration) time.Duration {
	sorted := append([]time.Duration(nil), ds...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	return sorted[len(sorted)/2]
}

func seconds(ds []time.Duration) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, fmt.Sprintf("%.2f", d.Seconds()))
	}
	return strings.Join(parts, ", ") + " s"
}

func providerLog() string {
	return filepath.Join(framework.Plane.Dir, "logs", "butler-localprovider.log")
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// wakeLog is the provider's log lines of a wake written after offset from.
func wakeLog(from int64) string {
	return providerLines(from, "Wake on request", "a request woke it", "answers /readyz", "passing the connection through")
}

// providerLines is the provider's log lines written after offset from that hold any of marks.
func providerLines(from int64, marks ...string) string {
	f, err := os.Open(providerLog())
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	_, _ = f.Seek(from, io.SeekStart)
	data, _ := io.ReadAll(f)
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		for _, m := range marks {
			if strings.Contains(line, m) {
				out = append(out, "  "+line)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// coldAPIServerStart runs the tenant's kube-apiserver by hand, with the command line the
// provider last started it with (its log's last start line: same binary, Go settings, flags, datastore and
// internal port), while the cluster sleeps, and times it from exec to /readyz answering 200
// (asked every 10 ms); then stops it.
func coldAPIServerStart(t *testing.T, tenantDir string) time.Duration {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(tenantDir, "kube-apiserver.log"))
	if err != nil {
		t.Fatal(err)
	}
	var cmdline string
	for _, line := range strings.Split(string(data), "\n") {
		if _, after, ok := strings.Cut(line, " starting: "); ok && strings.HasPrefix(line, "==== ") {
			cmdline = after
		}
	}
	fields := strings.Fields(cmdline)
	if len(fields) == 0 {
		t.Fatalf("no start line in %s/kube-apiserver.log", tenantDir)
	}
	// The provider's start line is "env NAME=value ... binary args" when it sets Go's settings.
	var env []string
	if fields[0] == "env" {
		fields = fields[1:]
		for len(fields) > 0 && strings.Contains(fields[0], "=") {
			env, fields = append(env, fields[0]), fields[1:]
		}
	}
	host, port := "127.0.0.1", ""
	for _, f := range fields[1:] {
		if v, ok := strings.CutPrefix(f, "--secure-port="); ok {
			port = v
		}
		if v, ok := strings.CutPrefix(f, "--bind-address="); ok && v != "0.0.0.0" {
			host = v
		}
	}
	if port == "" {
		t.Fatalf("kube-apiserver's command line has no --secure-port: %s", cmdline)
	}
	out, err := os.Create(filepath.Join(t.TempDir(), "kube-apiserver.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command(fields[0], fields[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}} // a timing probe on loopback
	url := "https://" + net.JoinHostPort(host, port) + "/readyz"
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	for time.Since(start) < 2*time.Minute {
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(start)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the tenant's kube-apiserver, started by hand, did not answer /readyz in 2 minutes (log %s)", out.Name())
	return 0
}
